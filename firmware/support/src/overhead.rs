//! What a run costs beyond the model's kernels, measured in the same program as `run()`:
//!
//! - [`kernels_alone`]: the model's calls (the generated module's `CALLS`, or an AOT entry)
//!   made directly, one after the other, with the arguments the module built when it compiled;
//!   nothing else runs. Allocations the kernels make are served from a separate scratch region
//!   (entered once, outside the measurement).
//! - [`GraphPeer`]: a graph executor built the way TVM's C runtime builds one (its
//!   `graph_executor.c`): a table of data entries, one operator record per graph node with its
//!   packed arguments prebuilt, functions found through a module's function registry by handle;
//!   per inference `SetInput` (the input found by name, its data pointer set), `Run` (every node,
//!   each operator called through `TVMFuncCall`'s handle decoding) and `GetOutput` (sizes
//!   checked, the output copied out). Same kernels, same descriptors' data.
//!
//! Both use mlf's `TVMBackendAllocWorkspace`, as the kernels are linked against it.

use core::ffi::{c_int, c_void};

use mlf_runtime::StaticArena;
use mlf_runtime::tvm::ffi::{DLDataType, DLDevice, DLTensor, PackedFn, TVMValue};
use mlf_runtime::tvm::workspace::Session;
use mlf_runtime::tvm::{Call, ModelWorkspace};

/// Type codes of every call (all `DLTensor*`), long enough for any packed call.
static CODES: [c_int; 64] = [7; 64];

/// Repetitions of each measured sequence: the counter ticks every 40 instructions on the MPS2
/// machines (62.5 on the micro:bit), so the instructions of `REPS` runs divided by `REPS` are
/// exact to the instruction.
pub const REPS: u64 = 40;

/// Calls `calls` in order with their prebuilt arguments, [`REPS`] times, measured; `scratch`
/// serves their workspace allocations. Returns the cost of all repetitions and whether every
/// call returned 0.
///
/// # Safety
/// `calls` are the generated module's, whose descriptors point at live data (a run of the
/// model has stored its input pointers); no model is running; nothing else uses `scratch`.
pub unsafe fn kernels_alone<const N: usize>(
    calls: &'static [&'static Call],
    scratch: &'static StaticArena<N>,
) -> (crate::Cost, bool) {
    // SAFETY: the caller's contract: `scratch` is this function's alone.
    let region = unsafe { scratch.bytes_mut() };
    let Ok(session) = Session::enter(region, 16) else { return (crate::Cost::default(), false) };
    let mut ret = TVMValue { v_int64: 0 };
    let mut ret_code: c_int = 0;
    let (rc, cost) = crate::measure(|| {
        let mut rc = 0;
        for c in (0..REPS).flat_map(|_| calls) {
            // SAFETY: the generated kernel with the arguments it was compiled for.
            rc |= unsafe {
                (c.f)(
                    c.args.as_ptr().cast_mut(),
                    CODES.as_ptr().cast_mut(),
                    c.args.len() as c_int,
                    &mut ret,
                    &mut ret_code,
                    core::ptr::null_mut(),
                )
            };
        }
        rc
    });
    drop(session);
    (cost, rc == 0)
}

/// Most arguments of one operator (TVM's `TVM_CRT_MAX_ARGS`).
const MAX_ARGS: usize = 10;
/// Module index of the model's functions in function handles (TVM CRT: 0 is the global
/// registry).
const MODULE: u32 = 1;

/// One graph node: a null node (input or parameter; `fexec` 0) or an operator with its packed
/// function handle and prebuilt arguments (TVM's `TVMPackedFunc`).
#[derive(Clone, Copy)]
struct Node {
    fexec: u32,
    values: [TVMValue; MAX_ARGS],
    tcodes: [c_int; MAX_ARGS],
    count: usize,
    ret: TVMValue,
    ret_code: c_int,
}

/// A descriptor of zero bytes (so a peer in a static is in `.bss`).
const ZEROED: DLTensor = DLTensor {
    data: core::ptr::null_mut(),
    device: DLDevice { device_type: 0, device_id: 0 },
    ndim: 0,
    dtype: DLDataType { code: 0, bits: 0, lanes: 0 },
    shape: core::ptr::null_mut(),
    strides: core::ptr::null_mut(),
    byte_offset: 0,
};

/// A node of nothing (zero bytes).
const NO_NODE: Node = Node {
    fexec: 0,
    values: [TVMValue { v_int64: 0 }; MAX_ARGS],
    tcodes: [0; MAX_ARGS],
    count: 0,
    ret: TVMValue { v_int64: 0 },
    ret_code: 0,
};

/// A TVM-style graph executor over a generated module's kernels: `E` data entries, `N` nodes.
pub struct GraphPeer<const E: usize, const N: usize> {
    entries: [DLTensor; E],
    n_entries: usize,
    nodes: [Node; N],
    n_nodes: usize,
    // `Option`s, so that an empty peer is all zero bytes (in `.bss`).
    registry: Option<&'static [(&'static str, PackedFn)]>,
    input_names: Option<&'static [&'static str]>,
    input_entries: [usize; 4],
    output_entry: usize,
}

