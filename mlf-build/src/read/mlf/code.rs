//! The generated code of an MLF module: its C sources (scanned), objects and headers, and the
//! constant arrays compiled into the C.

use crate::error::{Context, Error, Result};
use crate::model::{CConstant, CFile, CSource, Code, ConstantKind, ObjectFile};
use crate::read::archive::Archive;
use crate::read::blob::device::{blockers, device_modules_in_code};

/// The code of module `m` (`several`: the archive holds other modules, whose files are named
/// after them), and the reasons it cannot be built found in it (device modules in a blob).
pub(super) fn read_code(
    archive: &Archive,
    m: &str,
    several: bool,
    constants_bytes: u64,
) -> Result<(Code, Vec<String>)> {
    let mut code = Code::default();
    let module_prefix = format!("{m}_");
    let mine = |name: &str| -> bool {
        let file = name.rsplit('/').next().unwrap_or(name);
        !several || file.starts_with(&module_prefix)
    };
    for (member, bytes) in archive.files_in("codegen/host/src", &[".c", ".cc", ".cpp"]) {
        if !mine(member) {
            continue;
        }
        check_file_name(member)?;
        let text = bytes.as_str().in_member(member)?;
        let scan = CFile::scan(text);
        if let Some(at) = scan.unclosed {
            let line = text.get(..at).map_or(0, |t| t.matches('\n').count()) + 1;
            return Err(Error::invalid(
                "the { opened here is never closed: the C ends inside a block (the file is truncated)",
            )
            .in_member(member)
            .at(format!("line {line}")));
        }
        code.sources.push(CSource { member: member.to_string(), bytes: bytes.clone(), scan });
    }
    for (member, bytes) in archive.files_in("codegen/host/lib", &[".o", ".obj"]) {
        if mine(member) {
            check_file_name(member)?;
            crate::read::object_check::check(member, bytes, None)?;
            code.objects.push(ObjectFile { member: member.to_string(), bytes: bytes.clone() });
        }
    }
    for name in archive.names() {
        if let Some(rel) = name.strip_prefix("codegen/host/include/") {
            check_file_name(name)?;
            code.headers.push((rel.to_string(), archive.get(name).expect("listed").clone()));
        }
    }
    // A module blob in the code (never written by TVM into an MLF) must not be dropped silently.
    let embedded = device_modules_in_code(&code)?;
    code.constants = c_constants(&code.sources, constants_bytes)?;
    if code.sources.is_empty() && code.objects.is_empty() {
        return Err(Error::missing(format!(
            "generated code: no codegen/host/src/*.c and no codegen/host/lib/*.o{}",
            if several { format!(" for module {m}") } else { String::new() }
        )));
    }
    Ok((code, blockers(&embedded)))
}

/// Constant arrays defined in the C, with their sizes. An error when a size, or the total that
/// reports and budgets add up, does not fit in a `u64` (a damaged array length).
fn c_constants(sources: &[CSource], constants_size_bytes: u64) -> Result<Vec<CConstant>> {
    let mut out: Vec<CConstant> = Vec::new();
    let mut total = 0u64;
    let mut push = |c: CConstant, what: String| -> Result<()> {
        total = c.bytes.checked_add(total).ok_or_else(|| {
            Error::invalid(format!("{what}: the constants in the C add up to more than 2^64 bytes"))
                .in_member(c.member.clone())
        })?;
        out.push(c);
        Ok(())
    };
    for s in sources {
        for g in &s.scan.globals {
            if g.is_extern {
                continue;
            }
            if g.name == "global_const_workspace" {
                let what = format!("{} ({constants_size_bytes} bytes)", g.name);
                push(
                    CConstant {
                        name: g.name.clone(),
                        member: s.member.clone(),
                        bytes: constants_size_bytes,
                        kind: ConstantKind::Pool,
                    },
                    what,
                )?;
                continue;
            }
            let is_const = g.ty.split_whitespace().any(|w| w == "const");
            let looks_like_weights = g.name.starts_with("__tvm_param__")
                || g.name.contains("fused_constant")
                || g.name.contains("_constant");
            if !is_const || !looks_like_weights {
                continue;
            }
            let elem = match g.ty.split_whitespace().last().unwrap_or("") {
                "float" | "int32_t" | "uint32_t" | "int" => 4,
                "double" | "int64_t" | "uint64_t" => 8,
                "int16_t" | "uint16_t" | "half" => 2,
                "int8_t" | "uint8_t" | "char" => 1,
                _ => continue,
            };
            if let Some(n) = g.array_len {
                let what = format!("{} ({n} elements of {elem} bytes)", g.name);
                let bytes = n.checked_mul(elem).ok_or_else(|| {
                    Error::invalid(format!("{what}: the array is larger than 2^64 bytes")).in_member(s.member.clone())
                })?;
                push(
                    CConstant {
                        name: g.name.clone(),
                        member: s.member.clone(),
                        bytes,
                        kind: ConstantKind::StaticArray,
                    },
                    what,
                )?;
            }
        }
    }
    Ok(out)
}

/// The longest file name (one path component, in bytes) of a member the build writes out: file
/// systems allow 255, and the build adds a little (`.o`, `.su`, a number).
const MAX_FILE_NAME: usize = 200;

/// Refuses a member whose file name (or a folder in its path) is too long to be written where the
/// build lays it out, naming the member rather than the build folder the write would fail in.
fn check_file_name(member: &str) -> Result<()> {
    match member.split('/').find(|c| c.len() > MAX_FILE_NAME) {
        Some(c) => Err(Error::unsupported(format!(
            "a name of {} bytes in its path; the build writes the archive's code into files, whose names may \
             have at most {MAX_FILE_NAME} bytes",
            c.len()
        ))
        .in_member(crate::error::shown(member))),
        None => Ok(()),
    }
}
