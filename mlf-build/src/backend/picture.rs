//! The picture of a memory plan, as data: columns (operator calls) and the boxes each arena
//! buffer makes over them. The command line draws it.

/// What is drawn: columns (operator calls) and boxes in the arena.
#[derive(Clone, Debug, Default)]
pub struct Picture {
    /// Title line.
    pub title: String,
    /// One label per column: the operator function each call runs (an AOT model without
    /// kernel calls the C shows: its entry point).
    pub columns: Vec<String>,
    /// Arena boxes.
    pub boxes: Vec<PlanBox>,
    /// Arena bytes.
    pub arena: u64,
    /// Flash items: name (parameters with their dtype, shape and the operator reading them)
    /// and bytes.
    pub flash: Vec<(String, u64)>,
    /// What the flash bar holds (`parameters`, `constants in the C`).
    pub flash_caption: String,
    /// The stack one run needs, once the model's C is compiled (the compiler's frames); `None`
    /// before (`cargo mlf plan` reads the model without compiling it).
    pub stack: Option<crate::plan::stack::StackFigure>,
}

/// One buffer in the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanBox {
    /// Short name drawn in the box: the tensor or the operator it belongs to.
    pub name: String,
    /// What it is, in words (the tooltip).
    pub label: String,
    /// Offset in the arena.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// First column it is live in.
    pub first: usize,
    /// Last column it is live in.
    pub last: usize,
    /// What it is (decides its colour).
    pub kind: BoxKind,
}

/// What a box of the picture is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoxKind {
    /// A tensor (activation or output) in the arena.
    Tensor,
    /// Operator scratch (`TVMBackendAllocWorkspace`) in the arena.
    Scratch,
    /// Static RAM inside the model's C (an AOT USMP workspace pool), drawn above the arena.
    CPool,
    /// Where the C puts a tensor in that pool (its start; the C does not say its size): a mark
    /// at its offset over the calls it is live in.
    PoolItem,
}

impl Picture {
    /// The picture with the stack a run needs (from the memory report of a compiled model).
    pub fn with_stack(mut self, stack: Option<crate::plan::stack::StackFigure>) -> Picture {
        self.stack = stack;
        self
    }

    /// Live bytes per column and the column where they peak.
    pub fn peak(&self) -> (usize, u64) {
        let mut live = vec![0u64; self.columns.len().max(1)];
        for b in &self.boxes {
            for l in live.iter_mut().take(b.last + 1).skip(b.first) {
                *l += b.size;
            }
        }
        live.iter().enumerate().max_by_key(|&(i, &v)| (v, std::cmp::Reverse(i))).map(|(i, &v)| (i, v)).unwrap_or((0, 0))
    }
}
