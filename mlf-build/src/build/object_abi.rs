//! Whether an object file fits the build target beyond its architecture: for Arm, the
//! architecture version its build attributes name (a core runs it) and where it passes floats
//! (VFP or core registers, as the target's C library does); for RISC-V, its float ABI and
//! compressed instructions. A Cortex-M0+ object links into a Cortex-M4F program without a word
//! from the linker, then computes infinities: its floats travel in core registers, the C
//! library's in VFP ones.

use object::read::elf::{ElfFile32, SectionHeader};
use object::{Endianness, FileFlags, Object, elf};

use crate::error::{Error, Result};

/// Refuses an object (parsed by `targets::check_object_arch`, which checked its architecture)
/// whose code or calling convention the `target` cannot take, naming the member, the attribute
/// and what to rebuild; targets other than Arm and RISC-V have nothing to check.
pub fn check_object_abi(member: &str, file: &object::File<'_>, target: &str) -> Result<()> {
    let arch = target.split('-').next().unwrap_or("");
    match file {
        object::File::Elf32(elf) if arch.starts_with("thumb") => arm(member, elf, target, arch),
        _ if arch.starts_with("riscv") => riscv(member, file, target, arch),
        _ => Ok(()),
    }
}

/// What an Arm object's `.ARM.attributes` (vendor `aeabi`, file scope) say; `None` when it has
/// no such section (nothing is claimed, nothing is checked).
#[derive(Debug, Default, PartialEq)]
struct ArmAttributes {
    /// `Tag_CPU_arch` (6).
    cpu_arch: Option<u64>,
    /// `Tag_ABI_VFP_args` (28): 0 (or absent) core registers, 1 VFP registers, 2 toolchain
    /// specific, 3 compatible with both.
    vfp_args: Option<u64>,
}

fn arm_attributes(file: &ElfFile32<'_, Endianness>) -> std::result::Result<Option<ArmAttributes>, object::read::Error> {
    let endian = file.endian();
    let mut found = None;
    for section in file.elf_section_table().iter() {
        if section.sh_type(endian) != elf::SHT_ARM_ATTRIBUTES {
            continue;
        }
        let attributes = section.attributes(endian, file.data())?;
        let seen = found.get_or_insert_with(ArmAttributes::default);
        let mut subsections = attributes.subsections()?;
        while let Some(sub) = subsections.next()? {
            if sub.vendor() != b"aeabi" {
                continue;
            }
            let mut subsubsections = sub.subsubsections();
            while let Some(subsub) = subsubsections.next()? {
                if subsub.tag() != elf::Tag_File {
                    continue;
                }
                let mut reader = subsub.attributes();
                // Each tag's value is a string or a ULEB128 number, by the Arm ABI's rule.
                while let Some(tag) = reader.read_tag()? {
                    match tag {
                        4 | 5 | 67 => {
                            reader.read_string()?;
                        }
                        32 => {
                            reader.read_integer()?;
                            reader.read_string()?;
                        }
                        t if t > 32 && t % 2 == 1 => {
                            reader.read_string()?;
                        }
                        6 => seen.cpu_arch = Some(reader.read_integer()?),
                        28 => seen.vfp_args = Some(reader.read_integer()?),
                        _ => {
                            reader.read_integer()?;
                        }
                    }
                }
            }
        }
    }
    Ok(found)
}

/// The Arm architecture a `Tag_CPU_arch` value names.
fn arm_arch_name(v: u64) -> String {
    const NAMES: [&str; 23] = [
        "pre-Armv4",
        "Armv4",
        "Armv4T",
        "Armv5T",
        "Armv5TE",
        "Armv5TEJ",
        "Armv6",
        "Armv6KZ",
        "Armv6T2",
        "Armv6K",
        "Armv7",
        "Armv6-M",
        "Armv6S-M",
        "Armv7E-M",
        "Armv8-A",
        "Armv8-R",
        "Armv8-M Baseline",
        "Armv8-M Mainline",
        "Armv8.1-A",
        "Armv8.2-A",
        "Armv8.3-A",
        "Armv8.1-M Mainline",
        "Armv9-A",
    ];
    usize::try_from(v)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("Arm architecture {v}"), |n| n.to_string())
}

