//! A V4 model parsed and checked: every node decoded, every memory range checked against its
//! pool (the constants, `main_mem`, 2 MiB of KPU RAM), every element count against its range,
//! every window, divisor and shift against what the kernels can take, and the memory the run
//! needs computed.
//!
//! nncase runs input 0 only: from main memory it is copied in, in KPU RAM it is uploaded with
//! the KPU layout (nncase v0.2 `src/runtime/interpreter.cpp`, the SDK's `nncase_v0.cpp`).

use crate::decode::v4::{
    Header, MemRange, Node, Requant, Shape, Window, concat_parts, decode, numel, prod, range, shape, slice_len,
};
use crate::error::{KmodelError, Part, Pool};
use crate::kpu::{KPU_RAM_BYTES, KpuConv, arith::check_act_shifts, map_bytes};
use crate::reader::{Bodies, Body, Reader};
use crate::types::{DataType, IoInfo, Requirements};

/// A validated V4 model.
#[derive(Clone, Copy, Debug)]
pub struct Model<'a> {
    /// The bytes the model was parsed from (may continue past the model).
    pub bytes: &'a [u8],
    /// `target` (0 CPU, 1 K210).
    pub target: u32,
    /// The constants blob.
    pub constants: &'a [u8],
    /// `main_mem`.
    pub main_mem: u32,
    /// Number of nodes.
    pub nodes: u32,
    /// Number of inputs.
    pub inputs: u32,
    /// Number of outputs.
    pub outputs: u32,
    /// Offset of the node header table.
    pub node_headers: usize,
    /// Offset of the first body.
    pub body_start: usize,
    /// Where the model ends.
    pub end: usize,
    /// Memory the interpreter needs.
    pub req: Requirements,
    /// Input 0.
    pub input: IoInfo,
}

impl<'a> Model<'a> {
    /// Parses and checks a V4 model.
    pub fn parse(bytes: &'a [u8]) -> Result<Model<'a>, KmodelError> {
        Self::parse_with(bytes, |_, _| {})
    }

    /// Like [`Model::parse`], and calls `f` with each node once it is checked.
    pub fn parse_with(bytes: &'a [u8], mut f: impl FnMut(&Body<'a>, Node<'a>)) -> Result<Model<'a>, KmodelError> {
        let h = Header::read(bytes)?;
        let req = Requirements { main: h.main_mem as u64, ..Requirements::default() };
        let mut ck = Checker { consts: h.constants.len() as u64, main: h.main_mem as u64, req, index: u32::MAX };
        let input = input_info(&h, &mut ck)?;
        for i in 0..h.outputs {
            let o = crate::decode::v4::HEADER + h.inputs as usize * 32 + i as usize * 16;
            ck.read(&range(&mut Reader::new(&bytes[o..o + 16], o, Part::Outputs))?)?;
        }
        let mut bodies = h.bodies();
        for b in bodies.by_ref() {
            let b = b?;
            let node = decode(b.kind, b.bytes, b.at, b.index)?;
            ck.index = b.index;
            ck.node(&node)?;
            f(&b, node);
        }
        let mut req = ck.req;
        req.scratch += req.cpu_scratch;
        Ok(Model {
            bytes,
            target: h.target,
            constants: h.constants,
            main_mem: h.main_mem,
            nodes: h.nodes,
            inputs: h.inputs,
            outputs: h.outputs,
            node_headers: h.node_headers,
            body_start: h.body_start,
            end: bodies.end(),
            req,
            input,
        })
    }

    /// The header and tables.
    pub fn header(&self) -> Header<'a> {
        let Model { bytes, target, constants, main_mem, nodes, inputs, outputs, node_headers, body_start, .. } = *self;
        Header { bytes, target, constants, main_mem, nodes, inputs, outputs, node_headers, body_start }
    }

    /// The node bodies, in order.
    pub fn bodies(&self) -> Bodies<'a> {
        self.header().bodies()
    }

