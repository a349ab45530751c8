//! Generated modules for kmodels.
//!
//! The module embeds the model file (256-byte aligned, as the KPU requires), allocates main
//! memory, the emulated KPU RAM (up to the highest row the model touches) and the convolution
//! scratch as statics inside a `mlf_runtime::TakeOnce` cell, and runs the model
//! with `mlf_runtime::kmodel`. The model was validated when the module was generated; at run
//! time it is parsed once, on the first `run()`, into a table of decoded steps (a `Plan`)
//! that later runs reuse. The generated code contains no `unsafe`.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::codegen::ident;
use crate::error::{Error, Result};
use crate::model::{KmodelExec, ModelDesc, TensorInfo};
use crate::support::dtype::DType;
use crate::support::names::const_ident;

fn elem(t: &TensorInfo) -> Result<TokenStream> {
    if t.dtype == DType::F32 {
        Ok(quote!(f32))
    } else if t.dtype == DType::U8 {
        Ok(quote!(u8))
    } else {
        Err(Error::unsupported(format!("kmodel tensor {} has dtype {}, expected float32 or uint8", t.name, t.dtype)))
    }
}

/// The items of the module `include_model!` emits for a kmodel: `include_path` is the path
/// `include_bytes!` reads the file from, `file_name` the file's name (for documentation).
pub fn module_tokens(desc: &ModelDesc, k: &KmodelExec, include_path: &str, file_name: &str) -> Result<TokenStream> {
    if !desc.blockers.is_empty() {
        return Err(Error::unsupported(desc.blockers.join("; ")));
    }
    let [input] = desc.inputs.as_slice() else {
        return Err(Error::invalid(format!("a kmodel takes one input, this description has {}", desc.inputs.len())));
    };
    let name = &desc.name;
    let lit = Literal::usize_unsuffixed;
    let version = Literal::u32_unsuffixed(k.version);
    let file_len = lit(k.file_bytes as usize);
    let main = lit((k.main_bytes as usize).div_ceil(8) * 8);
    let kpu = lit(k.kpu_bytes as usize);
    let scratch = lit(k.scratch_bytes as usize);
    let steps = lit(k.steps.len());
    let macs = Literal::u64_unsuffixed(k.macs);
    let model_len = k.model_bytes as usize;

    let mut consts = Vec::new();
    for t in desc.inputs.iter().chain(&desc.outputs) {
        let c = ident(&format!("{}_SHAPE", const_ident(&t.ident)));
        let dims: Vec<Literal> = t.shape.iter().map(|&d| lit(d as usize)).collect();
        let n = lit(dims.len());
        let doc = format!(" Shape of `{}` ({}).", t.ident, t.shape_source);
        consts.push(quote! {
            #[doc = #doc]
            pub const #c: [usize; #n] = [#(#dims),*];
        });
    }

    let in_ident = ident(&input.ident);
    let in_ty = elem(input)?;
    let in_n = lit(input.numel() as usize);
    let in_doc = format!(" Input `{}`: {} {:?}, flattened (NCHW).", input.ident, input.dtype, input.shape);
    let in_bytes = if input.dtype == DType::F32 {
        quote!(::mlf_runtime::kmodel::f32_bytes(&inputs.#in_ident[..]))
    } else {
        quote!(&inputs.#in_ident[..])
    };

    let mut out_fields = Vec::new();
    let mut out_values = Vec::new();
    for (i, t) in desc.outputs.iter().enumerate() {
        let f = ident(&t.ident);
        let ty = elem(t)?;
        let n = lit(t.numel() as usize);
        let doc = format!(" Output `{}`: {} {:?}, flattened.", t.ident, t.dtype, t.shape);
        out_fields.push(quote! {
            #[doc = #doc]
            pub #f: &'a [#ty; #n]
        });
        let idx = lit(i);
        let view = if t.dtype == DType::F32 { quote!(as_f32_array) } else { quote!(as_u8_array) };
        out_values.push(quote! {
            #f: ::mlf_runtime::kmodel::#view::<#n>(plan.output(&main.0, &kpu.0, #idx)?)?
        });
    }

    let name_doc = format!(" Model name (from the file name of `{file_name}`).");
    let version_doc = format!(" kmodel version (V{version}, written by {}).", k.compiler);
    let main_doc = format!(
        " Main (CPU working) memory, from the header ({}).",
        if k.version == 3 { "`main_mem_usage` rounded up to 8, plus 8 bytes of DMA slack" } else { "`main_mem`" }
    );
    let model_doc = format!(
        " The model file ({} bytes, {model_len} of them the model), embedded 256-byte aligned as the KPU requires.",
        k.file_bytes
    );
    Ok(quote! {
        #[doc = #name_doc]
        pub const NAME: &str = #name;
        #[doc = #version_doc]
        pub const KMODEL_VERSION: u32 = #version;
        #(#consts)*
        #[doc = #main_doc]
        pub const MAIN_MEMORY_BYTES: usize = #main;
        /// Emulated KPU RAM: up to the highest byte any layer touches (the chip has 2 MiB).
        pub const KPU_RAM_BYTES: usize = #kpu;
        /// Scratch memory of the KPU convolution emulation (the largest layer's needs).
        pub const SCRATCH_BYTES: usize = #scratch;
        /// Layers (V3) or nodes (V4).
        pub const STEPS: usize = #steps;
        /// KPU multiply-accumulates per inference.
        pub const KPU_MACS: u64 = #macs;
        /// Static RAM this module allocates: main memory, KPU RAM, scratch and the table of
        /// decoded steps.
        pub const ARENA_BYTES: usize = MAIN_MEMORY_BYTES
            + KPU_RAM_BYTES
            + SCRATCH_BYTES
            + ::core::mem::size_of::<::mlf_runtime::kmodel::Plan<'static, STEPS>>();

        #[doc = #model_doc]
        static MODEL: ::mlf_runtime::Aligned256<#file_len> = ::mlf_runtime::Aligned256(*include_bytes!(#include_path));

        struct State {
            plan: ::mlf_runtime::kmodel::Plan<'static, STEPS>,
            main: ::mlf_runtime::Arena<MAIN_MEMORY_BYTES>,
            kpu: ::mlf_runtime::Arena<KPU_RAM_BYTES>,
            scratch: ::mlf_runtime::Arena<SCRATCH_BYTES>,
        }

        static STATE: ::mlf_runtime::TakeOnce<State> = ::mlf_runtime::TakeOnce::new(State {
            plan: ::mlf_runtime::kmodel::Plan::new(),
            main: ::mlf_runtime::Arena::new(),
            kpu: ::mlf_runtime::Arena::new(),
            scratch: ::mlf_runtime::Arena::new(),
        });

        /// The model's input.
        pub struct Inputs<'a> {
            #[doc = #in_doc]
            pub #in_ident: &'a [#in_ty; #in_n],
        }

        /// The model's outputs, borrowed from its static memory until the next `run`.
        pub struct Outputs<'a> {
            #(#out_fields,)*
        }

        /// The model with its static memory; one instance exists at a time.
        pub struct Model {
            state: ::mlf_runtime::Taken<State>,
            options: ::mlf_runtime::kmodel::Options,
        }

        impl Model {
            /// The model, or `None` while another instance is alive (dropping it releases the
            /// static memory).
            pub fn take() -> Option<Model> {
                STATE.take().map(|state| Model { state, options: ::mlf_runtime::kmodel::Options::default() })
            }

            /// Chooses the KPU activation rounding (default: nncase v0.2's, see
            /// `mlf_runtime::kmodel::ActivationRounding`).
            pub fn set_activation_rounding(&mut self, rounding: ::mlf_runtime::kmodel::ActivationRounding) {
                self.options.rounding = rounding;
            }

            /// Runs the model on `inputs`.
            pub fn run(&mut self, inputs: &Inputs<'_>) -> Result<Outputs<'_>, ::mlf_runtime::Error> {
                let State { plan, main, kpu, scratch } = &mut *self.state;
                let memory = ::mlf_runtime::kmodel::Memory { main: &mut main.0, kpu: &mut kpu.0, scratch: &mut scratch.0 };
                plan.run(&MODEL.0, memory, #in_bytes, self.options)?;
                Ok(Outputs {
                    #(#out_values,)*
                })
            }
        }
    })
}

/// Bytes of the runtime's table of `n` decoded kmodel steps (`mlf_kmodel::Plan<n>`, which a
/// kmodel module keeps in static memory), as laid out for this computer.
pub fn step_table_bytes(n: u64) -> u64 {
    let one = std::mem::size_of::<mlf_kmodel::Plan<'static, 1>>() as u64;
    let two = std::mem::size_of::<mlf_kmodel::Plan<'static, 2>>() as u64;
    let step = two - one;
    one - step + n * step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmodel_step_table_is_linear_in_steps() {
        assert_eq!(step_table_bytes(0), std::mem::size_of::<mlf_kmodel::Plan<'static, 0>>() as u64);
        assert_eq!(step_table_bytes(7), std::mem::size_of::<mlf_kmodel::Plan<'static, 7>>() as u64);
        assert_eq!(step_table_bytes(64), std::mem::size_of::<mlf_kmodel::Plan<'static, 64>>() as u64);
    }
}
