//! Scratch sizes of kernels compiled to an LLVM object (`lib0.o`), read from their machine code.
//!
//! TVM's C target states each `TVMBackendAllocWorkspace(…, nbytes, …)` in the source; its LLVM
//! target puts the same call in machine code, reached through the weak slot
//! `__TVMBackendAllocWorkspace` (`R_ARM_GOT_PREL` on Cortex-M, `R_RISCV_GOT_HI20` on RISC-V,
//! `R_X86_64_REX_GOTPCRELX` on x86-64), with
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

mod step;
mod values;

use step::Arch;

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

impl Walk<'_> {
    /// The slot reference (index into `refs`) of a relocation at `at`, if any.
    fn slot_ref(&self, at: u64) -> Option<usize> {
        self.refs.iter().position(|&r| r == at)
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
            let s = step::decode(self.cs, self.arch, self.start, code, at)?;
            let next = at + s.len;
            let m = s.mnemonic.as_str();
            // x86-64's `test` and Arm's `cmp` write their finding to the flags, not to their
            // first operand.
            let dest =
                if (self.arch == Arch::X86_64 && m == "test") || (self.arch == Arch::Thumb && m.starts_with("cmp")) {
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
                _ if step::transfers(self.arch, &s) => {
                    // x86-64 tests the result into the flags (`test rax, rax`), Thumb-1 too
                    // (`cmp r0, #0`), then they jump on them.
                    let flags = self.arch != Arch::Riscv64
                        && self.arch != Arch::Riscv32
                        && s.regs.is_empty()
                        && value("flags") == Some(Value::Allocated);
                    let tested = s.regs.first().is_some_and(|r| value(r) == Some(Value::Allocated)) || flags;
                    let against_zero = s.regs.len() == 1 || s.regs.get(1).is_some_and(|r| r == "zero") || flags;
                    let target = || s.target.ok_or_else(|| format!("a branch without a target at {at:#x}"));
                    match m.trim_start_matches("c.").trim_end_matches(".n").trim_end_matches(".w") {
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
            if self.arch == Arch::Thumb {
                self.thumb_spill(&s, &mut regs);
            }
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
        // Thumb-1 (Cortex-M0+): `movs r0, #75; lsls r2, r0, #4`, then `cmp r0, #0; bne`.
        let v6m = object_scratch("lib0.o", &lib0("cnn-f32-fused-llvm-thumbv6m")).unwrap();
        assert_eq!(v6m, thumb, "the same kernels for Thumb-1 ask for the same sizes");
        let int8 = object_scratch("lib0.o", &lib0("int8cnn-fused-llvm-thumbv7em")).unwrap();
        assert!(!int8.is_empty() && int8.values().flatten().all(|&n| n > 0), "{int8:?}");
        let rv = object_scratch("lib0.o", &lib0("onnx-cnn-fused-llvm-rv64")).unwrap();
        assert!(!rv.is_empty() && rv.values().flatten().all(|&n| n > 0), "{rv:?}");
        // No slot, no scratch.
        assert!(object_scratch("lib0.o", &lib0("mlp-f32-fused-llvm-thumbv7em")).unwrap().is_empty());
    }

    /// A call whose size register is not a constant is refused naming the function: the fused
    /// CNN's object with `mov.w r2, #1152` before the call patched into `mov r2, r8`.
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
