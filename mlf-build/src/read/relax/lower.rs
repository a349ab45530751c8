//! Lowering: the entry function of a decoded [`Executable`] walked once into a
//! [`RelaxProgram`]. Every VM builtin gets its static meaning (`alloc_storage` a storage block,
//! `alloc_tensor` a tensor at storage + offset, `reshape` a view, `make_tuple` several outputs,
//! the checks the inputs' dtypes and shapes); everything that is not static is refused with one
//! error naming what was found and the instruction (`main.instr[12]`).

use std::collections::HashMap;

use super::exec::{Arg, Constant, Executable, FuncKind, Instr, VM_REGISTER, VOID_REGISTER, expected_bytes};
use crate::error::{Error, Result};
use crate::model::{
    RelaxArg, RelaxCall, RelaxInput, RelaxProgram, RelaxStorage, RelaxTensor, RelaxWeight, TensorId, TensorPlace,
};
use crate::support::dtype::DType;

/// The function a program starts at.
pub const ENTRY: &str = "main";

/// The builtins with a static meaning.
const STATIC_BUILTINS: &[&str] = &[
    "vm.builtin.check_tensor_info",
    "vm.builtin.match_shape",
    "vm.builtin.alloc_storage",
    "vm.builtin.alloc_tensor",
    "vm.builtin.null_value",
    "vm.builtin.reshape",
    "vm.builtin.make_tuple",
    "vm.builtin.tuple_getitem",
];

/// What a register holds during the walk.
#[derive(Clone, Debug)]
enum Value {
    Tensor(TensorId),
    Storage(usize),
    /// A tuple (`make_tuple`), whose items may be tuples.
    Tuple(Vec<Value>),
    Dead,
}

/// What the checks said about an input.
#[derive(Default)]
struct InputCheck {
    ndim: Option<i64>,
    dtype: Option<DType>,
    shape: Option<Vec<i64>>,
}

impl InputCheck {
    /// The input's shape: its `match_shape`, or none for a 0-d (scalar) input, whose rank and
    /// dtype TVM checks without a `match_shape`.
    fn shape(&self) -> Option<Vec<i64>> {
        self.shape.clone().or_else(|| (self.ndim == Some(0)).then(Vec::new))
    }
}

fn refuse(what: impl Into<String>) -> Error {
    Error::unsupported(format!("cannot be built statically: {}", what.into()))
}

/// True for names of VM builtins (as opposed to kernels of the library).
pub fn is_builtin(name: &str) -> bool {
    name.starts_with("vm.") || name.starts_with("relax.")
}

/// Lowers the entry function.
pub fn lower(ex: &Executable) -> Result<RelaxProgram> {
    let entry =
        ex.functions.iter().find(|f| f.name == ENTRY).ok_or_else(|| {
            Error::missing(format!("the entry function `{ENTRY}` in the executable's function table"))
        })?;
    if entry.kind == FuncKind::VmTir {
        return Err(refuse(
            "the program was compiled with exec_mode=\"compiled\": `main` is a VM TIR function (C that looks up VM \
             builtins by name at run time) with no bytecode",
        )
        .at("func_table.main")
        .with_help("compile with the default exec_mode (\"bytecode\"): tvm.compile(mod, target) without exec_mode"));
    }
    if entry.kind != FuncKind::Vm {
        return Err(Error::invalid("`main` is a packed function, not a bytecode function").at("func_table.main"));
    }
    let (start, end) = (entry.start_instr, entry.end_instr);
    if start < 0 || end < start || end as u64 > ex.instrs.len() as u64 {
        return Err(Error::invalid(format!(
            "instructions {start}..{end} of `main` are outside the {} instructions",
            ex.instrs.len()
        ))
        .at("func_table.main"));
    }
    let mut w = Walk { ex, regs: HashMap::new(), p: empty(ex), checks: Vec::new(), weight_of: HashMap::new() };
    let num_args = usize::try_from(entry.num_args)
        .ok()
        .filter(|&n| n <= ex.instrs.len() + entry.param_names.len())
        .ok_or_else(|| Error::invalid(format!("num_args {}", entry.num_args)).at("func_table.main"))?;
    for i in 0..num_args {
        let name = entry.param_names.get(i).cloned().unwrap_or_else(|| format!("input{i}"));
        let t = w.push(TensorPlace::Input(i), DType::U8, Vec::new());
        w.p.inputs.push(RelaxInput { name, tensor: t });
        w.regs.insert(i as i64, Value::Tensor(t));
        w.checks.push(InputCheck::default());
    }
    let mut returned = false;
    for pc in start as usize..end as usize {
        let at = format!("{ENTRY}.instr[{pc}]");
        match &ex.instrs[pc] {
            Instr::Call { dst, func, args } => w.call(pc, *dst, *func, args).map_err(|e| e.at(&at))?,
            Instr::Ret(r) => {
                w.ret(*r).map_err(|e| e.at(&at))?;
                returned = true;
                break;
            }
            Instr::Goto(_) | Instr::If { .. } => {
                return Err(refuse("control flow (If/Goto) in `main`: only straight-line programs are static").at(at));
            }
        }
    }
    if !returned {
        return Err(Error::invalid("`main` ends without `ret`").at("func_table.main"));
    }
    w.finish_inputs()?;
    Ok(w.p)
}

