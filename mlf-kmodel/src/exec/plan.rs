//! A model's decoded steps, kept between runs.

use crate::check::{Model, v3, v4};
use crate::decode::Step;
use crate::error::{KmodelError, Part};
use crate::kpu::KpuBackend;

use super::run::{Memory, Options, output, run, run_on};

/// The parsed model a [`Plan`] holds. `None` is the all-zero value (explicit `u8` tag 0).
#[derive(Clone, Copy, Debug)]
#[repr(C, u8)]
enum Prepared<'a> {
    None = 0,
    V3(v3::Model<'a>),
    V4(v4::Model<'a>),
}

impl<'a> Prepared<'a> {
    fn model(self) -> Option<Model<'a>> {
        match self {
            Prepared::None => None,
            Prepared::V3(m) => Some(Model::V3(m)),
            Prepared::V4(m) => Some(Model::V4(m)),
        }
    }
}

/// A parsed model and its decoded steps, filled once by [`Plan::prepare`] and reused by every
/// run. `N` must be at least the model's step count (the code generator sizes it exactly).
///
/// [`Plan::new`] is all zero bytes, so a `static` plan (or a static struct holding one next to
/// zeroed memory) needs no initialised data: it goes to `.bss`, not into the program image.
pub struct Plan<'a, const N: usize> {
    model: Prepared<'a>,
    steps: [Step<'a>; N],
}

impl<const N: usize> Default for Plan<'_, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, const N: usize> Plan<'a, N> {
    /// An empty plan (usable in a `static`).
    pub const fn new() -> Self {
        Plan { model: Prepared::None, steps: [Step::Empty; N] }
    }

    /// The parsed model, once prepared.
    pub fn model(&self) -> Option<Model<'a>> {
        self.model.model()
    }

    /// Parses `bytes` and decodes its steps, the first time only.
    pub fn prepare(&mut self, bytes: &'a [u8]) -> Result<Model<'a>, KmodelError> {
        if let Some(m) = self.model.model() {
            return Ok(m);
        }
        let (steps, mut fits) = (&mut self.steps, true);
        let m = Model::parse_with(bytes, |b, s| match steps.get_mut(b.index as usize) {
            Some(slot) => *slot = s,
            None => fits = false,
        })?;
        if !fits {
            return Err(KmodelError::BadCount { part: Part::LayerHeaders, count: m.steps() as u32 });
        }
        self.model = match m {
            Model::V3(v) => Prepared::V3(v),
            Model::V4(v) => Prepared::V4(v),
        };
        Ok(m)
    }

    /// Runs the model on `input` (bytes of the type and size [`Model::input`] says) on the
    /// device model.
    pub fn run(&mut self, bytes: &'a [u8], mem: Memory<'_>, input: &[u8], opts: Options) -> Result<(), KmodelError> {
        let m = self.prepare(bytes)?;
        run(&m, &self.steps[..m.steps()], mem, input, opts)
    }

    /// Runs the model on `input` with its KPU layers on `kpu` (for example the K210's own KPU);
    /// `main` is main memory, `scratch` the CPU layers' scratch.
    pub fn run_on<B: KpuBackend + ?Sized>(
        &mut self,
        bytes: &'a [u8],
        kpu: &mut B,
        main: &mut [u8],
        scratch: &mut [u8],
        input: &[u8],
    ) -> Result<(), KmodelError> {
        let m = self.prepare(bytes)?;
        run_on(&m, &self.steps[..m.steps()], kpu, main, scratch, input)
    }

    /// Output `i`'s bytes after a run (`kpu`: the KPU RAM the run used).
    pub fn output<'m>(&self, main: &'m [u8], kpu: &'m [u8], i: usize) -> Result<&'m [u8], KmodelError> {
        let m = self.model.model().ok_or(KmodelError::NoSuchOutput { index: i as u32 })?;
        output(&m, main, kpu, i)
    }
}
