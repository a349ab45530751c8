//! The build step, the only part of mlf-build that writes files or runs the C compiler: it
//! owns the layout of `OUT_DIR/mlf/`, compiles the model's C, writes the generated module and
//! parameter files, measures the library, and checks budgets.

pub mod budget;
pub mod compile;
pub mod include;
pub mod layout;
pub mod manifest;
pub mod measure;
pub mod model;
pub mod objects;
pub mod script;
pub mod split_folder;
