//! The filesystem sandbox the compiler runs in while it reads the model's C.
//!
//! The dependency list and the assembly check of [`super::compiler_view`] judge what the compiler
//! read once it has read it; a file the preprocessor opens (an `#include` the include policy did
//! not see, a `__has_include`, a name built by a macro) would already have been read, and a
//! compiler error may quote it. On Linux, the compiler that reads the C is therefore started under
//! a [Landlock](https://docs.kernel.org/userspace-api/landlock.html) ruleset that lets it (and
//! everything it starts) open only:
//!
//! - the toolchain's own folders, as the compiler lists them (its install folder, the folder of
//!   `cc1`; the prefix of a toolchain installed in a folder of its own), its programs and the
//!   shared libraries they load (`ldd`), and the dynamic linker's cache (`/etc/ld.so.cache`);
//! - the C library's and compiler's include folders (`-E -v`);
//! - the folders mlf laid the model out in (the archive's extracted copy, mlf's headers) and the
//!   user's include folders;
//! - the folder it writes its output to (read and write), and `/dev/null`.
//!
//! Any other file — `/etc/passwd`, `/dev/zero`, the user's home — fails to open with "Permission
//! denied" before a byte is read. The ruleset is made once by the build step and applied in the
//! child between `fork` and `exec` with two system calls.
//!
//! `MLF_C_SANDBOX` chooses: unset or `auto`, the sandbox where the kernel supports Landlock (5.13
//! and later, when enabled) and the other checks alone where it does not; `require`, a build
//! error where it cannot be applied; `off`, never (for a toolchain that needs folders the list
//! above misses).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::error::{Error, Result};

/// What `MLF_C_SANDBOX` asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Auto,
    Require,
    Off,
}

fn mode() -> Result<Mode> {
    mode_of(std::env::var("MLF_C_SANDBOX").ok().as_deref())
}

fn mode_of(value: Option<&str>) -> Result<Mode> {
    match value {
        None | Some("" | "auto") => Ok(Mode::Auto),
        Some("require") => Ok(Mode::Require),
        Some("off") => Ok(Mode::Off),
        Some(other) => Err(Error::unsupported(format!(
            "MLF_C_SANDBOX is {other:?}; it may be \"auto\" (the default), \"require\" or \"off\""
        ))),
    }
}

/// A ruleset ready to be applied to the compiler's children (none where it cannot be).
pub(crate) struct Sandbox {
    #[cfg(target_os = "linux")]
    ruleset: Option<landlock::RulesetCreated>,
}

impl Sandbox {
    /// The sandbox for `compiler` reading from `read` (folders) and writing to `write`.
    pub(crate) fn new(compiler: &cc::Tool, read: &[PathBuf], write: &Path) -> Result<Sandbox> {
        let mode = mode()?;
        if mode == Mode::Off {
            return Ok(Sandbox::none());
        }
        let sandbox = Self::make(compiler, read, write)?;
        if mode == Mode::Require && !sandbox.enforced() {
            return Err(Error::unsupported(
                "MLF_C_SANDBOX=require, but this system cannot sandbox the C compiler (Landlock needs \
                 Linux 5.13 or later with Landlock enabled)",
            ));
        }
        Ok(sandbox)
    }

    fn none() -> Sandbox {
        Sandbox {
            #[cfg(target_os = "linux")]
            ruleset: None,
        }
    }