/// The `Tag_CPU_arch` values whose code a target's core runs, for the Cortex-M targets.
fn arm_runs(arch: &str) -> Option<&'static [u64]> {
    Some(match arch {
        a if a.starts_with("thumbv6m") => &[11, 12],
        a if a.starts_with("thumbv7m") => &[10, 11, 12],
        a if a.starts_with("thumbv7em") => &[10, 11, 12, 13],
        a if a.starts_with("thumbv8m.base") => &[11, 12, 16],
        a if a.starts_with("thumbv8m.main") => &[10, 11, 12, 16, 17],
        _ => return None,
    })
}

fn arm(member: &str, file: &ElfFile32<'_, Endianness>, target: &str, arch: &str) -> Result<()> {
    let attributes = arm_attributes(file)
        .map_err(|e| Error::invalid(format!("{member}: its .ARM.attributes section cannot be read: {e}")))?;
    let Some(a) = attributes else { return Ok(()) };
    if let (Some(v), Some(runs)) = (a.cpu_arch, arm_runs(arch))
        && !runs.contains(&v)
    {
        return Err(Error::unsupported(format!(
            "{member} is code for {} (its .ARM.attributes Tag_CPU_arch = {v}), which a {target} core does not run; \
             rebuild the model for this core (TVM: `mtriple`/`mcpu` of the target) or use the `c` target",
            arm_arch_name(v)
        )));
    }
    let hard = target.ends_with("eabihf");
    let (object_passes, target_passes, fix) = match (a.vfp_args.unwrap_or(0), hard) {
        (0, true) => ("core registers (soft-float ABI)", "VFP registers", "`mfloat-abi=hard` and an `-eabihf` triple"),
        (1, false) => ("VFP registers (hard-float ABI)", "core registers", "`mfloat-abi=soft` and an `-eabi` triple"),
        _ => return Ok(()),
    };
    Err(Error::unsupported(format!(
        "{member} passes floats in {object_passes}, says its .ARM.attributes (Tag_ABI_VFP_args); a {target} \
         program passes them in {target_passes}: linked together, every float between them would be wrong; rebuild \
         the model for this target (TVM: {fix}) or use the `c` target"
    )))
}

