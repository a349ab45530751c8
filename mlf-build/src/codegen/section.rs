//! Where a generated module's statics are linked: the link sections the user names for the
//! model's arena and its parameters (`#[link_section]`, placed in a memory region by the
//! firmware's linker script), or, by default, wherever the compiler puts them.

use proc_macro2::TokenStream;
use quote::quote;

use crate::error::{Error, Result};

/// The link sections a module's statics go in (`None`: the compiler's choice, `.bss`/`.rodata`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sections<'a> {
    /// The arena's section: a TVM model's `ARENA`, a kmodel's `STATE` (its byte arenas).
    pub arena: Option<&'a str>,
    /// The parameters' section: embedded parameters (the build step's `.incbin` assembly, a
    /// kmodel's `MODEL`) and the static region of external ones (`PARAM_REGION`, `STAGING`).
    pub params: Option<&'a str>,
}

impl Sections<'_> {
    /// Refuses a section name that cannot be one, naming the option (`arena_section`,
    /// `params_section`); and an arena section for a model on a shared arena, whose section
    /// `shared_arena!(… in "…")` chooses.
    pub fn check(&self, shared_arena: Option<&str>) -> Result<()> {
        for (option, name) in [("arena_section", self.arena), ("params_section", self.params)] {
            if let Some(name) = name {
                crate::support::section::check(name).map_err(|e| Error::invalid(e).at(option))?;
            }
        }
        if let (Some(section), Some(arena)) = (self.arena, shared_arena) {
            return Err(Error::invalid(format!(
                "the model's arena is the shared arena `{arena}`, whose link section its declaration chooses: \
                 write `shared_arena!({arena}: … in {section:?})` instead of giving the model arena_section"
            ))
            .at("arena_section"));
        }
        Ok(())
    }
}

/// `#[unsafe(link_section = "…")]` for a static in `section`, nothing when `None`.
pub fn attr(section: Option<&str>) -> TokenStream {
    match section {
        Some(s) => quote!(#[unsafe(link_section = #s)]),
        None => quote!(),
    }
}

/// What the documentation of a static in `section` says of where it lives, after `default`
/// (its words without a section, e.g. `zeroed: in `.bss``).
pub fn where_doc(section: Option<&str>, default: &str) -> String {
    match section {
        Some(s) => {
            format!("in the link section `{s}`, which the linker script places; not zeroed at reset if it is NOLOAD")
        }
        None => default.to_string(),
    }
}
