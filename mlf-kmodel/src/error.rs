//! Errors of the kmodel parser and interpreter: small, `Copy`, allocation-free.

use core::fmt;

/// Which part of a kmodel a [`KmodelError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The fixed header.
    Header,
    /// The V3 output table or the V4 output memory ranges.
    Outputs,
    /// The V4 input memory ranges and shapes.
    Inputs,
    /// The V4 constants blob.
    Constants,
    /// The table of layer (V3) or node (V4) headers.
    LayerHeaders,
    /// A layer or node body.
    Body,
    /// A V5 module header or table.
    Module,
    /// A V5 section.
    Section,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Header => "header",
            Part::Outputs => "output table",
            Part::Inputs => "input table",
            Part::Constants => "constants",
            Part::LayerHeaders => "layer headers",
            Part::Body => "body",
            Part::Module => "module",
            Part::Section => "section",
        }
    }
}

/// A block that a V3 `K210_CONV` body points to, or a block inside a V4 `kpu_conv2d` body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// The 96-byte KPU layer registers.
    Registers,
    /// The batch-normalisation table (`8 × oc` bytes).
    BatchNorm,
    /// The 144-byte activation table.
    Activation,
    /// The weights.
    Weights,
}

/// A memory pool of the interpreter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The model's constants (V4 `constants` section).
    Constants,
    /// CPU working memory (V3 `main_mem_usage`, V4 `main_mem`).
    Main,
    /// KPU RAM (2 MiB, addressed in 64-byte rows by the registers).
    Kpu,
    /// The interpreter's scratch memory.
    Scratch,
}

impl Pool {
    fn name(self) -> &'static str {
        match self {
            Pool::Constants => "constants",
            Pool::Main => "main memory",
            Pool::Kpu => "KPU RAM",
            Pool::Scratch => "scratch memory",
        }
    }
}

/// What is wrong with a kmodel, or why it cannot run.
///
/// `index` fields are the layer (V3) or node (V4) index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KmodelError {
    /// The file ends inside a table or a body.
    Truncated {
        /// What was being read.
        part: Part,
        /// Offset of the read from the start of the model.
        offset: u64,
        /// Bytes the read needs.
        needed: u64,
        /// Bytes the file has from `offset` on.
        available: u64,
    },
    /// A legacy kmodel V1 (`kpu_model_header_t`, before nncase).
    LegacyV1,
    /// An old kendryte-model-compiler `model.bin` (first word `0x12345678`).
    ModelCompilerBin,
    /// Not a kmodel at all.
    UnknownFormat {
        /// The first 8 bytes (zero-filled when the file is shorter).
        head: [u8; 8],
    },
    /// A `KMDL` file with a version other than 4 or 5.
    UnsupportedVersion {
        /// The version word.
        version: u32,
    },
    /// A kmodel V5 (nncase ≥ 1.0): its header can be read, but it cannot be run.
    V5NotRunnable,
    /// V3 `arch` is not 0.
    BadArch {
        /// The value found.
        arch: u32,
    },
    /// V4 `target` is not 0 (CPU) or 1 (K210).
    BadTarget {
        /// The value found.
        target: u32,
    },
    /// A count in a header is larger than the file could hold or than the format allows.
    BadCount {
        /// Which table.
        part: Part,
        /// The count found.
        count: u32,
    },
    /// The model has no layers or nodes, or no outputs.
    Empty {
        /// Which table is empty.
        part: Part,
    },
    /// A body's declared size runs past the end of the file (by more than the 7 bytes of
    /// final padding real files omit).
    BodyOutOfBounds {
        /// Layer or node index.
        index: u32,
        /// Where the body would end.
        end: u64,
        /// The file size.
        file_len: u64,
    },
    /// A body is shorter than its fields and arrays need.
    BodyTooSmall {
        /// Layer or node index.
        index: u32,
        /// Bytes needed.
        needed: u64,
        /// Bytes declared.
        size: u64,
    },
    /// A block a `K210_CONV` or `kpu_conv2d` body points to lies outside the file or the body.
    BlockOutOfBounds {
        /// Layer or node index.
        index: u32,
        /// Which block.
        block: Block,
        /// Its offset (absolute for V3, inside the body for V4).
        offset: u64,
    },
    /// A memory range or address lies outside its pool.
    OutOfRange {
        /// Layer or node index (`u32::MAX` for the header's input/output tables).
        index: u32,
        /// The pool.
        pool: Pool,
        /// Where the range ends.
        end: u64,
        /// The pool size.
        limit: u64,
    },
    /// A layer type (V3) or opcode (V4) that no kmodel runtime runs.
    UnsupportedLayer {
        /// Layer or node index.
        index: u32,
        /// The type or opcode.
        kind: u32,
    },
    /// A field has a value that the kernel cannot use (zero divisor, bad register, shape that
    /// does not match its memory range, …).
    Invalid {
        /// Layer or node index (`u32::MAX` for the header).
        index: u32,
        /// Which field and why.
        what: &'static str,
    },
    /// V3 model with 16-bit KPU weights (flags bit 0 clear): no known file uses it.
    SixteenBitWeights,
    /// The first V3 layer is neither `K210_CONV` nor `FULLY_CONNECTED` (the SDK refuses it).
    FirstLayer {
        /// Its type.
        kind: u32,
    },
    /// The input given to `run` has the wrong size.
    InputSize {
        /// Bytes the model takes.
        expected: u64,
        /// Bytes given.
        got: u64,
    },
    /// The memory given to the interpreter is smaller than the model needs.
    MemoryTooSmall {
        /// The pool.
        pool: Pool,
        /// Bytes needed.
        needed: u64,
        /// Bytes given.
        got: u64,
    },
    /// There is no output with this index.
    NoSuchOutput {
        /// The index asked for.
        index: u32,
    },
    /// An output's bytes are not a whole number of elements, or are misaligned for `f32`.
    OutputLayout,
    /// A KPU layer did not signal `calc_done` within the backend's polling limit.
    KpuTimeout {
        /// Layer or node index.
        index: u32,
    },
    /// A layer's words point the KPU at a table outside the model.
    KpuBus {
        /// The KPU layer's position among the layers run (0 for the first).
        index: u32,
        /// The bus address.
        address: u32,
    },
    /// The KPU cannot read the model where it is (on the K210: outside SRAM
    /// 0x8000_0000..0x8060_0000, or not 256-byte aligned).
    ModelPlacement {
        /// The model's address.
        address: u64,
    },
}