    /// Decodes the node of `body` (one of [`Model::bodies`]).
    pub fn decode(&self, body: &Body<'a>) -> Result<Node<'a>, KmodelError> {
        decode(body.kind, body.bytes, body.at, body.index)
    }

    /// Node `i`'s header: (opcode, body size).
    pub fn node_header(&self, i: u32) -> (u32, u32) {
        self.header().node_header(i)
    }

    /// Input `i`'s memory range and shape (only input 0 is used when running).
    pub fn input_range(&self, i: u32) -> Option<(MemRange, [i32; 4])> {
        self.header().input_range(i)
    }

    /// Output `i`'s memory range.
    pub fn output_range(&self, i: u32) -> Option<MemRange> {
        self.header().output_range(i)
    }
}

/// Input 0: its range and shape agree, it is u8 when in KPU RAM, and it is not a constant.
fn input_info(h: &Header<'_>, ck: &mut Checker) -> Result<IoInfo, KmodelError> {
    let (in_at, shapes_at) = (crate::decode::v4::HEADER, crate::decode::v4::HEADER + h.inputs as usize * 16);
    let in0 = range(&mut Reader::new(&h.bytes[in_at..in_at + 16], in_at, Part::Inputs))?;
    let in_shape = shape(&mut Reader::new(&h.bytes[shapes_at..shapes_at + 16], shapes_at, Part::Inputs), u32::MAX)?;
    ck.write(&in0)?;
    let bad = |what| Err(KmodelError::Invalid { index: u32::MAX, what });
    match in0.pool {
        Pool::Main => {
            if numel(&in_shape).saturating_mul(in0.dtype.bytes() as u64) != in0.size as u64 {
                return bad("input shape does not match its main-memory range");
            }
            Ok(IoInfo { dtype: in0.dtype, shape: in_shape, bytes: in0.size as u64 })
        }
        Pool::Kpu => {
            if in0.dtype != DataType::U8 || in_shape[3] == 0 {
                return bad("a KPU input must be u8 with a non-zero width");
            }
            let n = map_bytes(in_shape[3], in_shape[2], in_shape[1].max(1)).saturating_mul(in_shape[0] as u64);
            ck.kpu_bytes(in0.start as u64, n.max(numel(&in_shape)))?;
            Ok(IoInfo { dtype: DataType::U8, shape: in_shape, bytes: numel(&in_shape) })
        }
        _ => bad("input 0 is in the constants pool"),
    }
}

/// Checks memory ranges against their pools and element counts against the ranges.
struct Checker {
    consts: u64,
    main: u64,
    req: Requirements,
    index: u32,
}

impl Checker {
    fn inv(&self, what: &'static str) -> KmodelError {
        KmodelError::Invalid { index: self.index, what }
    }

    fn fit(&mut self, r: &MemRange) -> Result<(), KmodelError> {
        let end = r.start as u64 + r.size as u64;
        let limit = match r.pool {
            Pool::Constants => self.consts,
            Pool::Main => self.main,
            _ => KPU_RAM_BYTES as u64,
        };
        if end > limit {
            return Err(KmodelError::OutOfRange { index: self.index, pool: r.pool, end, limit });
        }
        if r.pool == Pool::Kpu {
            self.req.kpu = self.req.kpu.max(end);
        }
        Ok(())
    }

    fn kpu_bytes(&mut self, start: u64, n: u64) -> Result<(), KmodelError> {
        let end = start.saturating_add(n);
        if end > KPU_RAM_BYTES as u64 {
            return Err(KmodelError::OutOfRange {
                index: self.index,
                pool: Pool::Kpu,
                end,
                limit: KPU_RAM_BYTES as u64,
            });
        }
        self.req.kpu = self.req.kpu.max(end);
        Ok(())
    }

    fn read(&mut self, r: &MemRange) -> Result<(), KmodelError> {
        self.fit(r)
    }

    fn write(&mut self, r: &MemRange) -> Result<(), KmodelError> {
        if r.pool == Pool::Constants && r.size != 0 {
            return Err(self.inv("an output range is in the read-only constants pool"));
        }
        self.fit(r)
    }

    /// `r` holds at least `n` elements of `elem` bytes.
    fn holds(&self, r: &MemRange, n: u64, elem: u64) -> Result<(), KmodelError> {
        if n.saturating_mul(elem) > r.size as u64 {
            return Err(self.inv("a memory range is smaller than its shape or count"));
        }
        Ok(())
    }

