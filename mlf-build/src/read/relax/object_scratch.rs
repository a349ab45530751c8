//! Scratch sizes of kernels compiled to an LLVM object (`lib0.o`), read from their machine code.
//!
//! TVM's C target states each `TVMBackendAllocWorkspace(…, nbytes, …)` in the source; its LLVM
//! target puts the same call in machine code, reached through the weak slot
//! `__TVMBackendAllocWorkspace` (`R_ARM_GOT_PREL` on Cortex-M, `R_RISCV_GOT_HI20` on RISC-V), with
//! `nbytes` a constant moved into the argument register just before the call. A fused kernel
//! asks for its scratch first thing, so mlf disassembles (with capstone) each function that
//! reaches the slot from its entry along the path of successful allocations, following the
//! registers: constants, the slot's address, the function pointer loaded from it. Every call
//! through the slot found there gives its `nbytes`; a function whose slot reference is not used
//! on that path, or whose call takes a size that is not a constant, is an error naming it.
//!
//! What this cannot see — an allocation after a loop, say — is still safe: the runtime serves
//! each call's scratch from the window planned for it and answers a request beyond it with NULL,
//! which the kernel turns into a failed run naming the call; it never writes outside the window.

use std::collections::BTreeMap;

use capstone::prelude::*;
use object::{Architecture, Object, ObjectSection, ObjectSymbol, RelocationTarget, SymbolKind};

use crate::error::{Error, Result};

/// The slot TVM's LLVM code calls `TVMBackendAllocWorkspace` through.
const SLOT: &str = "__TVMBackendAllocWorkspace";

/// Most instructions followed from a function's entry (a prologue and a few allocations).
const MAX_STEPS: usize = 512;

/// What a register holds along the path followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    /// A known constant.
    Const(u64),
    /// The GOT offset of the slot (ARM: loaded from a literal, before `add rX, pc`).
    GotOffset,
    /// The address of the slot's GOT entry.
    GotEntry,
    /// The slot's address (loaded from its GOT entry).
    SlotAddress,
    /// `TVMBackendAllocWorkspace` (loaded from the slot).
    Function,
    /// What it returned: the scratch, or NULL.
    Allocated,
}

/// Each function's scratch: the `nbytes` of every allocation found, by function name.
pub type Scratch = BTreeMap<String, Vec<u64>>;

