//! The stack a run needs, known at build time: the frames of the model's C from the compiler
//! (`-fstack-usage`: one `.su` line per function with its frame in bytes) along the call graph
//! of the C (which function calls which, from the C scanner), plus fixed allowances for mlf's
//! own frames (the generated `run()` and the runtime around the calls) and for a leaf function
//! outside the C atop the deepest chain (`TVMBackendAllocWorkspace`, `expf`, `memcpy`).
//!
//! The figure is a bound when every function on every path has a static (or bounded dynamic)
//! frame, the call graph has no cycle, and no call goes through a pointer the scanner cannot
//! follow. Otherwise it says why it is not one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::ModelDesc;

/// Bytes allowed for mlf's own frames below the model's C during a run: the generated `run()`,
/// `Run::calls` and the call into a kernel (release builds; measured on Cortex-M4 and x86-64,
/// see the README's device table). Debug builds keep every temporary in its own stack slot:
/// [`RUNTIME_DEBUG_BYTES`].
pub const RUNTIME_BYTES: u64 = 512;

/// [`RUNTIME_BYTES`] for unoptimised builds: every temporary in its own stack slot, and mlf's
/// `TVMBackendAllocWorkspace` unoptimised below the deepest kernel. Measured by the host model
/// tests (`model-tests`, painted stack around every fixture's `run()`): up to 2,408 bytes of
/// mlf's own on x86-64.
pub const RUNTIME_DEBUG_BYTES: u64 = 3072;

/// Bytes of stack allowed for one `run()` of a kmodel module (mlf's kmodel interpreter and the
/// KPU backend, all Rust: no compiler figure exists, so this is an allowance, stated as one).
/// Checked against the painted stack by the host model tests (every kmodel fixture) and by
/// `cargo mlf run --target`, which fails a run deeper than its module states.
pub const KMODEL_BYTES: u64 = 8192;

/// [`KMODEL_BYTES`] for unoptimised builds (measured up to 8,100 bytes on x86-64).
pub const KMODEL_DEBUG_BYTES: u64 = 16384;

/// Bytes allowed for one function outside the model's C called from its deepest frame: mlf's
/// `TVMBackendAllocWorkspace`/`TVMBackendFreeWorkspace`, or a libm or libc leaf (`expf`,
/// `memcpy`, `memset`). Not measured: an allowance, stated as one.
pub const LEAF_BYTES: u64 = 256;

/// Bytes allowed for the parameter source a streamed or lazy run reads through (its `ParamSource::load`
/// and what it calls, such as mlf's `FlashArchive`): an allowance, stated as one. A source of
/// the caller's own with deeper frames adds the difference.
pub const SOURCE_BYTES: u64 = 512;

/// One function's frame as the compiler reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Bytes.
    pub bytes: u64,
    /// Whether the size is known at compile time (`static`, or `dynamic,bounded`): false for an
    /// unbounded `alloca` or variable-length array.
    pub bounded: bool,
}

/// Frames by function name, read from the compiler's `.su` files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frames {
    /// Function → frame (the largest when two files define one name).
    pub by_name: BTreeMap<String, Frame>,
}

impl Frames {
    /// Adds the lines of one `.su` file (`file:line:col:name<TAB>bytes<TAB>qualifiers`, gcc and
    /// clang alike); `prefix` is stripped from renamed symbols. Lines that do not parse are
    /// skipped.
    pub fn add_su(&mut self, text: &str, prefix: &str) {
        for line in text.lines() {
            let mut cols = line.split('\t');
            let (Some(place), Some(bytes), qualifiers) = (cols.next(), cols.next(), cols.next().unwrap_or("")) else {
                continue;
            };
            let Ok(bytes) = bytes.trim().parse::<u64>() else { continue };
            let name = place.rsplit(':').next().unwrap_or(place).trim();
            let name = name.strip_prefix(prefix).unwrap_or(name).to_string();
            let q = qualifiers.trim();
            let bounded = q == "static" || q.split(',').any(|w| w == "bounded");
            let f = self.by_name.entry(name).or_insert(Frame { bytes: 0, bounded: true });
            f.bytes = f.bytes.max(bytes);
            f.bounded &= bounded;
        }
    }
}

