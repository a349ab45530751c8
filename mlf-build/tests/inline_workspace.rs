//! The workspace an AOT model's C serves inline (issue 26): the allocator the build step writes
//! into the model's rename header, compiled by the host's `cc` into a small C program that calls
//! it as the model's C does and checks every field the run reads afterwards (the window, LIFO
//! order, refusals with their figures, the high-water mark, the last error). A model with C of
//! the user's beside it keeps calling the runtime's functions.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlf_fixtures::derived;
use mlf_fixtures::write_members;

const HOST: &str = "x86_64-unknown-linux-gnu";

fn has_host_cc() -> bool {
    Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Every file named `name` under `dir`.
fn find(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            find(&p, name, out);
        } else if p.file_name().is_some_and(|n| n == name) {
            out.push(p);
        }
    }
}

/// Builds the digits AOT archive (with a vendor library's C beside it when `vendor`) and returns the rename
/// header the model's C was compiled with.
fn rename_header(vendor: bool) -> String {
    let src = tempfile::tempdir().unwrap();
    let dir = src.path().join("model");
    let mut model = mlf_build::Model::open(&dir);
    let members = if vendor {
        derived::write_vendor_library(src.path(), "vendor.h", "vendor_scale");
        model = model.include_dir(src.path().join("include")).c_source(src.path().join("src"));
        derived::calling_vendor(derived::digits_aot_c(), "vendor.h", "vendor_scale")
    } else {
        derived::digits_aot_c()
    };
    write_members(&dir, &members);
    let out = tempfile::tempdir().unwrap();
    model.build_into(&dir, out.path(), "inline-ws", HOST, HOST, false).unwrap_or_else(|e| panic!("{e}"));
    let mut found = Vec::new();
    find(out.path(), "mlf_rename.h", &mut found);
    assert_eq!(found.len(), 1, "one rename header: {found:?}");
    std::fs::read_to_string(&found[0]).unwrap()
}

/// The C program: the model's header, the state defined (the generated module defines it in
/// Rust), and the calls the model's C makes, each checked. It exits 0 when all hold.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <string.h>
struct WS_fields WS = {.starts = {(unsigned char*)-1}};
static unsigned char region[512] __attribute__((aligned(16)));
#define CHECK(c) do { if (!(c)) { printf("failed: %s (line %d)\n", #c, __LINE__); return 1; } } while (0)
int main(void) {
  void *a, *b;
  /* Between runs (no window): nothing is served, nothing freed. */
  CHECK(TVMBackendAllocWorkspace(1, 0, 16, 0, 8) == 0);
  CHECK(WS.status == 1);
  CHECK(TVMBackendFreeWorkspace(1, 0, 0) == -1 && WS.depth == 0);
  /* A run: the window is bytes 32..288 of the region. */
  WS.status = 0;
  WS.base = region; WS.high = region; WS.top = region + 32; WS.limit = region + 288;
  a = TVMBackendAllocWorkspace(1, 0, 100, 0, 8);
  CHECK(a == region + 32);
  b = TVMBackendAllocWorkspace(1, 0, 40, 0, 8);
  CHECK(b == region + 32 + 112);
  CHECK(WS.depth == 2 && WS.top == region + 192 && WS.high == region + 192 && WS.status == 0);
  /* Not the CPU: refused, not recorded. */
  CHECK(TVMBackendAllocWorkspace(2, 0, 16, 0, 8) == 0 && WS.status == 0);
  /* The digits C has two allocation sites, so a third live one is refused with its figures. */
  CHECK(TVMBackendAllocWorkspace(1, 0, 8, 0, 8) == 0);
  CHECK(WS.status == 1 && WS.requested == 8 && WS.available == 288 - 192);
  WS.status = 0;
  /* Out of order: refused and recorded; the allocation stays. */
  CHECK(TVMBackendFreeWorkspace(1, 0, a) == -1 && WS.status == 2 && WS.depth == 2);
  WS.status = 0;
  CHECK(TVMBackendFreeWorkspace(1, 0, b) == 0 && WS.depth == 1 && WS.top == region + 32 + 112);
  CHECK(TVMBackendFreeWorkspace(1, 0, a) == 0 && WS.depth == 0 && WS.top == region + 32);
  CHECK(TVMBackendFreeWorkspace(1, 0, a) == -1 && WS.status == 2 && WS.depth == 0);
  WS.status = 0;
  /* Too large for the window, and a size whose rounding would overflow. */
  CHECK(TVMBackendAllocWorkspace(1, 0, 257, 0, 8) == 0 && WS.requested == 257 && WS.available == 256);
  CHECK(TVMBackendAllocWorkspace(1, 0, ~0ull, 0, 8) == 0 && WS.top == region + 32);
  CHECK(TVMBackendAllocWorkspace(1, 0, 256, 0, 8) == region + 32);
  CHECK(WS.high == region + 288);
  /* The last error, cut to the field. */
  TVMAPISetLastError("kernel says no");
  CHECK(WS.message_len == 14 && memcmp(WS.message, "kernel says no", 14) == 0);
  TVMAPISetLastError("0123456789012345678901234567890123456789012345678901234567890123");
  CHECK(WS.message_len == sizeof WS.message);
  TVMAPISetLastError(0);
  CHECK(WS.message_len == 0);
  printf("ok\n");
  return 0;
}
"#;

#[test]
fn the_allocator_in_the_models_header_serves_the_window_in_lifo_order_and_records_refusals() {
    if !has_host_cc() {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    let header = rename_header(false);
    let state = header
        .lines()
        .find_map(|l| l.strip_prefix("extern struct ").and_then(|r| r.split_once("_fields ")).map(|(s, _)| s))
        .unwrap_or_else(|| panic!("the header declares the model's workspace:\n{header}"))
        .to_string();
    assert!(state.starts_with("mlf_") && state.ends_with("_mlf_workspace"), "{state}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mlf_rename.h"), &header).unwrap();
    std::fs::write(dir.path().join("main.c"), PROGRAM.replace("WS", &state)).unwrap();
    let exe = dir.path().join("program");
    let cc = Command::new("cc")
        .current_dir(dir.path())
        .args(["-O2", "-std=gnu11", "-include", "mlf_rename.h", "main.c", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stdout));
}

#[test]
fn c_of_the_users_beside_the_model_keeps_the_runtimes_allocator() {
    if !has_host_cc() {
        eprintln!("skipping: no host C compiler (cc)");
        return;
    }
    assert!(rename_header(false).contains("#define TVMBackendAllocWorkspace "));
    let header = rename_header(true);
    assert!(!header.contains("TVMBackendAllocWorkspace"), "{header}");
}
