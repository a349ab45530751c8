//! The include policy: what each `#include` of a model's C is, and so whether the C can be
//! compiled, for which targets, and with what the user must supply. One decision, used by the
//! build (before the compiler runs), by `inspect` and by `cargo mlf run`/`build`.
//!
//! An include is one of: a header mlf ships (TVM's C runtime API, DLPack) or the archive carries
//! (`codegen/host/include/`); a header of the C library; a compiler's intrinsics header, which
//! exists only for some architectures (`<arm_acle.h>`); a header of a vendor library that BYOC
//! code generators call (CMSIS-NN, CMSIS-DSP, esp-dl, Ethos-U), which the user supplies; TVM ≥
//! 0.21's tvm-ffi headers; a path that reaches outside the archive (absolute, `..`), which is
//! never followed; or a header nobody here knows, which the user must supply as well.

use crate::model::{Include, ModelDesc};

/// The headers generated C includes, written by mlf from TVM's ABI (path, contents).
pub const HEADERS: &[(&str, &str)] = &[
    ("dlpack/dlpack.h", include_str!("../../include/dlpack/dlpack.h")),
    ("tvm/runtime/c_runtime_api.h", include_str!("../../include/tvm/runtime/c_runtime_api.h")),
    ("tvm/runtime/c_backend_api.h", include_str!("../../include/tvm/runtime/c_backend_api.h")),
    ("tvm/runtime/metadata_types.h", include_str!("../../include/tvm/runtime/metadata_types.h")),
    ("tvm/runtime/crt/func_registry.h", include_str!("../../include/tvm/runtime/crt/func_registry.h")),
    ("tvm/runtime/crt/module.h", include_str!("../../include/tvm/runtime/crt/module.h")),
    ("tvm/runtime/crt/error_codes.h", include_str!("../../include/tvm/runtime/crt/error_codes.h")),
    (
        "tvm/runtime/crt/internal/aot_executor/aot_executor.h",
        include_str!("../../include/tvm/runtime/crt/internal/aot_executor/aot_executor.h"),
    ),
];

/// What an `#include` is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IncludeKind {
    /// A header mlf writes for the build (TVM's runtime API, DLPack).
    Mlf,
    /// A header the archive carries (`codegen/host/include/…`).
    Archive,
    /// A header of the C library.
    CLibrary,
    /// A compiler's intrinsics header: there only for these architectures (as
    /// [`crate::build::targets::triple_arch`] names them).
    Intrinsics {
        /// Architectures whose compilers have it.
        archs: &'static [&'static str],
        /// What it is, for messages.
        what: &'static str,
    },
    /// A header of a known vendor library the user must supply.
    Vendor(&'static VendorLibrary),
    /// TVM ≥ 0.21's tvm-ffi headers: code for an ABI mlf does not run.
    TvmFfi,
    /// An absolute path or one with `..`: it would read a file outside the archive.
    OutsideArchive,
    /// A header neither mlf, the archive, the C library nor a known vendor library has.
    Unknown,
}

/// A vendor library that BYOC-generated C calls into.
#[derive(Debug, PartialEq, Eq)]
pub struct VendorLibrary {
    /// Its name (`CMSIS-NN`).
    pub name: &'static str,
    /// Where it comes from and what to give mlf (include folder, sources or a prebuilt library).
    pub how: &'static str,
    /// Headers of it that generated code includes.
    pub headers: &'static [&'static str],
}