/// The stack a run needs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackFigure {
    /// `runtime + c + leaf + source`: the bytes a run needs below its caller's frame.
    pub total: u64,
    /// mlf's own frames (`RUNTIME_BYTES`, release builds).
    pub runtime: u64,
    /// The deepest chain of the model's C frames.
    pub c: u64,
    /// The allowance for a leaf outside the C (`LEAF_BYTES`).
    pub leaf: u64,
    /// The allowance for the parameter source a streamed or lazy run calls (`SOURCE_BYTES`; 0 when
    /// the run reads no parameters).
    #[serde(default)]
    pub source: u64,
    /// The deepest chain, outermost first (`f (48) → g (16)`).
    pub deepest: String,
    /// Whether `total` is a bound; when false, `unbounded` says why.
    pub bounded: bool,
    /// Why the figure is not a bound (recursion, an unbounded dynamic frame, a function without
    /// a frame report, calls through pointers).
    pub unbounded: Vec<String>,
    /// Whether `runtime` is the allowance of a build with debug assertions (the dev profile,
    /// `RUNTIME_DEBUG_BYTES`) rather than an optimised one (`RUNTIME_BYTES`).
    #[serde(default)]
    pub debug: bool,
}

/// The call graph of the model's C: for each defined function, the functions it calls (direct
/// calls, and functions passed to `TVMBackendParallelLaunch`, which runs them inline).
fn call_graph(desc: &ModelDesc) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in &desc.code.sources {
        for f in s.scan.functions.iter().filter(|f| f.defined) {
            let callees = graph.entry(f.name.as_str()).or_default();
            for c in &f.calls {
                callees.insert(c.callee.as_str());
                if c.callee == "TVMBackendParallelLaunch" {
                    if let Some(lambda) = c.args.first() {
                        callees.insert(lambda.trim_start_matches('&').trim());
                    }
                }
            }
        }
    }
    graph
}

/// The deepest chain from `f`: (bytes, chain) or why it has no bound.
fn deepest<'a>(
    f: &'a str,
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    frames: &Frames,
    on_path: &mut Vec<&'a str>,
    memo: &mut BTreeMap<&'a str, Result<(u64, Vec<String>), String>>,
) -> Result<(u64, Vec<String>), String> {
    if let Some(r) = memo.get(f) {
        return r.clone();
    }
    if on_path.contains(&f) {
        return Err(format!("{} calls itself (recursion)", on_path.join(" → ")));
    }
    let result = (|| {
        // A function the compiler inlined everywhere has no frame of its own: its callers'
        // frames hold it.
        let frame = frames.by_name.get(f).copied().unwrap_or(Frame { bytes: 0, bounded: true });
        if !frame.bounded {
            return Err(format!("{f} has a dynamic stack frame (alloca or a variable-length array)"));
        }
        on_path.push(f);
        let mut best = (0, Vec::new());
        for &callee in graph.get(f).into_iter().flatten() {
            // Functions outside the C are leaves: the allowance covers them.
            if !graph.contains_key(callee) {
                continue;
            }
            let (bytes, chain) = deepest(callee, graph, frames, on_path, memo)?;
            if bytes > best.0 {
                best = (bytes, chain);
            }
        }
        on_path.pop();
        let mut chain = vec![format!("{f} ({})", frame.bytes)];
        chain.extend(best.1);
        Ok((frame.bytes + best.0, chain))
    })();
    memo.insert(f, result.clone());
    result
}