    /// Whether the compiler's children run sandboxed.
    pub(crate) fn enforced(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.ruleset.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    #[cfg(not(target_os = "linux"))]
    fn make(_: &cc::Tool, _: &[PathBuf], _: &Path) -> Result<Sandbox> {
        Ok(Sandbox::none())
    }

    #[cfg(target_os = "linux")]
    fn make(compiler: &cc::Tool, read: &[PathBuf], write: &Path) -> Result<Sandbox> {
        use landlock::{ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, path_beneath_rules};
        let abi = ABI::V5;
        let toolchain = toolchain_dirs(compiler);
        let fail = |e: landlock::RulesetError| Error::unsupported(format!("making the C compiler's sandbox: {e}"));
        let ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(fail)?
            .create()
            .map_err(fail)?
            .add_rules(path_beneath_rules(toolchain.read.iter().chain(read), AccessFs::from_read(abi)))
            .map_err(fail)?
            .add_rules(path_beneath_rules(&toolchain.execute, AccessFs::Execute | AccessFs::ReadFile))
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/etc/ld.so.cache"], AccessFs::ReadFile))
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/dev/null"], AccessFs::ReadFile | AccessFs::WriteFile))
            .map_err(fail)?
            .add_rules(path_beneath_rules([write], AccessFs::from_all(abi)))
            .map_err(fail)?;
        // A kernel without Landlock gives a ruleset with no file descriptor: nothing to apply.
        let probe =
            ruleset.try_clone().map_err(|e| Error::unsupported(format!("making the C compiler's sandbox: {e}")))?;
        let supported = Option::<std::os::fd::OwnedFd>::from(probe).is_some();
        Ok(Sandbox { ruleset: supported.then_some(ruleset) })
    }

    /// Runs `cmd` to completion in the sandbox (as is where there is none) and returns what it
    /// printed.
    ///
    /// The ruleset is applied to a thread of its own, which then starts `cmd`: Landlock holds a
    /// thread and every process it starts, and the build step's own thread stays free.
    pub(crate) fn output(&self, cmd: &mut Command) -> std::io::Result<Output> {
        #[cfg(target_os = "linux")]
        if let Some(ruleset) = &self.ruleset {
            let ruleset = ruleset.try_clone()?;
            return std::thread::scope(|s| {
                s.spawn(move || {
                    use landlock::RulesetStatus;
                    let status = ruleset.restrict_self().map_err(std::io::Error::other)?;
                    if status.ruleset == RulesetStatus::NotEnforced {
                        return Err(std::io::Error::other("the C compiler's sandbox could not be applied"));
                    }
                    cmd.output()
                })
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the thread running the C compiler panicked")))
            });
        }
        cmd.output()
    }
}

/// The toolchain's folders (read) and files (read and execute: the compiler's programs and
/// their shared libraries).
#[cfg(target_os = "linux")]
struct Toolchain {
    read: Vec<PathBuf>,
    execute: Vec<PathBuf>,
}

/// The toolchain's folders (its install folder and the folder of `cc1`, as the compiler lists
/// them; the prefix of a toolchain installed in a folder of its own) and its programs with the
/// shared libraries they load (`ldd`).
#[cfg(target_os = "linux")]
fn toolchain_dirs(compiler: &cc::Tool) -> Toolchain {
    let ask = |arg: &str| {
        let out = compiler.to_command().arg(arg).stdin(std::process::Stdio::null()).output().ok()?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let mut read = Vec::new();
    let mut programs = Vec::new();
    if let Some(dirs) = ask("-print-search-dirs") {
        let install = dirs.lines().find_map(|l| l.strip_prefix("install: "));
        read.extend(install.and_then(|d| Path::new(d).canonicalize().ok()));
    }
    if let Some(cc1) = ask("-print-prog-name=cc1").map(PathBuf::from).filter(|p| p.is_absolute()) {
        if let Ok(cc1) = cc1.canonicalize() {
            read.extend(cc1.parent().map(Path::to_path_buf));
            programs.push(cc1);
        }
    }
    if let Some(exe) = resolve(compiler.path()) {
        // A toolchain in a folder of its own (`…/bin/arm-none-eabi-gcc`) reads its prefix.
        if let Some(prefix) = exe.parent().and_then(Path::parent) {
            if !matches!(prefix.to_str(), Some("/" | "/usr" | "/usr/local")) {
                read.push(prefix.to_path_buf());
            }
        }
        programs.push(exe);
    }
    let mut execute = programs.clone();
    for p in &programs {
        execute.extend(shared_libraries(p));
    }
    read.sort();
    read.dedup();
    execute.sort();
    execute.dedup();
    Toolchain { read, execute }
}

/// The shared libraries `program` loads (and the dynamic linker), canonical, as `ldd` lists them.
#[cfg(target_os = "linux")]
fn shared_libraries(program: &Path) -> Vec<PathBuf> {
    let Ok(out) = Command::new("ldd").arg(program).stdin(std::process::Stdio::null()).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = l.split_once("=> ").map_or(l, |(_, p)| p);
            let path = path.split(" (0x").next()?.trim();
            Path::new(path).is_absolute().then(|| Path::new(path).canonicalize().ok()).flatten()
        })
        .collect()
}

