//! One instruction as the walk sees it: capstone's decoding reduced to registers, immediates and
//! a memory operand, and whether it leaves the straight line.

use capstone::prelude::*;

/// One decoded instruction, reduced to what the walk needs.
pub(super) struct Step {
    pub(super) len: u64,
    pub(super) mnemonic: String,
    pub(super) regs: Vec<String>,
    pub(super) imms: Vec<i64>,
    /// A memory operand: base register and displacement.
    pub(super) mem: Option<(String, i64)>,
    pub(super) writes: Vec<String>,
    /// The target of a direct branch (its immediate), if any.
    pub(super) target: Option<u64>,
    /// x86-64: the first operand is memory (a store), or a 32-bit register (zero-extended).
    pub(super) store: bool,
    pub(super) narrow: bool,
}

/// An x86-64 register by its full name (`edx` → `rdx`, `r8d` → `r8`, either flags register →
/// `flags`), and whether the name was the 32-bit one (a write zero-extends).
pub(super) fn x86_full(name: &str) -> (String, bool) {
    const LEGACY: [&str; 8] = ["ax", "bx", "cx", "dx", "si", "di", "bp", "sp"];
    if name == "eflags" || name == "rflags" {
        return ("flags".into(), false);
    }
    if let Some(base) = name.strip_prefix('e').filter(|b| LEGACY.contains(b)) {
        return (format!("r{base}"), true);
    }
    if let Some(n) = name.strip_prefix('r').and_then(|r| r.strip_suffix('d')).filter(|n| n.parse::<u8>().is_ok()) {
        return (format!("r{n}"), true);
    }
    // 8- and 16-bit names stand for their full register (a partial write leaves it unknown).
    for b in LEGACY {
        if name == b || (name.len() == 2 && b.starts_with(&name[..1]) && name.ends_with(['l', 'h'])) {
            return (format!("r{b}"), false);
        }
    }
    if let Some(n) = name.strip_prefix('r').map(|r| r.trim_end_matches(['w', 'b'])).filter(|n| n.parse::<u8>().is_ok())
    {
        return (format!("r{n}"), false);
    }
    (name.to_string(), false)
}

/// Decodes the instruction at `at` of `code` (a function starting at `start` in its section).
pub(super) fn decode(cs: &Capstone, arch: Arch, start: u64, code: &[u8], at: u64) -> std::result::Result<Step, String> {
    let off = (at - start) as usize;
    let insns = cs.disasm_count(&code[off..], at, 1).map_err(|e| format!("cannot disassemble at {at:#x}: {e}"))?;
    let i = insns.iter().next().ok_or_else(|| format!("no instruction at {at:#x}"))?;
    let detail = cs.insn_detail(i).map_err(|e| format!("at {at:#x}: {e}"))?;
    let name = |r: RegId| cs.reg_name(r).unwrap_or_default();
    let mut step = Step {
        len: i.len() as u64,
        mnemonic: i.mnemonic().unwrap_or("").to_string(),
        regs: Vec::new(),
        imms: Vec::new(),
        mem: None,
        writes: detail.regs_write().iter().map(|&r| name(r)).collect(),
        target: None,
        store: false,
        narrow: false,
    };
    for op in detail.arch_detail().operands() {
        match op {
            arch::ArchOperand::ArmOperand(o) => match o.op_type {
                arch::arm::ArmOperandType::Reg(r) => step.regs.push(name(r)),
                arch::arm::ArmOperandType::Imm(v) => step.imms.push(i64::from(v)),
                arch::arm::ArmOperandType::Mem(m) => step.mem = Some((name(m.base()), i64::from(m.disp()))),
                _ => {}
            },
            arch::ArchOperand::X86Operand(o) => match o.op_type {
                arch::x86::X86OperandType::Reg(r) => {
                    let (full, narrow) = x86_full(&name(r));
                    if step.regs.is_empty() && step.mem.is_none() {
                        step.narrow = narrow;
                    }
                    step.regs.push(full);
                }
                arch::x86::X86OperandType::Imm(v) => step.imms.push(v),
                arch::x86::X86OperandType::Mem(m) => {
                    step.store = step.regs.is_empty() && step.mem.is_none();
                    // Indexed memory is never the slot's: a base the walk does not know.
                    let base = if m.index().0 == 0 { x86_full(&name(m.base())).0 } else { "?".into() };
                    step.mem = Some((base, m.disp()));
                }
                _ => {}
            },
            arch::ArchOperand::RiscVOperand(o) => match o {
                arch::riscv::RiscVOperand::Reg(r) => step.regs.push(name(r)),
                arch::riscv::RiscVOperand::Imm(v) => step.imms.push(v),
                arch::riscv::RiscVOperand::Mem(m) => step.mem = Some((name(m.base()), m.disp())),
                _ => {}
            },
            _ => {}
        }
    }
    if arch == Arch::X86_64 {
        step.writes = step.writes.iter().map(|w| x86_full(w).0).collect();
    }
    if arch == Arch::Thumb {
        // Arm's flags by one name: capstone lists them for comparisons only, so every
        // flag-setting form (`movs`, `adds`, `bics`, `vmrs`, …) is said to write them too — any of
        // them ends what a `cmp` found.
        let base = step.mnemonic.trim_end_matches(".w").trim_end_matches(".n");
        let sets = (base.ends_with('s') && (!base.starts_with('b') || base == "bics"))
            || ["cmp", "cmn", "tst", "teq"].iter().any(|c| base.starts_with(c));
        for w in &mut step.writes {
            if w == "cpsr" || w.starts_with("apsr") {
                *w = "flags".into();
            }
        }
        if sets && !step.writes.iter().any(|w| w == "flags") {
            step.writes.push("flags".into());
        }
    }
    if matches!(arch, Arch::Riscv64 | Arch::Riscv32) {
        // Capstone states no written registers for RISC-V: the first register operand is
        // the destination of everything but stores and branches.
        let m = step.mnemonic.trim_start_matches("c.");
        let no_dest = m.starts_with('s') && !m.starts_with("sl") && !m.starts_with("sr") && !m.starts_with("su")
            || m.starts_with('b')
            || m.starts_with("fs");
        if !no_dest && let Some(r) = step.regs.first() {
            step.writes.push(r.clone());
        }
    }
    // Direct branches: capstone gives Arm's target, and RISC-V's offset from the branch.
    let m = step.mnemonic.trim_start_matches("c.");
    if m.starts_with('b') || m.starts_with('j') || m.starts_with("cb") {
        step.target = step.imms.last().map(|&v| match arch {
            Arch::Thumb | Arch::X86_64 => v as u64,
            Arch::Riscv64 | Arch::Riscv32 => at.wrapping_add(v as u64),
        });
    }
    Ok(step)
}

