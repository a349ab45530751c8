//! Small synthetic kmodels written byte by byte from docs/kmodel.md, and damaged variants of
//! them, so the kmodel tests run without ../shared.
//!
//! - [`v3_conv`]: V3, `K210_CONV` (1×4×4 → 2×4×4, 1×1, weights 1 and 2, main output) then
//!   `DEQUANTIZE` (scale 0.5): output = 0.5 · clamp(x · w).
//! - [`v4_conv`]: the same network as V4 (`kpu_conv2d` + `dequantize` with inverse scale 2).
//! - [`v3_fc`]: V3, two `FULLY_CONNECTED` layers (4 → 3 ReLU → 2).
//! - [`v4_qconv`]: V4 CPU target, one NCHW `QUANTIZED_CONV2D` (1×4×4 → 2×4×4, 3×3, padding 1).
//! - [`v4_cpu`]: any V4 CPU-target model from node bodies (for runtime cases).
//! - [`corrupt_cases`]: ≥ 20 damaged files, each with the error the parser must report.

use mlf_kmodel::{Block, KmodelError, Part, Pool};

fn u32s(v: &mut Vec<u8>, xs: &[u32]) {
    for x in xs {
        v.extend_from_slice(&x.to_le_bytes());
    }
}

fn pad8(v: &mut Vec<u8>) {
    while v.len() & 7 != 0 {
        v.push(0);
    }
}