impl StackFigure {
    /// The figure for a build with (`true`: the dev and test profiles) or without debug
    /// assertions: mlf's own frames are `RUNTIME_DEBUG_BYTES` or `RUNTIME_BYTES`, as the
    /// module's `STACK_BYTES` counts them in that build.
    pub fn for_debug_assertions(mut self, debug: bool) -> StackFigure {
        let runtime = if debug { RUNTIME_DEBUG_BYTES } else { RUNTIME_BYTES };
        self.total = self.total - self.runtime + runtime;
        self.runtime = runtime;
        self.debug = debug;
        self
    }

    /// The figure of a run that reads its parameters through a source (streamed or lazy):
    /// plus `SOURCE_BYTES`.
    pub fn with_source(mut self) -> StackFigure {
        self.source = SOURCE_BYTES;
        self.total += SOURCE_BYTES;
        self
    }
}

/// The stack a run of `desc` needs when the run calls the C functions `roots` (a graph's
/// kernels, or an AOT model's entry), given the compiler's `frames`.
pub fn figure(desc: &ModelDesc, roots: &[&str], frames: &Frames) -> StackFigure {
    let graph = call_graph(desc);
    let (mut memo, mut unbounded) = (BTreeMap::new(), Vec::new());
    let mut best: (u64, Vec<String>) = (0, Vec::new());
    for &root in roots {
        if !frames.by_name.contains_key(root) {
            unbounded.push(format!("the compiler reported no stack frame for {root}"));
            continue;
        }
        match deepest(root, &graph, frames, &mut Vec::new(), &mut memo) {
            Ok(d) if d.0 > best.0 => best = d,
            Ok(_) => {}
            Err(why) => unbounded.push(why),
        }
    }
    if !desc.code.objects.is_empty() {
        unbounded.push("the model links LLVM objects, whose frames no compiler report gives".into());
    }
    unbounded.sort();
    unbounded.dedup();
    StackFigure {
        total: RUNTIME_BYTES + best.0 + LEAF_BYTES,
        runtime: RUNTIME_BYTES,
        c: best.0,
        leaf: LEAF_BYTES,
        source: 0,
        deepest: best.1.join(" → "),
        bounded: unbounded.is_empty(),
        unbounded,
        debug: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dev profile's figure is the one `STACK_BYTES` has with debug assertions.
    #[test]
    fn the_dev_profile_counts_mlfs_unoptimised_frames() {
        let s = StackFigure { total: 900, runtime: RUNTIME_BYTES, c: 132, leaf: LEAF_BYTES, ..Default::default() };
        let dev = s.clone().for_debug_assertions(true);
        assert_eq!(
            (dev.runtime, dev.total, dev.debug),
            (RUNTIME_DEBUG_BYTES, 900 - RUNTIME_BYTES + RUNTIME_DEBUG_BYTES, true)
        );
        assert_eq!(dev.for_debug_assertions(false), s);
    }

    #[test]
    fn a_streamed_run_adds_the_source_allowance() {
        let s = StackFigure { total: 900, runtime: RUNTIME_BYTES, c: 132, leaf: LEAF_BYTES, ..Default::default() };
        let streamed = s.clone().with_source();
        assert_eq!((streamed.source, streamed.total), (SOURCE_BYTES, 900 + SOURCE_BYTES));
        assert_eq!(s.source, 0);
    }

    #[test]
    fn su_lines_of_gcc_and_clang() {
        let mut f = Frames::default();
        f.add_su(
            "src/lib1.c:12:16:mlf_0011_tvmgen_default_fused_add\t48\tstatic\n\
             lib1.c:30:5:helper\t16\tdynamic,bounded\n\
             lib1.c:40:5:vla\t32\tdynamic\n\
             garbage line\n",
            "mlf_0011_",
        );
        assert_eq!(f.by_name["tvmgen_default_fused_add"], Frame { bytes: 48, bounded: true });
        assert_eq!(f.by_name["helper"], Frame { bytes: 16, bounded: true });
        assert_eq!(f.by_name["vla"], Frame { bytes: 32, bounded: false });
        assert_eq!(f.by_name.len(), 3);
    }
}
