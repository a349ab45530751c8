/* The CRT module type of the system-lib registry (see func_registry.h). */
#ifndef MLF_TVM_CRT_MODULE_H_
#define MLF_TVM_CRT_MODULE_H_

#include "tvm/runtime/c_backend_api.h"
#include "tvm/runtime/crt/func_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TVMModule {
  const TVMFuncRegistry* registry;
} TVMModule;

#ifdef __cplusplus
}
#endif
#endif
