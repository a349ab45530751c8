//! Writers of TVM's formats (module blobs, parameter files), for tests and fuzzing: mlf itself
//! only reads these formats.

pub mod blob;
pub mod params;
