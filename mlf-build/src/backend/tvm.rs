//! What the graph and AOT backends share: the constants inside LLVM objects, the outputs' share
//! of the arena, and the lines of `inspect` about parameters and code.

use crate::model::{ConstantKind, ModelDesc};
use crate::plan::pack::align_up;
use crate::plan::split::Split;

/// The per-operator `static const` arrays compiled into the C: how many and their bytes.
pub(super) fn static_arrays(desc: &ModelDesc) -> (usize, u64) {
    let arrays = desc.code.constants.iter().filter(|c| c.kind == ConstantKind::StaticArray);
    arrays.fold((0, 0), |(n, b), c| (n + 1, b + c.bytes))
}

/// The read-only data sections of the model's LLVM objects that external parameters take out
/// (none when it has no objects, or when they cannot be read: building says why).
/// The split holds their files and their [`ObjectSections`](crate::plan::split::ObjectSections).
pub(super) fn object_constants(desc: &ModelDesc) -> Option<Split> {
    super::object_sections::take_out_sections(&desc.code.objects, Split::default()).ok().filter(|s| s.objects.is_some())
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
            "workspace {} bytes, constants {} bytes, io {} bytes (as TVM recorded them in metadata; mlf plans its own: `planned`)",
            desc.memory.workspace_bytes, desc.memory.constants_bytes, desc.memory.io_bytes
        ),
    );
    line(out, "code", format!("{} C files, {} object files", desc.code.sources.len(), desc.code.objects.len()));
}

/// `inspect`'s line on whether the parameters can be external, and how for constants the C holds.
pub(super) fn inspect_external(desc: &ModelDesc, refusal: Option<String>, out: &mut String) {
    if let Some(why) = refusal {
        out.push_str(&format!("external     parameters cannot be external: {why}\n"));
        return;
    }
    out.push_str(
        "external     parameters can be split from the code (params = \"resident\", \"streamed\" or \"lazy\", cargo mlf split)\n",
    );
    let linked_names: Vec<&str> = desc.params.iter().filter_map(|p| p.linked.as_deref()).collect();
    let arrays = desc.code.constants.iter().filter(|c| c.kind == ConstantKind::StaticArray);
    let (n, bytes) =
        arrays.filter(|c| !linked_names.contains(&c.name.as_str())).fold((0, 0), |(n, b), c| (n + 1, b + c.bytes));
    if n > 0 {
        out.push_str(&format!(
            "             its {n} constant arrays ({bytes} bytes) are taken out of the C and read through a table of pointers; arrays under 32 bytes stay\n"
        ));
    }
    if let Some(Split { files, objects: Some(o), .. }) = object_constants(desc) {
        let total: u64 = files.iter().map(|f| f.bytes()).sum();
        out.push_str(&format!(
            "             its LLVM objects' {} read-only data sections ({total} bytes) leave whole, their relocations retargeted to the parameter region; {} sections ({} bytes: literal pools, small or exported data) stay\n",
            o.sections.len(),
            o.kept.0,
            o.kept.1
        ));
    }
    let linked = desc.params.iter().filter(|p| p.linked.is_some()).count();
    if linked > 0 {
        out.push_str(&format!(
            "             its {linked} linked parameters are read from the compiled C into parameter files\n"
        ));
    }
}
