//! Generated modules for kmodels.
//!
//! The module embeds the model file (256-byte aligned, as the KPU requires) and runs the model
//! with `mlf_runtime::kmodel`, its KPU layers on one of two backends ([`Kpu`]):
//!
//! - the device model: main memory, the emulated KPU RAM (up to the highest row the model
//!   touches) and the convolution scratch are statics inside a `mlf_runtime::TakeOnce` cell;
//! - the K210's own KPU (mlf-runtime's feature `k210`): main memory and the CPU layers'
//!   scratch are the statics, and `Model` holds the KPU (`K210<Hardware>`), taken with it, so
//!   the chip's own 2 MiB of KPU RAM is used and no copy of it is allocated.
//!
//! The model was validated when the module was generated; at run time it is parsed once, on
//! the first `run()`, into a table of decoded steps (a `Plan`) that later runs reuse. The
//! generated code contains no `unsafe`.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::render::{blank, comment};
use super::section::Sections;
use super::skeleton::{self, Field};
use super::{IncludePath, ident};
use crate::error::{Error, Result};
use crate::model::{KmodelExec, Kpu, ModelDesc, TensorInfo};
use crate::support::dtype::DType;

/// Checks that a kmodel tensor has a dtype the runtime's kmodel views give (float32 or uint8).
fn check_dtype(t: &TensorInfo) -> Result<()> {
    if t.dtype == DType::F32 || t.dtype == DType::U8 {
        Ok(())
    } else {
        Err(Error::unsupported(format!("kmodel tensor {} has dtype {}, expected float32 or uint8", t.name, t.dtype)))
    }
}

/// Bytes of the runtime's table of `n` decoded kmodel steps (`mlf_kmodel::Plan<n>`, which a
/// kmodel module keeps in static memory), as laid out for this computer.
pub fn step_table_bytes(n: u64) -> u64 {
    let one = std::mem::size_of::<mlf_kmodel::Plan<'static, 1>>() as u64;
    let two = std::mem::size_of::<mlf_kmodel::Plan<'static, 2>>() as u64;
    let step = two - one;
    one - step + n * step
}

/// The constants of a kmodel module: its version and memory, for its KPU backend.
fn consts(k: &KmodelExec, kpu: Kpu) -> Vec<TokenStream> {
    let lit = Literal::usize_unsuffixed;
    let (version, main) = (Literal::u32_unsuffixed(k.version), lit((k.main_bytes as usize).div_ceil(8) * 8));
    let (kpu_ram, steps) = (lit(k.kpu_bytes as usize), lit(k.steps.len()));
    let macs = Literal::u64_unsuffixed(k.macs);
    let version_doc = format!(" kmodel version (V{version}, written by {}).", k.compiler);
    let main_doc = format!(
        " Main (CPU working) memory, from the header ({}).",
        if k.version == 3 { "`main_mem_usage` rounded up to 8, plus 8 bytes of DMA slack" } else { "`main_mem`" }
    );
    let memory = match kpu {
        Kpu::DeviceModel => {
            let scratch = lit(k.scratch_bytes as usize);
            vec![
                quote! {
                    /// Static RAM this module allocates: main memory, KPU RAM, scratch and the
                    /// table of decoded steps.
                    pub const ARENA_BYTES: usize = MAIN_MEMORY_BYTES
                        + KPU_RAM_BYTES
                        + SCRATCH_BYTES
                        + ::core::mem::size_of::<::mlf_runtime::kmodel::Plan<'static, STEPS>>();
                },
                quote! {
                    /// Emulated KPU RAM: up to the highest byte any layer touches (the chip has 2 MiB).
                    pub const KPU_RAM_BYTES: usize = #kpu_ram;
                },
                quote! {
                    /// Scratch memory of the KPU convolution emulation (the largest layer's needs).
                    pub const SCRATCH_BYTES: usize = #scratch;
                },
            ]
        }
        Kpu::K210 => {
            let cpu_scratch = lit(k.cpu_scratch_bytes as usize);
            vec![
                quote! {
                    /// Static RAM this module allocates: main memory, the CPU layers' scratch and
                    /// the table of decoded steps. The KPU works in its own RAM.
                    pub const ARENA_BYTES: usize = MAIN_MEMORY_BYTES
                        + CPU_SCRATCH_BYTES
                        + ::core::mem::size_of::<::mlf_runtime::kmodel::Plan<'static, STEPS>>();
                },
                quote! {
                    /// Bytes of the K210's 2 MiB of KPU RAM the model uses (the chip's own memory,
                    /// not allocated by this module).
                    pub const KPU_RAM_USED_BYTES: usize = #kpu_ram;
                },
                quote! {
                    /// Scratch memory of the CPU layers (0 for every model nncase writes).
                    pub const CPU_SCRATCH_BYTES: usize = #cpu_scratch;
                },
            ]
        }
    };
    let mut items = vec![memory[0].clone()];
    items.push(quote! {
        #[doc = #version_doc]
        pub const KMODEL_VERSION: u32 = #version;
    });
    items.push(quote! {
        #[doc = #main_doc]
        pub const MAIN_MEMORY_BYTES: usize = #main;
    });
    items.extend(memory[1..].iter().cloned());
    items.push(quote! {
        /// Layers (V3) or nodes (V4): the size of the module's table of decoded steps.
        #[doc(hidden)]
        pub const STEPS: usize = #steps;
    });
    items.push(quote! {
        /// KPU multiply-accumulates per inference.
        pub const KPU_MACS: u64 = #macs;
    });
    items.push(stack_bytes());
    items
}

