//! Hostile C in an archive (issue 25, class 1): what the C makes the compiler and the assembler
//! read is decided with the compiler's own view. Each case derives an archive from the digits AOT
//! archive with C that would make the assembler read a host file (`.incbin`/`.include` built by
//! concatenation, escapes, stringification or a section name); the build must refuse it naming
//! the member, and no byte of the host file may reach the output folder or the message.

use std::path::Path;

use mlf_fixtures::derived::{self, KERNELS};
use mlf_fixtures::write_members;

const HOST: &str = "x86_64-unknown-linux-gnu";
const SECRET: &str = "MLF-HOST-SECRET-7f3a9c";

fn has_host_cc() -> bool {
    std::process::Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Whether any file under `dir` holds `needle`.
fn holds(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            holds(&p, needle)
        } else {
            std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
        }
    })
}

/// Builds the digits AOT archive with `c` appended to its kernels (`HOSTFILE` replaced by the
/// path of a host file holding a secret): the error.
fn build_with(c: &str) -> String {
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret.txt");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let c = c.replace("HOSTFILE", &secret.display().to_string());
    let mut m = derived::digits_aot_c();
    mlf_fixtures::edit_member(&mut m, KERNELS, |t| format!("{t}\n{c}\n"));
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), &m);
    let out = tempfile::tempdir().unwrap();
    let e = mlf_build::Model::open(dir.path())
        .build_into(dir.path(), out.path(), "hostile", HOST, HOST, false)
        .expect_err(&format!("{c}: must be refused"))
        .to_string();
    assert!(!e.contains(SECRET), "{c}: the host file's text is in the message: {e}");
    assert!(!holds(out.path(), SECRET.as_bytes()), "{c}: the host file's bytes are in the output folder");
    assert!(e.contains("default_lib1.c"), "{c}: the member is not named: {e}");
    e
}

