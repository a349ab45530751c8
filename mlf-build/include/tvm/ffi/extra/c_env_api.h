/* The tvm-ffi environment API a Relax export's kernels include; nothing of it is used by the
 * static kernels mlf builds beyond the core ABI. Written for mlf. */
#ifndef MLF_TVM_FFI_EXTRA_C_ENV_API_H_
#define MLF_TVM_FFI_EXTRA_C_ENV_API_H_

#include "tvm/ffi/c_api.h"

#endif