fn empty(ex: &Executable) -> RelaxProgram {
    RelaxProgram {
        entry: ENTRY.into(),
        version: ex.version.clone(),
        inputs: Vec::new(),
        tensors: Vec::new(),
        weights: Vec::new(),
        storages: Vec::new(),
        calls: Vec::new(),
        outputs: Vec::new(),
    }
}

struct Walk<'a> {
    ex: &'a Executable,
    regs: HashMap<i64, Value>,
    p: RelaxProgram,
    checks: Vec<InputCheck>,
    weight_of: HashMap<usize, TensorId>,
}

impl Walk<'_> {
    fn push(&mut self, place: TensorPlace, dtype: DType, shape: Vec<i64>) -> TensorId {
        let bytes = expected_bytes(&shape, dtype).unwrap_or(0);
        self.p.tensors.push(RelaxTensor { place, dtype, shape, bytes });
        self.p.tensors.len() - 1
    }

    fn constant(&self, a: &Arg, what: &str) -> Result<(usize, &Constant)> {
        let Arg::Constant(c) = *a else {
            return Err(match a {
                Arg::Register(_) => refuse(format!("{what} is held in a register (a symbolic shape)")),
                _ => Error::invalid(format!("{what} is not a constant")),
            });
        };
        let i = usize::try_from(c).ok().filter(|&i| i < self.ex.constants.len());
        let i = i.ok_or_else(|| Error::invalid(format!("{what}: constant c[{c}] does not exist")))?;
        Ok((i, &self.ex.constants[i]))
    }

    fn shape(&self, a: &Arg, what: &str) -> Result<Vec<i64>> {
        match self.constant(a, what)? {
            (_, Constant::Shape(s)) if s.iter().all(|&d| d >= 0) => Ok(s.clone()),
            (i, c) => Err(Error::invalid(format!("{what}: c[{i}] is {c:?}, not a static shape"))),
        }
    }

    fn dtype(&self, a: &Arg, what: &str) -> Result<DType> {
        match self.constant(a, what)? {
            (_, Constant::DataType(d)) => Ok(*d),
            (i, _) => Err(Error::invalid(format!("{what}: c[{i}] is not a data type"))),
        }
    }

    fn tensor(&mut self, a: &Arg, what: &str) -> Result<TensorId> {
        match *a {
            Arg::Register(r) => match self.regs.get(&r) {
                Some(Value::Tensor(t)) => Ok(*t),
                Some(v) => Err(Error::invalid(format!("{what}: register %{r} holds {v:?}, not a tensor"))),
                None => Err(Error::invalid(format!("{what}: register %{r} is read before it is written"))),
            },
            Arg::Constant(_) => self.weight(a, what),
            _ => Err(Error::invalid(format!("{what}: {a:?} is not a tensor"))),
        }
    }

    /// `vm.builtin.tuple_getitem(tuple, i)`: item `i` of a tuple the program made.
    fn tuple_getitem(&mut self, dst: i64, name: &str, args: &[Arg]) -> Result<()> {
        need(name, args, 2)?;
        let item = match (&args[0], &args[1]) {
            (Arg::Register(r), Arg::Immediate(i)) => match self.regs.get(r) {
                Some(Value::Tuple(items)) => usize::try_from(*i).ok().and_then(|i| items.get(i)).cloned(),
                _ => None,
            },
            _ => None,
        };
        let item = item.ok_or_else(|| Error::invalid(format!("{name} of {:?} at {:?}", args[0], args[1])))?;
        self.set(dst, item);
        Ok(())
    }

    /// An item of `make_tuple`: a tensor or a tuple.
    fn tuple_item(&mut self, a: &Arg, what: &str) -> Result<Value> {
        if let Arg::Register(r) = *a {
            if let Some(v @ Value::Tuple(_)) = self.regs.get(&r) {
                return Ok(v.clone());
            }
        }
        Ok(Value::Tensor(self.tensor(a, what)?))
    }

    fn weight(&mut self, a: &Arg, what: &str) -> Result<TensorId> {
        let (i, c) = self.constant(a, what)?;
        let Constant::Tensor { device, dtype, shape, data } = c else {
            return Err(Error::invalid(format!("{what}: c[{i}] is not a tensor")));
        };
        if device.0 != 1 {
            return Err(refuse(format!(
                "constant c[{i}] lives on device type {} (only the CPU, 1, is static)",
                device.0
            )));
        }
        if let Some(&t) = self.weight_of.get(&i) {
            return Ok(t);
        }
        let (dtype, shape, data) = (*dtype, shape.clone(), data.clone());
        self.p.weights.push(RelaxWeight { constant: i, dtype, shape: shape.clone(), data });
        let t = self.push(TensorPlace::Weight(self.p.weights.len() - 1), dtype, shape);
        self.weight_of.insert(i, t);
        Ok(t)
    }

    fn imm(a: &Arg, what: &str) -> Result<i64> {
        match *a {
            Arg::Immediate(v) => Ok(v),
            _ => Err(Error::invalid(format!("{what}: {a:?} is not an immediate"))),
        }
    }

    fn set(&mut self, dst: i64, v: Value) {
        if dst != VOID_REGISTER {
            self.regs.insert(dst, v);
        }
    }

    fn call(&mut self, pc: usize, dst: i64, func: i64, args: &[Arg]) -> Result<()> {
        let f = usize::try_from(func)
            .ok()
            .and_then(|i| self.ex.functions.get(i))
            .ok_or_else(|| Error::invalid(format!("call of function index {func}, which does not exist")))?;
        if f.kind != FuncKind::Packed {
            return Err(refuse(format!("a call of the VM function `{}`: only `main` alone is static", f.name)));
        }
        let name = f.name.as_str();
        if !is_builtin(name) {
            return self.kernel(pc, dst, name, args);
        }
        match name {
            "vm.builtin.check_tensor_info" => {
                need(name, args, 3)?;
                let t = self.tensor(&args[0], name)?;
                let ndim = Self::imm(&args[1], name)?;
                let dtype = match args[2] {
                    Arg::Constant(_) => Some(self.dtype(&args[2], name)?),
                    _ => None,
                };
                if let TensorPlace::Input(i) = self.p.tensors[t].place {
                    self.checks[i].ndim = Some(ndim);
                    self.checks[i].dtype = dtype;
                    self.refresh_input(i);
                }
            }
            "vm.builtin.match_shape" => self.match_shape(name, args)?,
            "vm.builtin.alloc_storage" => self.alloc_storage(pc, dst, name, args)?,
            "vm.builtin.alloc_tensor" => self.alloc_tensor(dst, name, args)?,
            "vm.builtin.null_value" => self.set(dst, Value::Dead),
            "vm.builtin.reshape" => {
                need(name, args, 2)?;
                let of = self.tensor(&args[0], name)?;
                let shape = self.shape(&args[1], "the reshape's shape")?;
                let dtype = self.p.tensors[of].dtype;
                if expected_bytes(&shape, dtype) != Some(self.p.tensors[of].bytes) {
                    return Err(Error::invalid(format!(
                        "reshape of {:?} to {shape:?} changes the size",
                        self.p.tensors[of].shape
                    )));
                }
                let t = self.push(TensorPlace::View(of), dtype, shape);
                self.set(dst, Value::Tensor(t));
            }
            "vm.builtin.make_tuple" => {
                let items = args.iter().map(|a| self.tuple_item(a, name)).collect::<Result<_>>()?;
                self.set(dst, Value::Tuple(items));
            }
            "vm.builtin.tuple_getitem" => self.tuple_getitem(dst, name, args)?,
            "vm.builtin.alloc_shape_heap" | "vm.builtin.make_shape" => {
                return Err(refuse(format!("`{name}`: shapes computed at run time (a symbolic shape)")));
            }
            _ if name.contains("closure") => return Err(refuse(format!("a closure (`{name}`)"))),
            _ => {
                return Err(refuse(format!(
                    "the VM builtin `{}` has no static form (known: {})",
                    crate::error::shown(name).trim_matches('"'),
                    STATIC_BUILTINS.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// `vm.builtin.match_shape`: an input's shape check (its shape), or a check of a tensor
    /// whose shape is known.
    fn match_shape(&mut self, name: &str, args: &[Arg]) -> Result<()> {
        need(name, args, 3)?;
        let t = self.tensor(&args[0], name)?;
        if args[1] != Arg::Register(VOID_REGISTER) {
            return Err(refuse("a shape check against a shape heap (symbolic shape)"));
        }
        let ndim = usize::try_from(Self::imm(&args[2], name)?)
            .ok()
            .filter(|&n| args.len() >= 3 + 2 * n)
            .ok_or_else(|| Error::invalid(format!("{name}: ndim does not match its {} arguments", args.len())))?;
        let mut shape = Vec::with_capacity(ndim);
        for d in 0..ndim {
            let code = Self::imm(&args[3 + 2 * d], name)?;
            let v = Self::imm(&args[4 + 2 * d], name)?;
            if code != 0 {
                return Err(refuse(format!("dimension {d} is symbolic (match_shape code {code})")));
            }
            shape.push(v);
        }
        match self.p.tensors[t].place {
            TensorPlace::Input(i) => {
                self.checks[i].shape = Some(shape);
                self.refresh_input(i);
            }
            _ if self.p.tensors[t].shape != shape => {
                return Err(Error::invalid(format!(
                    "shape check {shape:?} of a tensor of shape {:?}",
                    self.p.tensors[t].shape
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// `vm.builtin.alloc_storage`: a storage block of a constant size on the CPU, global scope.
    fn alloc_storage(&mut self, pc: usize, dst: i64, name: &str, args: &[Arg]) -> Result<()> {
        need(name, args, 5)?;
        if args[0] != Arg::Register(VM_REGISTER) {
            return Err(Error::invalid(format!("{name}: first argument is not the VM")));
        }
        let size = self.shape(&args[1], "the storage size")?;
        let [bytes] = size[..] else {
            return Err(Error::invalid(format!("{name}: size {size:?} is not one number")));
        };
        let device = Self::imm(&args[2], name)?;
        if device != 0 {
            return Err(refuse(format!("storage on device index {device} (only the CPU, 0, is static)")));
        }
        match self.constant(&args[4], "the storage scope")? {
            (_, Constant::Str(s)) if s == "global" => {}
            (_, Constant::Str(s)) => {
                return Err(refuse(format!("storage in memory scope {} (only \"global\")", crate::error::shown(s))));
            }
            (i, _) => return Err(Error::invalid(format!("{name}: scope c[{i}] is not a string"))),
        }
        self.p.storages.push(RelaxStorage { bytes: bytes as u64, instr: pc });
        self.set(dst, Value::Storage(self.p.storages.len() - 1));
        Ok(())
    }

    /// `vm.builtin.alloc_tensor`: a tensor at a constant offset of a storage block.
    fn alloc_tensor(&mut self, dst: i64, name: &str, args: &[Arg]) -> Result<()> {
        need(name, args, 4)?;
        let storage = match args[0] {
            Arg::Register(r) => match self.regs.get(&r) {
                Some(Value::Storage(s)) => *s,
                _ => return Err(Error::invalid(format!("{name}: register %{r} is not a storage"))),
            },
            _ => return Err(Error::invalid(format!("{name}: storage is not a register"))),
        };
        let offset = Self::imm(&args[1], name)?;
        let shape = self.shape(&args[2], "the tensor shape")?;
        let dtype = self.dtype(&args[3], name)?;
        let bytes = expected_bytes(&shape, dtype)
            .ok_or_else(|| Error::invalid(format!("{name}: shape {shape:?} overflows")))?;
        let cap = self.p.storages[storage].bytes;
        let fits = u64::try_from(offset).ok().and_then(|o| o.checked_add(bytes)).is_some_and(|e| e <= cap);
        if !fits {
            return Err(Error::invalid(format!(
                "{name}: {bytes} bytes at offset {offset} do not fit storage of {cap} bytes"
            )));
        }
        let t = self.push(TensorPlace::Storage { storage, offset: offset as u64 }, dtype, shape);
        self.set(dst, Value::Tensor(t));
        Ok(())
    }

    fn kernel(&mut self, pc: usize, dst: i64, name: &str, args: &[Arg]) -> Result<()> {
        if dst != VOID_REGISTER {
            return Err(refuse(format!("the kernel `{name}` returns a value (only destination-passing kernels)")));
        }
        let mut out = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let what = format!("argument {i} of `{name}`");
            out.push(match *a {
                Arg::Immediate(v) => RelaxArg::Int(v),
                Arg::Constant(c) => match self.constant(a, &what)?.1 {
                    Constant::Int(v) => RelaxArg::Int(*v),
                    Constant::Tensor { .. } => RelaxArg::Tensor(self.weight(a, &what)?),
                    other => return Err(refuse(format!("{what} is the constant c[{c}] {other:?}"))),
                },
                Arg::Register(_) => RelaxArg::Tensor(self.tensor(a, &what)?),
                Arg::Function(_) => return Err(refuse(format!("{what} is a function (a closure)"))),
            });
        }
        self.p.calls.push(RelaxCall { kernel: name.to_string(), args: out, instr: pc });
        Ok(())
    }

    fn ret(&mut self, r: i64) -> Result<()> {
        let mut outputs = Vec::new();
        match self.regs.get(&r) {
            Some(v @ (Value::Tensor(_) | Value::Tuple(_))) => flatten(v, &mut outputs),
            other => return Err(Error::invalid(format!("`main` returns {other:?}, not tensors"))),
        }
        // An output that is an input or a weight (or a view of one) gets a buffer of its own,
        // filled by a copy after the last call: the caller's outputs are the model's.
        let mut copies: HashMap<TensorId, TensorId> = HashMap::new();
        for o in &mut outputs {
            if !matches!(self.p.tensors[self.p.root(*o)].place, TensorPlace::Input(_) | TensorPlace::Weight(_)) {
                continue;
            }
            let src = *o;
            *o = match copies.get(&src) {
                Some(&c) => c,
                None => {
                    let x = &self.p.tensors[src];
                    let c = self.push(TensorPlace::Copy(src), x.dtype, x.shape.clone());
                    copies.insert(src, c);
                    c
                }
            };
        }
        self.p.outputs = outputs;
        Ok(())
    }

    /// Gives an input its dtype and shape as soon as both checks were seen.
    fn refresh_input(&mut self, i: usize) {
        let c = &self.checks[i];
        if let (Some(dtype), Some(shape)) = (c.dtype, c.shape()) {
            let bytes = expected_bytes(&shape, dtype).unwrap_or(0);
            self.p.tensors[self.p.inputs[i].tensor] = RelaxTensor { place: TensorPlace::Input(i), dtype, shape, bytes };
        }
    }

    fn finish_inputs(&mut self) -> Result<()> {
        for (i, c) in self.checks.iter().enumerate() {
            let name = &self.p.inputs[i].name;
            let (Some(dtype), Some(shape)) = (c.dtype, c.shape()) else {
                return Err(refuse(format!("input {name:?} has no static dtype and shape check")));
            };
            if c.ndim.is_some_and(|n| n != shape.len() as i64) {
                return Err(Error::invalid(format!("input {name:?}: ndim check disagrees with its shape {shape:?}")));
            }
            let t = self.p.inputs[i].tensor;
            let bytes = expected_bytes(&shape, dtype)
                .ok_or_else(|| Error::invalid(format!("input {name:?}: shape {shape:?} overflows")))?;
            self.p.tensors[t] = RelaxTensor { place: TensorPlace::Input(i), dtype, shape, bytes };
        }
        Ok(())
    }
}

/// The tensors of a tensor or a (nested) tuple, in order.
fn flatten(v: &Value, out: &mut Vec<TensorId>) {
    match v {
        Value::Tensor(t) => out.push(*t),
        Value::Tuple(items) => items.iter().for_each(|i| flatten(i, out)),
        Value::Storage(_) | Value::Dead => {}
    }
}

/// Refuses a builtin call with fewer than `n` arguments.
fn need(name: &str, args: &[Arg], n: usize) -> Result<()> {
    if args.len() < n {
        Err(Error::invalid(format!("{name} with {} arguments (needs {n})", args.len())))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::relax::load;
    use std::path::{Path, PathBuf};

    fn dir(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax").join(name)
    }

    fn lowered(name: &str) -> Result<RelaxProgram> {
        let path = dir(name).join("model.tar");
        let (_, ex) = load(&path).unwrap();
        lower(&ex).map_err(|e| e.in_file(path))
    }

    /// Every runnable fixture lowers, with the inputs and outputs its reference vectors have.
    #[test]
    fn fixtures_lower_to_their_vectors_signature() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax");
        let mut n = 0;
        for e in std::fs::read_dir(root).unwrap() {
            let d = e.unwrap().path();
            if !d.join("vectors/manifest.json").exists() {
                continue;
            }
            let p =
                lowered(d.file_name().unwrap().to_str().unwrap()).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
            let m: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(d.join("vectors/manifest.json")).unwrap()).unwrap();
            let case = &m["cases"][0];
            let sig = |ts: &[TensorId]| -> Vec<(String, Vec<i64>)> {
                ts.iter().map(|&t| (p.tensors[t].dtype.to_string(), p.tensors[t].shape.clone())).collect()
            };
            let want = |k: &str| -> Vec<(String, Vec<i64>)> {
                case[k]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| {
                        let shape = v["shape"].as_array().unwrap().iter().map(|d| d.as_i64().unwrap()).collect();
                        (v["dtype"].as_str().unwrap().to_string(), shape)
                    })
                    .collect()
            };
            let inputs: Vec<TensorId> = p.inputs.iter().map(|i| i.tensor).collect();
            assert_eq!(sig(&inputs), want("inputs"), "{}", d.display());
            let names: Vec<&str> = p.inputs.iter().map(|i| i.name.as_str()).collect();
            let want_names: Vec<&str> =
                case["inputs"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
            assert_eq!(names, want_names, "{}", d.display());
            assert_eq!(sig(&p.outputs), want("outputs"), "{}", d.display());
            assert!(!p.calls.is_empty() && !p.weights.is_empty() && p.storage_sum() > 0, "{}", d.display());
            n += 1;
        }
        assert_eq!(n, 20);
    }

    /// The edge cases TVM 0.27 writes for models the other fixtures do not have: a 0-d input
    /// checked by rank and dtype alone (no `match_shape`), a bool input and outputs, nested
    /// tuples flattened in order, and outputs that are an input or a constant, each given a
    /// buffer of its own that a copy fills.
    #[test]
    fn edge_cases_lower() {
        for name in ["edges-c", "edges-fused-c"] {
            let p = lowered(name).unwrap();
            let sig = |t: TensorId| (p.tensors[t].dtype.to_string(), p.tensors[t].shape.clone());
            let ins: Vec<_> = p.inputs.iter().map(|i| sig(i.tensor)).collect();
            assert_eq!(ins, [("float32".into(), vec![2, 3]), ("float32".into(), vec![]), ("bool".into(), vec![2, 3])]);
            let outs: Vec<_> = p.outputs.iter().map(|&o| sig(o)).collect();
            assert_eq!(
                outs,
                [
                    ("float32".into(), vec![2, 3]),
                    ("float32".into(), vec![2, 3]),
                    ("float32".into(), vec![3]),
                    ("bool".into(), vec![2, 3]),
                    ("float32".into(), vec![]),
                    ("float32".into(), vec![]),
                ],
                "{name}"
            );
            let place = |k: usize| p.tensors[p.outputs[k]].place.clone();
            assert_eq!(place(1), TensorPlace::Copy(p.inputs[0].tensor), "{name}");
            assert!(matches!(place(2), TensorPlace::Copy(w) if matches!(p.tensors[w].place, TensorPlace::Weight(_))));
            assert_eq!(place(5), TensorPlace::Copy(p.inputs[1].tensor), "{name}");
            assert!(matches!(place(0), TensorPlace::Storage { .. }), "{name}");
        }
    }

    #[test]
    fn tuple_getitem_takes_an_item_of_a_tuple() {
        // `ret` of the MLP's result becomes `ret make_tuple(make_tuple(result), …)[0][0]`.
        let mut ex = mlp();
        let ret = ex.instrs.iter().position(|i| matches!(i, Instr::Ret(_))).unwrap();
        let Instr::Ret(r) = ex.instrs[ret] else { unreachable!() };
        let f = |ex: &mut Executable, name: &str| {
            ex.functions.push(crate::read::relax::exec::FuncInfo {
                kind: FuncKind::Packed,
                name: name.into(),
                start_instr: 0,
                end_instr: 0,
                num_args: 0,
                register_file_size: 0,
                param_names: Vec::new(),
            });
            ex.functions.len() as i64 - 1
        };
        let (make, get) = (f(&mut ex, "vm.builtin.make_tuple"), f(&mut ex, "vm.builtin.tuple_getitem"));
        let (a, b, c, d) = (900, 901, 902, 903);
        let call = |dst, func, args: Vec<Arg>| Instr::Call { dst, func, args };
        let tail = vec![
            call(a, make, vec![Arg::Register(r)]),
            call(b, make, vec![Arg::Register(a), Arg::Register(r)]),
            call(c, get, vec![Arg::Register(b), Arg::Immediate(0)]),
            call(d, get, vec![Arg::Register(c), Arg::Immediate(0)]),
            Instr::Ret(d),
        ];
        ex.instrs.splice(ret..=ret, tail);
        let main = ex.functions.iter_mut().find(|f| f.name == ENTRY).unwrap();
        main.end_instr += 4;
        let want = lower(&mlp()).unwrap().outputs;
        assert_eq!(lower(&ex).unwrap().outputs, want);
        let Instr::Call { args, .. } = &mut ex.instrs[ret + 3] else { unreachable!() };
        args[1] = Arg::Immediate(5);
        assert!(lower(&ex).unwrap_err().to_string().contains("tuple_getitem"));
    }

    #[test]
    fn views_fixture_returns_a_view_of_another_output() {
        let p = lowered("views-c").unwrap();
        assert_eq!(p.outputs.len(), 3);
        assert_eq!(p.tensors[p.outputs[1]].place, TensorPlace::View(p.outputs[0]));
        assert_eq!(p.root(p.outputs[1]), p.outputs[0]);
        assert_eq!(p.kernels(), ["matmul", "multiply", "tir_tanh", "sum"]);
        assert_eq!(p.storages.len(), 4);
    }

    #[test]
    fn symbolic_shape_export_is_refused_naming_the_cause() {
        let e = lowered("refuse-symbolic-shape-c").unwrap_err();
        let s = e.to_string();
        assert!(s.contains("symbolic shape") && s.contains("alloc_shape_heap"), "{s}");
        assert_eq!(e.field.as_deref(), Some("main.instr[0]"));
    }

    #[test]
    fn compiled_mode_export_is_refused_naming_the_cause() {
        let e = lowered("refuse-compiled-mode-c").unwrap_err();
        let s = e.to_string();
        assert!(s.contains("exec_mode=\"compiled\""), "{s}");
        assert_eq!(e.field.as_deref(), Some("func_table.main"));
    }

    fn mlp() -> Executable {
        load(&dir("mlp-f32-c").join("model.tar")).unwrap().1
    }

    fn first_call_of(ex: &Executable, name: &str) -> usize {
        let f = ex.functions.iter().position(|f| f.name == name).unwrap() as i64;
        ex.instrs.iter().position(|i| matches!(i, Instr::Call { func, .. } if *func == f)).unwrap()
    }

    #[test]
    fn control_flow_is_refused() {
        let mut ex = mlp();
        ex.instrs[5] = Instr::Goto(1);
        let e = lower(&ex).unwrap_err();
        assert!(e.to_string().contains("control flow"), "{e}");
        assert_eq!(e.field.as_deref(), Some("main.instr[5]"));
    }

    #[test]
    fn other_devices_scopes_and_builtins_are_refused() {
        let pc = first_call_of(&mlp(), "vm.builtin.alloc_storage");
        let mut ex = mlp();
        let Instr::Call { args, .. } = &mut ex.instrs[pc] else { panic!() };
        args[2] = Arg::Immediate(1);
        assert!(lower(&ex).unwrap_err().to_string().contains("device index 1"));

        let mut ex = mlp();
        let Instr::Call { args, .. } = &mut ex.instrs[pc] else { panic!() };
        let Arg::Constant(c) = args[4] else { panic!() };
        ex.constants[c as usize] = Constant::Str("shared".into());
        assert!(lower(&ex).unwrap_err().to_string().contains("memory scope \"shared\""));

        let mut ex = mlp();
        let Instr::Call { args, .. } = &mut ex.instrs[pc] else { panic!() };
        args[1] = Arg::Register(0);
        assert!(lower(&ex).unwrap_err().to_string().contains("symbolic"));

        let mut ex = mlp();
        let f = ex.functions.iter().position(|f| f.name == "vm.builtin.null_value").unwrap();
        ex.functions[f].name = "vm.builtin.attention_kv_cache_append".into();
        let e = lower(&ex).unwrap_err().to_string();
        assert!(e.contains("`vm.builtin.attention_kv_cache_append` has no static form"), "{e}");

        let mut ex = mlp();
        let f = ex.functions.iter().position(|f| f.name == "relu").unwrap();
        ex.functions[f].kind = FuncKind::Vm;
        let e = lower(&ex).unwrap_err().to_string();
        assert!(e.contains("call of the VM function `relu`"), "{e}");
    }

    #[test]
    fn weights_are_the_tensor_constants_used() {
        let p = lowered("mlp-f32-c").unwrap();
        let shapes: Vec<_> = p.weights.iter().map(|w| w.shape.clone()).collect();
        assert_eq!(shapes, [vec![64, 32], vec![32], vec![32, 10], vec![10]]);
        assert_eq!(p.weights[0].data.len(), 64 * 32 * 4);
        assert_eq!(p.storage_sum(), 128 + 128 + 40);
    }
}