    /// A convolution's ranges: `hw` are the input's spatial dimensions (NCHW or NHWC), `elem`
    /// the element size of input and output.
    #[allow(clippy::too_many_arguments)]
    fn conv(
        &mut self,
        input: &MemRange,
        output: &MemRange,
        in_shape: &Shape,
        out_channels: u32,
        win: &Window,
        hw: (u32, u32),
        elem: u64,
    ) -> Result<(), KmodelError> {
        self.read(input)?;
        self.write(output)?;
        self.holds(input, numel(in_shape), elem)?;
        let (oh, ow) = self.window_out(hw.0, hw.1, win)?;
        self.holds(output, prod(&[in_shape[0] as u64, out_channels as u64, oh, ow]), elem)
    }

    fn requant(&self, q: &Requant) -> Result<(), KmodelError> {
        if q.shift > 63 {
            return Err(self.inv("requantisation shift above 63"));
        }
        Ok(())
    }

    fn elem(&self, r: &MemRange) -> u64 {
        r.dtype.bytes() as u64
    }

    fn window_out(&self, h: u32, w: u32, win: &Window) -> Result<(u64, u64), KmodelError> {
        const MAX: i32 = 1 << 12;
        let pos = |v: i32| (1..=MAX).contains(&v);
        if !(pos(win.filter.0)
            && pos(win.filter.1)
            && pos(win.stride.0)
            && pos(win.stride.1)
            && pos(win.dilation.0)
            && pos(win.dilation.1))
        {
            return Err(self.inv("filter, stride and dilation must be in 1..=4096"));
        }
        for p in [win.pad_h.before, win.pad_h.after, win.pad_w.before, win.pad_w.after] {
            if !(-MAX..=MAX).contains(&p) {
                return Err(self.inv("window padding must be in -4096..=4096"));
            }
        }
        let (oh, ow) = win.out_hw(h, w);
        Ok((oh.max(0) as u64, ow.max(0) as u64))
    }

    /// Checks one node's ranges, shapes and parameters and updates the requirements.
    fn node(&mut self, n: &Node<'_>) -> Result<(), KmodelError> {
        match *n {
            Node::Conv2d { .. }
            | Node::QuantizedConv2d { .. }
            | Node::Conv2dTranspose { .. }
            | Node::CpuConv2d { .. }
            | Node::CpuQuantizedConv2d { .. }
            | Node::ReduceWindow2d { .. }
            | Node::ResizeImage { .. } => self.windowed(n),
            Node::Concat { .. }
            | Node::MemoryCopy { .. }
            | Node::Pad { .. }
            | Node::Transpose { .. }
            | Node::StridedSlice { .. }
            | Node::KpuUpload { .. } => self.movement(n),
            Node::KpuConv2d { main_out, batches, conv } => self.kpu_conv2d(main_out, batches, &conv),
            _ => self.elementwise(n),
        }
    }

