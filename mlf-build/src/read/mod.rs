//! The readers: one per format, each turning what it parses into the model description (or, for
//! files that are not models, into a report of what they hold). Readers know formats and nothing
//! else; they never plan, generate code or write files.

// Always there: what `include_model!` needs (recognising a file, reading a kmodel) and the C
// scanner the AOT backend rescans rewritten C with.
pub mod csource;
pub mod kmodel;
pub mod sniff;

// The TVM readers, for the build step.
#[cfg(feature = "build")]
pub mod archive;
#[cfg(feature = "build")]
pub mod blob;
#[cfg(feature = "build")]
pub mod detect;
#[cfg(feature = "build")]
pub mod dmlc;
#[cfg(feature = "build")]
pub mod graph;
#[cfg(feature = "build")]
pub mod header;
#[cfg(feature = "build")]
pub mod json;
#[cfg(feature = "build")]
pub mod metadata;
#[cfg(feature = "build")]
pub mod mlf;
#[cfg(feature = "build")]
pub mod object_check;
#[cfg(feature = "build")]
pub mod param_pack;
#[cfg(feature = "build")]
pub mod params;
#[cfg(feature = "build")]
pub mod relax;
#[cfg(feature = "build")]
pub mod relay;
#[cfg(feature = "build")]
pub mod target;

#[cfg(feature = "build")]
mod open;

#[cfg(feature = "cli")]
pub use open::open_detected;
#[cfg(feature = "build")]
pub use open::{ReadOptions, open};
