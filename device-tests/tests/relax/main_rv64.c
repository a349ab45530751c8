/* The harness of the Relax C programs on RV64 (QEMU virt, picolibc with semihosting): picolibc's
 * start passes no command line, so the inputs and outputs are the files i0, i1, … and o0, o1, …
 * of the folder MLF_IO_DIR; the exit status goes to QEMU through the semihosting exit call. */
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
static void semihost_exit(int code) {
  static volatile uint64_t block[2];
  block[0] = 0x20026; /* ADP_Stopped_ApplicationExit */
  block[1] = (uint64_t)code;
  register uintptr_t a0 __asm__("a0") = 0x18; /* SYS_EXIT */
  register uintptr_t a1 __asm__("a1") = (uintptr_t)block;
  __asm__ volatile(".option push\n.option norvc\nslli zero, zero, 0x1f\nebreak\nsrai zero, zero, 7\n.option pop"
                   : "+r"(a0)
                   : "r"(a1)
                   : "memory");
  for (;;) {
  }
}
static int run(void) {
  void* in[16];
  void* out[16];
  char path[512];
  if (m_num_inputs > 16 || m_num_outputs > 16) return 3;
  for (int i = 0; i < m_num_inputs; ++i) {
    uintptr_t raw = (uintptr_t)malloc(m_input_bytes[i] + 16);
    if (raw == 0) return 6;
    in[i] = (void*)((raw + 15) & ~(uintptr_t)15);
    snprintf(path, sizeof path, "%si%d", MLF_IO_DIR, i);
    FILE* f = fopen(path, "rb");
    if (!f || fread(in[i], 1, m_input_bytes[i], f) != m_input_bytes[i]) return 4;
    fclose(f);
  }
  if (m_run(in, out) != 0) return 2;
  for (int i = 0; i < m_num_outputs; ++i) {
    snprintf(path, sizeof path, "%so%d", MLF_IO_DIR, i);
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(out[i], 1, m_output_bytes[i], f) != m_output_bytes[i]) return 5;
    fclose(f);
  }
  return 0;
}
int main(void) {
  int code = run();
  fflush(stdout);
  fflush(stderr);
  semihost_exit(code);
  return code;
}