/// The 96 bytes of KPU registers of the synthetic layer: 1×4×4 → 2×4×4, 1×1 kernel, no
/// pooling, input at row `src`, output at row `dst`; `bwsx`, `para`, `act` are the V4 skip
/// counts (0 in V3).
pub fn regs(src: u64, dst: u64, kernel_type: u64, pool: u64, bwsx: u64, para: u64, act: u64) -> Vec<u8> {
    let (ic, oc, w, h) = (1u64, 2u64, 4u64, 4u64);
    let r = [
        0,                                                             // interrupt_enabe
        src | (dst << 32),                                             // image_addr
        (ic - 1) | ((oc - 1) << 32) | ((oc - 1) << 48),                // image_channel_num
        (w - 1) | ((h - 1) << 10) | ((w - 1) << 32) | ((h - 1) << 42), // image_size
        kernel_type | (pool << 4) | (bwsx << 32),                      // kernel_pool_type_cfg (pad 0)
        (2 << 15) | (para << 32),                                      // kernel_load_cfg: 1 load of 2 bytes
        0,                                                             // kernel_offset
        act << 32,                                                     // kernel_calc_type_cfg
        0,                                                             // write_back_cfg
        0,                                                             // conv_value: all zero
        0,                                                             // conv_value2
        (oc * w * h - 1) << 32,                                        // dma_parameter
    ];
    r.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Batch norm: identity for 2 channels (mul 1, shift 0, add 0).
pub fn bn() -> Vec<u8> {
    [1u64, 1].iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Activation: ReLU clamp (segment 0 from −2^35 maps to 0, segment 1..15 from 0 is identity).
pub fn act(shift: u64) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..16u64 {
        let seg = if i == 0 { ((1u64 << 36) - (1 << 35)) << 24 } else { shift | (1 << 8) };
        v.extend_from_slice(&seg.to_le_bytes());
    }
    v.extend_from_slice(&[0; 16]);
    v
}

/// Offsets of interest in [`v3_conv`]'s bytes.
pub struct V3Layout {
    /// Offset of the output table.
    pub outputs: usize,
    /// Offset of the layer header table.
    pub headers: usize,
    /// Body offsets.
    pub bodies: [usize; 2],
    /// Absolute offset of the registers block.
    pub regs: usize,
    /// Absolute offset of the activation block.
    pub act: usize,
}

/// The synthetic V3 model and its layout.
pub fn v3_conv_with(kernel_type: u64, pool: u64, act_shift: u64) -> (Vec<u8>, V3Layout) {
    let body_start = 28 + 8 * (1 + 2);
    // Body 0: args (24) + regs (96) + bn (16) + act (144) + weights (2), padded.
    let regs_at = body_start + 24;
    let bn_at = regs_at + 96;
    let act_at = bn_at + 16;
    let w_at = act_at + 144;
    let mut b0 = Vec::new();
    u32s(&mut b0, &[1, 0, regs_at as u32, w_at as u32, bn_at as u32, act_at as u32]);
    b0.extend(regs(32, 40, kernel_type, pool, 0, 0, 0));
    b0.extend(bn());
    b0.extend(act(act_shift));
    b0.extend([1, 2]);
    let mut tmp = vec![0u8; body_start];
    tmp.extend(&b0);
    pad8(&mut tmp);
    let b0_len = tmp.len() - body_start;
    let mut b1 = Vec::new();
    u32s(&mut b1, &[1, 0, 32, 32]);
    b1.extend(0.5f32.to_le_bytes());
    b1.extend(0f32.to_le_bytes());
    let mut v = Vec::new();
    u32s(&mut v, &[3, 1, 0, 2, 0, 160, 1]);
    u32s(&mut v, &[32, 128]);
    u32s(&mut v, &[10240, b0_len as u32, 12, 24]);
    v.extend(&tmp[body_start..]);
    v.extend(&b1);
    (v, V3Layout { outputs: 28, headers: 36, bodies: [body_start, body_start + b0_len], regs: regs_at, act: act_at })
}

/// The synthetic V3 `K210_CONV` + `DEQUANTIZE` model.
pub fn v3_conv() -> Vec<u8> {
    v3_conv_with(0, 0, 0).0
}

/// Offsets of interest in [`v4_conv`]'s bytes.
pub struct V4Layout {
    /// Input memory range.
    pub input: usize,
    /// Output memory range.
    pub output: usize,
    /// Node header table.
    pub headers: usize,
    /// Body offsets.
    pub bodies: [usize; 2],
}

/// The synthetic V4 model and its layout.
pub fn v4_conv() -> (Vec<u8>, V4Layout) {
    let mut v = Vec::new();
    u32s(&mut v, &[u32::from_le_bytes(*b"LDMK"), 4, 0, 1, 0, 160, 2, 1, 1, 0xCCCC_CCCC]);
    let input = v.len();
    u32s(&mut v, &[2, 1, 0, 16]); // kpu u8 [0+16]
    u32s(&mut v, &[1, 1, 4, 4]);
    let output = v.len();
    u32s(&mut v, &[1, 0, 32, 128]); // main f32 [32+128]
    let headers = v.len();
    let mut b0 = Vec::new();
    u32s(&mut b0, &[1, 1, 0, 32]); // main_mem_output main u8 [0+32]
    u32s(&mut b0, &[1, 0]); // batches, reserved
    b0.extend(regs(0, 4, 0, 0, 0, 0, 0));
    b0.extend(bn());
    b0.extend(act(0));
    b0.extend([1, 2]);
    let mut b1 = Vec::new();
    u32s(&mut b1, &[1, 1, 0, 32, 1, 0, 32, 128, 0]);
    b1.extend(2f32.to_le_bytes());
    let body_start = headers + 16;
    let mut bodies = vec![0u8; body_start];
    bodies.extend(&b0);
    pad8(&mut bodies);
    let b0_len = bodies.len() - body_start;
    u32s(&mut v, &[0x2002, b0_len as u32, 0x03, b1.len() as u32]);
    v.extend(&bodies[body_start..]);
    v.extend(&b1);
    (v, V4Layout { input, output, headers, bodies: [body_start, body_start + b0_len] })
}

/// Parameters of [`v4_qconv`]'s single `QUANTIZED_CONV2D` node.
pub struct QConv {
    /// Added to every input byte.
    pub input_offset: i32,
    /// Added to every weight byte.
    pub filter_offset: i32,
    /// Requantisation multiplier.
    pub mul: i32,
    /// Requantisation right shift (rounded).
    pub shift: u8,
    /// Added after requantisation.
    pub offset: i32,
    /// One bias per output channel.
    pub bias: [i32; 2],
    /// Weights `[oc][ky][kx]`.
    pub weights: [[u8; 9]; 2],
}

/// The parameters [`v4_qconv`] writes.
pub fn qconv_params() -> QConv {
    let mut weights = [[0u8; 9]; 2];
    for (oc, w) in weights.iter_mut().enumerate() {
        for (k, v) in w.iter_mut().enumerate() {
            *v = ((k * (oc + 2) + oc) % 9) as u8;
        }
    }
    QConv { input_offset: -128, filter_offset: -3, mul: 5, shift: 5, offset: 128, bias: [100, -50], weights }
}

/// A V4 model for the CPU target with one NCHW `QUANTIZED_CONV2D` node: u8 input 1×1×4×4 at
/// main 0, u8 output 1×2×4×4 at main 16, 3×3 filter, stride 1, padding 1 on every side, the
/// parameters of [`qconv_params`].
pub fn v4_qconv() -> Vec<u8> {
    let q = qconv_params();
    let mut body = Vec::new();
    u32s(&mut body, &[1, 1, 0, 16, 1, 1, 16, 32]); // input, output ranges (main u8)
    u32s(&mut body, &[1, 1, 4, 4, 1, 2]); // in_shape, groups, out_channels
    u32s(&mut body, &[1, 1, 1, 1, 3, 3, 1, 1, 1, 1]); // padding h, w; filter; stride; dilation
    let requant = [q.input_offset, q.filter_offset, q.mul, q.shift as i32, q.offset];
    u32s(&mut body, &requant.map(|v| v as u32));
    u32s(&mut body, &q.bias.map(|v| v as u32));
    body.extend(q.weights.concat());
    v4_cpu(48, &[], [1, 1, 0, 16], [1, 1, 4, 4], [1, 1, 16, 32], &[(0x0F, body)])
}

/// A V4 model for the CPU target: `main_mem` bytes of main memory, the `constants` blob, input 0
/// (memory range words `[memory_type, datatype, start, size]`) of shape `in_shape`, one output
/// range, and the nodes `(opcode, body)` in order, without padding between bodies.
pub fn v4_cpu(
    main_mem: u32,
    constants: &[u8],
    input: [u32; 4],
    in_shape: [u32; 4],
    output: [u32; 4],
    nodes: &[(u32, Vec<u8>)],
) -> Vec<u8> {
    let mut v = Vec::new();
    let header = [u32::from_le_bytes(*b"LDMK"), 4, 0, 0, constants.len() as u32, main_mem, nodes.len() as u32];
    u32s(&mut v, &header);
    u32s(&mut v, &[1, 1, 0]); // inputs, outputs, reserved
    u32s(&mut v, &input);
    u32s(&mut v, &in_shape);
    u32s(&mut v, &output);
    v.extend(constants);
    for (op, body) in nodes {
        u32s(&mut v, &[*op, body.len() as u32]);
    }
    for (_, body) in nodes {
        v.extend(body);
    }
    v
}

/// Little-endian bytes of `i32` words (node bodies of [`v4_cpu`] models).
pub fn words(xs: &[i32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A V3 model of two `FULLY_CONNECTED` layers: 4 → 3 (ReLU) → 2; weights `w1[o][i] = (o + 1) ·
/// (i + 1) / 10`, `w2[o][i] = o − i`, biases 0.5.
pub fn v3_fc() -> Vec<u8> {
    let body_start = 28 + 8 * 3;
    let mut b0 = Vec::new();
    u32s(&mut b0, &[0, 0, 16, 4, 3, 1]);
    for o in 0..3 {
        for i in 0..4 {
            b0.extend(((o + 1) as f32 * (i + 1) as f32 / 10.0).to_le_bytes());
        }
    }
    for _ in 0..3 {
        b0.extend(0.5f32.to_le_bytes());
    }
    let mut tmp = vec![0u8; body_start];
    tmp.extend(&b0);
    pad8(&mut tmp);
    let b0_len = tmp.len() - body_start;
    let mut b1 = Vec::new();
    u32s(&mut b1, &[0, 16, 32, 3, 2, 0]);
    for o in 0..2 {
        for i in 0..3 {
            b1.extend((o as f32 - i as f32).to_le_bytes());
        }
    }
    for _ in 0..2 {
        b1.extend(0.5f32.to_le_bytes());
    }
    let mut v = Vec::new();
    u32s(&mut v, &[3, 1, 0, 2, 0, 40, 1]);
    u32s(&mut v, &[32, 8]);
    u32s(&mut v, &[18, b0_len as u32, 18, b1.len() as u32]);
    v.extend(&tmp[body_start..]);
    v.extend(&b1);
    v
}

/// A copy of `base` changed by `f`.
fn patched(base: &[u8], f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = base.to_vec();
    f(&mut b);
    b
}

fn put(v: &mut [u8], at: usize, x: u32) {
    v[at..at + 4].copy_from_slice(&x.to_le_bytes());
}

/// A damaged model: its name, bytes, and a check of the error the parser must report.
pub struct Corrupt {
    /// What was damaged.
    pub name: &'static str,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Whether an error is the expected one.
    pub expect: fn(&KmodelError) -> bool,
}

/// Damaged variants of the synthetic models (truncations, bad offsets, bad counts, bad
/// versions, bad registers, bad memory ranges), each with the error it must produce.
pub fn corrupt_cases() -> Vec<Corrupt> {
    let (v3, l3) = v3_conv_with(0, 0, 0);
    let (v4, l4) = v4_conv();
    let mut out = Vec::new();
    let mut case = |name: &'static str, bytes: Vec<u8>, expect: fn(&KmodelError) -> bool| {
        out.push(Corrupt { name, bytes, expect })
    };
    case("empty file", vec![], |e| matches!(e, KmodelError::UnknownFormat { .. }));
    case("legacy V1", vec![1, 0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0], |e| *e == KmodelError::LegacyV1);
    case("kendryte-model-compiler bin", 0x1234_5678u32.to_le_bytes().repeat(4), |e| {
        *e == KmodelError::ModelCompilerBin
    });
    case(
        "unknown magic",
        b"GIF89a..........".to_vec(),
        |e| matches!(e, KmodelError::UnknownFormat { head } if head[..3] == *b"GIF"),
    );
    case("KMDL version 6", patched(&v4, |b| put(b, 4, 6)), |e| *e == KmodelError::UnsupportedVersion { version: 6 });
    case("V5 header", patched(&v4, |b| put(b, 4, 5)), |e| *e == KmodelError::V5NotRunnable);
    case("V3 header truncated", v3[..20].to_vec(), |e| matches!(e, KmodelError::Truncated { part: Part::Header, .. }));
    case("V3 arch 1", patched(&v3, |b| put(b, 8, 1)), |e| *e == KmodelError::BadArch { arch: 1 });
    case("V3 output count past the file", patched(&v3, |b| put(b, 24, 0x1000_0000)), |e| {
        matches!(e, KmodelError::BadCount { part: Part::Outputs, .. })
    });
    case("V3 layer count past the file", patched(&v3, |b| put(b, 12, 5000)), |e| {
        matches!(e, KmodelError::BadCount { part: Part::LayerHeaders, .. })
    });
    case("V3 no layers", patched(&v3, |b| put(b, 12, 0)), |e| *e == KmodelError::Empty { part: Part::LayerHeaders });
    case("V3 16-bit weights", patched(&v3, |b| put(b, 4, 0)), |e| *e == KmodelError::SixteenBitWeights);
    case("V3 body size past the file", patched(&v3, |b| put(b, l3.headers + 12, 4096)), |e| {
        matches!(e, KmodelError::BodyOutOfBounds { index: 1, .. })
    });
    case("V3 truncated in the last body", v3[..v3.len() - 12].to_vec(), |e| {
        matches!(e, KmodelError::BodyOutOfBounds { index: 1, .. })
    });
    case("V3 last body too small", patched(&v3, |b| put(b, l3.headers + 12, 8)), |e| {
        matches!(e, KmodelError::BodyTooSmall { index: 1, .. })
    });
    case("V3 conv registers offset past the file", patched(&v3, |b| put(b, l3.bodies[0] + 8, 1 << 30)), |e| {
        matches!(e, KmodelError::BlockOutOfBounds { index: 0, block: Block::Registers, .. })
    });
    case("V3 conv weights offset past the file", patched(&v3, |b| put(b, l3.bodies[0] + 12, u32::MAX - 1)), |e| {
        matches!(e, KmodelError::BlockOutOfBounds { index: 0, block: Block::Weights, .. })
    });
    case(
        "V3 conv activation offset past the file",
        patched(&v3, |b| {
            let n = b.len() as u32 - 10;
            put(b, l3.bodies[0] + 20, n)
        }),
        |e| matches!(e, KmodelError::BlockOutOfBounds { index: 0, block: Block::Activation, .. }),
    );
    case("V3 conv kernel_type 2", patched(&v3, |b| b[l3.regs + 32] = 2), |e| {
        matches!(e, KmodelError::Invalid { index: 0, .. })
    });
    case("V3 conv pool_type 12", patched(&v3, |b| b[l3.regs + 32] = 12 << 4), |e| {
        matches!(e, KmodelError::Invalid { index: 0, .. })
    });
    case("V3 conv activation shift 40", patched(&v3, |b| b[l3.act + 8] = 40), |e| {
        matches!(e, KmodelError::Invalid { index: 0, .. })
    });
    case(
        "V3 conv input map past KPU RAM",
        patched(&v3, |b| b[l3.regs + 8..l3.regs + 10].copy_from_slice(&0x7fffu16.to_le_bytes())),
        |e| matches!(e, KmodelError::OutOfRange { index: 0, pool: Pool::Kpu, .. }),
    );
    case("V3 output past main memory", patched(&v3, |b| put(b, l3.outputs, 150)), |e| {
        matches!(e, KmodelError::OutOfRange { pool: Pool::Main, .. })
    });
    case("V3 dequantize count past main memory", patched(&v3, |b| put(b, l3.bodies[1] + 12, 1000)), |e| {
        matches!(e, KmodelError::OutOfRange { index: 1, pool: Pool::Main, .. })
    });
    case("V3 unknown layer type", patched(&v3, |b| put(b, l3.headers + 8, 999)), |e| {
        *e == KmodelError::UnsupportedLayer { index: 1, kind: 999 }
    });
    case("V3 layer type the SDK does not run", patched(&v3, |b| put(b, l3.headers + 8, 3)), |e| {
        *e == KmodelError::UnsupportedLayer { index: 1, kind: 3 }
    });
    case("V3 first layer not conv or FC", patched(&v3, |b| put(b, l3.headers, 12)), |e| {
        matches!(e, KmodelError::FirstLayer { kind: 12 })
    });
    // v4_qconv: 40-byte header, input range + shape, output range, one node header; the body
    // (at 96) holds two ranges, in_shape at 128, groups 144, out_channels 148, window 152..192,
    // input_offset, filter_offset, mul, shift at 204.
    let q4 = v4_qconv();
    case(
        "V4 dimension above 2^24",
        patched(&q4, |b| put(b, 140, 1 << 25)),
        |e| matches!(e, KmodelError::Invalid { index: 0, what } if what.contains("2^24")),
    );
    case(
        "V4 quantized conv groups 0",
        patched(&q4, |b| put(b, 144, 0)),
        |e| matches!(e, KmodelError::Invalid { index: 0, what } if what.contains("groups")),
    );
    case(
        "V4 quantized conv shift 64",
        patched(&q4, |b| put(b, 204, 64)),
        |e| matches!(e, KmodelError::Invalid { index: 0, what } if what.contains("shift above 63")),
    );
    case("V4 header truncated", v4[..30].to_vec(), |e| matches!(e, KmodelError::Truncated { part: Part::Header, .. }));
    case("V4 target 7", patched(&v4, |b| put(b, 12, 7)), |e| *e == KmodelError::BadTarget { target: 7 });
    case("V4 no inputs", patched(&v4, |b| put(b, 28, 0)), |e| *e == KmodelError::Empty { part: Part::Inputs });
    case("V4 constants past the file", patched(&v4, |b| put(b, 16, 1 << 24)), |e| {
        matches!(e, KmodelError::Truncated { part: Part::Constants, .. })
    });
    case("V4 node count past the file", patched(&v4, |b| put(b, 24, 100_000)), |e| {
        matches!(e, KmodelError::BadCount { part: Part::LayerHeaders, .. })
    });
    case("V4 memory type 9", patched(&v4, |b| put(b, l4.output, 9)), |e| matches!(e, KmodelError::Invalid { .. }));
    case("V4 output past main memory", patched(&v4, |b| put(b, l4.output + 12, 1000)), |e| {
        matches!(e, KmodelError::OutOfRange { pool: Pool::Main, .. })
    });
    case("V4 input past KPU RAM", patched(&v4, |b| put(b, l4.input + 8, 0x20_0000)), |e| {
        matches!(e, KmodelError::OutOfRange { pool: Pool::Kpu, .. })
    });
    case("V4 unknown opcode", patched(&v4, |b| put(b, l4.headers + 8, 0x77)), |e| {
        *e == KmodelError::UnsupportedLayer { index: 1, kind: 0x77 }
    });
    case(
        "V4 kpu_conv2d BN skip past the body",
        patched(&v4, |b| b[l4.bodies[0] + 24 + 36..l4.bodies[0] + 24 + 40].copy_from_slice(&5000u32.to_le_bytes())),
        |e| matches!(e, KmodelError::BlockOutOfBounds { index: 0, block: Block::BatchNorm, .. }),
    );
    case("V4 kpu_conv2d zero batches", patched(&v4, |b| put(b, l4.bodies[0] + 16, 0)), |e| {
        matches!(e, KmodelError::Invalid { index: 0, .. })
    });
    case("V4 dequantize output too small", patched(&v4, |b| put(b, l4.bodies[1] + 28, 64)), |e| {
        matches!(e, KmodelError::Invalid { index: 1, .. })
    });
    case("V4 dequantize writes the constants", patched(&v4, |b| put(b, l4.bodies[1] + 16, 0)), |e| {
        matches!(e, KmodelError::Invalid { index: 1, .. } | KmodelError::OutOfRange { index: 1, .. })
    });
    // Found by cargo-fuzz: size products that overflowed before they were checked.
    let mut fc = v3_fc();
    put(&mut fc, 52 + 12, u32::MAX);
    put(&mut fc, 52 + 16, u32::MAX);
    case("V3 FC weight count overflows", fc, |e| matches!(e, KmodelError::BodyTooSmall { index: 0, .. }));
    // Dimensions of 2^24 (the largest allowed): the map size saturates, then is refused.
    case(
        "V4 input shape overflows the KPU map size",
        patched(&v4, |b| {
            for d in 0..4 {
                put(b, l4.input + 16 + 4 * d, 1 << 24);
            }
        }),
        |e| matches!(e, KmodelError::OutOfRange { pool: Pool::Kpu, end: u64::MAX, .. }),
    );
    case("V4 truncated in the last body", v4[..v4.len() - 20].to_vec(), |e| {
        matches!(e, KmodelError::BodyOutOfBounds { index: 1, .. })
    });
    out
}
