//! A Relax export as mlf's model description: the lowered program as the executor, its inputs
//! (names from `param_names`, dtype and shape from the checks) and outputs (positional), its
//! weights as parameters (named `c<n>` after their constant, zero-copy slices of the
//! executable), and its kernels (`lib0.c` or `lib0.o`) as the code to compile, with mlf's
//! tvm-ffi headers as the headers they include. `devc.c`/`devc.o` (the blob) is not compiled:
//! everything in it is in the description.

use std::path::Path;

use super::lower::lower;
use super::{decode, payload_of};
use crate::error::{Context, Error, Result};
use crate::model::{
    CFile, CSource, Code, Executor, MemoryInfo, ModelDesc, ModelFormat, ObjectFile, ParamInfo, RelaxExec, TensorInfo,
};
use crate::read::archive::Archive;
use crate::read::blob::source::Scan;
use crate::support::bytes::Bytes;
use crate::support::hash::{FNV_OFFSET, fnv1a};
use crate::support::names;

/// The headers a Relax export's kernels include that mlf writes (beside DLPack's, which every
/// build has).
const FFI_HEADERS: &[(&str, &str)] = &[
    ("tvm/ffi/c_api.h", include_str!("../../../include/tvm/ffi/c_api.h")),
    ("tvm/ffi/extra/c_env_api.h", include_str!("../../../include/tvm/ffi/extra/c_env_api.h")),
    ("tvm/runtime/base.h", include_str!("../../../include/tvm/runtime/base.h")),
];

/// The blob's file in an export, which is not compiled.
fn is_blob_file(member: &str) -> bool {
    let file = member.rsplit('/').next().unwrap_or(member);
    file == "devc.c" || file == "devc.o"
}

/// Reads the Relax export `archive` (scanned as `scan`) at `path`. `Ok(None)` when its blob
/// holds no Relax executable (another kind of TVM export).
pub fn read(path: &Path, scan: &Scan, archive: &Archive) -> Result<Option<ModelDesc>> {
    let Some(payload) = payload_of(scan).map_err(|e| e.in_file(path))? else { return Ok(None) };
    let ex = decode(payload.as_slice()).map_err(|e| e.at("relax.VMExecutable").in_file(path))?;
    let program = lower(&ex).map_err(|e| e.in_member("relax.VMExecutable").in_file(path))?;
    let code = kernels(archive).in_file(path)?;
    let tensor = |t: usize, name: &str, source: &str| -> Result<TensorInfo> {
        let x = &program.tensors[t];
        let shape = x
            .shape
            .iter()
            .map(|&d| u64::try_from(d).map_err(|_| Error::invalid(format!("tensor {name}: negative dimension {d}"))))
            .collect::<Result<Vec<u64>>>()?;
        Ok(TensorInfo {
            name: name.to_string(),
            ident: names::field_ident(name),
            dtype: x.dtype,
            shape,
            shape_source: source.to_string(),
            dtype_source: source.to_string(),
        })
    };
    let mut inputs = Vec::new();
    for i in &program.inputs {
        inputs.push(tensor(i.tensor, &i.name, "the executable's input checks").in_file(path)?);
    }
    let mut outputs = Vec::new();
    for (k, &o) in program.outputs.iter().enumerate() {
        outputs.push(tensor(o, &format!("output{k}"), "the executable's program").in_file(path)?);
    }
    dedupe_idents(&mut inputs).in_file(path)?;
    let mut params = Vec::new();
    for w in &program.weights {
        let data = payload.slice(w.data.clone()).ok_or_else(|| {
            Error::invalid(format!("constant c[{}]: its bytes lie outside the executable", w.constant)).in_file(path)
        })?;
        let shape = w.shape.iter().map(|&d| d.max(0) as u64).collect();
        params.push(ParamInfo { name: format!("c{}", w.constant), dtype: w.dtype, shape, data, linked: None });
    }
    let functions = program.kernels().iter().map(|k| format!("__tvm_ffi_{k}")).collect();
    let mut h = fnv1a(FNV_OFFSET, payload.as_slice());
    for s in &code.sources {
        h = fnv1a(h, s.bytes.as_slice());
    }
    for o in &code.objects {
        h = fnv1a(h, o.bytes.as_slice());
    }
    let mut desc = ModelDesc {
        path: path.to_path_buf(),
        format: ModelFormat::Relax,
        name: "default".into(),
        executor: Executor::Relax(RelaxExec { program, functions }),
        inputs,
        outputs,
        params,
        memory: MemoryInfo::default(),
        code,
        targets: Vec::new(),
        facts: Vec::new(),
        warnings: archive.warnings().to_vec(),
        blockers: Vec::new(),
        content_hash: h,
    };
    let Executor::Relax(r) = &desc.executor else { unreachable!("set above") };
    let (version, storage) = (r.program.version.clone(), r.program.storage_sum());
    desc.fact("executable version", version, "relax.VMExecutable");
    desc.fact("TVM's storage", format!("{storage} bytes (sum of alloc_storage)"), "relax.VMExecutable");
    desc.memory.workspace_bytes = storage;
    check_tensors(&desc).in_file(path)?;
    desc.blockers.extend(float16_kernels(&desc.code));
    Ok(Some(desc))
}

