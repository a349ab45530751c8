//! Whether a model can be built and run for a target, and why not: the one check the build makes
//! before its compiler runs, `inspect` reports for the host and every device target, and
//! `cargo mlf run`/`build` make before they build anything.
//!
//! Refused, each with its reason: what the reader found that cannot run anywhere (device modules,
//! kmodel V5, the C device API), LLVM objects for another architecture, includes that the target
//! or the user does not provide (see `build::includes`), Arm DSP-extension instructions
//! (`__smlad`, …) on a core without the extension, extern packed calls, float16 kernels, and
//! inputs or outputs of a dtype the generated Rust cannot type. A missing C cross compiler is not
//! the model's fault and is reported apart ([`missing_compiler`]).

use super::includes::{IncludeKind, classify};
use super::libraries::UserLibraries;
use super::targets::{arm_dsp, check_object_arch, triple_arch};
use crate::error::{Error, Result};
use crate::model::{ModelDesc, ModelFormat};

/// Arm DSP-extension intrinsics (ACLE's SIMD32 and DSP groups, in ACLE's and CMSIS-Core's
/// spelling alike): instructions an ARMv7E-M core (Cortex-M4/M7) has and ARMv6-M/ARMv7-M lack.
const DSP_INTRINSICS: &[&str] = &[
    "__sadd16",
    "__sadd8",
    "__ssub16",
    "__ssub8",
    "__sasx",
    "__ssax",
    "__shadd16",
    "__shadd8",
    "__shsub16",
    "__shsub8",
    "__qadd16",
    "__qadd8",
    "__qsub16",
    "__qsub8",
    "__qasx",
    "__qsax",
    "__uadd16",
    "__uadd8",
    "__usub16",
    "__usub8",
    "__uhadd16",
    "__uhadd8",
    "__uqadd16",
    "__uqadd8",
    "__uqsub16",
    "__uqsub8",
    "__usad8",
    "__usada8",
    "__sel",
    "__smlad",
    "__smladx",
    "__smlsd",
    "__smlsdx",
    "__smlald",
    "__smlaldx",
    "__smlsld",
    "__smlsldx",
    "__smuad",
    "__smuadx",
    "__smusd",
    "__smusdx",
    "__sxtab16",
    "__sxtb16",
    "__uxtab16",
    "__uxtb16",
    "__ssat16",
    "__usat16",
    "__qadd",
    "__qsub",
    "__qdbl",
    "__smlabb",
    "__smlabt",
    "__smlatb",
    "__smlatt",
    "__smlawb",
    "__smlawt",
    "__smulbb",
    "__smulbt",
    "__smultb",
    "__smultt",
    "__smulwb",
    "__smulwt",
    "__pkhbt",
    "__pkhtb",
];

/// Every reason `desc` cannot be built for `target` with `libs`, each naming the file and what
/// to do; empty when it can.
pub fn refusals(desc: &ModelDesc, target: &str, libs: &UserLibraries) -> Vec<String> {
    let mut out: Vec<String> = desc.blockers.clone();
    if matches!(desc.format, ModelFormat::Kmodel { .. }) {
        return out;
    }
    for o in &desc.code.objects {
        if let Err(e) = check_object_arch(&o.member, &o.bytes, target) {
            out.push(e.to_string());
        }
    }
    includes(desc, target, libs, &mut out);
    dsp(desc, target, &mut out);
    calls(desc, &mut out);
    for (what, ts) in [("input", &desc.inputs), ("output", &desc.outputs)] {
        for t in ts.iter().filter(|t| t.dtype.rust_type().is_none()) {
            out.push(format!(
                "{what} {} is {}: typed inputs and outputs support float32/64, int8/16/32/64, uint8/16/32/64 and one-byte bool (as u8)",
                t.name, t.dtype
            ));
        }
    }
    out
}

/// `Ok` when `desc` can be built for `target`, else an error with every reason.
pub fn check(desc: &ModelDesc, target: &str, libs: &UserLibraries) -> Result<()> {
    let why = refusals(desc, target, libs);
    if why.is_empty() { Ok(()) } else { Err(Error::unsupported(why.join("\n"))) }
}

/// What `cargo mlf run`, `cargo mlf build` and the build step check before anything is built:
/// [`check`], then that a C compiler for `target` is installed (`host`: the machine building).
pub fn check_runnable(desc: &ModelDesc, target: &str, host: &str, libs: &UserLibraries) -> Result<()> {
    check(desc, target, libs)?;
    match missing_compiler(desc, target, host) {
        Some(msg) => Err(Error::unsupported(msg)),
        None => Ok(()),
    }
}