impl<const E: usize, const N: usize> GraphPeer<E, N> {
    /// An empty executor (fill it with [`GraphPeer::build`]).
    pub const fn new() -> Self {
        GraphPeer {
            entries: [ZEROED; E],
            n_entries: 0,
            nodes: [NO_NODE; N],
            n_nodes: 0,
            registry: None,
            input_names: None,
            input_entries: [0; 4],
            output_entry: 0,
        }
    }

    /// Builds the executor (TVM's `SetupStorage` and `SetupOpExecs`) from the generated module's
    /// calls and function table: one data entry per distinct descriptor (a copy of it), the
    /// graph's `nodes` nodes (null nodes first, then one per call), the inputs (found by the
    /// caller's buffers a run of the model has stored; looked up by `names`) and the output
    /// (the last call's last argument). `None` when it does not fit.
    ///
    /// # Safety
    /// The calls' descriptors are readable (statics of the generated module).
    pub unsafe fn build(
        &mut self,
        calls: &'static [&'static Call],
        kernels: &'static [(&'static str, PackedFn)],
        nodes: usize,
        inputs: &[*const u8],
        names: &'static [&'static str],
    ) -> Option<()> {
        let nulls = nodes.checked_sub(calls.len())?;
        if nodes > N || inputs.len() > 4 {
            return None;
        }
        self.registry = Some(kernels);
        let mut handles: [*const DLTensor; E] = [core::ptr::null(); E];
        for (k, c) in calls.iter().enumerate() {
            let node = &mut self.nodes[nulls + k];
            let f = kernels.iter().position(|(_, f)| *f as usize == c.f as usize)?;
            node.fexec = (MODULE << 16) | f as u32;
            if c.args.len() > MAX_ARGS {
                return None;
            }
            for (i, a) in c.args.iter().enumerate() {
                // SAFETY: every argument of a generated call is a descriptor handle.
                let h = unsafe { a.v_handle }.cast_const().cast::<DLTensor>();
                let e = match handles[..self.n_entries].iter().position(|&x| x == h) {
                    Some(e) => e,
                    None => {
                        let e = self.n_entries;
                        if e == E {
                            return None;
                        }
                        // SAFETY: the handle points at a descriptor in a static.
                        self.entries[e] = unsafe { *h };
                        handles[e] = h;
                        self.n_entries += 1;
                        e
                    }
                };
                node.values[i] = TVMValue { v_handle: (&mut self.entries[e] as *mut DLTensor).cast() };
                node.tcodes[i] = 13;
            }
            node.count = c.args.len();
        }
        self.n_nodes = nodes;
        self.input_names = Some(names);
        for (i, data) in inputs.iter().enumerate() {
            self.input_entries[i] =
                self.entries[..self.n_entries].iter().position(|t| t.data.cast_const().cast::<u8>() == *data)?;
        }
        self.output_entry = {
            let last = calls.last()?;
            // SAFETY: as above.
            let h = unsafe { last.args.last()?.v_handle }.cast_const().cast::<DLTensor>();
            handles[..self.n_entries].iter().position(|&x| x == h)?
        };
        Some(())
    }

    /// TVM's `SetInput`: finds input `name` by comparing names, points its entry at `data`.
    #[inline(never)]
    pub fn set_input(&mut self, name: &str, data: *const c_void) {
        let mut index = None;
        for (i, n) in self.input_names.unwrap_or_default().iter().enumerate() {
            if strcmp(n, name) {
                index = Some(i);
                break;
            }
        }
        if let Some(i) = index {
            self.entries[self.input_entries[i]].data = data.cast_mut();
        }
    }

    /// TVM's `Run`: every node; operators are called through [`func_call`].
    #[inline(never)]
    pub fn run(&mut self) -> bool {
        let Some(registry) = self.registry else { return false };
        let mut ok = true;
        for node in &mut self.nodes[..self.n_nodes] {
            if node.fexec != 0 {
                // SAFETY: the node's arguments were built from the generated call.
                ok &= unsafe { func_call(registry, node) } == 0;
            }
        }
        ok
    }

    /// TVM's `GetOutput`: element counts and widths checked, the output copied into `out`.
    #[inline(never)]
    pub fn get_output(&self, out: &mut [u8]) -> bool {
        let t = &self.entries[self.output_entry];
        let Some(bytes) = t.data_bytes() else { return false };
        let elem = (t.dtype.bits as usize).div_ceil(8);
        if out.len() != bytes || elem == 0 || out.len() % elem != 0 {
            return false;
        }
        // SAFETY: the entry's data holds `bytes` bytes (a descriptor of the model's).
        let src = unsafe { core::slice::from_raw_parts(t.data.cast_const().cast::<u8>(), bytes) };
        out.copy_from_slice(src);
        true
    }
}

// SAFETY: the pointers are to a generated module's statics and the caller's buffers; the
// programs are single-threaded, and a peer is only used between `TakeOnce::take` and its drop.
unsafe impl<const E: usize, const N: usize> Send for GraphPeer<E, N> {}

