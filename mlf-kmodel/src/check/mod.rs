//! Checking: a decoded model against the memory it declares (every address, range, count,
//! register and divisor), and the memory a run needs. A model that passes cannot make a run
//! read or write outside its buffers.

mod model;
pub mod v3;
pub mod v4;

pub use model::Model;