/// The vendor libraries mlf recognises by their headers.
pub const VENDOR_LIBRARIES: &[VendorLibrary] = &[
    VendorLibrary {
        name: "CMSIS-NN",
        how: "github.com/ARM-software/CMSIS-NN: its Include/ folder, and its Source/ files or a prebuilt libcmsis-nn.a (Cortex-M only)",
        headers: &[
            "arm_nnfunctions.h",
            "arm_nn_types.h",
            "arm_nnsupportfunctions.h",
            "arm_nn_math_types.h",
            "arm_nn_tables.h",
            "arm_nn_compiler.h",
        ],
    },
    VendorLibrary {
        name: "CMSIS-DSP",
        how: "github.com/ARM-software/CMSIS-DSP: its Include/ folder (and CMSIS-Core's), and its Source/ files or a prebuilt library",
        headers: &["arm_math.h", "arm_math_types.h", "arm_common_tables.h", "arm_const_structs.h"],
    },
    VendorLibrary {
        name: "CMSIS-Core",
        how: "CMSIS 5/6 Core/Include (or your device's CMSIS pack)",
        headers: &[
            "cmsis_compiler.h",
            "cmsis_gcc.h",
            "cmsis_version.h",
            "core_cm0plus.h",
            "core_cm3.h",
            "core_cm4.h",
            "core_cm7.h",
            "core_cm33.h",
            "core_cm55.h",
        ],
    },
    VendorLibrary {
        name: "esp-dl",
        how: "github.com/espressif/esp-dl (ESP-IDF component): its include folders and its prebuilt library for your chip",
        headers: &[
            "esp_kernel.h",
            "dl_lib.h",
            "dl_lib_matrix2d.h",
            "dl_lib_matrix3d.h",
            "dl_lib_matrix3dq.h",
            "dl_lib_coefgetter_if.h",
        ],
    },
    VendorLibrary {
        name: "esp-dsp",
        how: "github.com/espressif/esp-dsp (ESP-IDF component): its include folders and its sources or prebuilt library",
        headers: &["esp_dsp.h", "dsps_dotprod.h", "dspm_mult.h"],
    },
    VendorLibrary {
        name: "Arm Ethos-U",
        how: "the Ethos-U core driver (ethos-u-core-driver) and TVM's Ethos-U runtime glue (tvm_ethosu_runtime.c); it also needs the NPU itself",
        headers: &["tvm_ethosu_runtime.h", "ethosu_driver.h", "ethosu_interface.h", "pmu_ethosu.h", "ethosu_types.h"],
    },
];

/// The headers of the C library (C11), which every toolchain mlf builds with has (newlib on bare
/// metal).
const C_LIBRARY: &[&str] = &[
    "assert.h",
    "complex.h",
    "ctype.h",
    "errno.h",
    "fenv.h",
    "float.h",
    "inttypes.h",
    "iso646.h",
    "limits.h",
    "locale.h",
    "math.h",
    "setjmp.h",
    "signal.h",
    "stdalign.h",
    "stdarg.h",
    "stdatomic.h",
    "stdbool.h",
    "stddef.h",
    "stdint.h",
    "stdio.h",
    "stdlib.h",
    "stdnoreturn.h",
    "string.h",
    "tgmath.h",
    "time.h",
    "uchar.h",
    "wchar.h",
    "wctype.h",
];

/// Compilers' intrinsics headers: the header, the architectures that have it, what it is.
const INTRINSICS: &[(&str, &[&str], &str)] = &[
    ("arm_acle.h", &["arm", "aarch64"], "Arm C Language Extensions (Arm targets only)"),
    ("arm_neon.h", &["aarch64"], "Arm NEON SIMD (A-profile only; no Cortex-M has NEON)"),
    ("arm_mve.h", &[], "Arm Helium/MVE (Armv8.1-M, e.g. Cortex-M55; no target mlf supports has it)"),
    ("immintrin.h", &["x86_64", "x86"], "x86 SIMD intrinsics"),
    ("xmmintrin.h", &["x86_64", "x86"], "x86 SSE intrinsics"),
    ("emmintrin.h", &["x86_64", "x86"], "x86 SSE2 intrinsics"),
    ("riscv_vector.h", &[], "RISC-V vector intrinsics (no target mlf supports has the V extension)"),
];

/// Whether `path` names a header of the C library or a compiler's intrinsics header: the
/// system headers a model's C may include by name (the include policy's list too).
pub(crate) fn is_system_header(path: &str) -> bool {
    C_LIBRARY.contains(&path) || INTRINSICS.iter().any(|(h, ..)| *h == path)
}

/// What `inc` (in one of `desc`'s C files) is.
pub fn classify(desc: &ModelDesc, inc: &Include) -> IncludeKind {
    let path = inc.path.as_str();
    if path.starts_with('/')
        || path.starts_with('\\')
        || path.contains(':')
        || path.split(['/', '\\']).any(|c| c == "..")
    {
        return IncludeKind::OutsideArchive;
    }
    if HEADERS.iter().any(|(h, _)| *h == path) {
        return IncludeKind::Mlf;
    }
    if desc.code.headers.iter().any(|(h, _)| h == path) {
        return IncludeKind::Archive;
    }
    if path.starts_with("tvm/ffi/") {
        return IncludeKind::TvmFfi;
    }
    if C_LIBRARY.contains(&path) {
        return IncludeKind::CLibrary;
    }
    if let Some((_, archs, what)) = INTRINSICS.iter().find(|(h, ..)| *h == path) {
        return IncludeKind::Intrinsics { archs, what };
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    match VENDOR_LIBRARIES.iter().find(|l| l.headers.contains(&file)) {
        Some(lib) => IncludeKind::Vendor(lib),
        None => IncludeKind::Unknown,
    }
}
