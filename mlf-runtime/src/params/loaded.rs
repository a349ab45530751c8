//! Which parameter files a model with lazily loaded parameters has read into its region.

/// Which files of a model's `PARAMS` are in its parameter region (lazy placement): one bit per
/// file, in `W` 32-bit words. Kept in the model's take-once state, so it starts all zero (nothing
/// loaded, in `.bss`) and lives as long as the program: a file is read the first time a call that
/// uses it runs, and never again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded<const W: usize>([u32; W]);

impl<const W: usize> Loaded<W> {
    /// Nothing loaded.
    pub const fn new() -> Self {
        Loaded([0; W])
    }

    /// The words a set of `files` files needs (what a generated module writes as `W`).
    pub const fn words(files: usize) -> usize {
        files.div_ceil(32)
    }

    /// Whether file `file` is loaded (false for a file past the set's end).
    pub fn contains(&self, file: usize) -> bool {
        self.0.get(file / 32).is_some_and(|w| w & (1 << (file % 32)) != 0)
    }

    /// How many files are loaded.
    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Forgets every file: the next run reads each again as its calls need it (after the
    /// parameter source changed, say).
    pub fn clear(&mut self) {
        self.0 = [0; W];
    }

    /// The words, for the runtime's loaders (which are not generic over `W`).
    pub(crate) fn bits(&mut self) -> Bits<'_> {
        Bits(&mut self.0)
    }
}

impl<const W: usize> Default for Loaded<W> {
    fn default() -> Self {
        Self::new()
    }
}

/// The words of a [`Loaded`], borrowed.
pub(crate) struct Bits<'a>(pub(crate) &'a mut [u32]);

impl Bits<'_> {
    /// Whether file `file` is loaded.
    pub(crate) fn has(&self, file: usize) -> bool {
        self.0.get(file / 32).is_some_and(|w| w & (1 << (file % 32)) != 0)
    }

    /// Records file `file` as loaded.
    ///
    /// # Panics
    /// If `file` is past the set's end (the generator sizes it to the model's `PARAMS`).
    pub(crate) fn set(&mut self, file: usize) {
        self.0[file / 32] |= 1 << (file % 32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bit_per_file() {
        let mut l = Loaded::<2>::new();
        assert_eq!(Loaded::<2>::words(33), 2);
        assert_eq!(Loaded::<1>::words(32), 1);
        assert_eq!(Loaded::<0>::words(0), 0);
        assert!(!l.contains(0) && !l.contains(40));
        l.bits().set(0);
        l.bits().set(33);
        assert!(l.contains(0) && l.contains(33) && !l.contains(1) && !l.contains(64));
        assert!(l.bits().has(33) && !l.bits().has(32));
        assert_eq!(l.count(), 2);
        l.clear();
        assert_eq!((l.count(), l), (0, Loaded::new()));
    }
}
