//! Decoding V4 node bodies. Bodies are raw copies of nncase's option structs (tail padding
//! included); the variable-size ones are followed by their arrays. Layouts: nncase v0.2.0-beta4
//! `src/common/include/runtime/neutral/neutral_ops_body.h`, `k210/k210_ops_body.h` and
//! `cpu/cpu_ops_body.h`.

use crate::error::{Block, KmodelError, Part};
use crate::kpu::{KpuConv, KpuLayer};
use crate::nnil;
use crate::reader::Reader;

use super::header::{clamp, ivec, padding, range, requant, shape};
use super::node::Node;
use super::types::{Requant, Window, op, prod};

/// Decodes one node body of `opcode` (`body` starts at model offset `at`).
pub fn decode(opcode: u32, body: &[u8], at: usize, index: u32) -> Result<Node<'_>, KmodelError> {
    let mut r = Reader::new(body, at, Part::Body);
    let res = match opcode {
        op::BINARY | op::QUANTIZED_BINARY => binary(opcode, &mut r, index),
        op::CONV2D | op::QUANTIZED_CONV2D => conv2d(opcode, &mut r, index),
        op::CONV2D_TRANSPOSE => conv2d_transpose(&mut r, index),
        op::MATMUL | op::QUANTIZED_MATMUL => matmul(opcode, &mut r),
        op::REDUCE | op::REDUCE_WINDOW2D | op::CPU_REDUCE_WINDOW2D => reduce(opcode, &mut r, index),
        op::CPU_CONV2D | op::CPU_QUANTIZED_CONV2D | op::CPU_DEPTHWISE_CONV2D | op::CPU_QUANTIZED_DEPTHWISE_CONV2D => {
            cpu_conv2d(opcode, &mut r, index)
        }
        op::KPU_CONV2D => kpu_conv2d(&mut r, at, index),
        _ => simple(opcode, &mut r, index),
    };
    match res {
        Err(KmodelError::Truncated { offset, needed, .. }) => {
            Err(KmodelError::BodyTooSmall { index, needed: offset - at as u64 + needed, size: body.len() as u64 })
        }
        Err(KmodelError::Invalid { index: u32::MAX, what }) => Err(KmodelError::Invalid { index, what }),
        other => other,
    }
}

/// `count` elements of `elem` bytes (a truncation error when they do not fit).
fn span<'a>(r: &mut Reader<'a>, count: u64, elem: u64) -> Result<&'a [u8], KmodelError> {
    let n = count.checked_mul(elem).filter(|&n| n <= r.remaining() as u64);
    match n {
        Some(n) => r.bytes(n as usize),
        None => r.bytes(usize::MAX / 2),
    }
}

fn window(r: &mut Reader<'_>) -> Result<Window, KmodelError> {
    let pad_h = padding(r)?;
    let pad_w = padding(r)?;
    let filter = (r.i32()?, r.i32()?);
    let stride = (r.i32()?, r.i32()?);
    let dilation = (r.i32()?, r.i32()?);
    Ok(Window { pad_h, pad_w, filter, stride, dilation })
}

