//! Archives that can be inspected but not built for this host are refused at build time with a
//! message that names the reason: a foreign-architecture object, Arm-only C, tvm-ffi C, extern
//! packed calls, external parameters of constants in the C and in LLVM objects together; a
//! codegen-only tree is refused when read.

use std::path::Path;

use mlf_fixtures::{digits_members, write_members};

fn build_error(model: &Path) -> String {
    let out = tempfile::tempdir().unwrap();
    let e = mlf_build::Model::open(model)
        .build_into(model, out.path(), "refusals", "x86_64-unknown-linux-gnu", "x86_64-unknown-linux-gnu", false)
        .expect_err("must be refused");
    e.to_string()
}

/// The digits MLF with `codegen/host/src/default_lib1.c` edited.
fn digits_with_c(edit: impl Fn(Vec<u8>) -> Vec<u8>) -> Vec<(String, Vec<u8>)> {
    let mut m = digits_members();
    for (name, data) in m.iter_mut() {
        if name.ends_with("default_lib1.c") {
            *data = edit(std::mem::take(data));
        }
    }
    m
}

/// The error building `members`, written to a folder, gives.
fn build_error_of(members: &[(String, Vec<u8>)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), members);
    build_error(dir.path())
}

/// Text edited as UTF-8.
fn edit_text(data: Vec<u8>, edit: impl Fn(&str) -> String) -> Vec<u8> {
    edit(&String::from_utf8(data).unwrap()).into_bytes()
}

/// An aarch64 relocatable object defining the given functions (as LLVM codegen would).
fn aarch64_object(functions: &[&str]) -> Vec<u8> {
    use object::write::{Object, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    for f in functions {
        let off = obj.append_section_data(text, &[0xc0, 0x03, 0x5f, 0xd6], 4); // ret
        obj.add_symbol(Symbol {
            name: f.as_bytes().to_vec(),
            value: off,
            size: 4,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(text),
            flags: SymbolFlags::None,
        });
    }
    obj.write().unwrap()
}

#[test]
fn foreign_architecture_object_is_refused_naming_both() {
    let mut m: Vec<_> = digits_members().into_iter().filter(|(n, _)| !n.starts_with("codegen/")).collect();
    let fns = [
        "tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu",
        "tvmgen_default_fused_nn_contrib_dense_pack_add",
        "tvmgen_default_fused_nn_softmax",
    ];
    m.push(("codegen/host/lib/default_lib0.o".into(), aarch64_object(&fns)));
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), &m);
    // It reads and can be inspected…
    let desc = mlf_build::open(dir.path()).unwrap();
    assert_eq!(desc.code.objects.len(), 1);
    // …but not built for x86-64.
    let msg = build_error(dir.path());
    assert!(
        msg.contains("aarch64") && msg.contains("x86_64-unknown-linux-gnu") && msg.contains("default_lib0.o"),
        "{msg}"
    );
}

#[test]
fn arm_dsp_c_is_refused_for_the_host() {
    let mut m = digits_with_c(|c| {
        edit_text(c, |t| t.replacen("#include <math.h>", "#include <math.h>\n#include <arm_acle.h>", 1))
    });
    for (name, data) in m.iter_mut() {
        if name == "metadata.json" {
            *data =
                edit_text(std::mem::take(data), |t| t.replace("c -keys=cpu ", "c -keys=arm_cpu,cpu -mcpu=cortex-m7"));
        }
    }
    let msg = build_error_of(&m);
    assert!(msg.contains("arm_acle.h") && msg.contains("Arm Cortex-M") && msg.contains("cortex-m7"), "{msg}");
}

#[test]
fn tvm_ffi_c_is_refused_naming_the_tvm_version() {
    let msg = build_error_of(&digits_with_c(|c| [b"#include <tvm/ffi/c_api.h>\n".as_slice(), &c].concat()));
    assert!(msg.contains("TVM ≥ 0.21") && msg.contains("tvm-ffi"), "{msg}");
}

