//! The KPU backends on every runnable kmodel of ../shared/fixtures (skipped when absent):
//!
//! - the device-model backend reproduces the outputs of the emulator before the backend split,
//!   bit for bit (hashes recorded from that emulator on the same inputs, both roundings);
//! - the K210 driver, run through a test double of its memory-mapped I/O that records every
//!   register write, writes for each layer exactly the words the device model consumed, and
//!   those words are the model's stored registers with only the documented fields changed;
//! - the K210 driver with the device model behind its MMIO double computes the same outputs.

use std::path::{Path, PathBuf};

use mlf_kmodel::kpu::k210::{IOMEM, K210, Mmio, SRAM_BASE};
use mlf_kmodel::kpu::{DeviceModel, KPU_RAM_BYTES, KpuBackend, LayerWords, Reg};
use mlf_kmodel::{ActivationRounding, DataType, KmodelError, Model, Step, v3, v4};

/// (model, input file, rounding, FNV-1a 64 of every output with its length), recorded with the
/// emulator of commit 043d32d (before the backend split). Models without reference inputs run
/// on `synthetic_input`.
const BEFORE: &[(&str, Option<&str>, ActivationRounding, u64)] = {
    use ActivationRounding::{NncaseV01 as A, NncaseV02 as B};
    const DOG: Option<&str> = Some("v3-20classes-yolo/input_dog_320x240_rgb_chw_u8.bin");
    const FACE: Option<&str> = Some("v4-fast-facedetect/input_face_320x240_rgb_chw_u8.bin");
    &[
        ("v3-20classes-yolo/yolo.kmodel", DOG, B, 0x861cc6fa84e87b74),
        ("v3-kpu-demo-20classes/yolo.kmodel", DOG, B, 0x7fc922d785ecb30f),
        ("v3-face-detect/detect.kmodel", None, B, 0x040557a71779c349),
        ("v3-iris/iris.kmodel", Some("v3-iris/input_features_f32le.bin"), B, 0x81c62aa4e543d9b5),
        ("v3-mnist-maixpy/mnist.kmodel", None, B, 0x81876f4b3e0f639c),
        ("v4-20classes-yolo/yolo.kmodel", DOG, B, 0x924a36071ecab9c2),
        ("v4-20classes-yolo/yolo-v0.2.0-alpha1.kmodel", DOG, B, 0x69739d1389c36a2d),
        ("v4-fast-facedetect/RFB-320.kmodel", FACE, B, 0x2bae5fe75a916bf6),
        ("v4-fast-facedetect/slim-320.kmodel", FACE, B, 0x8df14d8c3422842b),
        ("v4-iris/iris.kmodel", Some("v4-iris/input_features_f32le.bin"), B, 0x52438c268151ec56),
        ("v4-mask-detect/mask_detect.kmodel", None, B, 0xf7556a9a44989234),
        ("v3-20classes-yolo/yolo.kmodel", DOG, A, 0x0bd8b6554bb1253a),
        ("v3-kpu-demo-20classes/yolo.kmodel", DOG, A, 0x5e126c73c3799a47),
        ("v3-face-detect/detect.kmodel", None, A, 0x48f5537dce7be848),
        ("v4-20classes-yolo/yolo.kmodel", DOG, A, 0xbfe8f7dc4f458786),
        ("v4-20classes-yolo/yolo-v0.2.0-alpha1.kmodel", DOG, A, 0x4b5320430f4ca96f),
        ("v4-fast-facedetect/RFB-320.kmodel", FACE, A, 0xfd1e7f4622d04cce),
        ("v4-fast-facedetect/slim-320.kmodel", FACE, A, 0x644dbaf26d84a047),
        ("v4-mask-detect/mask_detect.kmodel", None, A, 0xf7556a9a44989234),
    ]
};

/// Where the MMIO double pretends the model sits in the K210's SRAM (256-byte aligned).
const FAKE_MODEL_AT: usize = SRAM_BASE + 0x10_0000;

