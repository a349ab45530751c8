//! The Relax VM executable (`relax.VMExecutable` payload of a tvm-ffi blob), decoded with every
//! length bounded by the bytes that remain (see `docs/relax.md` and the shared `relax-vm.md`).
//!
//! ```text
//! u64 magic, str version, vec<FuncInfo>, [v2: memory scopes], constants, vec<i64> instr_offset,
//! vec<i64> instr_data
//! ```

use crate::error::{Error, Result};
use crate::read::blob::payload::RELAX_MAGICS;
use crate::support::bytes::Reader;
use crate::support::dtype::DType;

/// Executable versions this decoder was tested on (TVM 0.25–0.27 write `0.14`).
pub const SUPPORTED_VERSIONS: &[&str] = &["0.14"];

/// Most dimensions a constant may have.
const MAX_NDIM: u64 = 32;

/// What a function-table entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncKind {
    /// A packed function: a VM builtin or a kernel of the library.
    Packed,
    /// A bytecode function.
    Vm,
    /// A function compiled to TIR (`exec_mode="compiled"`).
    VmTir,
}

/// One function-table entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncInfo {
    /// Its kind.
    pub kind: FuncKind,
    /// Its name.
    pub name: String,
    /// First instruction (bytecode functions).
    pub start_instr: i64,
    /// One past the last instruction.
    pub end_instr: i64,
    /// Number of parameters.
    pub num_args: i64,
    /// Registers the function uses.
    pub register_file_size: i64,
    /// Parameter names.
    pub param_names: Vec<String>,
}

/// A constant of the pool.
#[derive(Clone, Debug, PartialEq)]
pub enum Constant {
    /// A tensor (weights): device, dtype, shape and the range of its bytes in the payload.
    Tensor {
        /// `(device_type, device_id)`.
        device: (i32, i32),
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<i64>,
        /// Byte range of the data inside the executable payload.
        data: std::ops::Range<usize>,
    },
    /// A shape.
    Shape(Vec<i64>),
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A data type.
    DataType(DType),
}

/// An instruction argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A register (see [`VOID_REGISTER`], [`VM_REGISTER`]).
    Register(i64),
    /// An immediate integer.
    Immediate(i64),
    /// A constant-pool index.
    Constant(i64),
    /// A function-table index.
    Function(i64),
}

/// The register that means "no destination".
pub const VOID_REGISTER: i64 = 1 << 54;
/// The register that holds the VM context.
pub const VM_REGISTER: i64 = (1 << 54) + 1;

/// One instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instr {
    /// `dst = func(args…)`.
    Call {
        /// Destination register.
        dst: i64,
        /// Function-table index.
        func: i64,
        /// Arguments.
        args: Vec<Arg>,
    },
    /// Return a register.
    Ret(i64),
    /// Jump by an offset.
    Goto(i64),
    /// If the register is zero, jump by the offset.
    If {
        /// Condition register.
        cond: i64,
        /// Offset taken when false.
        false_offset: i64,
    },
}

/// A decoded executable.
#[derive(Clone, Debug, PartialEq)]
pub struct Executable {
    /// Its magic number (v1 or v2).
    pub magic: u64,
    /// Its version string.
    pub version: String,
    /// The function table.
    pub functions: Vec<FuncInfo>,
    /// Memory scopes of constants (v2): `(constant index, scope)`.
    pub scopes: Vec<(i64, String)>,
    /// The constant pool.
    pub constants: Vec<Constant>,
    /// The instructions.
    pub instrs: Vec<Instr>,
}

fn dtype(r: &mut Reader) -> Result<DType> {
    let code = r.u8()?;
    let bits = r.u8()?;
    let lanes = r.u16()?;
    Ok(DType::from_dl(code, bits, lanes))
}

fn string(r: &mut Reader, field: &str) -> Result<String> {
    Ok(r.dmlc_string().map_err(|e| e.at(field))?.to_string())
}

fn i64s(r: &mut Reader, field: &str) -> Result<Vec<i64>> {
    let n = r.count(8).map_err(|e| e.at(field))?;
    (0..n).map(|_| r.i64()).collect::<Result<_>>().map_err(|e| e.at(field))
}

/// Decodes an executable payload.
pub fn decode(data: &[u8]) -> Result<Executable> {
    let mut r = Reader::new(data);
    let magic = r.u64().map_err(|e| e.at("magic"))?;
    if !RELAX_MAGICS.contains(&magic) {
        return Err(Error::invalid(format!("not a Relax VM executable: magic {magic:#018x}")).at("magic"));
    }
    let version = string(&mut r, "version")?;
    if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
        return Err(Error::unsupported(format!(
            "Relax VM executable version {} is not supported (supported: {}; TVM 0.25–0.27 write 0.14)",
            crate::error::shown(&version),
            SUPPORTED_VERSIONS.join(", ")
        ))
        .at("version"));
    }
    let functions = functions(&mut r).map_err(|e| e.at("func_table"))?;
    let mut scopes = Vec::new();
    if magic == RELAX_MAGICS[1] {
        let n = r.count(16).map_err(|e| e.at("memory_scopes"))?;
        for i in 0..n {
            let idx = r.i64().map_err(|e| e.at(format!("memory_scopes[{i}]")))?;
            scopes.push((idx, string(&mut r, &format!("memory_scopes[{i}]"))?));
        }
    }
    let constants = constants(&mut r).map_err(|e| e.at("constants"))?;
    let offsets = i64s(&mut r, "instr_offset")?;
    let words = i64s(&mut r, "instr_data")?;
    let instrs = offsets
        .iter()
        .enumerate()
        .map(|(i, &o)| instr(&words, o).map_err(|e| e.at(format!("instr[{i}]"))))
        .collect::<Result<_>>()?;
    Ok(Executable { magic, version, functions, scopes, constants, instrs })
}

