//! Several models on one static arena: [`shared_arena!`](crate::shared_arena) declares the arena,
//! [`InArena`] is a model that borrows it.
//!
//! A shared arena is one `static` sized to the largest part any of its models needs. Its handle
//! (`<arena>::Arena`, taken once like a model) is borrowed mutably by each model taken on it,
//! so while one model lives the others cannot be taken: the compiler refuses a program that
//! holds two at once (no run-time lock, no `unsafe` in user code).

use core::marker::PhantomData;

/// A model taken on a shared arena: it borrows the arena's handle mutably for `'a`, so no
/// other model of that arena can be taken while it lives. Derefs to the model.
pub struct InArena<'a, M> {
    model: M,
    arena: PhantomData<&'a mut ()>,
}

impl<'a, M> InArena<'a, M> {
    /// `model`, holding `arena` for as long as it lives (called by generated `Model::take`).
    #[doc(hidden)]
    pub fn new<A>(model: M, arena: &'a mut A) -> InArena<'a, M> {
        let _ = arena;
        InArena { model, arena: PhantomData }
    }
}

impl<M> core::ops::Deref for InArena<'_, M> {
    type Target = M;
    fn deref(&self) -> &M {
        &self.model
    }
}

impl<M> core::ops::DerefMut for InArena<'_, M> {
    fn deref_mut(&mut self) -> &mut M {
        &mut self.model
    }
}

/// The largest of `sizes` (0 for none): a shared arena's size.
#[doc(hidden)]
pub const fn largest(sizes: &[usize]) -> usize {
    let mut i = 0;
    let mut max = 0;
    while i < sizes.len() {
        if sizes[i] > max {
            max = sizes[i];
        }
        i += 1;
    }
    max
}

/// Whether two names are equal, in a constant (a model's shared arena against the arena that
/// lists it).
#[doc(hidden)]
pub const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Declares a static arena that several models share: `shared_arena!(pub detect: kws, resnet);`
/// makes the module `detect`, beside the models' modules (`include_model!` calls in the same
/// module), holding
///
/// - `BYTES`: the arena's size, the largest part any of its models needs;
/// - `PARTS`: each model's module name and the bytes of the arena it uses;
/// - `Arena`: the arena's handle, `Arena::take()` hands it out once at a time.
///
/// Each model must be built for the arena (`.shared_arena("detect")` in build.rs, `arena =
/// "detect"` in `[package.metadata.mlf]`, `include_model!(…, arena = detect)`); its
/// `Model::take(&mut arena)` then borrows the handle mutably for as long as the model lives:
///
/// ```ignore
/// mlf_runtime::include_model!("models/kws.tar", arena = detect);
/// mlf_runtime::include_model!("models/resnet.tar", arena = detect);
/// mlf_runtime::shared_arena!(pub detect: kws, resnet);
///
/// let mut arena = detect::Arena::take().unwrap();
/// let mut kws = kws::Model::take(&mut arena).unwrap();
/// let heard = kws.run(&kws::Inputs { input: &audio })?.output[1];
/// drop(kws); // until then, resnet::Model::take(&mut arena) does not compile
/// let mut resnet = resnet::Model::take(&mut arena).unwrap();
/// ```
///
/// A model listed here that was not built for this arena is a compile error, and so is a model
/// built for it that is not listed (its part would not fit).
///
/// `in "SECTION"` after the models puts the arena in the link section `SECTION`, which the
/// firmware's linker script places in a memory region (a second SRAM, DTCM, external PSRAM):
///
/// ```ignore
/// // memory.x: MEMORY { …, PSRAM : ORIGIN = 0x21000000, LENGTH = 16M }
/// //           SECTIONS { .psram (NOLOAD) : ALIGN(16) { *(.psram .psram.*) } > PSRAM } INSERT AFTER .bss;
/// mlf_runtime::shared_arena!(pub detect: kws, resnet in ".psram");
/// ```
///
/// The section must be `NOLOAD` (nothing is copied at reset). Its bytes are then not zeroed
/// either, which TVM models' arenas do not need (every tensor is written before it is read);
/// a kmodel's state, made in its shared arena at each `take`, does need zeroed bytes, so a kmodel
/// is placed in a region only where the startup code zeroes it.
#[macro_export]
macro_rules! shared_arena {
    ($(#[$attr:meta])* $vis:vis $name:ident : $($model:ident),+ in $section:literal) => {
        $crate::shared_arena!(@arena [$(#[$attr])*] $vis $name [$($model),+] [#[unsafe(link_section = $section)]]);
    };
    ($(#[$attr:meta])* $vis:vis $name:ident : $($model:ident),+ $(,)?) => {
        $crate::shared_arena!(@arena [$(#[$attr])*] $vis $name [$($model),+] []);
    };
    (@arena [$(#[$attr:meta])*] $vis:vis $name:ident [$($model:ident),+] [$($place:tt)*]) => {
        $(#[$attr])*
        #[allow(dead_code)]
        $vis mod $name {
            /// Bytes of the shared arena: the largest part any of its models needs.
            pub const BYTES: usize = $crate::__shared::largest(&[$(super::$model::SHARED_ARENA_BYTES),+]);

            /// Each model's module name and the bytes of the arena it uses.
            pub const PARTS: &[(&str, usize)] = &[$((::core::stringify!($model), super::$model::SHARED_ARENA_BYTES)),+];

            $(
                const _: () = ::core::assert!(
                    $crate::__shared::same_name(super::$model::SHARED_ARENA, ::core::stringify!($name)),
                    ::core::concat!(
                        "model `", ::core::stringify!($model), "` is listed in shared_arena!(",
                        ::core::stringify!($name), ": …) but was built for another shared arena"
                    ),
                );
            )+

            /// The arena's bytes (zeroed: in `.bss`, unless placed in a link section). The models'
            /// descriptors point into it.
            #[doc(hidden)]
            $($place)*
            pub static ARENA: $crate::StaticArena<BYTES> = $crate::StaticArena::new();

            /// The one handle, handed out by [`Arena::take`].
            static HANDLE: $crate::TakeOnce<()> = $crate::TakeOnce::new(());

            /// The arena's handle: each model taken on it borrows it mutably, so one model at a
            /// time uses the arena.
            pub struct Arena {
                /// The handle, taken from [`HANDLE`].
                _taken: $crate::Taken<()>,
            }

            impl Arena {
                /// Takes the arena. `None` while its handle is held elsewhere.
                pub fn take() -> ::core::option::Option<Arena> {
                    HANDLE.take().map(|_taken| Arena { _taken })
                }
            }
        }
    };
}