/// `program` as the system would find it (through `PATH` when it has no folder), canonical.
#[cfg(target_os = "linux")]
fn resolve(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.canonicalize().ok();
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::compiler_view::{Allowed, assembly};

    const SECRET: &str = "MLF_HOST_SECRET_5d1e";

    /// The host's C compiler as the build step sets it up.
    fn host_build() -> cc::Build {
        let mut b = cc::Build::new();
        let host = "x86_64-unknown-linux-gnu";
        b.target(host).host(host).opt_level(2).cargo_metadata(false).cargo_warnings(false);
        b
    }

    /// Compiles `c` (with `FILE` replaced by a host file holding a secret, as C that does not
    /// compile, so a compiler that read it would quote it) as the model's C: the error.
    fn compile(c: &str, file: &str) -> Option<String> {
        let build = host_build();
        let model = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        let secret = host.path().join("secret.h");
        std::fs::write(&secret, format!("int {SECRET} = ;\n")).unwrap();
        let c = c.replace("FILE", &file.replace("SECRET", &secret.display().to_string()));
        let src = model.path().join("lib1.c");
        std::fs::write(&src, c).unwrap();
        let allowed = Allowed::of(&build, &[model.path().to_path_buf()]).ok()?;
        let files = [("codegen/host/src/lib1.c".to_string(), src)];
        let e = assembly(&build, &files, &model.path().join("asm"), &allowed).map(|_| ()).err()?;
        Some(e.to_string())
    }

    /// What the include policy cannot see reaches the compiler, which must not open a host file
    /// at all: each construct is refused by the sandbox, naming the member, with none of the
    /// file's text (`/dev/zero` would otherwise drive the compiler out of memory).
    #[test]
    fn the_compiler_opens_no_host_file() {
        let Ok(compiler) = host_build().try_get_compiler() else {
            eprintln!("skipping: no host C compiler");
            return;
        };
        if !compiler.to_command().arg("--version").output().is_ok_and(|o| o.status.success()) {
            eprintln!("skipping: no host C compiler");
            return;
        }
        let sandbox = Sandbox::new(&compiler, &[], Path::new("/nonexistent")).unwrap();
        if !sandbox.enforced() {
            assert!(std::env::var("CI").is_err(), "CI=true: this system cannot sandbox the C compiler (Landlock)");
            eprintln!("skipping: the C compiler cannot be sandboxed here (Landlock, MLF_C_SANDBOX)");
            return;
        }
        for file in ["SECRET", "/etc/passwd", "/dev/zero"] {
            for c in [
                "#include \"FILE\"",
                "const char *a = R\"x( \" )x\";\n#include \"FILE\"\nconst char *b = \"\";",
                "#define S(x) #x\n#define N(x) S(x)\n#include N(FILE)",
                "#if __has_include(\"FILE\")\nint has = 1;\n#endif",
                "#define DEP _Pragma(\"GCC dependency \\\"FILE\\\"\")\nDEP\nint x;",
            ] {
                let e = compile(c, file).unwrap_or_else(|| panic!("{c} ({file}): not refused"));
                assert!(!e.contains(SECRET) && !e.contains("root:"), "{c} ({file}): the host file's text: {e}");
                assert!(e.contains("lib1.c") && e.contains("sandbox"), "{c} ({file}): {e}");
            }
        }
    }

    #[test]
    fn mlf_c_sandbox_takes_three_values() {
        for (value, ok) in [("auto", true), ("require", true), ("off", true), ("yes", false)] {
            assert_eq!(mode_of(Some(value)).is_ok(), ok, "{value}");
        }
    }
}
