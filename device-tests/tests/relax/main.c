/* The harness of the Relax C programs on a device: reads the inputs from host files
 * (semihosting), runs the program, writes the outputs to host files. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "tvm/ffi/c_api.h"
extern const int32_t m_num_inputs, m_num_outputs;
extern const uint64_t m_input_bytes[], m_output_bytes[];
int32_t m_run(void* const* inputs, void** outputs);
void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t n) {
  fprintf(stderr, "%s: ", kind);
  for (int32_t i = 0; i < n; ++i) fputs(parts[i], stderr);
  fputc('\n', stderr);
}
int main(int argc, char** argv) {
  void* in[16];
  void* out[16];
  if (argc != 1 + m_num_inputs + m_num_outputs || m_num_inputs > 16 || m_num_outputs > 16) return 3;
  for (int i = 0; i < m_num_inputs; ++i) {
    /* 16-byte aligned by hand (newlib's aligned_alloc needs posix_memalign). */
    uintptr_t raw = (uintptr_t)malloc(m_input_bytes[i] + 16);
    if (raw == 0) return 6;
    in[i] = (void*)((raw + 15) & ~(uintptr_t)15);
    FILE* f = fopen(argv[1 + i], "rb");
    if (!f || fread(in[i], 1, m_input_bytes[i], f) != m_input_bytes[i]) return 4;
    fclose(f);
  }
  if (m_run(in, out) != 0) return 2;
  for (int i = 0; i < m_num_outputs; ++i) {
    FILE* f = fopen(argv[1 + m_num_inputs + i], "wb");
    if (!f || fwrite(out[i], 1, m_output_bytes[i], f) != m_output_bytes[i]) return 5;
    fclose(f);
  }
  return 0;
}
