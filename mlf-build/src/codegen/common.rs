//! Pieces every generated model module shares: the name and shape constants, the typed
//! `Inputs`/`Outputs` structs, the static state cell and `Model::take()`.

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::ident;
use crate::dtype::DType;
use crate::error::{Context, Result};
use crate::model::{ModelDesc, TensorInfo};
use crate::names;

/// The Rust element type of a tensor, or an error naming it.
pub fn elem_type(t: &TensorInfo) -> Result<TokenStream> {
    let ty = t.dtype.require_rust_type().at(format!("tensor {}", t.name))?;
    let id = ident(ty);
    Ok(quote!(#id))
}

/// `usize` literal.
pub fn lit(n: u64) -> Literal {
    Literal::u64_unsuffixed(n)
}

/// `NAME`, one `<IDENT>_SHAPE` per input and output, and the `Inputs`/`Outputs` structs.
pub fn interface(desc: &ModelDesc) -> Result<TokenStream> {
    let name = &desc.name;
    let mut consts = Vec::new();
    for (kind, ts) in [("input", &desc.inputs), ("output", &desc.outputs)] {
        for t in ts {
            let c = ident(&format!("{}_SHAPE", names::const_ident(&t.ident)));
            let dims = t.shape.iter().map(|&d| Literal::usize_unsuffixed(d as usize));
            let rank = super::usize_lit(t.shape.len());
            let doc = format!(" Shape of {kind} `{}` ({}, raw name `{}`; shape from {}).", t.ident, t.dtype, t.name, t.shape_source);
            consts.push(quote! {
                #[doc = #doc]
                pub const #c: [usize; #rank] = [#(#dims),*];
            });
        }
    }
    let fields = |ts: &[TensorInfo], what: &str| -> Result<Vec<TokenStream>> {
        ts.iter()
            .map(|t| {
                let f = ident(&t.ident);
                let ty = elem_type(t)?;
                let n = lit(t.numel());
                let doc = format!(" {what} `{}`: {} {:?}, flattened row-major.", t.name, t.dtype, t.shape);
                Ok(quote! {
                    #[doc = #doc]
                    pub #f: &'a [#ty; #n]
                })
            })
            .collect()
    };
    let in_fields = fields(&desc.inputs, "Input")?;
    let out_fields = fields(&desc.outputs, "Output")?;
    Ok(quote! {
        /// The model's name as the compiler recorded it.
        pub const NAME: &str = #name;
        #(#consts)*

        /// The model's inputs, borrowed for one run.
        #[derive(Clone, Copy, Debug)]
        pub struct Inputs<'a> {
            #(#in_fields,)*
        }

        /// The model's outputs, borrowed from the model's static memory until the next run.
        #[derive(Clone, Copy, Debug)]
        pub struct Outputs<'a> {
            #(#out_fields,)*
        }
    })
}

/// `const NAME: DLDataType` items for the dtypes in `dtypes`, and a map from dtype to the item.
pub fn dtype_consts(dtypes: impl IntoIterator<Item = DType>) -> (TokenStream, BTreeMap<DType, proc_macro2::Ident>) {
    let mut map = BTreeMap::new();
    let mut items = Vec::new();
    for d in dtypes {
        if map.contains_key(&d) {
            continue;
        }
        let id = ident(&format!("DT_{}", d.to_string().to_ascii_uppercase()));
        let code = proc_macro2::Literal::u8_unsuffixed(d.code.code());
        let bits = proc_macro2::Literal::u8_unsuffixed(d.bits);
        let lanes = proc_macro2::Literal::u16_unsuffixed(d.lanes);
        items.push(quote! {
            const #id: ::mlf_runtime::tvm::ffi::DLDataType = ::mlf_runtime::tvm::ffi::DLDataType { code: #code, bits: #bits, lanes: #lanes };
        });
        map.insert(d, id);
    }
    (quote!(#(#items)*), map)
}

/// `static SHAPE_…: [i64; N]` items for the shapes in `shapes`, and a map from shape to item.
pub fn shape_statics<'a>(shapes: impl IntoIterator<Item = &'a Vec<u64>>) -> (TokenStream, BTreeMap<Vec<u64>, proc_macro2::Ident>) {
    let mut map = BTreeMap::new();
    let mut items = Vec::new();
    for s in shapes {
        if map.contains_key(s) {
            continue;
        }
        let name = if s.is_empty() { "SHAPE_SCALAR".to_string() } else { format!("SHAPE_{}", s.iter().map(u64::to_string).collect::<Vec<_>>().join("_")) };
        let id = ident(&name);
        let n = super::usize_lit(s.len());
        let dims = s.iter().map(|&d| Literal::i64_unsuffixed(d as i64));
        items.push(quote!(static #id: [i64; #n] = [#(#dims),*];));
        map.insert(s.clone(), id);
    }
    (quote!(#(#items)*), map)
}

/// The embedded copy of parameter bytes: `static P<k>: Aligned<N> = Aligned(*include_bytes!(…))`.
pub fn embedded_param(ident_name: &proc_macro2::Ident, path: &std::path::Path, bytes: u64, doc: &str) -> TokenStream {
    let p = path.display().to_string();
    let n = lit(bytes);
    quote! {
        #[doc = #doc]
        static #ident_name: ::mlf_runtime::Aligned<#n> = ::mlf_runtime::Aligned(*include_bytes!(#p));
    }
}
