/* What TVM's LLVM objects (lib0.o) need beyond the kernels: the workspace function pointers,
 * which TVM's own loader fills in (weak in the object, NULL as linked: defined here, pointing at
 * the program's workspace functions), and the personality routine its .ARM.exidx names (never
 * called: nothing unwinds). */
#include <stdint.h>
void* m_TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int code, int bits);
int m_TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);
void* (*__TVMBackendAllocWorkspace)(int, int, uint64_t, int, int) = m_TVMBackendAllocWorkspace;
int (*__TVMBackendFreeWorkspace)(int, int, void*) = m_TVMBackendFreeWorkspace;
void __aeabi_unwind_cpp_pr0(void) {}
