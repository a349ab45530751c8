//! The executable printed as TVM's `Executable.as_text()` prints it, so the decoder can be
//! checked against TVM's own text (`program.txt` of every fixture).

use std::fmt::Write;

use super::exec::{Arg, Executable, FuncKind, Instr, VM_REGISTER, VOID_REGISTER};

/// A register's name (`%3`, `%void`, `%vm`).
pub fn register(r: i64) -> String {
    match r {
        VOID_REGISTER => "%void".into(),
        VM_REGISTER => "%vm".into(),
        r => format!("%{r}"),
    }
}

/// An argument as TVM prints it.
pub fn arg(a: &Arg) -> String {
    match *a {
        Arg::Register(r) => register(r),
        Arg::Immediate(v) => format!("i{v}"),
        Arg::Constant(c) => format!("c[{c}]"),
        Arg::Function(f) => format!("f[{f}]"),
    }
}

/// The whole program in TVM's text form.
pub fn as_text(ex: &Executable) -> String {
    let mut os = String::new();
    let name = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| ex.functions.get(i))
            .map_or_else(|| format!("unknown_func_index({i})"), |f| f.name.clone())
    };
    for f in &ex.functions {
        match f.kind {
            FuncKind::Packed => {
                let _ = write!(os, "@{} packed_func;\n\n", f.name);
                continue;
            }
            FuncKind::VmTir => {
                let _ = write!(os, "@{} num_inputs={} vm_tir_func;\n\n", f.name, f.num_args);
                continue;
            }
            FuncKind::Vm => {}
        }
        let _ = writeln!(os, "@{}:", f.name);
        let (start, end) = (f.start_instr.max(0) as usize, f.end_instr.max(0) as usize);
        for instr in ex.instrs.iter().take(end).skip(start) {
            os.push_str("  ");
            let _ = match instr {
                Instr::Call { dst, func, args } => {
                    let args: Vec<String> = args.iter().map(arg).collect();
                    writeln!(os, "{:<6}{:<16} in: {:<12} dst: {}", "call", name(*func), args.join(", "), register(*dst))
                }
                Instr::Ret(r) => writeln!(os, "{:<6}{}", "ret ", register(*r)),
                Instr::Goto(o) => writeln!(os, "{:<6}{o}", "goto"),
                Instr::If { cond, false_offset } => writeln!(os, "{:<6}{}, {false_offset}", "If", register(*cond)),
            };
        }
        os.push('\n');
    }
    os
}
