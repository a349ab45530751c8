/* Types of TVM's C metadata module (`tvmgen_<m>_get_c_metadata`). */
#ifndef MLF_TVM_METADATA_TYPES_H_
#define MLF_TVM_METADATA_TYPES_H_

#include <inttypes.h>
#include "dlpack/dlpack.h"

#ifdef __cplusplus
extern "C" {
#endif

struct TVMTensorInfo {
  const char* name;
  const int64_t* shape;
  int64_t num_shape;
  DLDataType dtype;
};

struct TVMConstantInfo {
  const char* name_hint;
  int64_t byte_offset;
  int64_t data_len;
  const void* data_bytes;
};

struct TVMMetadata {
  int64_t version;
  const struct TVMTensorInfo* inputs;
  int64_t num_inputs;
  const struct TVMTensorInfo* outputs;
  int64_t num_outputs;
  const struct TVMTensorInfo* workspace_pools;
  int64_t num_workspace_pools;
  const struct TVMConstantInfo* constant_pools;
  int64_t num_constant_pools;
  const char* mod_name;
};

#ifdef __cplusplus
}
#endif
#endif