#[test]
fn assembler_directives_that_read_files_are_refused_as_the_compiler_writes_them() {
    if !has_host_cc() {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    for c in [
        // Split over two string literals.
        "__asm__(\".inc\" \"bin \\\"HOSTFILE\\\"\");",
        // An octal escape.
        "__asm__(\".in\\143bin \\\"HOSTFILE\\\"\");",
        // Stringification in a macro.
        "#define MLF_S(x) #x\n__asm__(MLF_S(.incbin \"HOSTFILE\"));",
        // `.include` through an escape: the assembler would read the file as assembly.
        "__asm__(\".inclu\\144e \\\"HOSTFILE\\\"\");",
        // Inline asm in a function.
        "void mlf_f(void) { __asm__ volatile(\".inc\" \"bin \\\"HOSTFILE\\\"\"); }",
        // A section name carrying a line break and a directive.
        "__attribute__((section(\".mlfx\\n.in\\143bin \\\"HOSTFILE\\\"\\n#\"))) int mlf_x = 1;",
        // A macro of the assembler building the directive's name.
        "__asm__(\".mac\" \"ro mlfm a\\n.inc\\\\a \\\"HOSTFILE\\\"\\n.endm\\nmlfm bin\");",
    ] {
        let e = build_with(c);
        assert!(e.contains("assembler directive"), "{c}: {e}");
    }
}

/// Whether this system sandboxes the C compiler (Landlock, see `build::sandbox`).
fn sandboxed() -> bool {
    #[cfg(target_os = "linux")]
    {
        use landlock::{ABI, Access, AccessFs, Ruleset, RulesetAttr};
        let created = Ruleset::default().handle_access(AccessFs::from_all(ABI::V1)).and_then(|r| r.create());
        created.is_ok_and(|r| Option::<std::os::fd::OwnedFd>::from(r).is_some())
    }
    #[cfg(not(target_os = "linux"))]
    false
}

#[test]
fn the_preprocessor_never_opens_a_host_file() {
    if !has_host_cc() {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    if !sandboxed() {
        // Without the sandbox `/dev/zero` would drive the compiler out of memory.
        assert!(std::env::var("CI").is_err(), "CI=true: this system cannot sandbox the C compiler (Landlock)");
        eprintln!("skipping: this system cannot sandbox the C compiler (Landlock)");
        return;
    }
    for file in ["HOSTFILE", "/etc/passwd", "/dev/zero"] {
        for c in [
            // A raw string (GCC accepts them in C) ending where a plain string would not.
            "const char *mlf_a = R\"x( \" )x\";\n#include \"FILE\"\nconst char *mlf_b = \"\";",
            // An absolute `#include`.
            "#include \"FILE\"",
            // The name built by a macro.
            "#define MLF_S(x) #x\n#define MLF_N(x) MLF_S(x)\n#include MLF_N(FILE)",
            // `__has_include`.
            "#if __has_include(\"FILE\")\nint mlf_has = 1;\n#endif",
            // `#pragma GCC dependency` built by a macro.
            "#define MLF_DEP _Pragma(\"GCC dependency \\\"FILE\\\"\")\nMLF_DEP",
        ] {
            let c = c.replace("FILE", file);
            let e = build_with(&c);
            assert!(!e.contains("root:"), "{c}: /etc/passwd's text is in the message: {e}");
        }
    }
}

#[test]
fn the_controlled_search_path_still_finds_every_targets_c_library() {
    // `-nostdinc` with the compiler's own folders listed back: the model builds for the host and
    // for each device target whose cross compiler is installed (math.h, stdint.h from newlib or
    // picolibc).
    for (target, cc) in [
        (HOST, "cc"),
        ("thumbv7em-none-eabihf", "arm-none-eabi-gcc"),
        ("riscv64gc-unknown-none-elf", "riscv64-unknown-elf-gcc"),
    ] {
        if !std::process::Command::new(cc).arg("--version").output().is_ok_and(|o| o.status.success()) {
            eprintln!("skipping {target}: no {cc}");
            continue;
        }
        let mut m = derived::digits_aot_c();
        mlf_fixtures::edit_member(&mut m, KERNELS, |t| format!("#include <math.h>\n#include <string.h>\n{t}"));
        let dir = tempfile::tempdir().unwrap();
        write_members(dir.path(), &m);
        let out = tempfile::tempdir().unwrap();
        mlf_build::Model::open(dir.path())
            .build_into(dir.path(), out.path(), "hostile", target, HOST, false)
            .unwrap_or_else(|e| panic!("{target}: {e}"));
    }
}

/// The digits AOT archive with `c` appended to its kernels, built for the host: the error.
fn refused(c: &str) -> String {
    let mut m = derived::digits_aot_c();
    mlf_fixtures::edit_member(&mut m, KERNELS, |t| format!("{t}\n{c}\n"));
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), &m);
    let out = tempfile::tempdir().unwrap();
    mlf_build::Model::open(dir.path())
        .build_into(dir.path(), out.path(), "hostile", HOST, HOST, false)
        .expect_err(&format!("{c}: must be refused"))
        .to_string()
}

