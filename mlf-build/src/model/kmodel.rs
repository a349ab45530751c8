//! A Kendryte kmodel as the build and `inspect` see it: version, layers or nodes, memory.

use serde::Serialize;

/// What the build and `inspect` need to know about a kmodel.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KmodelExec {
    /// kmodel version (3, 4 or 5).
    pub version: u32,
    /// The compiler generation that writes this version (`nncase v0.1`, `nncase v0.2`,
    /// `nncase v1.x`).
    pub compiler: &'static str,
    /// Size of the file.
    pub file_bytes: u64,
    /// The model's extent (header to the end of the last body).
    pub model_bytes: u64,
    /// Bytes after the model (ignored).
    pub trailing_bytes: u64,
    /// Layers (V3) or nodes (V4), in order.
    pub steps: Vec<StepInfo>,
    /// Main (CPU working) memory the runtime allocates.
    pub main_bytes: u64,
    /// KPU RAM the emulation allocates (up to the highest byte a layer touches).
    pub kpu_bytes: u64,
    /// KPU RAM rows (64 bytes) used.
    pub kpu_rows: u64,
    /// Scratch memory of the device-model backend: the KPU convolution emulation's, followed by
    /// the CPU layers' ([`KmodelExec::cpu_scratch_bytes`]).
    pub scratch_bytes: u64,
    /// Scratch memory the CPU layers need on any backend (0 for every model nncase writes).
    pub cpu_scratch_bytes: u64,
    /// KPU multiply-accumulates per inference.
    pub macs: u64,
    /// V4 constants section bytes.
    pub constants_bytes: u64,
    /// Header fields as recorded (name, value).
    pub header: Vec<(String, u64)>,
    /// V5 header, modules and sections.
    pub v5: Option<V5Info>,
}

/// One layer or node.
#[derive(Clone, Debug, Serialize)]
pub struct StepInfo {
    /// Type (V3) or opcode (V4).
    pub kind: u32,
    /// Name (`K210_CONV`, `kpu_conv2d`, …).
    pub name: String,
    /// Body offset in the file.
    pub offset: u64,
    /// Body size.
    pub size: u64,
    /// A one-line summary (shapes of KPU layers).
    pub detail: String,
}

/// The V5 structure.
#[derive(Clone, Debug, Serialize)]
pub struct V5Info {
    /// `true` for the nncase v1.0.0+ header (with `header_size`).
    pub new_layout: bool,
    /// Alignment.
    pub alignment: u32,
    /// Entry module.
    pub entry_module: u32,
    /// Modules.
    pub modules: Vec<V5Module>,
}

/// A V5 module.
#[derive(Clone, Debug, Serialize)]
pub struct V5Module {
    /// Type (`stackvm`, `k210`).
    pub kind: String,
    /// Version.
    pub version: u32,
    /// Bytes.
    pub size: u32,
    /// Functions.
    pub functions: u32,
    /// Mempools: (location, bytes).
    pub mempools: Vec<(u8, u32)>,
    /// Sections: (name, flags, body bytes).
    pub sections: Vec<(String, u32, u32)>,
}

impl KmodelExec {
    /// Static RAM of the module for `kpu`, without the table of decoded steps: main memory
    /// (rounded up to 8 bytes, as the module allocates it), emulated KPU RAM and scratch for
    /// the device model; main memory and the CPU layers' scratch on the K210.
    pub fn module_ram(&self, kpu: super::Kpu) -> u64 {
        let main = self.main_bytes.div_ceil(8) * 8;
        match kpu {
            super::Kpu::DeviceModel => main + self.kpu_bytes + self.scratch_bytes,
            super::Kpu::K210 => main + self.cpu_scratch_bytes,
        }
    }

    /// Layer/op names with their counts, in first-seen order.
    pub fn op_counts(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        for s in &self.steps {
            match out.iter_mut().find(|(n, _)| *n == s.name) {
                Some(e) => e.1 += 1,
                None => out.push((s.name.clone(), 1)),
            }
        }
        out
    }
}