impl fmt::Display for KmodelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |f: &mut fmt::Formatter<'_>, index: u32| {
            if index == u32::MAX { f.write_str("header") } else { write!(f, "layer {index}") }
        };
        match *self {
            KmodelError::Truncated { part, offset, needed, available } => write!(
                f,
                "truncated {}: needs {needed} bytes at offset {offset}, but only {available} remain",
                part.name()
            ),
            KmodelError::LegacyV1 => f.write_str(
                "kmodel V1 (pre-nncase, kendryte-model-compiler) is not supported; recompile with nncase v0.1/v0.2",
            ),
            KmodelError::ModelCompilerBin => f.write_str(
                "this is an old kendryte-model-compiler model.bin (first word 0x12345678), not a kmodel; recompile with nncase v0.1/v0.2",
            ),
            KmodelError::UnknownFormat { head } => write!(
                f,
                "not a kmodel (first bytes {:02x} {:02x} {:02x} {:02x} {:02x} {:02x} {:02x} {:02x})",
                head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7]
            ),
            KmodelError::UnsupportedVersion { version } => {
                write!(f, "KMDL version {version} is unknown (this reader knows 4 and 5)")
            }
            KmodelError::V5NotRunnable => f.write_str(
                "kmodel V5 (nncase >= 1.0) is recognised but cannot be run (its stack VM is out of scope); compile with nncase v0.2 for a V4 kmodel",
            ),
            KmodelError::BadArch { arch } => write!(f, "V3 arch is {arch}, expected 0"),
            KmodelError::BadTarget { target } => write!(f, "V4 target is {target}, expected 0 (CPU) or 1 (K210)"),
            KmodelError::BadCount { part, count } => {
                write!(f, "{} count {count} is larger than the file or the format allows", part.name())
            }
            KmodelError::Empty { part } => write!(f, "the model has an empty {}", part.name()),
            KmodelError::BodyOutOfBounds { index, end, file_len } => {
                at(f, index)?;
                write!(f, ": body ends at {end}, past the end of the {file_len}-byte file")
            }
            KmodelError::BodyTooSmall { index, needed, size } => {
                at(f, index)?;
                write!(f, ": body is {size} bytes but its fields need {needed}")
            }
            KmodelError::BlockOutOfBounds { index, block, offset } => {
                at(f, index)?;
                let b = match block {
                    Block::Registers => "layer registers",
                    Block::BatchNorm => "batch-norm table",
                    Block::Activation => "activation table",
                    Block::Weights => "weights",
                };
                write!(f, ": {b} at offset {offset} lie outside the model")
            }
            KmodelError::OutOfRange { index, pool, end, limit } => {
                at(f, index)?;
                write!(f, ": memory range ends at {end}, past the {limit} bytes of {}", pool.name())
            }
            KmodelError::UnsupportedLayer { index, kind } => {
                at(f, index)?;
                write!(f, ": layer type / opcode {kind:#x} is not supported")
            }
            KmodelError::Invalid { index, what } => {
                at(f, index)?;
                write!(f, ": {what}")
            }
            KmodelError::SixteenBitWeights => f.write_str("V3 model uses 16-bit KPU weights (flags bit 0 = 0), which is not supported"),
            KmodelError::FirstLayer { kind } => write!(
                f,
                "the first V3 layer must be K210_CONV or FULLY_CONNECTED (found type {kind}); the SDK refuses this model"
            ),
            KmodelError::InputSize { expected, got } => write!(f, "input is {got} bytes, the model takes {expected}"),
            KmodelError::MemoryTooSmall { pool, needed, got } => {
                write!(f, "{} is {got} bytes, the model needs {needed}", pool.name())
            }
            KmodelError::NoSuchOutput { index } => write!(f, "the model has no output {index}"),
            KmodelError::OutputLayout => f.write_str("output bytes are not a whole, aligned number of elements"),
            KmodelError::KpuTimeout { index } => {
                at(f, index)?;
                f.write_str(": the KPU did not signal calc_done")
            }
            KmodelError::KpuBus { index, address } => {
                write!(f, "KPU layer {index}: a table address ({address:#x}) lies outside the model")
            }
            KmodelError::ModelPlacement { address } => write!(
                f,
                "the KPU cannot read the model at {address:#x} (on the K210 it must be in SRAM 0x80000000..0x80600000, 256-byte aligned)"
            ),
        }
    }
}
