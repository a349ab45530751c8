//! Runs a generated model over every case of a fixture's manifest.

/// Takes a model, waiting while another test of this binary holds it (`take()` is exclusive and
/// tests run in parallel threads).
#[allow(dead_code)]
pub fn wait_take<M>(take: impl Fn() -> Option<M>) -> M {
    for _ in 0..6000 {
        if let Some(m) = take() {
            return m;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("model still taken after 60 s");
}

/// `check_cases!(module, fixture_dir, [inputs…], [outputs…])`: loads every case's inputs (in
/// manifest order), runs the model, and compares every output with the reference.
#[macro_export]
macro_rules! check_cases {
    ($m:path, $dir:expr, [$($inp:ident),*], [$($out:ident),*]) => {{
        use $m as model;
        let dir: std::path::PathBuf = $dir;
        let manifest = mlf_fixtures::Manifest::read(&dir).expect("manifest");
        let mut net = $crate::common::wait_take(model::Model::take);
        let mut cases = 0;
        for case in &manifest.cases {
            let mut files = case.inputs.iter().map(|i| dir.join("vectors").join(i.file.as_ref().unwrap()));
            $( let $inp = mlf_fixtures::load(&files.next().unwrap()); )*
            let out = net.run(&model::Inputs { $($inp: &$inp),* }).expect("run");
            let mut k = 0;
            $(
                let want = &case.outputs[k];
                let expected = std::fs::read(dir.join("vectors").join(want.file.as_ref().unwrap())).unwrap();
                if let Err(e) = mlf_fixtures::compare(&want.dtype, mlf_runtime::as_bytes(&out.$out[..]), &expected, case) {
                    panic!("{}: case {cases} output {k}: {e}", dir.display());
                }
                k += 1;
            )*
            let _ = k;
            cases += 1;
        }
        cases
    }};
}
