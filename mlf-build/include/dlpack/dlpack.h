/* DLPack types as TVM-generated C uses them. Written for mlf from the DLPack ABI (the binary
 * layout has never changed; only names have). Both `.device` and the pre-2021 `.ctx` spelling are
 * accepted through an anonymous union, which leaves the layout unchanged. */
#ifndef MLF_DLPACK_H_
#define MLF_DLPACK_H_

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16
} DLDeviceType;

#define kDLGPU kDLCUDA
#define kDLCPUPinned kDLCUDAHost

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef DLDevice DLContext;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  union {
    DLDevice device;
    DLDevice ctx;
  };
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

#ifdef __cplusplus
}
#endif
#endif
