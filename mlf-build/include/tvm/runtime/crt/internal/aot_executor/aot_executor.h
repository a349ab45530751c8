/* The AOT model descriptor of May-August 2021 archives (`tvm_model_t`). */
#ifndef MLF_TVM_CRT_AOT_EXECUTOR_H_
#define MLF_TVM_CRT_AOT_EXECUTOR_H_

#include "tvm/runtime/c_backend_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t num_input_tensors;
  uint32_t num_output_tensors;
  TVMBackendPackedCFunc run_func;
} tvm_model_t;

#ifdef __cplusplus
}
#endif
#endif
