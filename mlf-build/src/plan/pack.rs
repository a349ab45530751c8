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
///
/// The placed buffers are kept in an interval tree keyed by lifetime, so each buffer looks only
/// at the `k` placed buffers live at the same time as itself: O(n log n + Σ k log k) instead of
/// comparing every pair (the pairwise version is the tests' oracle).
pub fn pack(items: &[Interval], align: u64) -> (Vec<u64>, u64) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[b].size.cmp(&items[a].size).then(items[a].first.cmp(&items[b].first)).then(a.cmp(&b)));
    let mut offsets = vec![0u64; items.len()];
    // Placed buffers by lifetime (`first..last + 1`): their (start, end) bytes.
    let mut placed: iset::IntervalMap<usize, (u64, u64), u32> = iset::IntervalMap::new();
    let mut busy: Vec<(u64, u64)> = Vec::new();
    let mut total = 0u64;
    for i in order {
        let it = items[i];
        if it.size == 0 {
            continue;
        }
        let size = align_up(it.size, align);
        // Occupied ranges of overlapping, already placed buffers, sorted by offset.
        busy.clear();
        busy.extend(placed.values(lifetime(&it)).copied());
        busy.sort_unstable();
        let mut candidate = 0u64;
        for &(start, end) in &busy {
            if candidate.saturating_add(size) <= start {
                break;
            }
            candidate = candidate.max(align_up(end, align));
        }
        offsets[i] = candidate;
        total = total.max(candidate.saturating_add(size));
        placed.force_insert(lifetime(&it), (candidate, candidate.saturating_add(size)));
    }
    (offsets, total)
}

/// The liveness bound of `items` (aligned to `align`): the most bytes live at one step. No
/// placement of these buffers needs less. A sweep over the steps, O(n log n).
pub fn live_bound(items: &[Interval], align: u64) -> u64 {
    // Events: (step, 0 = leave | 1 = enter, bytes); leaving at `last + 1` comes first.
    let mut events: Vec<(usize, u8, u64)> = Vec::with_capacity(items.len() * 2);
    for it in items.iter().filter(|it| it.size > 0) {
        let size = align_up(it.size, align);
        events.push((it.first, 1, size));
        events.push((it.last.max(it.first).saturating_add(1), 0, size));
    }
    events.sort_unstable();
    let (mut live, mut most) = (0u64, 0u64);
    for (_, kind, size) in events {
        if kind == 0 {
            live = live.saturating_sub(size);
        } else {
            live = live.saturating_add(size);
            most = most.max(live);
        }
    }
    most
}

/// The half-open range of steps `it` is live in.
fn lifetime(it: &Interval) -> std::ops::Range<usize> {
    let last = it.last.max(it.first).min(usize::MAX - 1);
    it.first.min(last)..last + 1
}

