//! Kendryte kmodel: the build-time reader.
//!
//! The bytes are parsed and checked by the runtime's parser ([`mlf_kmodel`]) — one
//! parser for the build and the run — and this module turns its validated view into a
//! [`ModelDesc`]: interface (the input from the header or the first layer, outputs from the
//! output table), memory figures, the layer list for `inspect`, and blockers (V5).
//! Damaged files are errors naming the file and the field (`layers[3].body: …`).

use std::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    Code, Executor, Fact, KmodelExec, MemoryInfo, ModelDesc, ModelFormat, StepInfo, TensorInfo, V5Info, V5Module,
};
use crate::support::dtype::DType;
use crate::support::hash::{FNV_OFFSET, fnv1a};
use mlf_kmodel::{self as rt, DataType, KmodelError, Model, Part, Pool, Step, v3, v4, v5};

/// Turns a runtime parser error into a build error naming the field.
pub fn error(e: KmodelError, version: u32) -> Error {
    let layer = if version == 3 { "layers" } else { "nodes" };
    let field = match e {
        KmodelError::BodyOutOfBounds { index, .. } | KmodelError::BodyTooSmall { index, .. } => {
            Some(format!("{layer}[{index}].body"))
        }
        KmodelError::BlockOutOfBounds { index, block, .. } => Some(format!(
            "{layer}[{index}].{}",
            match block {
                rt::Block::Registers => "layer_offset",
                rt::Block::BatchNorm => "bn",
                rt::Block::Activation => "act",
                rt::Block::Weights => "weights",
            }
        )),
        KmodelError::UnsupportedLayer { index, .. } => Some(format!("{layer}[{index}].type")),
        KmodelError::OutOfRange { index, .. } | KmodelError::Invalid { index, .. } if index != u32::MAX => {
            Some(format!("{layer}[{index}]"))
        }
        KmodelError::Truncated { part, .. } | KmodelError::BadCount { part, .. } | KmodelError::Empty { part } => Some(
            match part {
                Part::Header => "header",
                Part::Outputs => "outputs",
                Part::Inputs => "inputs",
                Part::Constants => "constants",
                Part::LayerHeaders => layer,
                Part::Body => "body",
                Part::Module => "modules",
                Part::Section => "sections",
            }
            .to_string(),
        ),
        KmodelError::BadArch { .. } => Some("header.arch".into()),
        KmodelError::BadTarget { .. } => Some("header.target".into()),
        KmodelError::FirstLayer { .. } => Some(format!("{layer}[0].type")),
        _ => None,
    };
    let mut err = Error::new(ErrorKind::Kmodel(e));
    if let Some(f) = field {
        err = err.at(f);
    }
    err
}

/// Largest kmodel read (256 MiB; the K210 has 8 MiB of SRAM and 16 MiB of flash).
pub const MAX_KMODEL_BYTES: u64 = 256 << 20;

/// Reads a kmodel file into a model description. V1 and unknown files are errors that say
/// what they are; V5 gives a description with a blocker (shown by `inspect`, refused by the
/// code generator).
pub fn read(path: &Path) -> Result<ModelDesc> {
    let bytes = crate::support::files::read_regular(path, MAX_KMODEL_BYTES, "kmodel")?;
    read_bytes(&bytes, path).map_err(|e| e.in_file(path))
}