/// Whether `s` may leave the straight line: writes the program counter, starts an IT block
/// (conditional instructions), or branches, jumps, returns or traps.
pub(super) fn transfers(arch: Arch, s: &Step) -> bool {
    let m = s.mnemonic.as_str();
    match arch {
        Arch::Thumb => {
            // Capstone does not list the program counter among a plain `b`'s writes.
            let branch = m.starts_with('b') && !m.starts_with("bf") && !m.starts_with("bic");
            branch
                || s.writes.iter().any(|w| w == "pc")
                || s.regs.iter().any(|r| r == "pc") && !m.starts_with("add") && !m.starts_with("ldr")
                || m.starts_with("it")
                || m.starts_with("cb")
                || m.starts_with("tb")
                || m.starts_with("svc")
                || m.starts_with("udf")
        }
        Arch::X86_64 => {
            m.starts_with('j')
                || m.starts_with("call")
                || m.starts_with("ret")
                || m.starts_with("loop")
                || m.starts_with("int")
                || m == "ud2"
                || m == "syscall"
                || s.writes.iter().any(|w| w == "rip")
        }
        Arch::Riscv64 | Arch::Riscv32 => {
            let m = m.trim_start_matches("c.");
            m.starts_with('b')
                || m.starts_with('j')
                || m == "ret"
                || m.starts_with("ecall")
                || m.starts_with("ebreak")
                || m == "mret"
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Arch {
    Thumb,
    Riscv64,
    Riscv32,
    X86_64,
}

impl Arch {
    pub(super) fn capstone(self) -> CsResult<Capstone> {
        match self {
            Arch::Thumb => Capstone::new()
                .arm()
                .mode(arch::arm::ArchMode::Thumb)
                .extra_mode([arch::arm::ArchExtraMode::MClass].into_iter())
                .detail(true)
                .build(),
            Arch::X86_64 => Capstone::new().x86().mode(arch::x86::ArchMode::Mode64).detail(true).build(),
            Arch::Riscv64 | Arch::Riscv32 => {
                let mode =
                    if self == Arch::Riscv64 { arch::riscv::ArchMode::RiscV64 } else { arch::riscv::ArchMode::RiscV32 };
                Capstone::new()
                    .riscv()
                    .mode(mode)
                    .extra_mode([arch::riscv::ArchExtraMode::RiscVC].into_iter())
                    .detail(true)
                    .build()
            }
        }
    }

    /// The registers of `TVMBackendAllocWorkspace`'s `nbytes` (a `uint64_t`: a pair on 32-bit
    /// Arm, `r2:r3`) and those a call clobbers.
    pub(super) fn nbytes(self) -> &'static [&'static str] {
        match self {
            Arch::Thumb => &["r2", "r3"],
            Arch::Riscv64 => &["a2"],
            Arch::Riscv32 => &["a2", "a3"],
            Arch::X86_64 => &["rdx"],
        }
    }

    pub(super) fn clobbered(self) -> &'static [&'static str] {
        match self {
            Arch::Thumb => &["r0", "r1", "r2", "r3", "r12", "ip", "lr"],
            Arch::Riscv64 | Arch::Riscv32 => {
                &["ra", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"]
            }
            Arch::X86_64 => &["rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "flags"],
        }
    }

    /// The register a call returns its result in.
    pub(super) fn result(self) -> &'static str {
        match self {
            Arch::Thumb => "r0",
            Arch::Riscv64 | Arch::Riscv32 => "a0",
            Arch::X86_64 => "rax",
        }
    }
}
