/* The part of TVM's C runtime API that generated code uses, written for mlf from the ABI facts.
 * The functions are implemented in Rust by mlf-runtime. */
#ifndef MLF_TVM_C_RUNTIME_API_H_
#define MLF_TVM_C_RUNTIME_API_H_

#include <stdint.h>
#include <stddef.h>
#include "dlpack/dlpack.h"

#ifndef TVM_DLL
#define TVM_DLL
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  kTVMArgInt = 0,
  kTVMArgFloat = 2,
  kTVMOpaqueHandle = 3,
  kTVMNullptr = 4,
  kTVMDataType = 5,
  kDLDevice = 6,
  kTVMDLTensorHandle = 7,
  kTVMObjectHandle = 8,
  kTVMModuleHandle = 9,
  kTVMPackedFuncHandle = 10,
  kTVMStr = 11,
  kTVMBytes = 12,
  kTVMNDArrayHandle = 13,
  kTVMObjectRValueRefArg = 14,
  kTVMArgBool = 15
} TVMArgTypeCode;

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

typedef struct {
  const char* data;
  size_t size;
} TVMByteArray;

typedef void* TVMFunctionHandle;
typedef void* TVMModuleHandle;

TVM_DLL void TVMAPISetLastError(const char* msg);
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                        TVMValue* ret_val, int* ret_type_code);

#ifdef __cplusplus
}
#endif
#endif
