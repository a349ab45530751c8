//! An AOT model's workspace served inline in its C ([`InlineWorkspace`]): the C the build step
//! adds to the header it includes into every C file of the model (a LIFO bump allocator behind
//! `TVMBackendAllocWorkspace` / `TVMBackendFreeWorkspace`, and `TVMAPISetLastError`, over the
//! model's own state), and the static of the generated module that holds that state
//! (`mlf_runtime::tvm::ModelWorkspace`, exported under the model's private prefix).

use proc_macro2::TokenStream;
use quote::quote;

use super::super::usize_lit;
use crate::plan::aot::InlineWorkspace;

/// Bytes of the state's message field; `mlf_runtime::tvm::WORKSPACE_MESSAGE_BYTES` must
/// agree (the generated module checks it when it compiles).
pub const MESSAGE_BYTES: u64 = 48;

/// The state's name before the model's symbol prefix.
pub const STATE_SYMBOL: &str = "mlf_workspace";

/// The C that serves the model's workspace inline: appended to the model's rename header, so
/// every call of the three functions in the model's C is to the `static inline` definitions
/// here (the macros rename them, declarations of TVM's headers included). The fields are those
/// of `ModelWorkspace`, in its order.
pub fn c_header(prefix: &str, w: &InlineWorkspace) -> String {
    let (mask, live, msg) = (w.align.max(1) - 1, w.most_live.max(1), MESSAGE_BYTES);
    let slots = live + 1;
    let state = format!("{prefix}{STATE_SYMBOL}");
    format!(
        r#"
#if !defined(__ASSEMBLER__) && !defined(__cplusplus)
/* This model's workspace, served here rather than by a call into mlf-runtime: a LIFO bump
   allocator ({align}-byte aligned, at most {live} allocations live) over the run's window of the
   model's arena, in {state}, the state its generated module owns (mlf_runtime::tvm::ModelWorkspace,
   same fields in the same order). starts[0] is a sentinel no allocation equals; starts[1..depth]
   are the live allocations. Between runs the window is empty: every request is refused. */
struct {state}_fields {{
  unsigned char *base, *high, *top, *limit;
  __SIZE_TYPE__ depth, status, message_len;
  __UINT64_TYPE__ requested, available;
  char message[{msg}];
  unsigned char* starts[{slots}];
}};
extern struct {state}_fields {state};

/* A refused request: recorded (status bit 1) for the run's error. */
static __attribute__((cold, noinline, unused)) void* {prefix}mlf_ws_refuse(__UINT64_TYPE__ nbytes,
                                                                         __UINT64_TYPE__ available) {{
  {state}.status |= 1;
  {state}.requested = nbytes;
  {state}.available = available;
  return (void*)0;
}}

static inline void* {prefix}mlf_ws_alloc(int device_type, int device_id, __UINT64_TYPE__ nbytes,
                                         int dtype_code_hint, int dtype_bits_hint) {{
  struct {state}_fields* w = &{state};
  unsigned char *start = w->top, *end;
  __SIZE_TYPE__ depth = w->depth;
  __UINT64_TYPE__ available = (__UINT64_TYPE__)(w->limit - start);
  if (device_type != 1 || device_id != 0) return (void*)0;
  /* nbytes <= available first, so the rounding cannot overflow. */
  if (__builtin_expect(nbytes > available || ((nbytes + {mask}u) & ~(__UINT64_TYPE__){mask}u) > available ||
                       depth >= {live}u, 0)) {{
    return {prefix}mlf_ws_refuse(nbytes, available);
  }}
  end = start + (__SIZE_TYPE__)((nbytes + {mask}u) & ~(__UINT64_TYPE__){mask}u);
  w->starts[depth + 1] = start;
  w->depth = depth + 1;
  w->top = end;
  if (end > w->high) w->high = end;
  return start;
}}

/* A free that is not of the most recent allocation: recorded (status bit 2). */
static __attribute__((cold, noinline, unused)) int {prefix}mlf_ws_bad_free(void) {{
  {state}.status |= 2;
  return -1;
}}

static inline int {prefix}mlf_ws_free(int device_type, int device_id, void* ptr) {{
  struct {state}_fields* w = &{state};
  __SIZE_TYPE__ depth = w->depth;
  if (device_type != 1 || device_id != 0) return -1;
  /* With nothing live, starts[0] (the sentinel) never equals ptr. */
  if (__builtin_expect((unsigned char*)ptr != w->starts[depth], 0)) return {prefix}mlf_ws_bad_free();
  w->depth = depth - 1;
  w->top = (unsigned char*)ptr;
  return 0;
}}

/* The message of a failing kernel, cut to {msg} bytes, for the run's error. */
static __attribute__((unused)) void {prefix}mlf_set_last_error(const char* msg) {{
  __SIZE_TYPE__ n = 0;
  while (msg && n < {msg}u && msg[n] != 0) {{
    {state}.message[n] = msg[n];
    n++;
  }}
  {state}.message_len = n;
}}

#define TVMBackendAllocWorkspace {prefix}mlf_ws_alloc
#define TVMBackendFreeWorkspace {prefix}mlf_ws_free
#define TVMAPISetLastError {prefix}mlf_set_last_error
#endif
"#,
        align = w.align,
    )
}

/// The state's static, for the module's `entry` (tools that call the entry point themselves
/// install it too), and the check that the runtime's message field is the C's.
pub fn state_static(prefix: &str, w: &InlineWorkspace) -> TokenStream {
    let symbol = format!("{prefix}{STATE_SYMBOL}");
    // The live allocations and the sentinel before them.
    let slots = usize_lit(w.most_live.max(1) as usize + 1);
    let msg = usize_lit(MESSAGE_BYTES as usize);
    let doc = format!(
        " The model's workspace: its C allocates from it inline (at most {} allocations live), \
         under the private name `{symbol}`. A run installs it over the arena; a tool calling the \
         entry point itself installs it over a region of its own.",
        w.most_live.max(1)
    );
    quote! {
        #[doc = #doc]
        #[unsafe(export_name = #symbol)]
        pub static WORKSPACE: ::mlf_runtime::tvm::ModelWorkspace<#slots> = ::mlf_runtime::tvm::ModelWorkspace::new();

        /// The runtime's message field is as long as the C's (checked when the module compiles).
        const _: () = assert!(::mlf_runtime::tvm::WORKSPACE_MESSAGE_BYTES == #msg);
    }
}