/// Like [`read`], from bytes already in memory (`path` names the model).
pub fn read_bytes(bytes: &[u8], path: &Path) -> Result<ModelDesc> {
    let version = match rt::identify(bytes).map_err(|e| error(e, 0))? {
        rt::Version::V3 => 3,
        rt::Version::V4 => 4,
        rt::Version::V5 => return read_v5(bytes, path),
    };
    // One pass parses, checks and decodes.
    let (mut steps, mut infos) = (Vec::new(), Vec::new());
    let parsed = Model::parse_with(bytes, |b, s| {
        let name = kind_name(version, b.kind).unwrap_or("?").to_string();
        infos.push(StepInfo { kind: b.kind, name, offset: b.at as u64, size: b.size as u64, detail: detail(&s) });
        steps.push(s);
    });
    let model = match parsed {
        Ok(m) => m,
        // A well-formed V3 model that the SDK cannot run: describe it, with a blocker.
        Err(e @ (KmodelError::SixteenBitWeights | KmodelError::UnsupportedLayer { .. }))
            if version == 3 && known_v3(&e) =>
        {
            return unsupported_v3(bytes, path, e);
        }
        Err(e) => return Err(error(e, version)),
    };
    let req = model.requirements();
    let (header, constants_bytes) = header_fields(&model);
    let trailing_bytes = (bytes.len() - model.len()) as u64;
    let exec = KmodelExec {
        version,
        compiler: if version == 3 { "nncase v0.1" } else { "nncase v0.2" },
        file_bytes: bytes.len() as u64,
        model_bytes: model.len() as u64,
        trailing_bytes,
        steps: infos,
        main_bytes: req.main,
        kpu_bytes: req.kpu,
        kpu_rows: req.kpu.div_ceil(64),
        scratch_bytes: req.scratch,
        cpu_scratch_bytes: req.cpu_scratch,
        macs: req.macs,
        constants_bytes,
        header,
        v5: None,
    };
    let mut desc = describe(path, bytes, exec);
    desc.memory =
        MemoryInfo { workspace_bytes: req.main, constants_bytes, io_bytes: 0, operator_workspace: Vec::new() };
    describe_input(&mut desc, &model, &steps);
    describe_outputs(&mut desc, &model, &steps);
    if trailing_bytes > 0 {
        desc.warnings.push(format!("{trailing_bytes} bytes follow the model and are ignored"));
    }
    Ok(desc)
}

/// The header's fields as recorded (name, value), and the bytes of a V4 constants section.
fn header_fields(model: &Model<'_>) -> (Vec<(String, u64)>, u64) {
    match model {
        Model::V3(m) => {
            let h = &m.header;
            let header = vec![
                ("flags".into(), h.flags as u64),
                ("layers".into(), h.layers as u64),
                ("max_start_address".into(), h.max_start_address as u64),
                ("main_mem_usage".into(), h.main_mem_usage as u64),
                ("outputs".into(), h.outputs as u64),
            ];
            (header, 0)
        }
        Model::V4(m) => {
            let header = vec![
                ("target".into(), m.target as u64),
                ("constants".into(), m.constants.len() as u64),
                ("main_mem".into(), m.main_mem as u64),
                ("nodes".into(), m.nodes as u64),
                ("inputs".into(), m.inputs as u64),
                ("outputs".into(), m.outputs as u64),
            ];
            (header, m.constants.len() as u64)
        }
    }
}

/// The model's input: its shape from the first layer (V3) or the input table (V4).
fn describe_input(desc: &mut ModelDesc, model: &Model<'_>, steps: &[Step<'_>]) {
    match model {
        Model::V3(m) => {
            let s = m.input.shape;
            let (shape, src) = if matches!(steps[0], Step::V3(v3::Layer::FullyConnected { .. })) {
                (vec![1, s[1] as u64], "first layer (FULLY_CONNECTED in_channels)")
            } else {
                (s.iter().map(|&d| d as u64).collect(), "first layer registers (K210_CONV input map)")
            };
            desc.inputs.push(tensor("input", m.input.dtype, shape, src));
            desc.fact("input", format!("{:?} {}", desc.inputs[0].shape, desc.inputs[0].dtype), src);
        }
        Model::V4(m) => {
            let s = m.input.shape;
            desc.inputs.push(tensor(
                "input",
                m.input.dtype,
                s.iter().map(|&d| d as u64).collect(),
                "kmodel input_shapes[0]",
            ));
            if m.inputs > 1 {
                desc.warnings.push(format!(
                    "the model declares {} inputs; nncase's runtime (and mlf) use input 0 only",
                    m.inputs
                ));
            }
        }
    }
}

