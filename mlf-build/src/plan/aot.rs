//! The static memory of an AOT model: the workspace `TVMBackendAllocWorkspace` serves (non-USMP
//! builds), the outputs, and pools the application must provide (external USMP pools). Inputs
//! are used in place; USMP builds carry their own pools inside the C.

use serde::Serialize;

use super::pack::{align_up, alignment_slack};
use crate::error::Result;
use crate::model::{AotExec, ModelDesc};

/// An AOT model's plan.
#[derive(Clone, Debug, Serialize)]
pub struct AotPlan {
    /// Alignment of every buffer and workspace allocation (16; 64 with LLVM objects).
    pub align: u64,
    /// Workspace window at offset 0: the compiler's figure plus the alignment slack.
    pub workspace_bytes: u64,
    /// The compiler's workspace figure (`TVMGEN_<M>_WORKSPACE_SIZE` / metadata).
    pub tvm_workspace_bytes: u64,
    /// Slack added for allocations aligned more strictly than the compiler assumed (16).
    pub slack_bytes: u64,
    /// Offset of each input's copy in the arena, when inputs are not used in place (LLVM
    /// objects assume 64-byte-aligned data).
    pub input_copies: Option<Vec<u64>>,
    /// Offset of each output.
    pub outputs: Vec<u64>,
    /// External pools and workspace pools of a directly called main: name, offset, bytes.
    pub pools: Vec<(String, u64, u64)>,
    /// Total arena bytes.
    pub arena_bytes: u64,
}

/// Plans an AOT model.
pub fn plan(desc: &ModelDesc, a: &AotExec, align: u64) -> Result<AotPlan> {
    // The compiler rounds every allocation to 16 bytes when it sums the workspace; an allocator
    // that aligns to `align` > 16 can lose up to align − 16 bytes per live allocation.
    let slack = if a.workspace_bytes == 0 { 0 } else { alignment_slack(align, a.max_live_allocations) };
    let workspace_bytes = align_up(a.workspace_bytes.saturating_add(slack), align);
    let mut cursor = workspace_bytes;
    let input_copies = if desc.code.objects.is_empty() {
        None
    } else {
        let mut v = Vec::new();
        for t in &desc.inputs {
            v.push(cursor);
            cursor = cursor.saturating_add(align_up(t.bytes(), align));
        }
        Some(v)
    };
    // C kernels need element alignment only; LLVM kernels assume 64.
    let io_align = if desc.code.objects.is_empty() {
        desc.outputs.iter().map(|t| t.dtype.elem_bytes().next_power_of_two()).max().unwrap_or(1).max(1)
    } else {
        align
    };
    let mut outputs = Vec::new();
    for t in &desc.outputs {
        cursor = align_up(cursor, io_align);
        outputs.push(cursor);
        cursor = cursor.saturating_add(t.bytes());
    }
    let mut pools = Vec::new();
    let main_workspace = a.main_pools.iter().filter(|p| !p.constant).map(|p| (p.name.clone(), p.bytes));
    for (name, bytes) in a.external_pools.iter().cloned().chain(main_workspace) {
        cursor = align_up(cursor, align);
        pools.push((name, cursor, bytes));
        cursor = cursor.saturating_add(bytes);
    }
    Ok(AotPlan {
        align,
        workspace_bytes,
        tvm_workspace_bytes: a.workspace_bytes,
        slack_bytes: slack,
        input_copies,
        outputs,
        pools,
        arena_bytes: cursor,
    })
}

/// How an AOT model's C gets its workspace when mlf compiles all of it (C files only, no LLVM
/// object, no library of the user's): `TVMBackendAllocWorkspace` and
/// `TVMBackendFreeWorkspace` are served inline in that C by a LIFO bump allocator over the
/// model's own state (`mlf_runtime::tvm::ModelWorkspace`), instead of a call into the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct InlineWorkspace {
    /// Alignment of every allocation (the plan's).
    pub align: u64,
    /// Most allocations live at once: every allocation site of the C (each live at most once:
    /// TVM frees what a function allocates before it returns, and its C does not recurse), at
    /// least one. A run that goes past it gets an allocation refused, and an error.
    pub most_live: u64,
}

/// The [`InlineWorkspace`] of `desc`, or `None` when some of its code is not C that mlf compiles
/// with the model's header (an LLVM object, a C++ file), which calls the runtime's functions.
pub fn inline_workspace(desc: &ModelDesc) -> Option<InlineWorkspace> {
    let all_c = desc.code.sources.iter().all(|s| s.member.ends_with(".c"));
    if !desc.code.objects.is_empty() || !all_c {
        return None;
    }
    let sites = desc.code.sources.iter().flat_map(|s| &s.scan.functions).filter(|f| f.defined);
    let most_live = sites.map(|f| f.workspace_allocs.len() as u64).sum::<u64>().max(1);
    Some(InlineWorkspace { align: desc.plan_align(), most_live })
}