fn fixtures() -> Option<PathBuf> {
    mlf_fixtures::fixtures_or_skip("KPU backend tests").map(|p| p.join("kmodel"))
}

fn fnv(h: u64, b: &[u8]) -> u64 {
    b.iter().fold(h, |h, &x| (h ^ x as u64).wrapping_mul(0x100000001b3))
}

/// The input the hashes were recorded with for models that have no reference input.
fn synthetic_input(m: &Model<'_>) -> Vec<u8> {
    let info = m.input();
    match info.dtype {
        DataType::U8 => (0..info.bytes).map(|i| ((i * 31 + 7) % 256) as u8).collect(),
        DataType::F32 => (0..info.bytes / 4).flat_map(|i| (((i % 17) as f32) * 0.25 - 1.0).to_le_bytes()).collect(),
    }
}

/// A model's bytes and its input.
struct Case {
    bytes: Vec<u8>,
    input: Vec<u8>,
}

fn case(dir: &Path, name: &'static str, input: Option<&str>) -> Case {
    let bytes = std::fs::read(dir.join(name)).unwrap();
    let input = match input {
        Some(p) => std::fs::read(dir.join(p)).unwrap(),
        None => synthetic_input(&Model::parse(&bytes).unwrap()),
    };
    Case { bytes, input }
}

/// Main memory (8-aligned) and the decoded steps of `m`.
fn setup<'a>(m: &Model<'a>) -> (Vec<u64>, Vec<Step<'a>>) {
    let mut steps = vec![Step::Empty; m.steps()];
    m.decode_into(&mut steps).unwrap();
    (vec![0u64; (m.requirements().main as usize).div_ceil(8)], steps)
}

/// The hash of every output after a run.
fn hash_outputs(m: &Model<'_>, main: &[u64], kpu: &[u8]) -> u64 {
    let main: &[u8] = bytemuck::cast_slice(main);
    (0..m.outputs()).fold(0xcbf29ce484222325, |h, i| {
        let o = mlf_kmodel::output(m, main, kpu, i).unwrap();
        fnv(fnv(h, &(o.len() as u64).to_le_bytes()), o)
    })
}

/// Runs `c` on the device model (the `run` entry point) and hashes its outputs.
fn device_model_hash(c: &Case, rounding: ActivationRounding) -> u64 {
    let m = Model::parse(&c.bytes).unwrap();
    let (mut main, steps) = setup(&m);
    let req = m.requirements();
    let (mut kpu, mut scratch) = (vec![0u8; req.kpu as usize], vec![0u8; req.scratch as usize]);
    let mem = mlf_kmodel::Memory { main: bytemuck::cast_slice_mut(&mut main), kpu: &mut kpu, scratch: &mut scratch };
    mlf_kmodel::run(&m, &steps, mem, &c.input, mlf_kmodel::Options { rounding }).unwrap();
    hash_outputs(&m, &main, &kpu)
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn the_device_model_backend_reproduces_the_emulator_before_the_split() {
    let Some(dir) = fixtures() else { return };
    for &(name, input, rounding, want) in BEFORE {
        let got = device_model_hash(&case(&dir, name, input), rounding);
        eprintln!("{name} {rounding:?}: {got:#018x}");
        assert_eq!(got, want, "{name} {rounding:?}: outputs differ from the emulator before the split");
    }
}

/// One register access through the MMIO double.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Write(usize, u64),
    Read(usize),
}

/// A test double of the K210's MMIO: records every access; reads of the raw interrupt
/// register say `calc_done`; KPU RAM is a plain buffer; the model appears at
/// [`FAKE_MODEL_AT`]. With a device model behind it, it forwards every access to it.
struct Double<'d, 'a, 'm> {
    log: Vec<Access>,
    ram: Vec<u8>,
    model: *const u8,
    made_visible: usize,
    device: Option<&'d mut DeviceModel<'a, 'm>>,
}

