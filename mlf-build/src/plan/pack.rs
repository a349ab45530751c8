//! Packs buffers with lifetimes into one arena: buffers live at the same time never share
//! bytes; buffers whose lifetimes do not overlap may.

/// A buffer to place: `size` bytes live over the closed interval `[first, last]` of steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Bytes.
    pub size: u64,
    /// First step at which it is live.
    pub first: usize,
    /// Last step at which it is live.
    pub last: usize,
}

impl Interval {
    fn overlaps(&self, other: &Interval) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// Rounds `n` up to a multiple of `align` (a power of two), saturating at `u64::MAX` (sizes
/// come from the model; a saturated figure is refused by the limit on static memory).
pub fn align_up(n: u64, align: u64) -> u64 {
    n.div_ceil(align.max(1)).saturating_mul(align.max(1))
}

/// Bytes an allocator aligning to `align` can lose over `allocations` live allocations when the
/// compiler summed their sizes rounded to 16 bytes only: `align − 16` each.
pub fn alignment_slack(align: u64, allocations: u64) -> u64 {
    align.saturating_sub(16).saturating_mul(allocations)
}

/// Offsets for `items` (aligned to `align`) and the arena size they need.
///
/// Greedy first fit in order of decreasing size (then earlier start): each buffer goes to the
/// lowest aligned offset that does not collide with an already placed buffer whose lifetime
/// overlaps its own. Zero-sized buffers get offset 0.
pub fn pack(items: &[Interval], align: u64) -> (Vec<u64>, u64) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[b].size.cmp(&items[a].size).then(items[a].first.cmp(&items[b].first)).then(a.cmp(&b)));
    let mut offsets = vec![0u64; items.len()];
    let mut placed: Vec<usize> = Vec::new();
    let mut total = 0u64;
    for i in order {
        let it = items[i];
        if it.size == 0 {
            continue;
        }
        let size = align_up(it.size, align);
        // Occupied ranges of overlapping, already placed buffers, sorted by offset.
        let mut busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|&&j| items[j].overlaps(&it))
            .map(|&j| (offsets[j], offsets[j].saturating_add(align_up(items[j].size, align))))
            .collect();
        busy.sort_unstable();
        let mut candidate = 0u64;
        for (start, end) in busy {
            if candidate.saturating_add(size) <= start {
                break;
            }
            candidate = candidate.max(align_up(end, align));
        }
        offsets[i] = candidate;
        total = total.max(candidate.saturating_add(size));
        placed.push(i);
    }
    (offsets, total)
}

/// Checks a placement: no two buffers live at the same time overlap, and all fit `total`.
pub fn verify(items: &[Interval], offsets: &[u64], total: u64) -> bool {
    for (i, a) in items.iter().enumerate() {
        if a.size == 0 {
            continue;
        }
        if offsets[i].saturating_add(a.size) > total {
            return false;
        }
        for (j, b) in items.iter().enumerate().skip(i + 1) {
            if b.size == 0 || !a.overlaps(b) {
                continue;
            }
            let (sa, ea) = (offsets[i], offsets[i].saturating_add(a.size));
            let (sb, eb) = (offsets[j], offsets[j].saturating_add(b.size));
            if sa < eb && sb < ea {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_from_input_never_wrap() {
        assert_eq!(align_up(u64::MAX, 16), u64::MAX);
        assert_eq!(align_up(17, 16), 32);
        assert_eq!(alignment_slack(u64::MAX, 3), u64::MAX);
        let items =
            [Interval { size: u64::MAX, first: 0, last: 1 }, Interval { size: u64::MAX - 3, first: 1, last: 2 }];
        let (_, total) = pack(&items, 64);
        assert_eq!(total, u64::MAX);
    }

    #[test]
    fn disjoint_lifetimes_share() {
        let items = [Interval { size: 100, first: 0, last: 1 }, Interval { size: 100, first: 2, last: 3 }];
        let (off, total) = pack(&items, 16);
        assert_eq!(total, 112);
        assert_eq!(off, vec![0, 0]);
        assert!(verify(&items, &off, total));
    }

    #[test]
    fn overlapping_lifetimes_do_not() {
        let items = [
            Interval { size: 64, first: 0, last: 2 },
            Interval { size: 32, first: 1, last: 1 },
            Interval { size: 64, first: 2, last: 4 },
        ];
        let (off, total) = pack(&items, 16);
        assert!(verify(&items, &off, total));
        // A at 0, C overlaps A so at 64, B overlaps only A so it shares C's bytes.
        assert_eq!(total, 128);
    }
}
