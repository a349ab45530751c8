//! Plain value types shared by every layer of the crate: element types, the model input, and
//! the memory a model needs on each backend.

/// Element type of an input or output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    /// `f32`.
    F32,
    /// `u8`.
    U8,
}

impl DataType {
    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            DataType::F32 => 4,
            DataType::U8 => 1,
        }
    }
}

/// The type, shape and byte size of a model input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoInfo {
    /// Element type.
    pub dtype: DataType,
    /// NCHW shape.
    pub shape: [u32; 4],
    /// Bytes the caller passes to `run`.
    pub bytes: u64,
}

/// Memory the model needs, computed when it is parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Requirements {
    /// Main (CPU working) memory: V3 `main_mem_usage` rounded up to 8 plus 8 bytes of DMA
    /// slack; V4 `main_mem`.
    pub main: u64,
    /// KPU RAM: up to the highest byte any layer touches (the chip has 2 MiB).
    pub kpu: u64,
    /// Scratch memory of the device-model backend: the KPU convolution emulation's (the
    /// largest layer's) followed by [`Requirements::cpu_scratch`].
    pub scratch: u64,
    /// Scratch the CPU layers need on any backend (0 for every model nncase writes; only a
    /// V4 `kpu_upload` whose source is itself in KPU RAM stages through it).
    pub cpu_scratch: u64,
    /// Multiply-accumulates of the KPU layers per inference.
    pub macs: u64,
}

/// Where the KPU layers of a model run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The register-level device model (host, QEMU, any CPU): the KPU and its RAM are emulated.
    DeviceModel,
    /// The K210's own KPU through its registers and its 2 MiB of KPU RAM.
    K210,
}

/// The static RAM a backend needs for one model, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BackendMemory {
    /// Main (CPU working) memory.
    pub main: u64,
    /// Emulated KPU RAM (0 on the K210, which uses its own).
    pub kpu_ram: u64,
    /// Scratch memory.
    pub scratch: u64,
}

impl BackendMemory {
    /// The sum of the three.
    pub const fn total(&self) -> u64 {
        self.main + self.kpu_ram + self.scratch
    }
}

impl Requirements {
    /// The static RAM `backend` needs: main memory, emulated KPU RAM and scratch for the device
    /// model; main memory and the CPU layers' scratch on the K210 (no copy of KPU RAM).
    pub const fn for_backend(&self, backend: Backend) -> BackendMemory {
        match backend {
            Backend::DeviceModel => BackendMemory { main: self.main, kpu_ram: self.kpu, scratch: self.scratch },
            Backend::K210 => BackendMemory { main: self.main, kpu_ram: 0, scratch: self.cpu_scratch },
        }
    }

    /// Scratch of the KPU convolution emulation alone (the device model's part of
    /// [`Requirements::scratch`]).
    pub const fn emulation_scratch(&self) -> u64 {
        self.scratch - self.cpu_scratch
    }
}
