//! A Relax program after lowering: the entry function walked once into tensors, kernel calls
//! and outputs, with every builtin of TVM's VM replaced by its static meaning (see
//! `read::relax::lower`). Nothing here refers to registers or bytecode.

use std::ops::Range;

use crate::support::dtype::DType;

/// Index of a tensor in [`RelaxProgram::tensors`].
pub type TensorId = usize;

/// Where a tensor's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorPlace {
    /// The caller's input `n` (in [`RelaxProgram::inputs`] order).
    Input(usize),
    /// Weight `n` of [`RelaxProgram::weights`].
    Weight(usize),
    /// Inside storage block `storage`, at `offset` bytes.
    Storage {
        /// Index in [`RelaxProgram::storages`].
        storage: usize,
        /// Byte offset.
        offset: u64,
    },
    /// The same bytes as another tensor, seen with another shape (`reshape`).
    View(TensorId),
    /// An output whose bytes are an input's or a weight's (TVM returns the object itself): a
    /// buffer of its own, which each run fills with a copy of that tensor after the last call.
    Copy(TensorId),
}

/// A tensor of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxTensor {
    /// Where its bytes are.
    pub place: TensorPlace,
    /// Element type.
    pub dtype: DType,
    /// Shape (static).
    pub shape: Vec<i64>,
    /// Its bytes.
    pub bytes: u64,
}

/// An input of the entry function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxInput {
    /// Its name (`param_names`).
    pub name: String,
    /// The tensor that is it.
    pub tensor: TensorId,
}

/// A weight: a tensor constant of the executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxWeight {
    /// Its index in the constant pool (`c[n]`).
    pub constant: usize,
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<i64>,
    /// Its bytes inside the executable payload.
    pub data: Range<usize>,
}

/// A storage block TVM allocates (`alloc_storage`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxStorage {
    /// Its size in bytes.
    pub bytes: u64,
    /// The instruction that allocates it.
    pub instr: usize,
}

/// An argument of a kernel call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelaxArg {
    /// A tensor (`TVMFFIAny` of type index 7).
    Tensor(TensorId),
    /// An integer (`TVMFFIAny` of type index 1).
    Int(i64),
}

/// A call of a kernel of the library, in program order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxCall {
    /// The kernel's name (its symbol is `__tvm_ffi_<name>`).
    pub kernel: String,
    /// Its arguments.
    pub args: Vec<RelaxArg>,
    /// The instruction.
    pub instr: usize,
}

/// A Relax export's executor: its lowered program and the kernels it calls.
#[derive(Clone, Debug)]
pub struct RelaxExec {
    /// The program.
    pub program: RelaxProgram,
    /// The C symbols of the kernels it calls (`__tvm_ffi_<name>`), in first-call order.
    pub functions: Vec<String>,
}

/// The lowered entry function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaxProgram {
    /// The entry function's name (`main`).
    pub entry: String,
    /// The executable's version (`0.14`).
    pub version: String,
    /// Inputs, in order.
    pub inputs: Vec<RelaxInput>,
    /// Every tensor.
    pub tensors: Vec<RelaxTensor>,
    /// Tensor constants the program uses.
    pub weights: Vec<RelaxWeight>,
    /// Storage blocks as TVM allocates them.
    pub storages: Vec<RelaxStorage>,
    /// Kernel calls, in order.
    pub calls: Vec<RelaxCall>,
    /// Outputs (positional; several for a tuple).
    pub outputs: Vec<TensorId>,
}

impl RelaxProgram {
    /// The sum of TVM's own `alloc_storage` sizes.
    pub fn storage_sum(&self) -> u64 {
        self.storages.iter().map(|s| s.bytes).sum()
    }

    /// The distinct kernel names, in first-call order.
    pub fn kernels(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for c in &self.calls {
            if !v.contains(&c.kernel.as_str()) {
                v.push(&c.kernel);
            }
        }
        v
    }

    /// The tensor whose bytes a tensor uses (following views).
    pub fn root(&self, mut t: TensorId) -> TensorId {
        // Views only point at earlier tensors, so this ends.
        while let TensorPlace::View(of) = self.tensors[t].place {
            t = of;
        }
        t
    }
}