impl<'d, 'a, 'm> Double<'d, 'a, 'm> {
    fn new(model: &[u8], device: Option<&'d mut DeviceModel<'a, 'm>>) -> Self {
        Double { log: Vec::new(), ram: vec![0; KPU_RAM_BYTES], model: model.as_ptr(), made_visible: 0, device }
    }

    /// The words pushed into the layer argument FIFO, layer by layer.
    fn layers(&self) -> Vec<LayerWords> {
        let fifo: Vec<u64> = self
            .log
            .iter()
            .filter_map(|a| match *a {
                Access::Write(o, v) if o == Reg::LayerArgumentFifo.offset() => Some(v),
                _ => None,
            })
            .collect();
        assert_eq!(fifo.len() % 12, 0, "a partial layer was pushed");
        fifo.chunks_exact(12).map(|c| c.try_into().unwrap()).collect()
    }
}

fn reg(offset: usize) -> Reg {
    use Reg::*;
    let all = [
        LayerArgumentFifo,
        InterruptStatus,
        InterruptRaw,
        InterruptMask,
        InterruptClear,
        FifoThreshold,
        FifoDataOut,
        FifoCtrl,
        EightBitMode,
    ];
    all.into_iter().find(|r| r.offset() == offset).unwrap()
}

impl Mmio for Double<'_, '_, '_> {
    fn write(&mut self, offset: usize, value: u64) {
        self.log.push(Access::Write(offset, value));
        if let Some(d) = self.device.as_deref_mut() {
            d.write(reg(offset), value).unwrap();
        }
    }

    fn read(&mut self, offset: usize) -> u64 {
        self.log.push(Access::Read(offset));
        match self.device.as_deref_mut() {
            Some(d) => d.read(reg(offset)),
            None => (offset == Reg::InterruptRaw.offset()) as u64,
        }
    }

    fn ram(&mut self) -> &mut [u8] {
        match self.device.as_deref_mut() {
            Some(d) => d.ram(),
            None => &mut self.ram,
        }
    }

    fn address_of(&self, p: *const u8) -> usize {
        FAKE_MODEL_AT + (p as usize).wrapping_sub(self.model as usize)
    }

    fn make_visible(&mut self, bytes: &[u8]) {
        self.made_visible += bytes.len();
    }
}

/// A backend that forwards to a device model and records every register write it is given
/// and every layer the device model executed (the words it latched when it ran the layer).
struct Tap<'d, 'a, 'm> {
    device: &'d mut DeviceModel<'a, 'm>,
    writes: Vec<(usize, u64)>,
    consumed: Vec<LayerWords>,
}

impl KpuBackend for Tap<'_, '_, '_> {
    fn write(&mut self, reg: Reg, value: u64) -> Result<(), KmodelError> {
        self.writes.push((reg.offset(), value));
        let before = self.device.layers_run();
        self.device.write(reg, value)?;
        if self.device.layers_run() != before {
            self.consumed.push(*self.device.last_layer());
        }
        Ok(())
    }
    fn read(&mut self, reg: Reg) -> u64 {
        self.device.read(reg)
    }
    fn ram(&mut self) -> &mut [u8] {
        self.device.ram()
    }
    fn model_address(&mut self, model: &[u8]) -> Result<u32, KmodelError> {
        self.device.model_address(model)
    }
}

/// The KPU layers of `m` in run order: (stored registers, bn, act, weights offsets, batches).
fn kpu_layers<'a>(steps: &[Step<'a>]) -> Vec<(mlf_kmodel::kpu::KpuConv<'a>, u32)> {
    steps
        .iter()
        .flat_map(|s| match *s {
            Step::V3(v3::Layer::K210Conv { conv, .. }) => vec![(conv, 0)],
            Step::V4(v4::Node::KpuConv2d { conv, batches, .. }) => (0..batches).map(|b| (conv, b)).collect(),
            _ => vec![],
        })
        .collect()
}