/// Makes input identifiers unique (two names may sanitise to one).
fn dedupe_idents(ts: &mut [TensorInfo]) -> Result<()> {
    let raws: Vec<&str> = ts.iter().map(|t| t.name.as_str()).collect();
    let idents = names::unique_idents(&raws)?;
    for (t, id) in ts.iter_mut().zip(idents) {
        t.ident = id;
    }
    Ok(())
}

/// Every tensor the generated module reads or hands out has a size.
fn check_tensors(desc: &ModelDesc) -> Result<()> {
    for t in desc.inputs.iter().chain(&desc.outputs) {
        t.bytes_checked()?;
    }
    Ok(())
}

/// C kernels that compute in float16: TVM's C target writes them with a type `half` it never
/// defines, and the C compilers mlf builds with have no IEEE half type with TVM's rounding on
/// every target (arm-none-eabi-gcc and riscv64-unknown-elf-gcc 12 have no `_Float16`), so such
/// an export is refused, naming the file. (LLVM objects compute float16 themselves.)
fn float16_kernels(code: &Code) -> Option<String> {
    let s = code.sources.iter().find(|s| s.bytes.as_slice().windows(7).any(|w| w == b"(half*)"))?;
    Some(format!(
        "{}: its kernels compute in float16 (the C type `half`, which TVM's C target leaves undefined \
         and C compilers for Cortex-M and RISC-V have no IEEE type for): keep float16 out of the model \
         (compute in float32) or export it with an LLVM target (`{{\"kind\": \"llvm\", …}}`), whose objects \
         compute float16 themselves",
        s.member
    ))
}