    /// Element-wise nodes, reductions and matrix products.
    fn elementwise(&mut self, n: &Node<'_>) -> Result<(), KmodelError> {
        match *n {
            Node::Binary { a, b, output, a_shape, b_shape, out_shape, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, numel(&a_shape), 4)?;
                self.holds(&b, numel(&b_shape), 4)?;
                let on = if a_shape == b_shape { numel(&a_shape) } else { numel(&out_shape) };
                self.holds(&output, on, 4)?;
                self.broadcast(&a_shape, &b_shape, &out_shape)?;
            }
            Node::QuantizedBinary { a, b, output, a_shape, b_shape, out_shape, qa, qb, qo, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, numel(&a_shape), 1)?;
                self.holds(&b, numel(&b_shape), 1)?;
                let on = if a_shape == b_shape { numel(&a_shape) } else { numel(&out_shape) };
                self.holds(&output, on, 1)?;
                self.broadcast(&a_shape, &b_shape, &out_shape)?;
                for q in [qa, qb, qo] {
                    self.requant(&q)?;
                }
            }
            Node::Dequantize { input, output, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64, 4)?;
            }
            Node::Quantize { input, output, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64 / 4, 1)?;
            }
            Node::MatMul { a, b, output, a_rows, a_cols, b_cols, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, a_rows as u64 * a_cols as u64, 4)?;
                self.holds(&b, a_cols as u64 * b_cols as u64, 4)?;
                self.holds(&output, a_rows as u64 * b_cols as u64, 4)?;
            }
            Node::QuantizedMatMul { a, b, output, a_rows, a_cols, b_cols, qo, .. } => {
                self.read(&a)?;
                self.read(&b)?;
                self.write(&output)?;
                self.holds(&a, a_rows as u64 * a_cols as u64, 1)?;
                self.holds(&b, a_cols as u64 * b_cols as u64, 1)?;
                self.holds(&output, a_rows as u64 * b_cols as u64, 1)?;
                self.requant(&qo)?;
            }
            Node::Reduce { input, output, in_shape, out_shape, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&input, numel(&in_shape), 4)?;
                self.holds(&output, numel(&out_shape), 4)?;
                if numel(&in_shape) > 0 && out_shape.contains(&0) {
                    return Err(self.inv("reduce output shape has a zero dimension"));
                }
                if input.size < 4 {
                    return Err(self.inv("reduce input range is empty"));
                }
            }
            Node::Softmax { input, output, inner, outer, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                if inner == 0 {
                    return Err(self.inv("softmax inner size is 0"));
                }
                self.holds(&input, inner as u64 * outer as u64, 4)?;
                self.holds(&output, inner as u64 * outer as u64, 4)?;
            }
            Node::Unary { input, output, .. } | Node::NnilUnary { input, output, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64 / 4, 4)?;
            }
            Node::TableLookup1d { input, table, output } => {
                self.read(&input)?;
                self.read(&table)?;
                self.write(&output)?;
                self.holds(&table, 256, 1)?;
                self.holds(&output, input.size as u64, 1)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Convolutions, window reductions and resizing.
    fn windowed(&mut self, n: &Node<'_>) -> Result<(), KmodelError> {
        match *n {
            Node::Conv2d { input, output, in_shape, out_channels, win, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[2], in_shape[3]), 4)?;
            }
            Node::QuantizedConv2d { input, output, in_shape, out_channels, win, qo, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[2], in_shape[3]), 1)?;
                self.requant(&qo)?;
            }
            Node::Conv2dTranspose { input, output, in_shape, out_shape, win, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.window_out(1, 1, &win)?;
                self.holds(&input, numel(&in_shape), 4)?;
                self.holds(&output, numel(&out_shape), 4)?;
                if out_shape[0] < in_shape[0] {
                    return Err(self.inv("conv2d_transpose output has fewer batches than its input"));
                }
            }
            Node::ReduceWindow2d { input, output, in_shape, win, nhwc, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&input, numel(&in_shape), 4)?;
                let (h, w, c) = if nhwc {
                    (in_shape[1], in_shape[2], in_shape[3])
                } else {
                    (in_shape[2], in_shape[3], in_shape[1])
                };
                let (oh, ow) = self.window_out(h, w, &win)?;
                self.holds(&output, prod(&[in_shape[0] as u64, c as u64, oh, ow]), 4)?;
            }
            Node::ResizeImage { input, output, in_shape, out_h, out_w, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                if in_shape[2] == 0 || in_shape[3] == 0 {
                    return Err(self.inv("resize input has a zero height or width"));
                }
                self.holds(&input, numel(&in_shape), e)?;
                self.holds(&output, prod(&[in_shape[0] as u64, in_shape[1] as u64, out_h as u64, out_w as u64]), e)?;
            }
            Node::CpuConv2d { input, output, in_shape, out_channels, win, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[1], in_shape[2]), 4)?;
            }
            Node::CpuQuantizedConv2d { input, output, in_shape, out_channels, win, qo, .. } => {
                self.conv(&input, &output, &in_shape, out_channels, &win, (in_shape[1], in_shape[2]), 1)?;
                self.requant(&qo)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Nodes that move bytes.
    fn movement(&mut self, n: &Node<'_>) -> Result<(), KmodelError> {
        match *n {
            Node::Concat { output, inner, outer, inputs, dims } => {
                self.write(&output)?;
                let mut total = 0u64;
                for part in concat_parts(inputs, dims) {
                    let (ir, dim) = part?;
                    self.read(&ir)?;
                    let dim = dim as i32;
                    if dim < 0 {
                        return Err(self.inv("negative concat dimension"));
                    }
                    let size = (inner as u64).saturating_mul(dim as u64);
                    self.holds(&ir, size.saturating_mul(outer as u64), 1)?;
                    total = total.saturating_add(size);
                }
                self.holds(&output, total.saturating_mul(outer as u64), 1)?;
            }
            Node::MemoryCopy { input, output } => {
                self.read(&input)?;
                self.write(&output)?;
                self.holds(&output, input.size as u64 / 4, 4)?;
            }
            Node::Pad { input, output, in_shape, paddings, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                self.holds(&input, numel(&in_shape), e)?;
                let mut on = 1u64;
                for (d, p) in in_shape.iter().zip(paddings) {
                    let o = *d as i64 + p.before as i64 + p.after as i64;
                    if o < 0 || (p.before as i64) < -(*d as i64) || (p.after as i64) < -(*d as i64) {
                        return Err(self.inv("padding crops more than the dimension"));
                    }
                    on = on.saturating_mul(o as u64);
                }
                self.holds(&output, on, e)?;
            }
            Node::Transpose { input, output, in_shape, .. } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                self.holds(&input, numel(&in_shape), e)?;
                self.holds(&output, numel(&in_shape), e)?;
            }
            Node::StridedSlice { input, output, in_shape, begin, end, strides } => {
                self.read(&input)?;
                self.write(&output)?;
                let e = self.elem(&input);
                self.holds(&input, numel(&in_shape), e)?;
                let mut on = 1u64;
                for d in 0..4 {
                    let n = slice_len(begin[d], end[d], strides[d]).ok_or(self.inv("strided_slice stride is 0"))?;
                    if n > 0 {
                        let last = begin[d] as i64 + (n as i64 - 1) * strides[d] as i64;
                        let dim = in_shape[d] as i64;
                        if begin[d] < 0 || (begin[d] as i64) >= dim || last < 0 || last >= dim {
                            return Err(self.inv("strided_slice reads outside its input shape"));
                        }
                    }
                    on = on.saturating_mul(n);
                }
                self.holds(&output, on, e)?;
            }
            Node::KpuUpload { input, output, in_shape } => {
                self.read(&input)?;
                self.write(&output)?;
                if output.pool != Pool::Kpu || in_shape[3] == 0 {
                    return Err(self.inv("kpu_upload must write KPU RAM from a map with a non-zero width"));
                }
                self.holds(&input, numel(&in_shape), 1)?;
                let n = map_bytes(in_shape[3], in_shape[2], in_shape[1].max(1)).saturating_mul(in_shape[0] as u64);
                self.kpu_bytes(output.start as u64, n.max(numel(&in_shape)))?;
                if input.pool == Pool::Kpu {
                    // Staged through the CPU scratch (nncase never writes such a node).
                    self.req.cpu_scratch = self.req.cpu_scratch.max(numel(&in_shape));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `kpu_conv2d`: both maps of every batch inside KPU RAM, the main-memory copy inside main
    /// memory, activation shifts at most 31; adds its scratch and multiply-accumulates.
    fn kpu_conv2d(&mut self, main_out: Option<MemRange>, batches: u32, conv: &KpuConv<'_>) -> Result<(), KmodelError> {
        let l = conv.layer;
        self.kpu_bytes(l.src_row as u64 * 64, l.in_map_bytes() * batches as u64)?;
        self.kpu_bytes(l.dst_row as u64 * 64, l.out_map_bytes() * batches as u64)?;
        if let Some(mo) = main_out {
            if mo.pool != Pool::Main {
                return Err(self.inv("kpu_conv2d main_mem_output is not in main memory"));
            }
            self.write(&mo)?;
            self.holds(&mo, l.out_compact_bytes() * batches as u64, 1)?;
        }
        check_act_shifts(self.index, conv.act)?;
        self.req.scratch = self.req.scratch.max(l.scratch_bytes());
        self.req.macs = self.req.macs.saturating_add(l.macs().saturating_mul(batches as u64));
        Ok(())
    }

    fn broadcast(&self, a: &Shape, b: &Shape, out: &Shape) -> Result<(), KmodelError> {
        if a == b {
            return Ok(());
        }
        // Inputs are indexed with `idx[d] >= shape[d] ? 0 : idx[d]`: any non-zero size is
        // safe, a zero-sized axis under a non-empty output is not.
        for d in 0..4 {
            if out[d] != 0 && (a[d] == 0 || b[d] == 0) {
                return Err(self.inv("binary input shape has a zero axis under a non-empty output"));
            }
        }
        Ok(())
    }
}