/// The model's outputs: their dtypes and sizes from the output table, their shapes from the
/// layer or node that writes them (else `[1, n]`).
fn describe_outputs(desc: &mut ModelDesc, model: &Model<'_>, steps: &[Step<'_>]) {
    let n_out = model.outputs();
    for i in 0..n_out {
        let (pool, start, size, dt) = model.output(i, steps).expect("output");
        let name = if n_out == 1 { "output".to_string() } else { format!("output{i}") };
        let numel = size as u64 / dt.bytes() as u64;
        let shape = match model {
            Model::V3(_) => v3_output_shape(steps, start, numel),
            Model::V4(_) => v4_output_shape(steps, &v4::MemRange { pool, dtype: dt, start, size }),
        };
        let (shape, src) =
            shape.unwrap_or_else(|| (vec![1, numel], "output byte size (kmodels record no output shapes)".to_string()));
        desc.facts.push(Fact { what: format!("{name} shape"), value: format!("{shape:?}"), source: src.clone() });
        desc.outputs.push(tensor(&name, dt, shape, &src));
    }
}

/// The description of a kmodel around `exec`: named after the file, hashed over the model's
/// extent (trailing bytes excluded), with no interface, warnings or blockers yet.
fn describe(path: &Path, bytes: &[u8], exec: KmodelExec) -> ModelDesc {
    ModelDesc {
        path: path.to_path_buf(),
        format: ModelFormat::Kmodel { version: exec.version },
        name: path.file_stem().and_then(|s| s.to_str()).unwrap_or("model").to_string(),
        content_hash: fnv1a(FNV_OFFSET, &bytes[..exec.model_bytes as usize]),
        executor: Executor::Kmodel(exec),
        inputs: Vec::new(),
        outputs: Vec::new(),
        params: Vec::new(),
        memory: MemoryInfo::default(),
        code: Code::default(),
        targets: Vec::new(),
        facts: Vec::new(),
        warnings: Vec::new(),
        blockers: Vec::new(),
    }
}

/// The SDK name of a V3 layer type or a V4 opcode.
fn kind_name(version: u32, kind: u32) -> Option<&'static str> {
    if version == 3 { v3::kind_name(kind) } else { v4::op_name(kind) }
}

fn tensor(name: &str, dt: DataType, shape: Vec<u64>, src: &str) -> TensorInfo {
    TensorInfo {
        name: name.into(),
        ident: name.into(),
        dtype: match dt {
            DataType::F32 => DType::F32,
            DataType::U8 => DType::U8,
        },
        shape,
        shape_source: src.into(),
        dtype_source: "kmodel".into(),
    }
}