/// The fixed-size bodies that need no arithmetic to decode.
fn simple<'a>(opcode: u32, r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    Ok(match opcode {
        op::CONCAT => {
            let output = range(r)?;
            let (inner, outer, n) = (r.u32()?, r.u32()?, r.u32()?);
            let inputs = span(r, n as u64, 16)?;
            let dims = span(r, n as u64, 4)?;
            Node::Concat { output, inner, outer, inputs, dims }
        }
        op::DEQUANTIZE | op::QUANTIZE => {
            let (input, output) = (range(r)?, range(r)?);
            let (zero_point, scale) = (r.i32()?, r.f32()?);
            match opcode {
                op::DEQUANTIZE => Node::Dequantize { input, output, zero_point, scale },
                _ => Node::Quantize { input, output, zero_point, scale },
            }
        }
        op::MEMORY_COPY => Node::MemoryCopy { input: range(r)?, output: range(r)? },
        op::PAD => {
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let paddings = [padding(r)?, padding(r)?, padding(r)?, padding(r)?];
            let _dt = r.u32()?;
            let v = r.bytes(4)?;
            Node::Pad { input, output, in_shape, paddings, value: [v[0], v[1], v[2], v[3]] }
        }
        op::RESIZE_IMAGE => resize(r, index)?,
        op::SOFTMAX => {
            let (input, output) = (range(r)?, range(r)?);
            Node::Softmax { input, output, inner: r.u32()?, outer: r.u32()?, beta: r.f32()? }
        }
        op::TRANSPOSE => {
            let (input, output) = (range(r)?, range(r)?);
            let (in_shape, perm) = (shape(r, index)?, shape(r, index)?);
            let mut seen = [false; 4];
            for &p in &perm {
                if p > 3 || seen[p as usize] {
                    return Err(KmodelError::Invalid { index, what: "transpose perm is not a permutation of 0..4" });
                }
                seen[p as usize] = true;
            }
            Node::Transpose { input, output, in_shape, perm }
        }
        op::STRIDED_SLICE => {
            let (input, output) = (range(r)?, range(r)?);
            let in_shape = shape(r, index)?;
            let (begin, end, strides) = (ivec(r)?, ivec(r)?, ivec(r)?);
            Node::StridedSlice { input, output, in_shape, begin, end, strides }
        }
        op::UNARY => {
            let (input, output) = (range(r)?, range(r)?);
            let opv = r.u32()?;
            if opv > 9 {
                return Err(KmodelError::Invalid { index, what: "unary op must be 0..=9" });
            }
            Node::Unary { input, output, op: opv }
        }
        op::NNIL_UNARY_METHOD => {
            let (input, output) = (range(r)?, range(r)?);
            let program = r.bytes(r.remaining())?;
            nnil::check(program).map_err(|what| KmodelError::Invalid { index, what })?;
            Node::NnilUnary { input, output, program }
        }
        op::TABLE_LOOKUP1D => Node::TableLookup1d { input: range(r)?, table: range(r)?, output: range(r)? },
        op::KPU_UPLOAD => Node::KpuUpload { input: range(r)?, output: range(r)?, in_shape: shape(r, index)? },
        _ => return Err(KmodelError::UnsupportedLayer { index, kind: opcode }),
    })
}

fn resize<'a>(r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    let (input, output) = (range(r)?, range(r)?);
    let in_shape = shape(r, index)?;
    let (out_h, out_w, mode) = (r.i32()?, r.i32()?, r.u32()?);
    let align = r.u8()?;
    if out_h <= 0 || out_w <= 0 || mode > 1 {
        return Err(KmodelError::Invalid { index, what: "resize: output size must be positive and mode 0 or 1" });
    }
    let (out_h, out_w, bilinear, align_corners) = (out_h as u32, out_w as u32, mode == 0, align != 0);
    Ok(Node::ResizeImage { input, output, in_shape, out_h, out_w, bilinear, align_corners })
}

fn binary<'a>(opcode: u32, r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    let (a, b, output) = (range(r)?, range(r)?, range(r)?);
    let opv = r.u32()?;
    let (a_shape, b_shape, out_shape) = (shape(r, index)?, shape(r, index)?, shape(r, index)?);
    if opv > 5 {
        return Err(KmodelError::Invalid { index, what: "binary op must be 0..=5" });
    }
    if opcode == op::BINARY {
        return Ok(Node::Binary { a, b, output, op: opv, a_shape, b_shape, out_shape, act: clamp(r)? });
    }
    let (qa, qb, qo) = (requant(r)?, requant(r)?, requant(r)?);
    Ok(Node::QuantizedBinary { a, b, output, op: opv, a_shape, b_shape, out_shape, qa, qb, qo })
}