impl<const E: usize, const N: usize> Default for GraphPeer<E, N> {
    fn default() -> Self {
        Self::new()
    }
}

/// TVM's `TVMFuncCall` for a module function: the handle decoded into module and function
/// index, the function taken from the module's registry, called with the node's arguments.
///
/// # Safety
/// The node's arguments are what the function takes.
#[inline(never)]
unsafe fn func_call(registry: &[(&str, PackedFn)], node: &mut Node) -> i32 {
    let (module, index) = (node.fexec >> 16, (node.fexec & 0xFFFF) as usize);
    if module != MODULE || index >= registry.len() {
        return -1;
    }
    let f = registry[index].1;
    // SAFETY: per the caller's contract.
    unsafe {
        f(
            node.values.as_mut_ptr(),
            node.tcodes.as_mut_ptr(),
            node.count as c_int,
            &mut node.ret,
            &mut node.ret_code,
            core::ptr::null_mut(),
        )
    }
}

/// C's `strcmp(a, b) == 0`, byte by byte.
fn strcmp(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    loop {
        let (x, y) = (a.get(i).copied().unwrap_or(0), b.get(i).copied().unwrap_or(0));
        if x != y {
            return false;
        }
        if x == 0 {
            return true;
        }
        i += 1;
    }
}

/// Runs `f` with the workspace served from `scratch` (entered before, left after: outside
/// whatever `f` measures). `None` when a model is running.
///
/// # Safety
/// Nothing else uses `scratch`.
pub unsafe fn with_scratch<const N: usize, R>(scratch: &'static StaticArena<N>, f: impl FnOnce() -> R) -> Option<R> {
    // SAFETY: the caller's contract.
    let region = unsafe { scratch.bytes_mut() };
    let session = Session::enter(region, 16).ok()?;
    let r = f();
    drop(session);
    Some(r)
}

/// Runs `f` with an AOT model's own workspace (`<module>::entry::WORKSPACE`, which its C
/// allocates from inline) installed over `scratch` (before, and emptied after: outside
/// whatever `f` measures).
///
/// # Safety
/// Nothing else uses `scratch`, and the model is not running.
pub unsafe fn with_model_workspace<const N: usize, const M: usize, R>(
    workspace: &'static ModelWorkspace<M>,
    scratch: &'static StaticArena<N>,
    f: impl FnOnce() -> R,
) -> R {
    // SAFETY: the caller's contract: `scratch` and the workspace are this function's alone.
    let mut installed = unsafe { workspace.install(scratch.as_mut_ptr(), N) };
    installed.set_window(0, N);
    let r = f();
    drop(installed);
    r
}

/// What a graph program hands [`graph`]: the generated module's tables and the model's facts.
pub struct GraphModel {
    /// The module's `CALLS`.
    pub calls: &'static [&'static Call],
    /// The module's `KERNELS`.
    pub kernels: &'static [(&'static str, PackedFn)],
    /// Nodes of the graph (`GRAPH_NODES`).
    pub nodes: usize,
    /// Names of its inputs (`INPUT_NAMES`).
    pub names: &'static [&'static str],
}

/// After the program measured [`REPS`] runs of `run()` (`runs`) on `inputs` and kept the
/// output of the last (`want`): measures the kernels alone and the TVM-style executor `peer`
/// over them on the same inputs ([`REPS`] inferences each), requires the executor's output to
/// equal `want` byte for byte, and records the three figures per inference in `report`.
///
/// # Safety
/// The last run of the model stored `inputs` (alive) in its descriptors; no model is running;
/// nothing else uses `scratch`.
pub unsafe fn graph<const S: usize, const E: usize, const N: usize>(
    report: &mut crate::Report,
    runs: crate::Cost,
    want: &[u8],
    model: &GraphModel,
    inputs: &[*const u8],
    scratch: &'static StaticArena<S>,
    peer: &'static mlf_runtime::TakeOnce<GraphPeer<E, N>>,
) {
    // SAFETY: the caller's contract.
    let (kernels, ok) = unsafe { kernels_alone(model.calls, scratch) };
    let Some(mut peer) = peer.take() else { report.fail("peer", None) };
    // SAFETY: the module's own calls and kernels.
    if !ok || unsafe { peer.build(model.calls, model.kernels, model.nodes, inputs, model.names) }.is_none() {
        report.fail("kernels", None);
    }
    let mut got = [0u8; 256];
    let Some(got) = got.get_mut(..want.len()) else { report.fail("peer-output", None) };
    // SAFETY: the caller's contract: `scratch` serves nothing else.
    let measured = unsafe {
        with_scratch(scratch, || {
            crate::measure(|| {
                (0..REPS).all(|_| {
                    for (name, data) in model.names.iter().zip(inputs) {
                        peer.set_input(name, data.cast());
                    }
                    peer.run() & peer.get_output(got)
                })
            })
        })
    };
    let Some((true, cost)) = measured else { report.fail("peer", None) };
    if got != want {
        report.fail("peer-output", None);
    }
    let per = |c: crate::Cost| c.instructions / REPS;
    report.overhead(per(runs), per(kernels), Some(per(cost)));
}