#[test]
fn extern_packed_calls_are_refused() {
    let msg = build_error_of(&digits_with_c(|c| {
        edit_text(c, |t| {
            t.replacen(
                "return 0;",
                "void* f = 0; if (TVMBackendGetFuncFromEnv(0, \"tvm.contrib.cblas.matmul\", &f) != 0) { return -1; }\n  return 0;",
                1,
            )
        })
    }));
    assert!(msg.contains("TVMBackendGetFuncFromEnv") && msg.contains("not supported"), "{msg}");
}

#[test]
fn codegen_only_tree_is_refused_when_read() {
    let m: Vec<_> = digits_members().into_iter().filter(|(n, _)| n.starts_with("codegen/")).collect();
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), &m);
    let e = mlf_build::open(dir.path()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("metadata.json") && msg.contains("export the whole archive"), "{msg}");
}

#[test]
fn c_that_does_not_compile_names_the_file_and_the_compiler_message() {
    let msg = build_error_of(&digits_with_c(|c| [b"#include <esp_kernel.h>\n".as_slice(), &c].concat()));
    assert!(msg.contains("codegen/host/src/default_lib1.c") && msg.contains("esp_kernel.h"), "{msg}");
    // Finding the file reruns the compiler with the build's flags: what they make it write
    // (`-fstack-usage`'s `.su` files) stays in the build's folder, not the current one.
    let here = std::fs::read_dir(".").unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned());
    let strays: Vec<String> = here.filter(|n| n.ends_with(".su")).collect();
    assert!(strays.is_empty(), "written into the current folder: {strays:?}");
}

/// An x86-64 object with a function reading 64 bytes of read-only data through a relocation.
fn x86_64_object_with_constants(function: &str) -> Vec<u8> {
    use object::write::{Object, Relocation, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, RelocationFlags, SymbolFlags, SymbolKind, SymbolScope};
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    let rodata = obj.section_id(StandardSection::ReadOnlyData);
    // lea rax, [rip + table]; ret
    let off = obj.append_section_data(text, &[0x48, 0x8d, 0x05, 0, 0, 0, 0, 0xc3], 16);
    let table: Vec<u8> = (0..64u8).collect();
    let at = obj.append_section_data(rodata, &table, 16);
    let sym = obj.add_symbol(Symbol {
        name: b"table".to_vec(),
        value: at,
        size: 64,
        kind: SymbolKind::Data,
        scope: SymbolScope::Compilation,
        weak: false,
        section: SymbolSection::Section(rodata),
        flags: SymbolFlags::None,
    });
    obj.add_symbol(Symbol {
        name: function.as_bytes().to_vec(),
        value: off,
        size: 8,
        kind: SymbolKind::Text,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(text),
        flags: SymbolFlags::None,
    });
    let flags = RelocationFlags::Elf { r_type: object::elf::R_X86_64_PC32 };
    obj.add_relocation(text, Relocation { offset: off + 3, symbol: sym, addend: -4, flags }).unwrap();
    obj.write().unwrap()
}

/// An AOT model whose C holds constant arrays and whose LLVM object holds constant data too:
/// mlf takes out either, not both, and says so.
#[test]
fn external_parameters_are_refused_for_constants_in_c_and_objects_together() {
    let mut members =
        mlf_fixtures::tar_members(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/digits-aot-c.tar"));
    members.push(("codegen/host/lib/extra_lib.o".into(), x86_64_object_with_constants("extra_kernel")));
    let dir = tempfile::tempdir().unwrap();
    write_members(dir.path(), &members);
    let out = tempfile::tempdir().unwrap();
    let e = mlf_build::Model::open(dir.path())
        .params(mlf_build::Placement::Resident)
        .build_into(dir.path(), out.path(), "refusals", "x86_64-unknown-linux-gnu", "x86_64-unknown-linux-gnu", false)
        .expect_err("must be refused");
    let msg = e.to_string();
    assert!(msg.contains("cannot be external") && msg.contains("LLVM objects") && msg.contains("together"), "{msg}");
}