/// The allocations of every function in `bytes` that reaches the slot. An object without the
/// slot has none.
pub fn object_scratch(member: &str, bytes: &[u8]) -> Result<Scratch> {
    let fail = |e: String| Error::unsupported(e).in_member(member.to_string());
    let file = object::File::parse(bytes).map_err(|e| fail(format!("not an object file: {e}")))?;
    let mut out = Scratch::new();
    let Some(slot) = file.symbols().find(|s| s.name() == Ok(SLOT)).map(|s| s.index()) else {
        return Ok(out);
    };
    let arch = match file.architecture() {
        Architecture::Arm => Arch::Thumb,
        Architecture::Riscv64 => Arch::Riscv64,
        Architecture::Riscv32 => Arch::Riscv32,
        Architecture::X86_64 => Arch::X86_64,
        a => {
            return Err(fail(format!(
                "its kernels take scratch memory through `{SLOT}` in {a:?} code, whose sizes mlf reads only \
                 for Arm (Thumb), RISC-V and x86-64 objects; export the model with the C target (`{{\"kind\": \"c\"}}`)"
            )));
        }
    };
    let cs = arch.capstone().map_err(|e| fail(format!("cannot disassemble: {e}")))?;
    for section in file.sections() {
        // Places in this section that refer to the slot's GOT entry.
        let relocated: std::collections::BTreeSet<u64> = section.relocations().map(|(at, _)| at).collect();
        let refs: Vec<u64> = section
            .relocations()
            .filter(|(_, r)| r.target() == RelocationTarget::Symbol(slot))
            .map(|(at, _)| at)
            .collect();
        if refs.is_empty() {
            continue;
        }
        let data = section.data().map_err(|e| fail(format!("section {}: {e}", section.name().unwrap_or("?"))))?;
        let functions = file.symbols().filter(|s| {
            s.kind() == SymbolKind::Text && s.is_definition() && s.section_index() == Some(section.index())
        });
        let mut used = vec![false; refs.len()];
        for f in functions {
            let name = f.name().unwrap_or("?").to_string();
            let start = f.address() & !1; // Thumb functions' addresses have bit 0 set.
            let end = start.saturating_add(f.size()).min(data.len() as u64);
            let mine: Vec<usize> = (0..refs.len()).filter(|&k| (start..end).contains(&refs[k])).collect();
            if mine.is_empty() || start >= end {
                continue;
            }
            let code = &data[start as usize..end as usize];
            let walk = Walk { cs: &cs, arch, refs: &refs, relocated: &relocated, section: data, start };
            let found = walk.run(code).map_err(|e| fail(format!("function `{name}`: {e}")))?;
            for k in &mine {
                if !found.refs_used.contains(k) {
                    return Err(fail(format!(
                        "function `{name}` reaches `{SLOT}` at offset {:#x} where mlf cannot read the size it \
                         asks for (not on the path of allocations from its entry); export the model with the C \
                         target (`{{\"kind\": \"c\"}}`)",
                        refs[*k]
                    )));
                }
                used[*k] = true;
            }
            if found.sizes.is_empty() {
                return Err(fail(format!("function `{name}` loads `{SLOT}` but mlf found no call through it")));
            }
            out.insert(name, found.sizes);
        }
        if let Some(k) = used.iter().position(|u| !u) {
            return Err(fail(format!(
                "a reference to `{SLOT}` at offset {:#x} of {} lies in no function",
                refs[k],
                section.name().unwrap_or("?")
            )));
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arch {
    Thumb,
    Riscv64,
    Riscv32,
    X86_64,
}

impl Arch {
    fn capstone(self) -> CsResult<Capstone> {
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
    fn nbytes(self) -> &'static [&'static str] {
        match self {
            Arch::Thumb => &["r2", "r3"],
            Arch::Riscv64 => &["a2"],
            Arch::Riscv32 => &["a2", "a3"],
            Arch::X86_64 => &["rdx"],
        }
    }

    fn clobbered(self) -> &'static [&'static str] {
        match self {
            Arch::Thumb => &["r0", "r1", "r2", "r3", "r12", "ip", "lr"],
            Arch::Riscv64 | Arch::Riscv32 => {
                &["ra", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"]
            }
            Arch::X86_64 => &["rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "flags"],
        }
    }

    /// The register a call returns its result in.
    fn result(self) -> &'static str {
        match self {
            Arch::Thumb => "r0",
            Arch::Riscv64 | Arch::Riscv32 => "a0",
            Arch::X86_64 => "rax",
        }
    }
}

/// What a walk from a function's entry found.
struct Found {
    sizes: Vec<u64>,
    refs_used: Vec<usize>,
}

/// One function's walk.
struct Walk<'a> {
    cs: &'a Capstone,
    arch: Arch,
    /// Section offsets of the relocations to the slot.
    refs: &'a [u64],
    /// Section offsets of every relocation (a literal there is not a constant).
    relocated: &'a std::collections::BTreeSet<u64>,
    /// The section's bytes (literal pools).
    section: &'a [u8],
    /// The function's offset in its section.
    start: u64,
}

/// One decoded instruction, reduced to what the walk needs.
struct Step {
    len: u64,
    mnemonic: String,
    regs: Vec<String>,
    imms: Vec<i64>,
    /// A memory operand: base register and displacement.
    mem: Option<(String, i64)>,
    writes: Vec<String>,
    /// The target of a direct branch (its immediate), if any.
    target: Option<u64>,
    /// x86-64: the first operand is memory (a store), or a 32-bit register (zero-extended).
    store: bool,
    narrow: bool,
}

/// An x86-64 register by its full name (`edx` → `rdx`, `r8d` → `r8`, either flags register →
/// `flags`), and whether the name was the 32-bit one (a write zero-extends).
fn x86_full(name: &str) -> (String, bool) {
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

impl Walk<'_> {
    fn decode(&self, code: &[u8], at: u64) -> std::result::Result<Step, String> {
        let off = (at - self.start) as usize;
        let insns =
            self.cs.disasm_count(&code[off..], at, 1).map_err(|e| format!("cannot disassemble at {at:#x}: {e}"))?;
        let i = insns.iter().next().ok_or_else(|| format!("no instruction at {at:#x}"))?;
        let detail = self.cs.insn_detail(i).map_err(|e| format!("at {at:#x}: {e}"))?;
        let name = |r: RegId| self.cs.reg_name(r).unwrap_or_default();
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
        if self.arch == Arch::X86_64 {
            step.writes = step.writes.iter().map(|w| x86_full(w).0).collect();
        }
        if matches!(self.arch, Arch::Riscv64 | Arch::Riscv32) {
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
            step.target = step.imms.last().map(|&v| match self.arch {
                Arch::Thumb | Arch::X86_64 => v as u64,
                Arch::Riscv64 | Arch::Riscv32 => at.wrapping_add(v as u64),
            });
        }
        Ok(step)
    }

    /// Whether `s` may leave the straight line: writes the program counter, starts an IT block
    /// (conditional instructions), or branches, jumps, returns or traps.
    fn transfers(&self, s: &Step) -> bool {
        let m = s.mnemonic.as_str();
        match self.arch {
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

    /// The slot reference (index into `refs`) of a relocation at `at`, if any.
    fn slot_ref(&self, at: u64) -> Option<usize> {
        self.refs.iter().position(|&r| r == at)
    }

    /// What `s` (at `at`) leaves in its destination register, if the walk knows it: constants,
    /// the slot's GOT entry, its address and the function loaded from it. Slot references
    /// used are noted in `found`.
    fn value_of(&self, s: &Step, at: u64, regs: &BTreeMap<String, Value>, found: &mut Found) -> Option<Value> {
        let value = |r: &str| regs.get(r).copied();
        let m = s.mnemonic.as_str();
        let dest = s.regs.first().cloned();
        let mut new: Option<Value> = None;
        match (self.arch, m) {
            (Arch::Thumb, "mov" | "movs" | "mov.w" | "movw" | "mvn" | "mvns") if s.mem.is_none() => {
                new = match (s.imms.first(), s.regs.get(1)) {
                    (Some(&v), None) if m.starts_with("mvn") => Some(Value::Const(u64::from(!(v as u32)))),
                    (Some(&v), None) => Some(Value::Const(u64::from(v as u32))),
                    (None, Some(src)) => value(src),
                    _ => None,
                };
            }
            (Arch::Thumb, "movt") => {
                new = match (dest.as_deref().and_then(value), s.imms.first()) {
                    (Some(Value::Const(lo)), Some(&hi)) => {
                        Some(Value::Const((lo & 0xffff) | (hi as u64 & 0xffff) << 16))
                    }
                    _ => None,
                };
            }
            (Arch::Thumb, "ldr" | "ldr.w") => {
                new = match &s.mem {
                    Some((base, disp)) if base == "pc" => {
                        let literal = ((at + 4) & !3).wrapping_add(*disp as u64);
                        match self.slot_ref(literal) {
                            Some(k) => {
                                found.refs_used.push(k);
                                Some(Value::GotOffset)
                            }
                            // A constant from the literal pool (a size too large for `movw`
                            // on cores without it), when no relocation rewrites it.
                            None if !(literal..literal + 4).any(|a| self.relocated.contains(&a)) => {
                                let at = usize::try_from(literal).ok()?;
                                let word = self.section.get(at..at.checked_add(4)?)?;
                                Some(Value::Const(u64::from(u32::from_le_bytes(word.try_into().ok()?))))
                            }
                            None => None,
                        }
                    }
                    Some((base, 0)) => match value(base) {
                        Some(Value::GotEntry) => Some(Value::SlotAddress),
                        Some(Value::SlotAddress) => Some(Value::Function),
                        _ => None,
                    },
                    _ => None,
                };
            }
            (Arch::Thumb, "add")
                if s.regs.last().is_some_and(|r| r == "pc")
                    && (s.regs.len() == 2 || (s.regs.len() == 3 && s.regs[1] == s.regs[0])) =>
            {
                new = match dest.as_deref().and_then(value) {
                    Some(Value::GotOffset) => Some(Value::GotEntry),
                    _ => None,
                };
            }
            (Arch::Riscv64 | Arch::Riscv32, "auipc") => {
                new = self.slot_ref(at).map(|k| {
                    found.refs_used.push(k);
                    Value::GotEntry
                });
            }
            (Arch::Riscv64 | Arch::Riscv32, "ld" | "lw" | "c.ld" | "c.lw") => {
                // Capstone gives the compressed loads as `rd, imm, rs1`.
                let mem = s.mem.clone().or_else(|| Some((s.regs.get(1)?.clone(), *s.imms.first()?)));
                new = match &mem {
                    Some((base, _)) if value(base) == Some(Value::GotEntry) => Some(Value::SlotAddress),
                    Some((base, 0)) if value(base) == Some(Value::SlotAddress) => Some(Value::Function),
                    _ => None,
                };
            }
            (Arch::Riscv64 | Arch::Riscv32, "li" | "c.li") => {
                new = s.imms.first().map(|&v| Value::Const(v as u64));
            }
            (Arch::Riscv64 | Arch::Riscv32, "lui" | "c.lui") => {
                new = s.imms.first().map(|&v| Value::Const(((v << 12) as i32) as i64 as u64));
            }
            (Arch::Riscv64 | Arch::Riscv32, "addi" | "addiw" | "c.addi" | "c.addiw") => {
                let src = s.regs.get(1).or(s.regs.first());
                new = match (src.map(String::as_str).and_then(value), s.imms.first()) {
                    (Some(Value::Const(c)), Some(&v)) if m.ends_with('w') => {
                        Some(Value::Const((c.wrapping_add(v as u64) as i32) as i64 as u64))
                    }
                    (Some(Value::Const(c)), Some(&v)) => Some(Value::Const(c.wrapping_add(v as u64))),
                    (Some(v), Some(0)) => Some(v),
                    _ => None,
                };
            }
            (Arch::Riscv64 | Arch::Riscv32, "mv" | "c.mv") => {
                new = s.regs.get(1).and_then(|r| value(r));
            }
            (Arch::X86_64, "mov") if !s.store => {
                let narrow = |v: u64| if s.narrow { v & 0xffff_ffff } else { v };
                new = match (s.regs.as_slice(), s.imms.first(), &s.mem) {
                    ([_], Some(&v), None) => Some(Value::Const(narrow(v as u64))),
                    ([_, src], None, None) => match value(src) {
                        Some(Value::Const(c)) => Some(Value::Const(narrow(c))),
                        v if !s.narrow => v,
                        _ => None,
                    },
                    // `mov reg, [rip + slot@GOTPCREL]`: the relocation lies in the instruction.
                    ([_], None, Some((base, _))) if base == "rip" => {
                        let k = self.refs.iter().position(|&r| (at..at + s.len).contains(&r))?;
                        found.refs_used.push(k);
                        Some(Value::SlotAddress)
                    }
                    ([_], None, Some((base, 0))) if value(base) == Some(Value::SlotAddress) && !s.narrow => {
                        Some(Value::Function)
                    }
                    _ => None,
                };
            }
            (Arch::X86_64, "xor") if s.regs.len() == 2 && s.regs[0] == s.regs[1] => new = Some(Value::Const(0)),
            (Arch::X86_64, "test") if s.regs.len() == 2 && s.regs[0] == s.regs[1] => {
                new = (value(&s.regs[0]) == Some(Value::Allocated)).then_some(Value::Allocated);
            }
            _ => {}
        }
        new
    }

    fn run(&self, code: &[u8]) -> std::result::Result<Found, String> {
        let end = self.start + code.len() as u64;
        let mut regs: BTreeMap<String, Value> = BTreeMap::new();
        let mut found = Found { sizes: Vec::new(), refs_used: Vec::new() };
        if matches!(self.arch, Arch::Riscv64 | Arch::Riscv32) {
            regs.insert("zero".into(), Value::Const(0));
        }
        let mut at = self.start;
        for _ in 0..MAX_STEPS {
            if at >= end {
                break;
            }
            let s = self.decode(code, at)?;
            let next = at + s.len;
            let m = s.mnemonic.as_str();
            // x86-64's `test` writes its finding to the flags, not to its first operand.
            let dest = if self.arch == Arch::X86_64 && m == "test" {
                Some("flags".to_string())
            } else {
                s.regs.first().cloned()
            };
            let value = |r: &str| regs.get(r).copied();
            let new = match (self.arch, m) {
                // A call through a register that holds the slot's function.
                (Arch::Thumb, "blx") | (Arch::Riscv64 | Arch::Riscv32, "jalr" | "c.jalr") | (Arch::X86_64, "call")
                    if s.regs.iter().any(|r| value(r) == Some(Value::Function))
                        || (self.arch == Arch::X86_64
                            && matches!(&s.mem, Some((b, 0)) if value(b) == Some(Value::SlotAddress))) =>
                {
                    let parts: Vec<Option<Value>> = self.arch.nbytes().iter().map(|r| value(r)).collect();
                    let n = match parts.as_slice() {
                        [Some(Value::Const(lo))] => *lo,
                        [Some(Value::Const(lo)), Some(Value::Const(0))] => *lo,
                        _ => return Err(format!("the call at {at:#x} asks for a size that is not a constant")),
                    };
                    found.sizes.push(n);
                    for r in self.arch.clobbered() {
                        regs.remove(*r);
                    }
                    regs.insert(self.arch.result().to_string(), Value::Allocated);
                    at = next;
                    continue;
                }
                // Follow the allocation's success: the branch taken when its result is not NULL,
                // or the fall-through of the one taken when it is.
                _ if self.transfers(&s) => {
                    // x86-64 tests the result into the flags (`test rax, rax`), then jumps on them.
                    let tested = s.regs.first().is_some_and(|r| value(r) == Some(Value::Allocated))
                        || (self.arch == Arch::X86_64 && value("flags") == Some(Value::Allocated));
                    let against_zero = s.regs.len() == 1 || s.regs.get(1).is_some_and(|r| r == "zero");
                    let target = || s.target.ok_or_else(|| format!("a branch without a target at {at:#x}"));
                    match m.trim_start_matches("c.") {
                        "cbnz" | "bnez" if tested => at = target()?,
                        "bne" if tested && against_zero => at = target()?,
                        "jne" if tested => at = target()?,
                        "cbz" | "beqz" if tested => at = next,
                        "beq" if tested && against_zero => at = next,
                        "je" if tested => at = next,
                        _ => break,
                    }
                    continue;
                }
                _ => self.value_of(&s, at, &regs, &mut found),
            };
            for w in &s.writes {
                regs.remove(w);
            }
            if let (Some(d), Some(v)) = (dest, new) {
                regs.insert(d, v);
            }
            if matches!(self.arch, Arch::Riscv64 | Arch::Riscv32) {
                regs.insert("zero".into(), Value::Const(0));
            }
            at = next;
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lib0.o` of a fixture export.
    fn lib0(name: &str) -> Vec<u8> {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax").join(name).join("model.tar");
        let raw = std::fs::read(path).unwrap();
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut v).unwrap();
            v
        } else {
            raw
        };
        let mut archive = tar::Archive::new(&bytes[..]);
        for e in archive.entries().unwrap() {
            let mut e = e.unwrap();
            if e.path().unwrap().ends_with("lib0.o") {
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut v).unwrap();
                return v;
            }
        }
        panic!("no lib0.o in {name}")
    }

    /// The sizes read from the machine code are those TVM's C target states for the same model
    /// (`cnn-f32-fused-c`'s `TVMBackendAllocWorkspace` calls: 1,152 and 4,608 bytes).
    #[test]
    fn thumb_riscv_and_x86_kernels_ask_for_the_sizes_their_c_states() {
        let thumb = object_scratch("lib0.o", &lib0("cnn-f32-fused-llvm-thumbv7em")).unwrap();
        let sizes: Vec<(&str, &[u64])> = thumb.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
        assert_eq!(
            sizes,
            [("fused_conv2d1_relu1_compute_", &[1152u64][..]), ("fused_conv2d_add_relu_compute_", &[4608][..])],
            "{thumb:?}"
        );
        let x86 = object_scratch("lib0.o", &lib0("cnn-f32-fused-llvm-x86_64")).unwrap();
        assert_eq!(x86, thumb, "the same kernels for x86-64 ask for the same sizes");
        let int8 = object_scratch("lib0.o", &lib0("int8cnn-fused-llvm-thumbv7em")).unwrap();
        assert!(!int8.is_empty() && int8.values().flatten().all(|&n| n > 0), "{int8:?}");
        let rv = object_scratch("lib0.o", &lib0("onnx-cnn-fused-llvm-rv64")).unwrap();
        assert!(!rv.is_empty() && rv.values().flatten().all(|&n| n > 0), "{rv:?}");
        // No slot, no scratch.
        assert!(object_scratch("lib0.o", &lib0("mlp-f32-fused-llvm-thumbv7em")).unwrap().is_empty());
    }

    /// A call whose size register is not a constant is refused naming the function; so is a
    /// slot reference off the path the walk follows (here: every instruction replaced by `nop`
    /// after the literal load, so the load is seen and no call is).
    #[test]
    fn sizes_not_read_are_refused_naming_the_function() {
        let mut bytes = lib0("cnn-f32-fused-llvm-thumbv7em");
        // `mov.w r2, #1152` (f44f 6290) → `mov r2, r8` (4642) + `nop` (bf00).
        let at = bytes.windows(4).position(|w| w == [0x4f, 0xf4, 0x90, 0x62]).unwrap();
        bytes[at..at + 4].copy_from_slice(&[0x42, 0x46, 0x00, 0xbf]);
        let e = object_scratch("lib0.o", &bytes).unwrap_err().to_string();
        assert!(e.contains("fused_conv2d1_relu1_compute_") && e.contains("not a constant"), "{e}");
    }
}
