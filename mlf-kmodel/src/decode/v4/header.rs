//! The V4 header and tables, and the readers of the small structs bodies are made of.

use crate::error::{KmodelError, Part, Pool};
use crate::reader::{Bodies, Reader, table_end, u32_at};
use crate::types::DataType;

use super::types::{Clamp, MemRange, Padding, Requant, Shape};

/// The size of the fixed header.
pub const HEADER: usize = 40;

/// The V4 header with its tables located inside the file (no body read).
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// The bytes the header was read from (may continue past the model).
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
}

impl<'a> Header<'a> {
    /// Reads the header and checks that `target` is 0 or 1, that every table lies inside the
    /// file, and that there is at least one node, input and output.
    pub fn read(bytes: &'a [u8]) -> Result<Header<'a>, KmodelError> {
        let mut r = Reader::new(bytes, 0, Part::Header);
        let (_ident, _version, _flags) = (r.u32()?, r.u32()?, r.u32()?);
        let (target, constants, main_mem) = (r.u32()?, r.u32()?, r.u32()?);
        let (nodes, inputs, outputs, _reserved0) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        if target > 1 {
            return Err(KmodelError::BadTarget { target });
        }
        let file = bytes.len();
        let fits = |count: u32, item: usize, from: usize| table_end(count, item, from, file);
        let bad_inputs = KmodelError::BadCount { part: Part::Inputs, count: inputs };
        let shapes_at = fits(inputs, 16, HEADER).ok_or(bad_inputs)?;
        let out_at = fits(inputs, 16, shapes_at).ok_or(bad_inputs)?;
        let const_at =
            fits(outputs, 16, out_at).ok_or(KmodelError::BadCount { part: Part::Outputs, count: outputs })?;
        let headers_at = fits(constants, 1, const_at).ok_or(KmodelError::Truncated {
            part: Part::Constants,
            offset: const_at as u64,
            needed: constants as u64,
            available: (file - const_at) as u64,
        })?;
        let body_start =
            fits(nodes, 8, headers_at).ok_or(KmodelError::BadCount { part: Part::LayerHeaders, count: nodes })?;
        for (n, part) in [(nodes, Part::LayerHeaders), (inputs, Part::Inputs), (outputs, Part::Outputs)] {
            if n == 0 {
                return Err(KmodelError::Empty { part });
            }
        }
        let constants = &bytes[const_at..headers_at];
        Ok(Header { bytes, target, constants, main_mem, nodes, inputs, outputs, node_headers: headers_at, body_start })
    }

    /// The node bodies, in order.
    pub fn bodies(&self) -> Bodies<'a> {
        Bodies::new(self.bytes, self.node_headers, self.nodes, self.body_start)
    }

    /// Node `i`'s header: (opcode, body size).
    pub fn node_header(&self, i: u32) -> (u32, u32) {
        let o = self.node_headers + i as usize * 8;
        (u32_at(self.bytes, o), u32_at(self.bytes, o + 4))
    }

    /// Input `i`'s memory range and shape (only input 0 is used when running).
    pub fn input_range(&self, i: u32) -> Option<(MemRange, [i32; 4])> {
        if i >= self.inputs {
            return None;
        }
        let o = HEADER + i as usize * 16;
        let r = range(&mut Reader::new(&self.bytes[o..o + 16], o, Part::Inputs)).ok()?;
        let s = HEADER + self.inputs as usize * 16 + i as usize * 16;
        let sh = core::array::from_fn(|d| u32_at(self.bytes, s + d * 4) as i32);
        Some((r, sh))
    }

    /// Output `i`'s memory range.
    pub fn output_range(&self, i: u32) -> Option<MemRange> {
        if i >= self.outputs {
            return None;
        }
        let o = HEADER + self.inputs as usize * 32 + i as usize * 16;
        range(&mut Reader::new(&self.bytes[o..o + 16], o, Part::Outputs)).ok()
    }
}

/// The (memory range, dimension) of each input of a `concat` node, from its two tables.
pub(crate) fn concat_parts<'a>(
    inputs: &'a [u8],
    dims: &'a [u8],
) -> impl Iterator<Item = Result<(MemRange, u32), KmodelError>> + 'a {
    let part = |(i, d): (&[u8], &[u8])| Ok((range(&mut Reader::new(i, 0, Part::Body))?, u32_at(d, 0)));
    inputs.chunks_exact(16).zip(dims.chunks_exact(4)).map(part)
}

pub(crate) fn range(r: &mut Reader<'_>) -> Result<MemRange, KmodelError> {
    let ty = r.u32()?;
    let dt = r.u32()?;
    let start = r.u32()?;
    let size = r.u32()?;
    let pool = match ty {
        0 => Pool::Constants,
        1 => Pool::Main,
        2 => Pool::Kpu,
        _ => {
            return Err(KmodelError::Invalid {
                index: u32::MAX,
                what: "memory_type must be 0 (const), 1 (main) or 2 (kpu)",
            });
        }
    };
    let dtype = match dt {
        0 => DataType::F32,
        1 => DataType::U8,
        _ => return Err(KmodelError::Invalid { index: u32::MAX, what: "datatype must be 0 (f32) or 1 (u8)" }),
    };
    Ok(MemRange { pool, dtype, start, size })
}

/// Largest tensor dimension a V4 model may declare.
const MAX_DIM: i32 = 1 << 24;

pub(crate) fn shape(r: &mut Reader<'_>, index: u32) -> Result<Shape, KmodelError> {
    let mut s = [0u32; 4];
    for d in &mut s {
        let v = r.i32()?;
        if v < 0 {
            return Err(KmodelError::Invalid { index, what: "negative dimension" });
        }
        // Far above any K210 tensor (8 MiB of RAM). The kernels index in i64/usize: positions
        // up to 2^24 times strides up to 4096 stay far inside it.
        if v > MAX_DIM {
            return Err(KmodelError::Invalid { index, what: "dimension above 2^24" });
        }
        *d = v as u32;
    }
    Ok(s)
}

pub(crate) fn ivec(r: &mut Reader<'_>) -> Result<[i32; 4], KmodelError> {
    Ok([r.i32()?, r.i32()?, r.i32()?, r.i32()?])
}

pub(crate) fn padding(r: &mut Reader<'_>) -> Result<Padding, KmodelError> {
    Ok(Padding { before: r.i32()?, after: r.i32()? })
}

pub(crate) fn clamp(r: &mut Reader<'_>) -> Result<Clamp, KmodelError> {
    Ok(Clamp { min: r.f32()?, max: r.f32()? })
}

pub(crate) fn requant(r: &mut Reader<'_>) -> Result<Requant, KmodelError> {
    let offset = r.i32()?;
    let mul = r.i32()?;
    let shift = r.i32()? as u8;
    Ok(Requant { offset, mul, shift })
}
