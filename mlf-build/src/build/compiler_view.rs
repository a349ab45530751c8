//! What the model's C makes the compiler and the assembler read, decided with the compiler's own
//! view of the C rather than a second reading of it.
//!
//! Every C file of the model is compiled to assembly first, with a search path mlf controls
//! (`-nostdinc`, then the folders mlf laid out, the user's include folders and the C library's and
//! compiler's own folders, as the compiler lists them), and with the dependency list the compiler
//! writes (`-MD -MF`). Before anything is assembled:
//!
//! - every file in the dependency list must lie in one of those folders (a host file the
//!   preprocessor reached is refused, naming the member and the file, and its text is never shown);
//! - the assembly must hold no directive that reads a file or builds directives (`.incbin`,
//!   `.include`, `.macro`, `.irp`, `.rept`, …): inline and top-level `asm`, section names and
//!   strings reach the assembler only as the compiler wrote them, after escape processing,
//!   concatenation and macro expansion.
//!
//! Only then is the checked assembly given to the compiler to assemble. The include policy
//! (`build::include_policy`) runs before all this, so the preprocessor is never asked to open an
//! absolute path or one that climbs out of its folder.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::sandbox::Sandbox;
use crate::error::{Error, Result};

/// Directives that read a file or make new directives out of text (macros and repetitions).
const DENIED: &[&str] = &[".incbin", ".include", ".macro", ".altmacro", ".irp", ".irpc", ".rept", ".purgem", ".exitm"];

/// The folders the C may read from.
pub(crate) struct Allowed {
    /// The compiler.
    compiler: cc::Tool,
    /// Canonical folders.
    roots: Vec<PathBuf>,
    /// The compiler's system folders, in its order, passed after `-nostdinc`.
    system: Vec<PathBuf>,
}

impl Allowed {
    /// The compiler's own system folders (asked of `build`'s compiler) and `dirs` (mlf's and the
    /// user's folders).
    pub(crate) fn of(build: &cc::Build, dirs: &[PathBuf]) -> Result<Allowed> {
        let system = system_dirs(build)?;
        let roots = dirs.iter().chain(&system).filter_map(|d| d.canonicalize().ok()).collect();
        let compiler =
            build.try_get_compiler().map_err(|e| Error::unsupported(format!("cannot compile the model's C: {e}")))?;
        Ok(Allowed { compiler, roots, system })
    }

    /// The sandbox for a compiler that reads the C from these folders and writes into `out`.
    pub(crate) fn sandbox(&self, out: &Path) -> Result<Sandbox> {
        Sandbox::new(&self.compiler, &self.roots, out)
    }

    fn contains(&self, path: &Path) -> bool {
        path.canonicalize().is_ok_and(|p| self.roots.iter().any(|r| p.starts_with(r)))
    }
}

/// The folders `build`'s compiler searches for `<…>` headers, as it lists them (`-E -v`).
fn system_dirs(build: &cc::Build) -> Result<Vec<PathBuf>> {
    let compiler =
        build.try_get_compiler().map_err(|e| Error::unsupported(format!("cannot compile the model's C: {e}")))?;
    let mut cmd = compiler.to_command();
    cmd.args(["-E", "-v", "-x", "c", "-", "-o"]).arg(null_device());
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let out = cmd
        .output()
        .map_err(|e| Error::unsupported(format!("running the C compiler to list its include folders: {e}")))?;
    let text = String::from_utf8_lossy(&out.stderr);
    let mut dirs = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("#include <...> search starts here") {
            inside = true;
        } else if line.starts_with("End of search list") {
            break;
        } else if inside {
            let d = line.trim().trim_end_matches(" (framework directory)");
            dirs.push(PathBuf::from(d));
        }
    }
    Ok(dirs)
}

fn null_device() -> &'static str {
    if cfg!(windows) { "NUL" } else { "/dev/null" }
}

