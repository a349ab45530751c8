//! Constants inside LLVM objects as external parameters: archives derived from the repository's
//! digits archives (graph with linked constants, AOT with the C interface) with their kernels
//! compiled into an object by the host's `cc` (as TVM's LLVM codegen delivers them) reproduce
//! the digits vectors embedded, resident, streamed and lazily loaded, and the external programs hold none of
//! the constants' bytes, which the embedded one does.

use std::path::{Path, PathBuf};

use common::{contains, distinctive, run_cases_with};

mod common;

/// The repository copy `tests/models/<tar>` of mlf-build with every C file but those in `keep`
/// compiled into objects, written to a folder under `dir`.
fn derived(tar: &str, keep: &[&str], dir: &Path) -> PathBuf {
    let root = mlf_fixtures::workspace_root();
    let members = mlf_fixtures::tar_members(&root.join("mlf-build/tests/models").join(tar));
    let members = mlf_fixtures::derived::with_c_as_objects(members, "cc", &["-O2", "-fPIC"], |name| {
        !keep.iter().any(|k| name.ends_with(k))
    });
    assert!(members.iter().any(|(n, _)| n.ends_with(".o")), "{tar}: nothing compiled into an object");
    let out = dir.join(tar.trim_end_matches(".tar"));
    mlf_fixtures::write_members(&out, &members);
    out
}

#[test]
fn constants_inside_objects_leave_the_image() {
    let vectors = mlf_fixtures::workspace_root().join("examples/digits/model");
    let t = tempfile::tempdir().unwrap();
    for (tar, keep) in [("digits-graph-linked.tar", &[][..]), ("digits-aot-c.tar", &["default_lib0.c"][..])] {
        let model = derived(tar, keep, t.path());
        let embedded = run_cases_with(&model, &vectors, &[]);
        assert_eq!(embedded.cases, 10, "{tar}");
        let external: Vec<_> = ["resident", "streamed", "lazy"]
            .into_iter()
            .map(|p| run_cases_with(&model, &vectors, &["--params".as_ref(), p.as_ref()]))
            .collect();
        // The constant sections as split out by the build step (the kernels' constants: a small
        // section of strings the program never reads may be left out of any image by the linker).
        let split = external[0].params.clone().expect("the split the run read");
        let probes: Vec<Vec<u8>> = std::fs::read_dir(split.join("params"))
            .unwrap()
            .flatten()
            .map(|f| std::fs::read(f.path()).unwrap())
            .filter(|p| p.len() >= 1024 && distinctive(p))
            .collect();
        assert!(!probes.is_empty(), "{tar}: nothing distinctive to probe");
        let embedded_image = std::fs::read(&embedded.exe).unwrap();
        for p in &probes {
            assert!(contains(&embedded_image, p), "{tar}: control: the embedded program holds the section");
            for ran in &external {
                let image = std::fs::read(&ran.exe).unwrap();
                assert!(!contains(&image, p), "{tar}: {}: constant bytes in the program image", ran.exe.display());
            }
        }
    }
}