/// Issue 25, class 3: the objects mlf compiles are checked as compiled — no code that runs at
/// program load or exit, no symbol that would be the whole program's.
#[test]
fn load_time_code_and_symbols_outside_the_prefix_are_refused_as_compiled() {
    if !has_host_cc() {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    for (c, why) in [
        ("volatile int mlf_v;\n__attribute__((constructor)) static void mlf_c(void) { mlf_v = 1; }", "starts or ends"),
        ("volatile int mlf_v;\n__attribute__((destructor)) static void mlf_d(void) { mlf_v = 2; }", "starts or ends"),
        (
            "volatile int mlf_v;\nstatic void mlf_g(void) { mlf_v = 3; }\n__attribute__((used, section(\".init_array\"))) static void (*mlf_p)(void) = mlf_g;",
            "starts or ends",
        ),
        (
            "void* mlf_memcpy(void* d, const void* s, unsigned long n) __asm__(\"memcpy\");\nvoid* mlf_memcpy(void* d, const void* s, unsigned long n) { return d; }",
            "global symbol memcpy",
        ),
    ] {
        let e = refused(c);
        assert!(e.contains(why) && e.contains("lib"), "{c}: {e}");
    }
}

/// Sets field `at` (offset in the section header: 24 sh_offset, 32 sh_size) of the first section
/// named `.rodata…` of the ELF64 object `bytes` to `value`; returns the section's name.
fn damage_rodata(bytes: &mut [u8], at: usize, value: u64) -> String {
    use object::{Object, ObjectSection};
    let file = object::File::parse(&bytes[..]).unwrap();
    let s = file.sections().find(|s| s.name().is_ok_and(|n| n.starts_with(".rodata")) && s.size() > 1024).unwrap();
    let (index, name) = (s.index().0, s.name().unwrap().to_string());
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let entsize = u16::from_le_bytes(bytes[0x3a..0x3c].try_into().unwrap()) as usize;
    let field = shoff + index * entsize + at;
    bytes[field..field + 8].copy_from_slice(&value.to_le_bytes());
    name
}

/// Issue 25, class 6: with external parameters a damaged object is named with its section, as
/// with embedded ones — not taken for code that holds no constants.
#[test]
fn a_damaged_object_is_named_with_its_section_when_parameters_are_external() {
    if !has_host_cc() {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    let m = derived::with_c_as_objects(derived::digits_aot_c(), "cc", &["-O2", "-fPIC"], |n| {
        !n.ends_with("default_lib0.c")
    });
    for (at, value) in [(32, 1u64 << 40), (24, 1u64 << 40)] {
        let mut m = m.clone();
        let (_, obj) = m.iter_mut().find(|(n, _)| n.ends_with("default_lib1.o")).unwrap();
        let section = damage_rodata(obj, at, value);
        let dir = tempfile::tempdir().unwrap();
        write_members(dir.path(), &m);
        let out = tempfile::tempdir().unwrap();
        let e = mlf_build::Model::open(dir.path())
            .params(mlf_build::Placement::Resident)
            .build_into(dir.path(), out.path(), "hostile", HOST, HOST, false)
            .expect_err("a damaged object")
            .to_string();
        assert!(e.contains("default_lib1.o") && e.contains(&section) && !e.contains("no constants"), "{e}");
    }
}

/// Issue 25, class 6: a Mach-O or COFF object where the archive's objects are ELF is refused
/// with external parameters naming the member and what it is, not taken for code without
/// constants.
#[test]
fn a_foreign_object_format_is_named_when_parameters_are_external() {
    use object::write::{Object, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SectionKind, SymbolFlags, SymbolKind, SymbolScope};
    if !has_host_cc() {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    let m = derived::with_c_as_objects(derived::digits_aot_c(), "cc", &["-O2", "-fPIC"], |n| {
        !n.ends_with("default_lib0.c")
    });
    for format in [BinaryFormat::MachO, BinaryFormat::Coff] {
        let mut o = Object::new(format, Architecture::X86_64, Endianness::Little);
        let section = o.add_section(Vec::new(), b".rodata".to_vec(), SectionKind::ReadOnlyData);
        let offset = o.append_section_data(section, &[7u8; 4096], 16);
        o.add_symbol(Symbol {
            name: b"tvmgen_default_fused_nn_softmax".to_vec(),
            value: offset,
            size: 0,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        });
        let mut m = m.clone();
        let (_, obj) = m.iter_mut().find(|(n, _)| n.ends_with("default_lib1.o")).unwrap();
        *obj = o.write().unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_members(dir.path(), &m);
        let out = tempfile::tempdir().unwrap();
        let e = mlf_build::Model::open(dir.path())
            .params(mlf_build::Placement::Resident)
            .build_into(dir.path(), out.path(), "hostile", HOST, HOST, false)
            .expect_err("a foreign object")
            .to_string();
        assert!(
            e.contains("default_lib1.o") && e.contains(&format!("{format:?} object")) && !e.contains("no constants"),
            "{format:?}: {e}"
        );
    }
}