/// Includes the target or the user does not provide.
fn includes(desc: &ModelDesc, target: &str, libs: &UserLibraries, out: &mut Vec<String>) {
    let arch = triple_arch(target);
    let supply = "supply it: Model::include_dir in build.rs, include_dirs in [package.metadata.mlf.models], or cargo mlf run --include-dir";
    let mut seen = std::collections::BTreeSet::new();
    for (member, inc) in desc.code.includes() {
        if !seen.insert(inc.path.as_str()) {
            continue;
        }
        let from_user = libs.find_header(&inc.path).is_some();
        let why = match classify(desc, inc) {
            IncludeKind::Mlf | IncludeKind::Archive | IncludeKind::CLibrary => None,
            IncludeKind::OutsideArchive => Some(format!(
                "{member} includes \"{}\", a path outside the archive; mlf never compiles such C",
                inc.path
            )),
            IncludeKind::TvmFfi => Some(format!(
                "{member} includes <{}>: this is TVM ≥ 0.21 code for the tvm-ffi ABI, which mlf does not run (MLF archives come from TVM ≤ 0.18)",
                inc.path
            )),
            IncludeKind::Intrinsics { archs, what } if !archs.contains(&arch) => {
                Some(intrinsics_refusal(desc, member, &inc.path, what, target))
            }
            IncludeKind::Intrinsics { .. } => None,
            _ if from_user || libs.compiler_configured => None,
            IncludeKind::Vendor(lib) => Some(format!(
                "{member} includes <{}>, a header of {} (BYOC-generated code calls that library), which the archive does not carry; {} — {supply}, and its sources (c_sources, --c-source) or a prebuilt library (libraries, --library)",
                inc.path, lib.name, lib.how
            )),
            IncludeKind::Unknown => Some(format!(
                "{member} includes <{}>, which is not in the archive, not a C library header and not one mlf provides; {supply}",
                inc.path
            )),
        };
        out.extend(why);
    }
}

/// Why a compiler intrinsics header does not exist for `target`.
fn intrinsics_refusal(desc: &ModelDesc, member: &str, header: &str, what: &str, target: &str) -> String {
    if header == "arm_acle.h" {
        let t = desc.targets.first().map(|t| t.trim().to_string()).unwrap_or_default();
        return format!(
            "{member} includes <arm_acle.h>: this model's C was generated for Arm Cortex-M DSP instructions (target `{t}`) and cannot be built for {target}; rebuild the model with a generic target (e.g. `c -keys=cpu`) to run it here"
        );
    }
    format!("{member} includes <{header}> ({what}), which the C compiler for {target} does not have")
}

/// Arm DSP-extension intrinsics on a target whose core lacks the extension.
fn dsp(desc: &ModelDesc, target: &str, out: &mut Vec<String>) {
    let core = match arm_dsp(target) {
        Some((true, _)) => return,
        Some((false, core)) => core,
        None => "not a 32-bit Arm core",
    };
    for s in &desc.code.sources {
        for f in s.scan.functions.iter().filter(|f| f.defined) {
            let used = f.calls.iter().find(|c| DSP_INTRINSICS.contains(&c.callee.to_ascii_lowercase().as_str()));
            if let Some(c) = used {
                out.push(format!(
                    "{}: {} calls {}, an Arm DSP-extension instruction (target feature `dsp`, ARMv7E-M: thumbv7em-none-eabi and thumbv7em-none-eabihf); {target} ({core}) does not have it, so the C would compile but not link; build for a Cortex-M4/M7 target or rebuild the model without arm_cpu DSP schedules",
                    s.member, f.name, c.callee
                ));
                return;
            }
        }
    }
}

/// Calls mlf cannot serve: extern packed functions; float16 kernels.
fn calls(desc: &ModelDesc, out: &mut Vec<String>) {
    for s in &desc.code.sources {
        for f in s.scan.functions.iter().filter(|f| f.defined) {
            if let Some(c) =
                f.calls.iter().find(|c| c.callee == "TVMBackendGetFuncFromEnv" || c.callee == "TVMFuncCall")
            {
                out.push(format!(
                    "{}: {} calls {} (an extern packed function, e.g. a tvm.contrib library); such calls are not supported",
                    s.member, f.name, c.callee
                ));
                return;
            }
            if f.params.iter().any(|p| p.ty.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "half")) {
                out.push(format!(
                    "{}: {} uses the fp16 type `half`; float16 models are not supported",
                    s.member, f.name
                ));
                return;
            }
        }
    }
}

/// When no C compiler for `target` can be found: "no C compiler for TARGET: install … or set
/// `CC_<target with underscores>`". `None` when one is there (or the model has no C to compile).
pub fn missing_compiler(desc: &ModelDesc, target: &str, host: &str) -> Option<String> {
    if desc.code.sources.is_empty() && desc.code.objects.is_empty() {
        return None;
    }
    let mut build = cc::Build::new();
    build.target(target).host(host).opt_level(2).debug(false).cargo_metadata(false).cargo_warnings(false);
    let found = build.try_get_compiler().ok().is_some_and(|tool| on_path(tool.path()));
    (!found).then(|| no_compiler_message(target))
}

/// The message for a missing C compiler for `target`, naming what to install.
pub fn no_compiler_message(target: &str) -> String {
    let var = format!("CC_{}", target.replace(['-', '.'], "_"));
    let install = match triple_arch(target) {
        "arm" if target.contains("none-eabi") => {
            "arm-none-eabi-gcc (Debian/Ubuntu: gcc-arm-none-eabi libnewlib-arm-none-eabi)"
        }
        "riscv64" | "riscv32" if target.contains("none-elf") => {
            "riscv64-unknown-elf-gcc (Debian/Ubuntu: gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)"
        }
        _ => "a C compiler for it",
    };
    format!("no C compiler for {target}: install {install} or set {var}")
}

/// Whether `tool` names an executable file: a path, or a name found on `PATH`.
fn on_path(tool: &std::path::Path) -> bool {
    if tool.components().count() > 1 {
        return tool.is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}