fn conv2d<'a>(opcode: u32, r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    let (input, output) = (range(r)?, range(r)?);
    let in_shape = shape(r, index)?;
    let (groups, oc) = (r.u32()?, r.u32()?);
    let win = window(r)?;
    if groups == 0 || in_shape[1] % groups != 0 || oc % groups != 0 {
        return Err(KmodelError::Invalid { index, what: "groups must divide the input and output channels" });
    }
    let filter = [win.filter.0.max(0) as u64, win.filter.1.max(0) as u64];
    let wn = prod(&[oc as u64, (in_shape[1] / groups) as u64, filter[0], filter[1]]);
    if opcode == op::CONV2D {
        let act = clamp(r)?;
        let weights = span(r, wn, 4)?;
        let bias = span(r, oc as u64, 4)?;
        return Ok(Node::Conv2d { input, output, in_shape, groups, out_channels: oc, win, act, weights, bias });
    }
    let (input_offset, filter_offset) = (r.i32()?, r.i32()?);
    // The output parameters are stored as mul, shift, offset here.
    let (mul, shift, offset) = (r.i32()?, r.i32()? as u8, r.i32()?);
    let bias = span(r, oc as u64, 4)?;
    let weights = span(r, wn, 1)?;
    let qo = Requant { offset, mul, shift };
    let out_channels = oc;
    Ok(Node::QuantizedConv2d {
        input,
        output,
        in_shape,
        groups,
        out_channels,
        win,
        input_offset,
        filter_offset,
        qo,
        bias,
        weights,
    })
}

fn conv2d_transpose<'a>(r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    let (input, output) = (range(r)?, range(r)?);
    let (in_shape, out_shape) = (shape(r, index)?, shape(r, index)?);
    let groups = r.u32()?;
    let win = window(r)?;
    let act = clamp(r)?;
    if groups == 0 || in_shape[1] % groups != 0 || out_shape[1] % groups != 0 {
        return Err(KmodelError::Invalid { index, what: "groups must divide the input and output channels" });
    }
    let filter = [win.filter.0.max(0) as u64, win.filter.1.max(0) as u64];
    let wn = prod(&[out_shape[1] as u64, (in_shape[1] / groups) as u64, filter[0], filter[1]]);
    let weights = span(r, wn, 4)?;
    let bias = span(r, out_shape[1] as u64, 4)?;
    Ok(Node::Conv2dTranspose { input, output, in_shape, out_shape, groups, win, act, weights, bias })
}

fn matmul<'a>(opcode: u32, r: &mut Reader<'a>) -> Result<Node<'a>, KmodelError> {
    let (a, b, output) = (range(r)?, range(r)?, range(r)?);
    let (a_rows, a_cols, b_cols) = (r.u32()?, r.u32()?, r.u32()?);
    if opcode == op::MATMUL {
        let act = clamp(r)?;
        let bias = span(r, b_cols as u64, 4)?;
        return Ok(Node::MatMul { a, b, output, a_rows, a_cols, b_cols, act, bias });
    }
    let (a_offset, b_offset) = (r.i32()?, r.i32()?);
    // mul, shift, offset
    let (mul, shift, offset) = (r.i32()?, r.i32()? as u8, r.i32()?);
    let bias = span(r, b_cols as u64, 4)?;
    let qo = Requant { offset, mul, shift };
    Ok(Node::QuantizedMatMul { a, b, output, a_rows, a_cols, b_cols, a_offset, b_offset, qo, bias })
}

fn reduce<'a>(opcode: u32, r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    let (input, output) = (range(r)?, range(r)?);
    let opv = r.u32()?;
    let in_shape = shape(r, index)?;
    let node = if opcode == op::REDUCE {
        let out_shape = shape(r, index)?;
        Node::Reduce { input, output, op: opv, in_shape, out_shape, init: r.f32()? }
    } else {
        let win = window(r)?;
        let (init, act) = (r.f32()?, clamp(r)?);
        let nhwc = opcode == op::CPU_REDUCE_WINDOW2D;
        Node::ReduceWindow2d { input, output, op: opv, in_shape, win, init, act, nhwc }
    };
    if opv > 3 {
        return Err(KmodelError::Invalid { index, what: "reduce op must be 0..=3" });
    }
    Ok(node)
}

