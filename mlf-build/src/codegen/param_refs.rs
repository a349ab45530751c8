//! The generated references to a model's external parameter files (`PARAMS`) and what a pack
//! must be for the code (`PACK`).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::{lit, usize_lit};
use crate::plan::split::Split;

/// The embedded references to external parameter files: `pub static PARAMS: [ParamRef; N]`
/// (identifier, size, hash of each file), documented with `doc`, and `pub static PACK: Pack<N>`
/// (what a parameter pack must be for this code: those files, the model digest, the public key
/// packs must be signed with), which `FlashArchive::open` and `Slots::open` take.
pub fn param_refs(split: &Split, doc: &str) -> TokenStream {
    let refs = split.files.iter().map(|f| {
        let (id, bytes, hash) = (&f.id, lit(f.bytes()), Literal::u64_unsuffixed(f.xxh64));
        quote!(::mlf_runtime::params::ParamRef { id: #id, bytes: #bytes, xxh64: #hash })
    });
    let n = usize_lit(split.files.len());
    let hex = |b: &u8| format!("0x{b:02x}").parse::<TokenStream>().expect("a literal");
    let digest = split.binding.digest.iter().map(hex);
    let key = match &split.binding.key {
        Some(k) => {
            let k = k.iter().map(hex);
            quote!(Some([#(#k),*]))
        }
        None => quote!(None),
    };
    let mut order: Vec<usize> = (0..split.files.len()).collect();
    order.sort_by(|&a, &b| split.files[a].id.cmp(&split.files[b].id));
    let order = order.iter().map(|&k| Literal::u16_unsuffixed(k as u16));
    let pack_doc = format!(
        " What a parameter pack must be for this code (`FlashArchive::open(bytes, &PACK)`): the files \
         of [`PARAMS`], the model digest `{}` (a pack split from another model or version records \
         another), {}.",
        crate::plan::split::digest_hex(&split.binding.digest),
        if split.binding.key.is_some() {
            "and the Ed25519 public key packs must be signed with (an unsigned pack, or one signed with another key, is refused)"
        } else {
            "and no public key (signatures are not checked; see `Model::pack_key`)"
        }
    );
    quote! {
        #[doc = #doc]
        #[doc(hidden)]
        pub static PARAMS: [::mlf_runtime::params::ParamRef; #n] = [#(#refs),*];
        #[doc = #pack_doc]
        pub static PACK: ::mlf_runtime::params::Pack<#n> =
            ::mlf_runtime::params::Pack::ordered(&PARAMS, [#(#digest),*], #key, [#(#order),*]);
    }
}
