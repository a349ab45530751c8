//! What the graph and AOT backends share: the refusal of per-operator constant arrays, the
//! outputs' share of the arena, and the lines of `inspect` about parameters and code.

use crate::model::{ConstantKind, ModelDesc};
use crate::plan::pack::align_up;

/// The per-operator `static const` arrays compiled into the C: how many and their bytes.
pub(super) fn static_arrays(desc: &ModelDesc) -> (usize, u64) {
    let arrays = desc.code.constants.iter().filter(|c| c.kind == ConstantKind::StaticArray);
    arrays.fold((0, 0), |(n, b), c| (n + 1, b + c.bytes))
}

/// Why static arrays keep the parameters in the C (`advice`: what to do instead).
pub(super) fn static_array_refusal(desc: &ModelDesc, advice: &str) -> Option<String> {
    let (n, bytes) = static_arrays(desc);
    (n > 0).then(|| {
        format!(
            "its constants are compiled into the C as {n} per-operator `static const` arrays ({bytes} bytes) that cannot be separated safely; {advice}"
        )
    })
}

/// Bytes of the outputs in the arena, each aligned to `align`.
pub(super) fn output_bytes(desc: &ModelDesc, align: u64) -> u64 {
    desc.outputs.iter().map(|t| align_up(t.bytes(), align)).fold(0, u64::saturating_add)
}

/// One `inspect` table line.
pub(super) fn line(out: &mut String, key: &str, value: String) {
    out.push_str(&format!("{key:<12} {value}\n"));
}

/// `inspect`'s lines about a TVM model's parameters, recorded memory and code.
pub(super) fn inspect_body(desc: &ModelDesc, out: &mut String) {
    if desc.params.is_empty() {
        let c = &desc.code.constants;
        line(
            out,
            "parameters",
            format!(
                "{} constant arrays compiled into the C, {} bytes",
                c.len(),
                c.iter().map(|c| c.bytes).sum::<u64>()
            ),
        );
    } else {
        let linked = desc.params.iter().filter(|p| p.linked.is_some()).count();
        line(
            out,
            "parameters",
            format!(
                "{} tensors, {} bytes{}",
                desc.params.len(),
                desc.params.iter().map(|p| p.bytes()).sum::<u64>(),
                if linked > 0 { format!(" ({linked} linked into the C)") } else { String::new() }
            ),
        );
    }
    line(
        out,
        "memory",
        format!(
            "workspace {} bytes, constants {} bytes, io {} bytes (as recorded in metadata)",
            desc.memory.workspace_bytes, desc.memory.constants_bytes, desc.memory.io_bytes
        ),
    );
    line(out, "code", format!("{} C files, {} object files", desc.code.sources.len(), desc.code.objects.len()));
}

/// `inspect`'s line on whether the parameters can be external.
pub(super) fn inspect_external(refusal: Option<String>, out: &mut String) {
    match refusal {
        None => {
            out.push_str("external     parameters can be split from the code (params = \"resident\" or \"streamed\", cargo mlf split)\n")
        }
        Some(why) => out.push_str(&format!("external     parameters cannot be external: {why}\n")),
    }
}
