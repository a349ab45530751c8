//! The build step, the only part of mlf-build that writes files or runs the C compiler: it
//! owns the layout of `OUT_DIR/mlf/`, compiles the model's C, writes the generated module and
//! parameter files, measures the library, and checks budgets. [`layout`] and [`include`](mod@include) are
//! what `include_model!` needs, and need no more than the model description.

pub mod include;
pub mod layout;
pub mod report;

#[cfg(feature = "build")]
pub mod budget;
#[cfg(feature = "build")]
pub mod compile;
#[cfg(feature = "build")]
pub(crate) mod compiler_view;
#[cfg(feature = "build")]
pub(crate) mod embed;
#[cfg(feature = "build")]
pub(crate) mod include_policy;
#[cfg(feature = "build")]
pub mod includes;
#[cfg(feature = "build")]
pub mod libraries;
#[cfg(feature = "build")]
pub mod manifest;
#[cfg(feature = "build")]
pub mod measure;
#[cfg(feature = "build")]
pub mod model;
#[cfg(feature = "build")]
mod object_abi;
#[cfg(feature = "build")]
pub mod objects;
#[cfg(feature = "build")]
pub mod output;
#[cfg(feature = "build")]
pub mod retarget;
#[cfg(feature = "build")]
pub mod runnable;
#[cfg(feature = "build")]
pub(crate) mod sandbox;
#[cfg(feature = "build")]
pub mod script;
#[cfg(feature = "build")]
pub mod split_folder;
#[cfg(feature = "build")]
pub mod targets;