fn functions(r: &mut Reader) -> Result<Vec<FuncInfo>> {
    // kind, name length, four i64s, param count.
    let n = r.count(4 + 8 + 32 + 8)?;
    let mut out = Vec::new();
    for i in 0..n {
        let f = (|| {
            let kind = match r.i32()? {
                0 => FuncKind::Packed,
                1 => FuncKind::Vm,
                2 => FuncKind::VmTir,
                k => return Err(Error::invalid(format!("unknown function kind {k}")).at("kind")),
            };
            let name = string(r, "name")?;
            let (start_instr, end_instr, num_args, register_file_size) = (r.i64()?, r.i64()?, r.i64()?, r.i64()?);
            let np = r.count(8).map_err(|e| e.at("param_names"))?;
            let param_names = (0..np).map(|_| string(r, "param_names")).collect::<Result<_>>()?;
            Ok(FuncInfo { kind, name, start_instr, end_instr, num_args, register_file_size, param_names })
        })()
        .map_err(|e: Error| e.at(format!("[{i}]")))?;
        out.push(f);
    }
    Ok(out)
}

fn constants(r: &mut Reader) -> Result<Vec<Constant>> {
    let n = r.count(4)?;
    let mut out = Vec::new();
    for i in 0..n {
        out.push(constant(r).map_err(|e| e.at(format!("[{i}]")))?);
    }
    Ok(out)
}

fn constant(r: &mut Reader) -> Result<Constant> {
    let at = r.pos();
    Ok(match r.i32()? {
        70 => {
            let magic = r.u64()?;
            if magic != 0xDD5E_40F0_96B4_A13F {
                return Err(Error::invalid(format!("tensor at offset {at}: magic {magic:#018x}")));
            }
            let _reserved = r.u64()?;
            let device = (r.i32()?, r.i32()?);
            let ndim = r.i32()?;
            if ndim < 0 || ndim as u64 > MAX_NDIM {
                return Err(Error::invalid(format!("tensor at offset {at}: ndim {ndim}")).at("ndim"));
            }
            let dtype = dtype(r)?;
            let shape = (0..ndim).map(|_| r.i64()).collect::<Result<Vec<_>>>()?;
            let nbytes = r.i64()?;
            let expected = expected_bytes(&shape, dtype);
            if nbytes < 0 || expected != Some(nbytes as u64) {
                return Err(Error::invalid(format!(
                    "tensor at offset {at}: {nbytes} data bytes for shape {shape:?} of {dtype}"
                ))
                .at("nbytes"));
            }
            let data = r.take_range(nbytes as u64)?;
            Constant::Tensor { device, dtype, shape, data }
        }
        69 => {
            let n = r.count(8)?;
            Constant::Shape((0..n).map(|_| r.i64()).collect::<Result<_>>()?)
        }
        65 => Constant::Str(string(r, "str")?),
        1 => Constant::Int(r.i64()?),
        3 => Constant::Float(f64::from_bits(r.u64()?)),
        5 => Constant::DataType(dtype(r)?),
        t => return Err(Error::unsupported(format!("constant of type index {t} at offset {at}")).at("type_index")),
    })
}

/// Bytes of a dense tensor, `None` on overflow or a negative dimension.
pub fn expected_bytes(shape: &[i64], dtype: DType) -> Option<u64> {
    let mut n: u64 = 1;
    for &d in shape {
        n = n.checked_mul(u64::try_from(d).ok()?)?;
    }
    let bits = n.checked_mul(u64::from(dtype.bits))?.checked_mul(u64::from(dtype.lanes))?;
    Some(bits.div_ceil(8))
}

/// An argument word: kind in the top 8 bits, a sign-extended 56-bit value.
fn arg(word: i64) -> Result<Arg> {
    let value = (word << 8) >> 8;
    Ok(match ((word as u64) >> 56) as u8 {
        0 => Arg::Register(value),
        1 => Arg::Immediate(value),
        2 => Arg::Constant(value),
        3 => Arg::Function(value),
        k => return Err(Error::invalid(format!("argument kind {k} (word {word:#x})"))),
    })
}

fn instr(words: &[i64], offset: i64) -> Result<Instr> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|&o| o < words.len())
        .ok_or_else(|| Error::invalid(format!("offset {offset} outside the {} instruction words", words.len())))?;
    let w = &words[start..];
    let get = |i: usize| {
        w.get(i).copied().ok_or_else(|| Error::invalid(format!("instruction at word {start} runs past the end")))
    };
    Ok(match get(0)? {
        1 => {
            let (dst, func, n) = (get(1)?, get(2)?, get(3)?);
            let n = usize::try_from(n)
                .ok()
                .filter(|&n| n <= w.len().saturating_sub(4))
                .ok_or_else(|| Error::invalid(format!("call at word {start}: {n} arguments")))?;
            let args = w[4..4 + n].iter().map(|&a| arg(a)).collect::<Result<_>>()?;
            Instr::Call { dst, func, args }
        }
        2 => Instr::Ret(get(1)?),
        3 => Instr::Goto(get(1)?),
        4 => Instr::If { cond: get(1)?, false_offset: get(2)? },
        op => return Err(Error::invalid(format!("opcode {op} at word {start}"))),
    })
}
