//! Constant sections taken out of an object and its relocations retargeted, on arbitrary
//! bytes: must never panic, hang or allocate by an untrusted length; what comes out is an object
//! the reader parses again, without the taken bytes. The same bytes go through the reader of
//! Relax kernels' scratch sizes in machine code (`read::relax::object_scratch`: disassembly
//! from each function that reaches `__TVMBackendAllocWorkspace`), which must not panic either,
//! and through the check of an object against each device target (Arm build attributes, RISC-V
//! float ABI).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mlf_build::__private::read::relax::object_scratch::object_scratch("fuzz.o", data);
    for target in
        ["thumbv7em-none-eabihf", "thumbv6m-none-eabi", "riscv64gc-unknown-none-elf", "riscv32imac-unknown-none-elf"]
    {
        let _ = mlf_build::__private::testing::objects::check_object_arch("fuzz.o", data, target);
    }
    if let Ok((out, taken)) = mlf_build::__private::testing::objects::external_object(data) {
        let again = object::File::parse(&out[..]);
        assert!(again.is_ok() || taken == 0, "a rewritten object does not parse: {:?}", again.err());
    }
});