/// Compiles each C file of `files` (member, path) to assembly in `dir` with `build`'s compiler,
/// checks what it read and what it wrote (see the module's docs), and returns the assembly files
/// in the same order. A C file the compiler rejects gives the compiler's message, naming the
/// member.
pub(crate) fn assembly(
    build: &cc::Build,
    files: &[(String, PathBuf)],
    dir: &Path,
    allowed: &Allowed,
) -> Result<Vec<PathBuf>> {
    let compiler =
        build.try_get_compiler().map_err(|e| Error::unsupported(format!("cannot compile the model's C: {e}")))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::from(e).in_file(dir))?;
    let sandbox = allowed.sandbox(dir)?;
    let mut out = Vec::new();
    for (k, (member, src)) in files.iter().enumerate() {
        let stem = src.file_stem().and_then(|s| s.to_str()).unwrap_or("c");
        let asm = dir.join(format!("{k}-{stem}.s"));
        let deps = dir.join(format!("{k}-{stem}.d"));
        let _ = std::fs::remove_file(&deps);
        let mut cmd = compiler.to_command();
        cmd.arg("-nostdinc");
        for d in &allowed.system {
            cmd.arg("-isystem").arg(d);
        }
        cmd.arg("-S").arg("-MD").arg("-MF").arg(&deps).arg("-o").arg(&asm).arg(src);
        cmd.current_dir(dir).stdin(Stdio::null()).env("TMPDIR", dir);
        let run = sandbox.output(&mut cmd).map_err(|e| {
            Error::unsupported(format!(
                "running the C compiler{}: {e}",
                if sandbox.enforced() { " in its sandbox (MLF_C_SANDBOX=off runs it unconfined)" } else { "" }
            ))
        })?;
        // The dependency list first: a host file the preprocessor reached is named, its text
        // (which the compiler may quote) is not shown.
        if let Ok(list) = std::fs::read_to_string(&deps) {
            for file in dependencies(&list) {
                let path = dir.join(&file);
                if !allowed.contains(&path) {
                    return Err(Error::unsupported(format!(
                        "the compiler read {file}, which is neither the archive's, mlf's, the user's nor \
                         the C library's; a model's C may read only those"
                    ))
                    .in_member(member.clone()));
                }
            }
        }
        if !run.status.success() {
            return Err(rejected(&String::from_utf8_lossy(&run.stderr), Some(&sandbox)).in_member(member.clone()));
        }
        let text = std::fs::read(&asm).map_err(|e| Error::from(e).in_file(&asm))?;
        check_assembly(&String::from_utf8_lossy(&text))
            .map_err(|why| Error::unsupported(why).in_member(member.clone()))?;
        out.push(asm);
    }
    Ok(out)
}

/// The error of a compiler that rejected the C: its message, or, when the sandbox stopped it
/// opening a file, what the C may read (the compiler's lines name the file, never its text: it
/// was not read).
pub(crate) fn rejected(stderr: &str, sandbox: Option<&Sandbox>) -> Error {
    let excerpt: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).take(12).collect();
    if sandbox.is_some_and(Sandbox::enforced) && stderr.contains("Permission denied") {
        let denied: Vec<&str> = excerpt.iter().copied().filter(|l| l.contains("Permission denied")).collect();
        return Error::unsupported(format!(
            "it makes the C compiler open a file outside the archive's, mlf's, the user's and the \
             toolchain's folders, which the compiler's sandbox refused; a model's C may read only \
             those (a toolchain that needs more can be run unconfined with MLF_C_SANDBOX=off):\n{}",
            denied.join("\n")
        ));
    }
    Error::unsupported(format!("the C compiler rejected it:\n{}", excerpt.join("\n")))
}

/// The files of a make rule (`target: dep dep \` …) as the compiler writes it.
fn dependencies(rule: &str) -> Vec<String> {
    let joined = rule.replace("\\\r\n", " ").replace("\\\n", " ");
    let body = joined.split_once(": ").map_or(joined.as_str(), |(_, b)| b);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(|n| *n == ' ' || *n == '#') => cur.push(chars.next().unwrap_or(' ')),
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                cur.push('$');
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Refuses assembly holding a directive of [`DENIED`] anywhere a statement starts (after a line
/// break or `;`, past labels).
fn check_assembly(text: &str) -> std::result::Result<(), String> {
    for statement in text.split(['\n', '\r', ';']) {
        let mut s = statement.trim_start();
        // Labels (`name:`) before the directive.
        while let Some((label, rest)) = s.split_once(':') {
            let is_label =
                !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'));
            if !is_label {
                break;
            }
            s = rest.trim_start();
        }
        let word: String =
            s.chars().take_while(|c| !c.is_whitespace() && *c != '"').collect::<String>().to_ascii_lowercase();
        if DENIED.contains(&word.as_str()) {
            return Err(format!(
                "its compiled code holds the assembler directive {word}, which reads a file or makes \
                 directives out of text (from asm, a section name or a string); a model's C may not"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_lists_as_compilers_write_them() {
        let rule = "obj/a.s: /w/src/a.c /w/include/x.h \\\n /usr/include/stdio.h /w/my\\ dir/y.h\n";
        assert_eq!(
            dependencies(rule),
            ["/w/src/a.c", "/w/include/x.h", "/usr/include/stdio.h", "/w/my dir/y.h"].map(String::from)
        );
    }

    #[test]
    fn directives_that_read_files_are_refused_wherever_a_statement_starts() {
        for bad in [
            "\t.incbin \"/etc/passwd\"\n",
            "x: .INCBIN \"/etc/passwd\"\n",
            "\tnop; .include \"/etc/passwd\"\n",
            "\t.section .foo\n.incbin \"/etc/passwd\"\n",
            "\t.macro m a\n\t.inc\\a \"/etc/passwd\"\n\t.endm\n",
            "\t.irp x,bin\n",
        ] {
            assert!(check_assembly(bad).is_err(), "{bad:?}");
        }
        check_assembly("f:\n\t.string \".incbin and .include\"\n\t.file \"lib0.c\"\n\tret\n").unwrap();
    }
}