fn riscv(member: &str, file: &object::File<'_>, target: &str, arch: &str) -> Result<()> {
    let FileFlags::Elf { e_flags: flags, .. } = file.flags() else {
        return Err(Error::invalid(format!("{member}: not an ELF object")));
    };
    let extensions = arch.get(7..).unwrap_or("");
    let abi_name = |abi: u32| match abi {
        elf::EF_RISCV_FLOAT_ABI_SOFT => "soft-float",
        elf::EF_RISCV_FLOAT_ABI_SINGLE => "single-float",
        elf::EF_RISCV_FLOAT_ABI_DOUBLE => "double-float",
        _ => "quad-float",
    };
    let want = if extensions.contains(['g', 'd']) {
        elf::EF_RISCV_FLOAT_ABI_DOUBLE
    } else if extensions.contains('f') {
        elf::EF_RISCV_FLOAT_ABI_SINGLE
    } else {
        elf::EF_RISCV_FLOAT_ABI_SOFT
    };
    let has = flags & elf::EF_RISCV_FLOAT_ABI;
    if has != want {
        return Err(Error::unsupported(format!(
            "{member} uses the {} ABI (its ELF header's e_flags), a {target} program the {} one: they do not link; \
             rebuild the model for this target (TVM: `mabi` of the target, e.g. lp64d for riscv64gc) or use the `c` target",
            abi_name(has),
            abi_name(want)
        )));
    }
    if flags & elf::EF_RISCV_RVC != 0 && !extensions.contains('c') {
        return Err(Error::unsupported(format!(
            "{member} holds compressed instructions (its ELF header's e_flags: RVC), which a {target} core does not \
             run; rebuild the model without `+c` or use the `c` target"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check as the build makes it: on the object parsed.
    fn check_object(bytes: &[u8], target: &str) -> Result<()> {
        check_object_abi("lib0.o", &object::File::parse(bytes).unwrap(), target)
    }

    fn attributes_of(bytes: &[u8]) -> std::result::Result<Option<ArmAttributes>, object::read::Error> {
        arm_attributes(&ElfFile32::parse(bytes).unwrap())
    }

    /// An ELF32 Arm object with one `.ARM.attributes` section holding `attributes` (file scope).
    fn arm_object(attributes: &[u8]) -> Vec<u8> {
        use object::write::{Object, StandardSection};
        let mut obj = Object::new(object::BinaryFormat::Elf, object::Architecture::Arm, Endianness::Little);
        let text = obj.section_id(StandardSection::Text);
        obj.append_section_data(text, &[0x70, 0x47], 2);
        let mut data = vec![b'A'];
        let sub_len = 4 + 6 + 1 + 4 + attributes.len();
        data.extend_from_slice(&(sub_len as u32).to_le_bytes());
        data.extend_from_slice(b"aeabi\0");
        data.push(1);
        data.extend_from_slice(&((1 + 4 + attributes.len()) as u32).to_le_bytes());
        data.extend_from_slice(attributes);
        let s =
            obj.add_section(Vec::new(), b".ARM.attributes".to_vec(), object::SectionKind::Elf(elf::SHT_ARM_ATTRIBUTES));
        obj.append_section_data(s, &data, 1);
        obj.write().unwrap()
    }

    #[test]
    fn arm_attributes_are_read_past_string_and_number_tags() {
        // Tag_CPU_name "cortex-m0plus", Tag_CPU_arch v6S-M, Tag_compatibility 0 "", Tag_ABI_VFP_args 1.
        let mut a = vec![5];
        a.extend_from_slice(b"cortex-m0plus\0");
        a.extend_from_slice(&[6, 12, 32, 0, 0, 28, 1]);
        let got = attributes_of(&arm_object(&a)).unwrap();
        assert_eq!(got, Some(ArmAttributes { cpu_arch: Some(12), vfp_args: Some(1) }));
        // Truncated inside a string: an error, not a panic.
        let mut bad = vec![5];
        bad.extend_from_slice(b"cortex");
        assert!(attributes_of(&arm_object(&bad)).is_err());
    }

    /// The mismatches that link and then compute garbage, or fault: each refused naming the
    /// member and the attribute; the matching pairs pass.
    #[test]
    fn arm_objects_for_another_float_abi_or_a_larger_core_are_refused() {
        let v6m_soft = arm_object(&[6, 12]);
        let v7em_hard = arm_object(&[6, 13, 28, 1]);
        let e = check_object(&v6m_soft, "thumbv7em-none-eabihf").unwrap_err().to_string();
        assert!(e.contains("lib0.o") && e.contains("Tag_ABI_VFP_args") && e.contains("core registers"), "{e}");
        let e = check_object(&v7em_hard, "thumbv6m-none-eabi").unwrap_err().to_string();
        assert!(e.contains("Armv7E-M") && e.contains("Tag_CPU_arch"), "{e}");
        let e = check_object(&v7em_hard, "thumbv7em-none-eabi").unwrap_err().to_string();
        assert!(e.contains("VFP registers (hard-float ABI)"), "{e}");
        check_object(&v6m_soft, "thumbv6m-none-eabi").unwrap();
        check_object(&v6m_soft, "thumbv7m-none-eabi").unwrap();
        check_object(&v7em_hard, "thumbv7em-none-eabihf").unwrap();
        // No attributes: nothing claimed.
        let mut obj =
            object::write::Object::new(object::BinaryFormat::Elf, object::Architecture::Arm, Endianness::Little);
        let text = obj.section_id(object::write::StandardSection::Text);
        obj.append_section_data(text, &[0x70, 0x47], 2);
        check_object(&obj.write().unwrap(), "thumbv7em-none-eabihf").unwrap();
    }

    #[test]
    fn riscv_objects_for_another_float_abi_or_without_compressed_support_are_refused() {
        let object = |flags: u32| {
            let mut obj = object::write::Object::new(
                object::BinaryFormat::Elf,
                object::Architecture::Riscv64,
                Endianness::Little,
            );
            obj.flags = object::FileFlags::Elf { os_abi: 0, abi_version: 0, e_flags: flags };
            obj.write().unwrap()
        };
        let double_rvc = object(elf::EF_RISCV_FLOAT_ABI_DOUBLE | elf::EF_RISCV_RVC);
        check_object(&double_rvc, "riscv64gc-unknown-none-elf").unwrap();
        let e = check_object(&object(elf::EF_RISCV_RVC), "riscv64gc-unknown-none-elf").unwrap_err();
        assert!(e.to_string().contains("soft-float ABI") && e.to_string().contains("double-float"), "{e}");
        check_object(&object(0), "riscv64imac-unknown-none-elf").unwrap();
        let e = check_object(&double_rvc, "riscv64imac-unknown-none-elf").unwrap_err().to_string();
        assert!(e.contains("double-float"), "{e}");
    }
}
