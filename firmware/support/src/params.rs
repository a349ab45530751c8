//! A parameter source that counts the bytes read through it (for the programs' figures of what
//! a run reads; never in a measured run).

use mlf_runtime::Message;
use mlf_runtime::params::{ParamError, ParamRef, ParamSource};

/// `inner`, counting the bytes of every read.
pub struct Counting<S> {
    /// The source read.
    pub inner: S,
    /// Bytes read so far.
    pub bytes: u64,
}

impl<S: ParamSource> ParamSource for Counting<S> {
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        self.bytes += buf.len() as u64;
        self.inner.read(p, buf)
    }

    fn path_of(&self, p: &ParamRef) -> Message {
        self.inner.path_of(p)
    }
}
