/* The tvm-ffi C ABI as the kernels of a Relax export (TVM 0.25-0.27, target "c") use it, written
 * for mlf from the ABI facts: a 16-byte TVMFFIAny (i32 type index, 4 bytes of padding, an 8-byte
 * value) and the error function mlf-runtime implements. */
#ifndef MLF_TVM_FFI_C_API_H_
#define MLF_TVM_FFI_C_API_H_

#include <stdint.h>
#include <stddef.h>
#include "dlpack/dlpack.h"

#ifndef TVM_DLL
#define TVM_DLL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Type indices the kernels compare against. */
enum {
  kTVMFFINone = 0,
  kTVMFFIInt = 1,
  kTVMFFIOpaquePtr = 4,
  kTVMFFIDLTensorPtr = 7,
  kTVMFFITensor = 70
};

/* One argument or result. */
typedef struct {
  int32_t type_index;
  uint32_t zero_padding;
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
  };
} TVMFFIAny;

/* Records an error (kind and message parts); the kernel then returns -1. */
TVM_DLL void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t num_parts);

#ifdef __cplusplus
}
#endif
#endif