/// The kernels of an export: its C files other than the blob's, or else its objects.
fn kernels(archive: &Archive) -> Result<Code> {
    let mut code = Code::default();
    let members: Vec<String> = archive.names().map(str::to_string).collect();
    for m in &members {
        if is_blob_file(m) {
            continue;
        }
        let bytes = archive.require(m)?;
        if m.ends_with(".c") {
            let text = bytes.as_str().in_member(m)?;
            let scan = CFile::scan(text);
            if let Some(at) = scan.unclosed {
                let line = text.get(..at).map_or(0, |t| t.matches('\n').count()) + 1;
                return Err(Error::invalid("the { opened here is never closed: the C is truncated")
                    .in_member(m)
                    .at(format!("line {line}")));
            }
            code.sources.push(CSource { member: m.clone(), bytes: bytes.clone(), scan });
        } else if m.ends_with(".o") {
            crate::read::object_check::check(m, bytes, None)?;
            code.objects.push(ObjectFile { member: m.clone(), bytes: bytes.clone() });
        }
    }
    if code.sources.is_empty() && code.objects.is_empty() {
        return Err(Error::missing("the kernels (lib0.c or lib0.o) beside the blob"));
    }
    code.headers = FFI_HEADERS.iter().map(|(p, t)| (p.to_string(), Bytes::new(t.as_bytes().to_vec()))).collect();
    Ok(code)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::model::Executor;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/relax").join(name).join("model.tar")
    }

    #[test]
    fn exports_open_as_models_with_their_weights_as_parameters() {
        let desc = crate::open(fixture("int8cnn-fused-llvm-thumbv7em")).unwrap();
        let Executor::Relax(r) = &desc.executor else { panic!("a Relax model") };
        assert_eq!(desc.inputs.len(), 1);
        assert_eq!(desc.inputs[0].name, "image");
        assert_eq!(desc.outputs.len(), 3);
        assert_eq!(desc.params.len(), r.program.weights.len());
        assert!(desc.code.sources.is_empty() && desc.code.objects.len() == 1, "lib0.o, not devc.o");
        assert!(r.functions.iter().all(|f| f.starts_with("__tvm_ffi_")));
        let desc = crate::open(fixture("mlp-f32-c")).unwrap();
        assert_eq!(desc.code.sources.len(), 1);
        assert_eq!(desc.code.sources[0].member, "lib0.c");
        let shapes: Vec<_> = desc.params.iter().map(|p| (p.name.as_str(), p.shape.clone())).collect();
        assert_eq!(shapes[0].1, [64, 32]);
        assert_eq!(desc.params.iter().map(|p| p.bytes()).sum::<u64>(), (64 * 32 + 32 + 32 * 10 + 10) * 4);
    }

    /// An export extracted to a folder (`lib0.c` + `devc.c`) reads as its tar does.
    #[test]
    fn an_export_extracted_to_a_folder_reads_as_its_tar() {
        let tar = fixture("edges-c");
        let dir = tempfile::tempdir().unwrap();
        let gz = flate2::read::GzDecoder::new(std::fs::File::open(&tar).unwrap());
        tar::Archive::new(gz).unpack(dir.path()).unwrap();
        assert!(dir.path().join("devc.c").is_file());
        let (a, b) = (crate::open(&tar).unwrap(), crate::open(dir.path()).unwrap());
        let (Executor::Relax(ra), Executor::Relax(rb)) = (&a.executor, &b.executor) else { panic!("Relax models") };
        assert_eq!(ra.program, rb.program);
        assert_eq!(a.inputs.len(), b.inputs.len());
        assert_eq!(a.content_hash, b.content_hash);
        assert_eq!(b.code.sources.len(), 1);
        assert_eq!(b.code.sources[0].member, "lib0.c");
    }

    /// C kernels computing in float16 use a type `half` TVM never defines: the export is not
    /// buildable, and says why naming the file; kernels without it are.
    #[test]
    fn float16_c_kernels_are_a_blocker() {
        let desc = crate::open(fixture("mlp-f32-c")).unwrap();
        assert!(desc.blockers.is_empty(), "{:?}", desc.blockers);
        let mut code = desc.code.clone();
        assert_eq!(super::float16_kernels(&code), None);
        let text = "int32_t k(void* a) {\n  half* x = ((half*)(((DLTensor*)a)[0].data));\n  return 0;\n}\n";
        let s = &mut code.sources[0];
        s.bytes = crate::support::bytes::Bytes::new(text.as_bytes().to_vec());
        s.scan = crate::model::CFile::scan(text);
        let why = super::float16_kernels(&code).unwrap();
        assert!(why.starts_with("lib0.c: its kernels compute in float16"), "{why}");
    }

    #[test]
    fn refused_exports_give_one_error_naming_the_cause_and_the_file() {
        let e = crate::open(fixture("refuse-symbolic-shape-c")).unwrap_err().to_string();
        assert!(e.contains("symbolic shape") && e.contains("refuse-symbolic-shape-c"), "{e}");
        let e = crate::open(fixture("refuse-compiled-mode-c")).unwrap_err().to_string();
        assert!(e.contains("exec_mode=\"compiled\"") && e.contains("refuse-compiled-mode-c"), "{e}");
    }
}
