/* The system-lib function registry types generated `lib0` files define (mlf links kernels by
 * name and does not use the registry, but the file must compile). */
#ifndef MLF_TVM_CRT_FUNC_REGISTRY_H_
#define MLF_TVM_CRT_FUNC_REGISTRY_H_

#include "tvm/runtime/c_backend_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t tvm_function_index_t;
typedef uint16_t tvm_module_index_t;

typedef struct TVMFuncRegistry {
  const char* names;
  const TVMBackendPackedCFunc* funcs;
} TVMFuncRegistry;

#ifdef __cplusplus
}
#endif
#endif
