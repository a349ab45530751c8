/* CRT error codes: (category << 8) | code. */
#ifndef MLF_TVM_CRT_ERROR_CODES_H_
#define MLF_TVM_CRT_ERROR_CODES_H_

typedef enum {
  kTvmErrorNoError = 0,
  kTvmErrorFunctionNameNotFound = 0x0100,
  kTvmErrorFunctionIndexInvalid = 0x0101,
  kTvmErrorFunctionRegistryFull = 0x0102,
  kTvmErrorFunctionAlreadyDefined = 0x0103,
  kTvmErrorBufferTooSmall = 0x0104,
  kTvmErrorPlatformCheckFailure = 0x0500,
  kTvmErrorPlatformMemoryManagerInitialized = 0x0501,
  kTvmErrorPlatformShutdown = 0x0502,
  kTvmErrorPlatformNoMemory = 0x0503,
  kTvmErrorPlatformTimerBadState = 0x0504,
  kTvmErrorPlatformStackAllocBadFree = 0x0505,
  kTvmErrorGeneratedInvalidStorageId = 0x0600,
  kTvmErrorExecutorModuleAlreadyCreated = 0x0700,
  kTvmErrorExecutorModuleBadContext = 0x0701,
  kTvmErrorExecutorModuleNoSuchInput = 0x0702,
  kTvmErrorFunctionCallNumArguments = 0x0800,
  kTvmErrorFunctionCallWrongArgType = 0x0801,
  kTvmErrorFunctionCallNotImplemented = 0x0802,
  kTvmErrorFunctionCallInvalidArg = 0x0803,
  kTvmErrorSystemErrorMask = 0x8000
} tvm_crt_error_t;

#endif