/// The shape of a V3 output: a `K210_CONV` map when the output is that map (or its
/// element-wise dequantisation).
fn v3_output_shape(steps: &[Step<'_>], addr: u32, numel: u64) -> Option<(Vec<u64>, String)> {
    let conv_at = |a: u32| {
        steps.iter().rev().find_map(|s| match s {
            Step::V3(v3::Layer::K210Conv { main_out: Some(o), conv }) if *o == a => Some(conv.layer),
            _ => None,
        })
    };
    let producer = steps.iter().rev().find_map(|s| match *s {
        Step::V3(
            v3::Layer::ChannelwiseDequantize { input, output, .. } | v3::Layer::Dequantize { input, output, .. },
        ) if output == addr => Some(input),
        Step::V3(v3::Layer::K210Conv { main_out: Some(o), .. }) if o == addr => Some(addr),
        _ => None,
    })?;
    let l = conv_at(producer)?;
    let shape = vec![1, l.out_c as u64, l.out_h as u64, l.out_w as u64];
    (shape.iter().product::<u64>() == numel).then(|| (shape, "the K210_CONV layer that produces it".to_string()))
}

/// The shape of a V4 output from the node that writes it (kpu_conv2d maps, dequantised maps,
/// transposes, binaries, reductions).
fn v4_output_shape(steps: &[Step<'_>], r: &v4::MemRange) -> Option<(Vec<u64>, String)> {
    let shape = v4_written_shape(steps, r, 0)?;
    let numel = r.size as u64 / r.dtype.bytes() as u64;
    (shape.iter().product::<u64>() == numel).then(|| (shape, "the node that writes it".to_string()))
}

/// The shape the last node writing at `r`'s start writes, following element-wise nodes back
/// to their input (at most 4 deep).
fn v4_written_shape(steps: &[Step<'_>], r: &v4::MemRange, depth: u32) -> Option<Vec<u64>> {
    if depth > 4 {
        return None;
    }
    let same = |a: &v4::MemRange| a.pool == r.pool && a.start == r.start;
    steps.iter().rev().find_map(|s| match *s {
        Step::V4(v4::Node::KpuConv2d { main_out: Some(o), batches, conv }) if same(&o) => {
            let l = conv.layer;
            Some(vec![batches as u64, l.out_c as u64, l.out_h as u64, l.out_w as u64])
        }
        Step::V4(
            v4::Node::Dequantize { input, output, .. }
            | v4::Node::Quantize { input, output, .. }
            | v4::Node::Unary { input, output, .. },
        ) if same(&output) => v4_written_shape(steps, &input, depth + 1),
        Step::V4(v4::Node::Transpose { output, in_shape, perm, .. }) if same(&output) => {
            Some(perm.iter().map(|&p| in_shape[p as usize] as u64).collect())
        }
        Step::V4(
            v4::Node::Binary { output, out_shape, .. }
            | v4::Node::QuantizedBinary { output, out_shape, .. }
            | v4::Node::Reduce { output, out_shape, .. },
        ) if same(&output) => Some(out_shape.iter().map(|&d| d as u64).collect()),
        _ => None,
    })
}

fn pool_name(p: Pool) -> &'static str {
    match p {
        Pool::Constants => "const",
        Pool::Main => "main",
        Pool::Kpu => "kpu",
        Pool::Scratch => "scratch",
    }
}

/// A one-line summary of a step.
pub fn detail(s: &Step<'_>) -> String {
    let conv = |c: &rt::kpu::KpuConv<'_>, batches: u32| {
        let l = c.layer;
        format!(
            "{}{}x{}x{} -> {}x{}x{} k{} {}pool {:?}, KPU rows {}..{}",
            if batches > 1 { format!("{batches} x ") } else { String::new() },
            l.in_c,
            l.in_h,
            l.in_w,
            l.out_c,
            l.out_h,
            l.out_w,
            l.kernel,
            if l.depthwise { "depthwise " } else { "" },
            l.pool,
            l.src_row.min(l.dst_row),
            (l.src_row as u64 * 64 + l.in_map_bytes() * batches as u64)
                .max(l.dst_row as u64 * 64 + l.out_map_bytes() * batches as u64)
                .div_ceil(64)
        )
    };
    let mr = |r: &v4::MemRange| {
        format!("{}:{}[{}+{}]", pool_name(r.pool), if r.dtype == DataType::F32 { "f32" } else { "u8" }, r.start, r.size)
    };
    match s {
        Step::V3(v3::Layer::K210Conv { main_out, conv: c }) => {
            format!("{}{}", conv(c, 1), main_out.map(|a| format!(", main out @{a}")).unwrap_or_default())
        }
        Step::V3(v3::Layer::FullyConnected { in_channels, out_channels, act, .. }) => {
            format!("{in_channels} -> {out_channels}, act {act}")
        }
        Step::V4(v4::Node::KpuConv2d { main_out, batches, conv: c }) => {
            format!("{}{}", conv(c, *batches), main_out.map(|r| format!(", main out {}", mr(&r))).unwrap_or_default())
        }
        Step::V4(
            v4::Node::Dequantize { input, output, .. }
            | v4::Node::Quantize { input, output, .. }
            | v4::Node::Transpose { input, output, .. }
            | v4::Node::Pad { input, output, .. }
            | v4::Node::Unary { input, output, .. }
            | v4::Node::KpuUpload { input, output, .. }
            | v4::Node::MemoryCopy { input, output }
            | v4::Node::Reduce { input, output, .. }
            | v4::Node::ReduceWindow2d { input, output, .. }
            | v4::Node::Softmax { input, output, .. },
        ) => format!("{} -> {}", mr(input), mr(output)),
        Step::V4(
            v4::Node::MatMul { a, b, output, .. }
            | v4::Node::Binary { a, b, output, .. }
            | v4::Node::QuantizedBinary { a, b, output, .. },
        ) => {
            format!("{}, {} -> {}", mr(a), mr(b), mr(output))
        }
        _ => String::new(),
    }
}

/// Layer types the SDK defines but does not run (3, 4, 6, 7, 10, 19, 21), and 16-bit weights:
/// the file is well-formed, so it is described (with a blocker) rather than refused.
fn known_v3(e: &KmodelError) -> bool {
    match e {
        KmodelError::UnsupportedLayer { kind, .. } => v3::kind_name(*kind).is_some(),
        _ => true,
    }
}

/// The description of a V3 model that cannot run: header, layer table and output sizes only.
fn unsupported_v3(bytes: &[u8], path: &Path, why: KmodelError) -> Result<ModelDesc> {
    let h = v3::Header::read(bytes).map_err(|e| error(e, 3))?;
    let mut bodies = h.bodies();
    let steps = bodies
        .by_ref()
        .map(|b| {
            let b = b.map_err(|e| error(e, 3))?;
            let name = v3::kind_name(b.kind).unwrap_or("?").into();
            Ok(StepInfo { kind: b.kind, name, offset: b.at as u64, size: b.size as u64, detail: String::new() })
        })
        .collect::<Result<Vec<_>>>()?;
    let outs: Vec<TensorInfo> = (0..h.outputs)
        .map(|i| {
            let name = if h.outputs == 1 { "output".to_string() } else { format!("output{i}") };
            tensor(&name, DataType::F32, vec![1, h.output_range(i).1 as u64 / 4], "output byte size")
        })
        .collect();
    let model_bytes = bodies.end() as u64;
    let exec = KmodelExec {
        version: 3,
        compiler: "nncase v0.1",
        file_bytes: bytes.len() as u64,
        model_bytes,
        trailing_bytes: bytes.len() as u64 - model_bytes,
        steps,
        main_bytes: h.main_bytes(),
        header: vec![
            ("flags".into(), h.flags as u64),
            ("layers".into(), h.layers as u64),
            ("main_mem_usage".into(), h.main_mem_usage as u64),
            ("outputs".into(), h.outputs as u64),
        ],
        ..Default::default()
    };
    let blocker = match why {
        KmodelError::UnsupportedLayer { index, kind } => {
            format!(
                "layer {index} is {} (type {kind}), which the Kendryte SDK does not run",
                v3::kind_name(kind).unwrap_or("?")
            )
        }
        e => e.to_string(),
    };
    let mut desc = describe(path, bytes, exec);
    desc.outputs = outs;
    desc.blockers.push(blocker);
    Ok(desc)
}

fn read_v5(bytes: &[u8], path: &Path) -> Result<ModelDesc> {
    let h = v5::header(bytes).map_err(|e| error(e, 5))?;
    let mut modules = Vec::new();
    let end = v5::walk(bytes, &h, |m, pools, secs| {
        modules.push(V5Module {
            kind: String::from_utf8_lossy(m.kind).into_owned(),
            version: m.version,
            size: m.size,
            functions: m.functions,
            mempools: pools.map(|p| (p.location, p.size)).collect(),
            sections: secs.map(|s| (String::from_utf8_lossy(s.name).into_owned(), s.flags, s.body_size)).collect(),
        })
    })
    .map_err(|e| error(e, 5))?;
    let exec = KmodelExec {
        version: 5,
        compiler: "nncase v1.x",
        file_bytes: bytes.len() as u64,
        model_bytes: end as u64,
        trailing_bytes: (bytes.len() - end) as u64,
        steps: Vec::new(),
        main_bytes: modules.iter().flat_map(|m| &m.mempools).filter(|p| p.0 == 3 || p.0 == 4).map(|p| p.1 as u64).sum(),
        kpu_bytes: modules
            .iter()
            .flat_map(|m| &m.mempools)
            .filter(|p| p.0 >= 64)
            .map(|p| p.1 as u64)
            .max()
            .unwrap_or(0),
        kpu_rows: 0,
        scratch_bytes: 0,
        cpu_scratch_bytes: 0,
        macs: 0,
        constants_bytes: 0,
        header: vec![
            ("header_size".into(), if h.new_layout { 32 } else { 24 }),
            ("flags".into(), h.flags as u64),
            ("alignment".into(), h.alignment as u64),
            ("modules".into(), h.modules as u64),
            ("entry_module".into(), h.entry_module as u64),
            ("entry_function".into(), h.entry_function as u64),
        ],
        v5: Some(V5Info { new_layout: h.new_layout, alignment: h.alignment, entry_module: h.entry_module, modules }),
    };
    let mut desc = describe(path, bytes, exec);
    desc.blockers.push(KmodelError::V5NotRunnable.to_string());
    Ok(desc)
}
