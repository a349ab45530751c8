/* TVM's runtime base header as a Relax export's kernels include it: only the export macro.
 * Written for mlf. */
#ifndef MLF_TVM_RUNTIME_BASE_H_
#define MLF_TVM_RUNTIME_BASE_H_

#ifndef TVM_DLL
#define TVM_DLL
#endif

#endif