/// Checks a placement: no two buffers live at the same time overlap, and all fit `total`.
///
/// A sweep over the steps: buffers enter the set of live buffers (ordered by offset) at their
/// first step and leave after their last; a buffer entering collides with a live one exactly
/// when it collides with its neighbour below or above in that order (the live buffers never
/// overlap each other). O(n log n).
pub fn verify(items: &[Interval], offsets: &[u64], total: u64) -> bool {
    if offsets.len() != items.len() {
        return false;
    }
    // Events: (step, 0 = leave | 1 = enter, item); leaving at `last + 1` comes before entering.
    let mut events: Vec<(usize, u8, usize)> = Vec::with_capacity(items.len() * 2);
    for (i, a) in items.iter().enumerate() {
        if a.size == 0 {
            continue;
        }
        if offsets[i].saturating_add(a.size) > total {
            return false;
        }
        events.push((a.first, 1, i));
        events.push((a.last.saturating_add(1), 0, i));
    }
    events.sort_unstable();
    // Live buffers by (offset, item) → end offset.
    let mut live: std::collections::BTreeMap<(u64, usize), u64> = std::collections::BTreeMap::new();
    for (_, kind, i) in events {
        let (start, end) = (offsets[i], offsets[i].saturating_add(items[i].size));
        if kind == 0 {
            live.remove(&(start, i));
            continue;
        }
        if live.range(..(start, i)).next_back().is_some_and(|(_, &below_end)| below_end > start) {
            return false;
        }
        if live.range((start, i)..).next().is_some_and(|(&(above_start, _), _)| above_start < end) {
            return false;
        }
        live.insert((start, i), end);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pairwise (O(n²)) packer and check the planner used before: the oracle.
    mod oracle {
        use super::super::{Interval, align_up};

        fn overlaps(a: &Interval, b: &Interval) -> bool {
            a.first <= b.last && b.first <= a.last
        }

        pub fn pack(items: &[Interval], align: u64) -> (Vec<u64>, u64) {
            let mut order: Vec<usize> = (0..items.len()).collect();
            order.sort_by(|&a, &b| {
                items[b].size.cmp(&items[a].size).then(items[a].first.cmp(&items[b].first)).then(a.cmp(&b))
            });
            let mut offsets = vec![0u64; items.len()];
            let mut placed: Vec<usize> = Vec::new();
            let mut total = 0u64;
            for i in order {
                let it = items[i];
                if it.size == 0 {
                    continue;
                }
                let size = align_up(it.size, align);
                let mut busy: Vec<(u64, u64)> = placed
                    .iter()
                    .filter(|&&j| overlaps(&items[j], &it))
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

        pub fn verify(items: &[Interval], offsets: &[u64], total: u64) -> bool {
            for (i, a) in items.iter().enumerate() {
                if a.size == 0 {
                    continue;
                }
                if offsets[i].saturating_add(a.size) > total {
                    return false;
                }
                for (j, b) in items.iter().enumerate().skip(i + 1) {
                    if b.size == 0 || !overlaps(a, b) {
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
    }

    /// A deterministic pseudo-random sequence (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
        }
    }

    fn random_items(rng: &mut Rng, n: usize, steps: u64) -> Vec<Interval> {
        (0..n)
            .map(|_| {
                let first = rng.below(steps) as usize;
                let len = if rng.below(8) == 0 { rng.below(steps) } else { rng.below(4) } as usize;
                let size = if rng.below(10) == 0 { 0 } else { 1 + rng.below(4) * rng.below(300) };
                Interval { size, first, last: first + len }
            })
            .collect()
    }

    #[test]
    fn same_plans_as_the_pairwise_oracle() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..400 {
            let n = 1 + rng.below(60) as usize;
            let steps = 1 + rng.below(40);
            let items = random_items(&mut rng, n, steps);
            let align = [1, 4, 16, 64][round % 4];
            let (offsets, total) = pack(&items, align);
            assert_eq!((offsets.clone(), total), oracle::pack(&items, align), "round {round}: {items:?}");
            assert!(verify(&items, &offsets, total));
        }
    }

    #[test]
    fn verify_agrees_with_the_pairwise_oracle() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut refused = 0;
        for round in 0..2000 {
            let n = 1 + rng.below(12) as usize;
            let steps = 1 + rng.below(10);
            let items = random_items(&mut rng, n, steps);
            // Random placements: most collide somewhere, some do not.
            let offsets: Vec<u64> = (0..n).map(|_| rng.below(4) * 128 + rng.below(3) * rng.below(200)).collect();
            let total = offsets.iter().zip(&items).map(|(o, i)| o + i.size).max().unwrap_or(0) - rng.below(2);
            let want = oracle::verify(&items, &offsets, total);
            assert_eq!(verify(&items, &offsets, total), want, "round {round}: {items:?} at {offsets:?} in {total}");
            refused += usize::from(!want);
        }
        assert!(refused > 200 && refused < 1800, "the rounds test both answers ({refused} refused)");
    }

    #[test]
    fn live_bound_is_the_most_bytes_live_at_one_step() {
        let mut rng = Rng(0x1234_5678_9ABC_DEF1);
        for round in 0..300 {
            let (n, steps) = (1 + rng.below(40) as usize, 1 + rng.below(30));
            let items = random_items(&mut rng, n, steps);
            let align = [1, 16][round % 2];
            let steps = items.iter().map(|i| i.last.max(i.first)).max().unwrap_or(0);
            let want = (0..=steps)
                .map(|s| items.iter().filter(|i| i.first <= s && s <= i.last).map(|i| align_up(i.size, align)).sum())
                .max()
                .unwrap_or(0);
            assert_eq!(live_bound(&items, align), want, "round {round}: {items:?}");
            assert!(pack(&items, align).1 >= want);
        }
    }

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
