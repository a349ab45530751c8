//! What an instruction leaves in its destination register, per architecture: constants, the
//! slot's GOT entry, its address and the function loaded from it.

use std::collections::BTreeMap;

use super::step::{Arch, Step};
use super::{Found, Value, Walk};

impl Walk<'_> {
    /// What `s` (at `at`) leaves in its destination register, if the walk knows it: constants,
    /// the slot's GOT entry, its address and the function loaded from it. Slot references
    /// used are noted in `found`.
    pub(super) fn value_of(
        &self,
        s: &Step,
        at: u64,
        regs: &BTreeMap<String, Value>,
        found: &mut Found,
    ) -> Option<Value> {
        match self.arch {
            Arch::Thumb => self.thumb(s, at, regs, found),
            Arch::Riscv64 | Arch::Riscv32 => self.riscv(s, at, regs, found),
            Arch::X86_64 => self.x86(s, at, regs, found),
        }
    }

    /// Thumb: `mov`/`movw`/`movt`/`mvn`, literal loads, `add rX, pc`, loads through the slot chain.
    pub(super) fn thumb(&self, s: &Step, at: u64, regs: &BTreeMap<String, Value>, found: &mut Found) -> Option<Value> {
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
                    // A reload of what was spilled (Thumb-1 keeps the slot's function there).
                    Some((base, d)) if base == "sp" => value(&stack_slot(*d)),
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
            // Thumb-1 builds sizes from 8-bit immediates: `movs r0, #75; lsls r2, r0, #4`.
            (Arch::Thumb, _) if s.mem.is_none() && s.imms.len() == 1 && s.regs.len() <= 2 => {
                let src = s.regs.last().map(String::as_str).and_then(value);
                new = match (src, thumb_arith(m), s.imms[0]) {
                    (Some(Value::Const(c)), Some(op), v) => op(c as u32, v as u32).map(|r| Value::Const(u64::from(r))),
                    // `cmp rX, #0` of the allocation's result: the flags hold the test.
                    (Some(Value::Allocated), None, 0) if matches!(m, "cmp" | "cmp.w") => Some(Value::Allocated),
                    _ => None,
                };
            }
            _ => {}
        }
        new
    }

    /// RISC-V: `auipc` of the slot's GOT entry, loads, `li`/`lui`/`addi(w)`/`mv`.
    pub(super) fn riscv(&self, s: &Step, at: u64, regs: &BTreeMap<String, Value>, found: &mut Found) -> Option<Value> {
        let value = |r: &str| regs.get(r).copied();
        let m = s.mnemonic.as_str();
        let mut new: Option<Value> = None;
        match (self.arch, m) {
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
            _ => {}
        }
        new
    }

    /// x86-64: `mov` of constants, registers and through the GOT, `xor r, r`, `test r, r`.
    pub(super) fn x86(&self, s: &Step, at: u64, regs: &BTreeMap<String, Value>, found: &mut Found) -> Option<Value> {
        let value = |r: &str| regs.get(r).copied();
        let m = s.mnemonic.as_str();
        let mut new: Option<Value> = None;
        match (self.arch, m) {
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
}

/// Thumb's arithmetic of a register and an immediate that sizes are built with, by mnemonic.
fn thumb_arith(m: &str) -> Option<fn(u32, u32) -> Option<u32>> {
    Some(match m.trim_end_matches(".w") {
        "lsl" | "lsls" => |c, v| c.checked_shl(v),
        "lsr" | "lsrs" => |c, v| c.checked_shr(v),
        "add" | "adds" | "addw" => |c, v| Some(c.wrapping_add(v)),
        "sub" | "subs" | "subw" => |c, v| Some(c.wrapping_sub(v)),
        "orr" | "orrs" => |c, v| Some(c | v),
        _ => return None,
    })
}

/// The name under which the walk keeps a word stored at `sp + d`.
fn stack_slot(d: i64) -> String {
    format!("[sp{d:+}]")
}

impl Walk<'_> {
    /// Thumb: a word stored to the stack keeps its value for a reload (`str r0, [sp, #124]` …
    /// `ldr r6, [sp, #124]`); any other store, or any change of `sp`, forgets what the stack held.
    pub(super) fn thumb_spill(&self, s: &Step, regs: &mut BTreeMap<String, Value>) {
        let m = s.mnemonic.trim_end_matches(".w");
        let moves_sp = s.writes.iter().any(|w| w == "sp");
        let store = ["st", "push", "vst", "vpush"].iter().any(|p| m.starts_with(p));
        match &s.mem {
            Some((base, d)) if m == "str" && base == "sp" && !moves_sp => {
                regs.retain(|k, _| (0..4).chain(-3..0).all(|o| *k != stack_slot(d + o)));
                if let Some(v) = s.regs.first().and_then(|r| regs.get(r)).copied() {
                    regs.insert(stack_slot(*d), v);
                }
            }
            _ if store || moves_sp => regs.retain(|k, _| !k.starts_with("[sp")),
            _ => {}
        }
    }
}