/// The CPU-target NHWC convolutions (weights `[oc][kh][kw][ic]`).
fn cpu_conv2d<'a>(opcode: u32, r: &mut Reader<'a>, index: u32) -> Result<Node<'a>, KmodelError> {
    let depthwise = matches!(opcode, op::CPU_DEPTHWISE_CONV2D | op::CPU_QUANTIZED_DEPTHWISE_CONV2D);
    let (input, output) = (range(r)?, range(r)?);
    let in_shape = shape(r, index)?;
    let oc = if depthwise { in_shape[3] } else { r.u32()? };
    let win = window(r)?;
    let k = win.filter.0.max(0) as u64 * win.filter.1.max(0) as u64;
    let wn = if depthwise { prod(&[in_shape[3] as u64, k]) } else { prod(&[oc as u64, in_shape[3] as u64, k]) };
    if matches!(opcode, op::CPU_CONV2D | op::CPU_DEPTHWISE_CONV2D) {
        let act = clamp(r)?;
        let weights = span(r, wn, 4)?;
        let bias = span(r, oc as u64, 4)?;
        return Ok(Node::CpuConv2d { input, output, in_shape, out_channels: oc, depthwise, win, act, weights, bias });
    }
    let (input_offset, filter_offset) = (r.i32()?, r.i32()?);
    let (mul, shift, offset) = (r.i32()?, r.i32()? as u8, r.i32()?);
    let weights = span(r, wn, 1)?;
    let bias = span(r, oc as u64, 4)?;
    let qo = Requant { offset, mul, shift };
    let out_channels = oc;
    Ok(Node::CpuQuantizedConv2d {
        input,
        output,
        in_shape,
        out_channels,
        depthwise,
        win,
        input_offset,
        filter_offset,
        qo,
        weights,
        bias,
    })
}

/// `kpu_conv2d`: {main_mem_output, batches, reserved, 96 register bytes}, then the batch-norm
/// table, the activation table and the weights, each after a skip of the byte count stored in
/// `bwsx_base_addr`, `active_addr` and `para_start_addr` (nncase's `kpu_conv2d_options`).
fn kpu_conv2d<'a>(r: &mut Reader<'a>, at: usize, index: u32) -> Result<Node<'a>, KmodelError> {
    let main_out = range(r)?;
    let batches = r.i32()?;
    let _reserved = r.i32()?;
    let regs = r.bytes(96)?;
    let layer = KpuLayer::decode(regs, index)?;
    if batches <= 0 {
        return Err(KmodelError::Invalid { index, what: "kpu_conv2d batches must be positive" });
    }
    let mut block = |skip: u32, len: u64, block: Block| -> Result<(&'a [u8], u32), KmodelError> {
        let off = r.pos() as u64 + skip as u64;
        if off + len > (r.pos() + r.remaining()) as u64 {
            return Err(KmodelError::BlockOutOfBounds { index, block, offset: off });
        }
        r.skip(skip as usize)?;
        let model_at =
            u32::try_from(at + r.pos()).map_err(|_| KmodelError::BlockOutOfBounds { index, block, offset: off })?;
        Ok((r.bytes(len as usize)?, model_at))
    };
    let (bn, bn_at) = block(layer.bwsx_base_addr, 8 * layer.out_c as u64, Block::BatchNorm)?;
    let (act, act_at) = block(layer.active_addr, 144, Block::Activation)?;
    let (weights, weights_at) = block(layer.para_start_addr, layer.weight_bytes() as u64, Block::Weights)?;
    Ok(Node::KpuConv2d {
        main_out: (main_out.size != 0).then_some(main_out),
        batches: batches as u32,
        conv: KpuConv { layer, regs, bn, act, weights, bn_at, act_at, weights_at },
    })
}
