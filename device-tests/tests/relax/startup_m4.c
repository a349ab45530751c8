/* Cortex-M4F start for the Relax C programs under QEMU mps2-an386: the vector table, the FPU
 * turned on, then newlib's semihosting start (rdimon), which zeroes .bss and calls main. */
#include <stdint.h>
extern void _start(void);
extern uint32_t __stack_top;
void reset(void) {
  /* Enable the FPU (CP10, CP11 full access) before any float code. */
  *(volatile uint32_t*)0xE000ED88 |= (0xFu << 20);
  __asm volatile("dsb; isb");
  _start();
  for (;;) {}
}
void fault(void) { for (;;) {} }
__attribute__((section(".vectors"), used)) const void* vectors[16] = {
  &__stack_top, (void*)reset, (void*)fault, (void*)fault, (void*)fault, (void*)fault, (void*)fault,
};
