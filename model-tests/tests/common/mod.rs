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

/// Runs `f` and returns its result with the bytes of stack it used below this function's frame
/// (`None` on hosts other than x86-64), measured as the device tests do: the stack below the
/// current stack pointer is painted with a pattern first, and the deepest byte `f` changed is
/// found after it returns. Painting and scanning are single instructions (`rep stosb`,
/// `repe scasb`), so no call of the measurement's own lands in the painted region.
#[allow(dead_code)]
#[inline(never)]
pub fn stack_used<R>(f: impl FnOnce() -> R) -> (R, Option<usize>) {
    #[cfg(target_arch = "x86_64")]
    {
        /// Bytes painted below the stack pointer: far more than any model here needs, far less
        /// than a test thread's 2 MiB stack.
        const PAINT: usize = 256 * 1024;
        const PATTERN: u8 = 0xA5;
        let sp: usize;
        // SAFETY: reads the stack pointer into a register; touches no memory.
        unsafe { core::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
        let low = sp - PAINT;
        // SAFETY: [low, sp) is this thread's own mapped stack below every live frame (nothing
        // lives there: no call is active while the instruction runs, and a function that calls
        // `f` does not use the red zone), so overwriting it changes no live value.
        unsafe {
            core::arch::asm!("rep stosb", inout("rdi") low => _, inout("rcx") PAINT => _, in("al") PATTERN,
                options(nostack, preserves_flags));
        }
        let r = f();
        let rest: usize;
        // SAFETY: reads [low, sp), mapped stack of this thread (see above); `repe scasb` stops at
        // the first byte that is not the pattern and leaves in rcx how many bytes lie above it.
        unsafe {
            core::arch::asm!("cld", "repe scasb", inout("rdi") low => _, inout("rcx") PAINT => rest, in("al") PATTERN,
                options(nostack, readonly));
        }
        // `rest` counts the bytes after the first changed one; that byte itself was used too.
        let used = if rest == 0 { 0 } else { rest + 1 };
        (r, Some(used))
    }
    #[cfg(not(target_arch = "x86_64"))]
    (f(), None)
}

/// Fails when a run measured by [`stack_used`] used more stack than its module states (not
/// checked in a build with a sanitizer, whose frames are larger).
#[allow(dead_code)]
pub fn within_stack(used: Option<usize>, stated: usize, what: &str) {
    if cfg!(mlf_sanitizer) {
        // Instrumented frames (redzones) are larger than the compiler's `-fstack-usage` figures.
        eprintln!("{what}: stack not checked (built with a sanitizer)");
        return;
    }
    if let Some(used) = used {
        assert!(used <= stated, "{what}: run() used {used} bytes of stack, the module states STACK_BYTES = {stated}");
        eprintln!("{what}: stack {used} of {stated} stated");
    }
}

/// `check_cases!(module, fixture_dir, [inputs…], [outputs…])`: loads every case's inputs (in
/// manifest order), runs the model, and compares every output with the reference. On x86-64
/// hosts it also checks that no run used more stack than the module states (`STACK_BYTES`).
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
            let (out, stack) = $crate::common::stack_used(|| net.run(&model::Inputs { $($inp: &$inp),* }));
            let out = out.expect("run");
            $crate::common::within_stack(stack, model::STACK_BYTES, &format!("{}: case {cases}", dir.display()));
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