/// The words of a layer are its stored registers except: `int_en` set, `send_data_out`
/// cleared, the rows advanced by the batch, the three table addresses = model bus address +
/// the tables' offsets.
fn check_words(name: &str, i: usize, w: &LayerWords, conv: &mlf_kmodel::kpu::KpuConv<'_>, batch: u32, at: u32) {
    let stored = mlf_kmodel::kpu::regs::words_of(conv.regs);
    let l = &conv.layer;
    let low = 0xffff_ffffu64;
    assert_eq!(w[0], stored[0] | 1, "{name} layer {i}: interrupt_enabe");
    let src = l.src_row as u64 + batch as u64 * l.in_map_bytes() / 64;
    let dst = l.dst_row as u64 + batch as u64 * l.out_map_bytes() / 64;
    assert_eq!(w[1] & (0x7fff | 0x7fff << 32), src | dst << 32, "{name} layer {i}: image_addr");
    for (k, off) in [(4, conv.bn_at), (5, conv.weights_at), (7, conv.act_at)] {
        assert_eq!(w[k] & low, stored[k] & low, "{name} layer {i}: word {k} low half");
        assert_eq!(w[k] >> 32, (at + off) as u64, "{name} layer {i}: word {k} address");
    }
    for k in [2, 3, 6, 8, 9, 10] {
        assert_eq!(w[k], stored[k], "{name} layer {i}: word {k}");
    }
    assert_eq!(w[11], stored[11] & !1, "{name} layer {i}: dma_parameter");
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn the_k210_driver_writes_for_each_layer_the_words_the_device_model_consumed() {
    let Some(dir) = fixtures() else { return };
    let at = (FAKE_MODEL_AT - IOMEM) as u32;
    let mut layers_total = 0;
    for &(name, input, rounding, _) in BEFORE.iter().filter(|c| c.2 == ActivationRounding::NncaseV02) {
        let c = case(&dir, name, input);
        let m = Model::parse(&c.bytes).unwrap();
        let (mut main, steps) = setup(&m);
        // The hardware driver over a pure recording double.
        let mut k210 = K210::new(Double::new(&c.bytes, None));
        let (mut main2, mut scratch) = (main.clone(), vec![0u8; m.requirements().cpu_scratch as usize]);
        mlf_kmodel::run_on(&m, &steps, &mut k210, bytemuck::cast_slice_mut(&mut main2), &mut scratch, &c.input)
            .unwrap();
        let double = k210.into_inner();
        let written = double.layers();
        // The device model behind a tap.
        let req = m.requirements();
        let (mut kpu, mut emu) = (vec![0u8; req.kpu as usize], vec![0u8; req.emulation_scratch() as usize]);
        let mut device = DeviceModel::new(&c.bytes, &mut kpu, &mut emu, rounding).with_model_address(at);
        let mut tap = Tap { device: &mut device, writes: Vec::new(), consumed: Vec::new() };
        mlf_kmodel::run_on(&m, &steps, &mut tap, bytemuck::cast_slice_mut(&mut main), &mut scratch, &c.input).unwrap();
        let expected = kpu_layers(&steps);
        eprintln!("{name}: {} KPU layers, {} words each side", expected.len(), 12 * written.len());
        assert_eq!(written.len(), expected.len(), "{name}: layers pushed");
        assert_eq!(written, tap.consumed, "{name}: words written by the driver vs consumed by the device model");
        let register_writes: Vec<(usize, u64)> =
            double.log.iter().filter_map(|a| if let Access::Write(o, v) = *a { Some((o, v)) } else { None }).collect();
        assert_eq!(register_writes, tap.writes, "{name}: every register write");
        for (i, (w, (conv, b))) in written.iter().zip(&expected).enumerate() {
            check_words(name, i, w, conv, *b, at);
        }
        if !expected.is_empty() {
            assert_eq!(double.made_visible, c.bytes.len(), "{name}: the model is made visible to the KPU once");
        }
        layers_total += written.len();
    }
    assert!(layers_total > 100, "only {layers_total} KPU layers compared");
}

#[test]
#[cfg_attr(miri, ignore = "runs the fixture models: too slow under Miri")]
fn the_k210_driver_with_the_device_model_behind_its_mmio_reproduces_the_outputs() {
    let Some(dir) = fixtures() else { return };
    let at = (FAKE_MODEL_AT - IOMEM) as u32;
    for &(name, input, rounding, want) in BEFORE {
        let c = case(&dir, name, input);
        let m = Model::parse(&c.bytes).unwrap();
        let (mut main, steps) = setup(&m);
        let req = m.requirements();
        let (mut kpu, mut emu) = (vec![0u8; KPU_RAM_BYTES], vec![0u8; req.emulation_scratch() as usize]);
        let mut device = DeviceModel::new(&c.bytes, &mut kpu, &mut emu, rounding).with_model_address(at);
        let mut k210 = K210::new(Double::new(&c.bytes, Some(&mut device)));
        let mut scratch = vec![0u8; req.cpu_scratch as usize];
        mlf_kmodel::run_on(&m, &steps, &mut k210, bytemuck::cast_slice_mut(&mut main), &mut scratch, &c.input).unwrap();
        let got = hash_outputs(&m, &main, k210.ram());
        assert_eq!(got, want, "{name} {rounding:?}");
    }
}

#[test]
fn the_k210_driver_programs_the_kpu_as_documented() {
    let Some(dir) = fixtures() else { return };
    let c = case(&dir, "v4-20classes-yolo/yolo.kmodel", Some("v3-20classes-yolo/input_dog_320x240_rgb_chw_u8.bin"));
    let m = Model::parse(&c.bytes).unwrap();
    let (mut main, steps) = setup(&m);
    let mut k210 = K210::new(Double::new(&c.bytes, None));
    mlf_kmodel::run_on(&m, &steps, &mut k210, bytemuck::cast_slice_mut(&mut main), &mut [], &c.input).unwrap();
    let log = k210.into_inner().log;
    let w = |r: Reg, v: u64| Access::Write(r.offset(), v);
    // Programming: clear all interrupts, FIFO thresholds full 10 / empty 1, 8-bit weights, mask all.
    let init =
        [w(Reg::InterruptClear, 7), w(Reg::FifoThreshold, 0x1a), w(Reg::EightBitMode, 1), w(Reg::InterruptMask, 7)];
    assert_eq!(log[..4], init);
    // Each layer: clear, mask, 12 FIFO words, poll the raw interrupt register, clear.
    let layer = &log[4..4 + 16];
    assert_eq!(layer[..2], [w(Reg::InterruptClear, 7), w(Reg::InterruptMask, 7)]);
    assert!(layer[2..14].iter().all(|a| matches!(a, Access::Write(0, _))));
    assert_eq!(layer[14..], [Access::Read(Reg::InterruptRaw.offset()), w(Reg::InterruptClear, 7)]);
    assert_eq!(log.len(), 4 + 16 * kpu_layers(&steps).len());
}

/// A double whose KPU never finishes.
struct Stuck(Vec<u8>);

impl Mmio for Stuck {
    fn write(&mut self, _: usize, _: u64) {}
    fn read(&mut self, _: usize) -> u64 {
        0
    }
    fn ram(&mut self) -> &mut [u8] {
        &mut self.0
    }
    fn address_of(&self, p: *const u8) -> usize {
        p as usize
    }
    fn make_visible(&mut self, _: &[u8]) {}
}

#[test]
fn the_k210_driver_refuses_a_model_the_kpu_cannot_read_and_a_kpu_that_never_finishes() {
    let bytes = mlf_fixtures::kmodel_synth::v3_conv();
    let m = Model::parse(&bytes).unwrap();
    let (mut main, steps) = setup(&m);
    let input = vec![1u8; m.input().bytes as usize];
    // On the host the model's address is nowhere near the K210's SRAM.
    let mut k210 = K210::new(Stuck(vec![0; KPU_RAM_BYTES]));
    let e = mlf_kmodel::run_on(&m, &steps, &mut k210, bytemuck::cast_slice_mut(&mut main), &mut [], &input);
    assert!(matches!(e, Err(KmodelError::ModelPlacement { .. })), "{e:?}");
    assert!(e.unwrap_err().to_string().contains("0x80000000..0x80600000"));
    // In SRAM but not 256-byte aligned.
    struct Unaligned(Stuck);
    impl Mmio for Unaligned {
        fn write(&mut self, o: usize, v: u64) {
            self.0.write(o, v)
        }
        fn read(&mut self, o: usize) -> u64 {
            self.0.read(o)
        }
        fn ram(&mut self) -> &mut [u8] {
            self.0.ram()
        }
        fn address_of(&self, _: *const u8) -> usize {
            SRAM_BASE + 8
        }
        fn make_visible(&mut self, _: &[u8]) {}
    }
    let mut k210 = K210::new(Unaligned(Stuck(vec![0; KPU_RAM_BYTES])));
    let e = mlf_kmodel::run_on(&m, &steps, &mut k210, bytemuck::cast_slice_mut(&mut main), &mut [], &input);
    assert!(matches!(e, Err(KmodelError::ModelPlacement { address }) if address == SRAM_BASE as u64 + 8), "{e:?}");
    // Placed well, but calc_done never comes: an error after the polling limit, not a hang.
    struct Slow(Stuck);
    impl KpuBackend for Slow {
        fn write(&mut self, r: Reg, v: u64) -> Result<(), KmodelError> {
            self.0.write(r.offset(), v);
            Ok(())
        }
        fn read(&mut self, r: Reg) -> u64 {
            self.0.read(r.offset())
        }
        fn ram(&mut self) -> &mut [u8] {
            self.0.ram()
        }
        fn model_address(&mut self, _: &[u8]) -> Result<u32, KmodelError> {
            Ok(0x4000_0000)
        }
        fn poll_limit(&self) -> u64 {
            1000
        }
    }
    let mut slow = Slow(Stuck(vec![0; KPU_RAM_BYTES]));
    let e = mlf_kmodel::run_on(&m, &steps, &mut slow, bytemuck::cast_slice_mut(&mut main), &mut [], &input);
    assert_eq!(e, Err(KmodelError::KpuTimeout { index: 0 }));
}

#[test]
fn the_device_model_refuses_words_it_cannot_execute() {
    let bytes = mlf_fixtures::kmodel_synth::v3_conv();
    let m = Model::parse(&bytes).unwrap();
    let (_, steps) = setup(&m);
    let Step::V3(v3::Layer::K210Conv { conv, .. }) = steps[0] else { panic!("first layer is a conv") };
    let req = m.requirements();
    let (mut kpu, mut emu) = (vec![0u8; req.kpu as usize], vec![0u8; req.emulation_scratch() as usize]);
    let mut device = DeviceModel::new(&bytes, &mut kpu, &mut emu, ActivationRounding::NncaseV02);
    let at = device.model_address(&bytes).unwrap();
    mlf_kmodel::kpu::init(&mut device).unwrap();
    let good = conv.words(at, 0).unwrap();
    mlf_kmodel::kpu::run_layer(&mut device, &good, 0).unwrap();
    assert_eq!(device.layers_run(), 1);
    // A table address outside the model.
    let mut bad = good;
    bad[5] = (bad[5] & 0xffff_ffff) | ((at as u64 + bytes.len() as u64) << 32);
    assert!(matches!(mlf_kmodel::kpu::run_layer(&mut device, &bad, 1), Err(KmodelError::KpuBus { .. })));
    // Streaming to the output FIFO is not emulated; neither is 16-bit mode.
    let mut fifo = good;
    fifo[11] |= 1;
    assert!(matches!(mlf_kmodel::kpu::run_layer(&mut device, &fifo, 2), Err(KmodelError::Invalid { .. })));
    device.write(Reg::EightBitMode, 0).unwrap();
    assert!(matches!(mlf_kmodel::kpu::run_layer(&mut device, &good, 3), Err(KmodelError::Invalid { .. })));
}
