//! A parameter source over two flash slots (A/B): the newer valid pack is used, the other is the
//! fallback while an update is written or when the newer one is damaged.

use mlf_pack::PackHeader;

use super::flash::FlashArchive;
use super::pack::{Pack, pack_error};
use super::{ParamError, ParamRef, ParamSource};
use crate::message::Message;

/// One of the two slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The first slot given to [`Slots::open`].
    A,
    /// The second.
    B,
}

/// Neither slot holds a pack this code accepts: why, for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoValidSlot {
    /// Why slot A was refused.
    pub a: ParamError,
    /// Why slot B was refused.
    pub b: ParamError,
}

impl core::fmt::Display for NoValidSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "no valid parameter pack in either slot: A: {}; B: {}", self.a, self.b)
    }
}

/// Parameters from the newer valid of two packs, one per flash slot ([`Slots::open`]). Reads go
/// to that slot's [`FlashArchive`] (constant time, as [`FlashArchive::open`]).
///
/// A pack's header records a sequence number (`cargo mlf pack --sequence N`); an update writes
/// the new pack, with a larger sequence, into the slot not in use, and the next `open` takes it —
/// or, when it fails its header, signature, digest or any check of [`FlashArchive::open`] (a write
/// cut short, a pack for another model or from another signer), keeps the other.
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a, const N: usize> {
    source: FlashArchive<'a, N>,
    active: Slot,
    newer_refused: Option<(Slot, ParamError)>,
}

impl<'a, const N: usize> Slots<'a, N> {
    /// Opens the newer valid pack of slots `a` and `b` for the model whose [`Pack`] is `pack`:
    /// the slot whose header records the larger sequence (A when they are equal) is opened with
    /// [`FlashArchive::open`]; when that fails, or its header cannot be read, the other is.
    // Both reasons are returned by value: the runtime allocates nothing (`no_std`, no `alloc`),
    // and a pack is opened once.
    #[allow(clippy::result_large_err)]
    pub fn open(a: &'a [u8], b: &'a [u8], pack: &'a Pack<N>) -> Result<Self, NoValidSlot> {
        let sequence = |s: &[u8]| match PackHeader::of(s) {
            Ok(Some(h)) => Ok(h.sequence),
            Ok(None) => Err(pack_error(mlf_pack::PackError::NoHeader)),
            Err(e) => Err(pack_error(e)),
        };
        let (sa, sb) = (sequence(a), sequence(b));
        let (first, second, second_header) = match (&sa, &sb) {
            (Ok(x), Ok(y)) if y > x => ((Slot::B, b), (Slot::A, a), sa),
            (Err(_), Ok(_)) => ((Slot::B, b), (Slot::A, a), sa),
            _ => ((Slot::A, a), (Slot::B, b), sb),
        };
        let refused = match FlashArchive::open(first.1, pack) {
            // The other slot is known to be unusable when its header cannot be read.
            Ok(source) => {
                let newer_refused = second_header.err().map(|e| (second.0, e));
                return Ok(Slots { source, active: first.0, newer_refused });
            }
            Err(e) => e,
        };
        match FlashArchive::open(second.1, pack) {
            Ok(source) => Ok(Slots { source, active: second.0, newer_refused: Some((first.0, refused)) }),
            Err(e) if first.0 == Slot::A => Err(NoValidSlot { a: refused, b: e }),
            Err(e) => Err(NoValidSlot { a: e, b: refused }),
        }
    }

    /// The slot in use.
    pub fn active(&self) -> Slot {
        self.active
    }

    /// The sequence of the pack in use.
    pub fn sequence(&self) -> u64 {
        self.source.header().map_or(0, |h| h.sequence)
    }

    /// The other slot when it is known to be unusable — it was tried first (the newer, by its
    /// header) and refused, or its header cannot be read — and why: the slot to write again.
    pub fn refused(&self) -> Option<(Slot, ParamError)> {
        self.newer_refused
    }

    /// The archive in use.
    pub fn archive(&self) -> &FlashArchive<'a, N> {
        &self.source
    }
}

impl<const N: usize> ParamSource for Slots<'_, N> {
    fn read(&mut self, p: &ParamRef, buf: &mut [u8]) -> Result<(), ParamError> {
        self.source.read(p, buf)
    }

    fn path_of(&self, p: &ParamRef) -> Message {
        self.source.path_of(p)
    }
}