/// `STACK_BYTES`: the stack one run needs, an allowance for the interpreter's frames.
fn stack_bytes() -> TokenStream {
    use crate::plan::stack::{KMODEL_BYTES, KMODEL_DEBUG_BYTES};
    let (release, debug) = (Literal::u64_unsuffixed(KMODEL_BYTES), Literal::u64_unsuffixed(KMODEL_DEBUG_BYTES));
    let doc = format!(
        " Bytes of stack one `run()` needs below its caller's frame: an allowance for mlf's kmodel \
         interpreter ({KMODEL_BYTES} bytes when optimised, {KMODEL_DEBUG_BYTES} with debug assertions), \
         which is Rust and has no compiler figure; mlf's tests check it against the painted stack."
    );
    quote! {
        #[doc = #doc]
        pub const STACK_BYTES: usize = if cfg!(debug_assertions) { #debug } else { #release };
    }
}

/// The body of `run()`: the model run on the input's bytes, its KPU layers on `kpu`, then every
/// output viewed where the model left it.
fn run_body(desc: &ModelDesc, input: &TensorInfo, kpu: Kpu) -> TokenStream {
    let in_ident = ident(&input.ident);
    let in_bytes = if input.dtype == DType::F32 {
        quote!(::mlf_runtime::kmodel::f32_bytes(&inputs.#in_ident[..]))
    } else {
        quote!(&inputs.#in_ident[..])
    };
    let kpu_ram = match kpu {
        Kpu::DeviceModel => quote!(&kpu.0),
        Kpu::K210 => quote!(kpu_ram),
    };
    let mut out_values = Vec::new();
    let mut places = Vec::new();
    for (i, t) in desc.outputs.iter().enumerate() {
        let (f, idx) = (ident(&t.ident), Literal::usize_unsuffixed(i));
        let view = if t.dtype == DType::F32 { quote!(as_f32_array) } else { quote!(as_u8_array) };
        out_values.push(quote!(#f: ::mlf_runtime::kmodel::#view(plan.output(&main.0, #kpu_ram, #idx)?)?));
        places.push(format!("`{}` ({} {:?}) from output {i}", t.name, t.dtype, t.shape));
    }
    let outputs = comment(format!("The outputs, read where the model left them: {}.", places.join(", ")));
    let blank = blank();
    let on_input = format!("on input `{}` ({} {:?})", input.name, input.dtype, input.shape);
    match kpu {
        Kpu::DeviceModel => {
            let memory = comment("The model's memory: main memory, emulated KPU RAM and convolution scratch.");
            let run = comment(format!("Run every step {on_input}; the first run decodes the model into `plan`."));
            quote! {
                let State { plan, main, kpu, scratch } = &mut *self.state;
                #memory
                let memory = ::mlf_runtime::kmodel::Memory { main: &mut main.0, kpu: &mut kpu.0, scratch: &mut scratch.0 };
                #blank
                #run
                plan.run(&MODEL.0, memory, #in_bytes, self.options)?;
                #blank
                #outputs
                Ok(Outputs { #(#out_values,)* })
            }
        }
        Kpu::K210 => {
            let run = comment(format!(
                "Run every step {on_input}: KPU layers on the K210's KPU, in its own RAM; the first run decodes the model into `plan`."
            ));
            let ram = comment("The KPU's RAM as the CPU reads it: outputs the model leaves there are read from it.");
            quote! {
                let State { plan, main, scratch } = &mut *self.state;
                #run
                plan.run_on(&MODEL.0, &mut self.kpu, &mut main.0, &mut scratch.0, #in_bytes)?;
                #blank
                #ram
                let kpu_ram: &[u8] = ::mlf_runtime::kmodel::kpu::KpuBackend::ram(&mut self.kpu);
                #blank
                #outputs
                Ok(Outputs { #(#out_values,)* })
            }
        }
    }
}

/// The state and `Model` fields and methods of a module whose KPU layers run on `kpu`.
fn backend_parts(kpu: Kpu) -> (Vec<Field>, Vec<Field>, Vec<TokenStream>) {
    let arena = |name: &str, size: &str, what: &str| {
        let size = ident(size);
        Field::zeroed(name, quote!(::mlf_runtime::Arena<#size>), quote!(::mlf_runtime::Arena::new()), what)
    };
    let plan = Field::new(
        "plan",
        quote!(::mlf_runtime::kmodel::Plan<'static, STEPS>),
        quote!(::mlf_runtime::kmodel::Plan::new()),
        "The model's steps, decoded on the first run.",
    );
    match kpu {
        Kpu::DeviceModel => (
            vec![
                plan,
                arena("main", "MAIN_MEMORY_BYTES", "Main (CPU working) memory."),
                arena("kpu", "KPU_RAM_BYTES", "Emulated KPU RAM."),
                arena("scratch", "SCRATCH_BYTES", "Scratch memory of the KPU convolution emulation."),
            ],
            vec![Field::new(
                "options",
                quote!(::mlf_runtime::kmodel::Options),
                quote!(::mlf_runtime::kmodel::Options::default()),
                "How the model runs (activation rounding).",
            )],
            vec![quote! {
                /// Chooses the KPU activation rounding (default: nncase v0.2's, see
                /// `mlf_runtime::kmodel::ActivationRounding`).
                pub fn set_activation_rounding(&mut self, rounding: ::mlf_runtime::kmodel::ActivationRounding) {
                    self.options.rounding = rounding;
                }
            }],
        ),
        Kpu::K210 => (
            vec![
                plan,
                arena("main", "MAIN_MEMORY_BYTES", "Main (CPU working) memory."),
                arena("scratch", "CPU_SCRATCH_BYTES", "Scratch memory of the CPU layers."),
            ],
            vec![Field::fallible(
                "kpu",
                quote!(::mlf_runtime::kmodel::kpu::k210::K210<::mlf_runtime::kmodel::kpu::k210::Hardware>),
                quote!(
                    ::mlf_runtime::kmodel::kpu::k210::K210::new(::mlf_runtime::kmodel::kpu::k210::Hardware::take()?)
                ),
                "The K210's KPU: its registers and its RAM (one exists at a time).",
            )],
            Vec::new(),
        ),
    }
}

/// The items of the module `include_model!` emits for a kmodel, its KPU layers on the device
/// model: `model_file` is where `include_bytes!` reads the file from, `file_name` the file's
/// name (for documentation).
pub fn module_tokens(
    desc: &ModelDesc,
    k: &KmodelExec,
    model_file: &IncludePath,
    file_name: &str,
) -> Result<TokenStream> {
    module_tokens_on(desc, k, (model_file, file_name), Kpu::DeviceModel, (None, Default::default()))
}

/// Like [`module_tokens`], the KPU layers running on `kpu`, the state in the shared arena
/// `shared_arena` if one is named, the state (`sections.arena`) and the model file
/// (`sections.params`) in the link sections named.
pub fn module_tokens_on(
    desc: &ModelDesc,
    k: &KmodelExec,
    (model_file, file_name): (&IncludePath, &str),
    kpu: Kpu,
    (shared_arena, sections): (Option<&str>, Sections<'_>),
) -> Result<TokenStream> {
    sections.check(shared_arena)?;
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }
    let [input] = desc.inputs.as_slice() else {
        return Err(Error::invalid(format!("a kmodel takes one input, this description has {}", desc.inputs.len())));
    };
    for t in desc.inputs.iter().chain(&desc.outputs) {
        check_dtype(t)?;
    }
    let (file_len, path) = (Literal::usize_unsuffixed(k.file_bytes as usize), model_file.tokens());
    let model_doc = format!(
        " The model file ({} bytes, {} of them the model), embedded 256-byte aligned as the KPU requires{}.",
        k.file_bytes,
        k.model_bytes,
        sections.params.map(|s| format!(", in the link section `{s}`")).unwrap_or_default()
    );
    let place = super::section::attr(sections.params);
    let (state, model_fields, methods) = backend_parts(kpu);
    let model_doc_text = match kpu {
        Kpu::DeviceModel => " The model with its static memory; one instance exists at a time.",
        Kpu::K210 => " The model with its static memory and the K210's KPU; one instance exists at a time.",
    };
    skeleton::module(skeleton::Module {
        desc,
        name_doc: format!(" Model name (from the file name of `{file_name}`)."),
        consts: consts(k, kpu),
        decls: vec![quote! {
            #[doc = #model_doc]
            #place
            static MODEL: ::mlf_runtime::Aligned256<#file_len> = ::mlf_runtime::Aligned256(*include_bytes!(#path));
        }],
        statics: Vec::new(),
        state,
        model_doc: model_doc_text.into(),
        model_fields,
        on_take: quote!(),
        methods,
        run_sig: quote! {
            /// Runs the model on `inputs`.
            pub fn run(&mut self, inputs: &Inputs<'_>) -> Result<Outputs<'_>, ::mlf_runtime::Error>
        },
        run_body: run_body(desc, input, kpu),
        shared: skeleton::Shared::new(shared_arena, true)?,
        state_section: sections.arena,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_table_is_linear_in_steps() {
        assert_eq!(step_table_bytes(0), std::mem::size_of::<mlf_kmodel::Plan<'static, 0>>() as u64);
        assert_eq!(step_table_bytes(7), std::mem::size_of::<mlf_kmodel::Plan<'static, 7>>() as u64);
        assert_eq!(step_table_bytes(64), std::mem::size_of::<mlf_kmodel::Plan<'static, 64>>() as u64);
    }
}
