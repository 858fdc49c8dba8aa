//! Tags on an sbitmap, with the kernel's per-CPU allocation hints (`lib/sbitmap.c`).
//!
//! Which tag a request gets matters: the MMC host software queue indexes its slots by tag, and
//! its original next-tag scan starves high tags. So allocation follows `sbitmap_get` for a
//! non-round-robin map exactly:
//! * the map is split in words of `1 << shift` bits, `shift` from `sbitmap_calculate_shift`;
//! * `__sbitmap_get` starts at the word holding this CPU's hint and takes the lowest free bit
//!   of that word (`alloc_hint` is reset to 0 inside the word when not round-robin), then the
//!   following words, wrapping;
//! * `update_alloc_hint_after_get`: the hint moves to `nr + 1` (0 past `depth - 1`) only when
//!   the allocated bit equals the hint; a full map resets the hint to 0;
//! * `sbitmap_update_cpu_hint` on free: the hint of the request's software-queue CPU becomes
//!   the freed tag;
//! * initial hints are `prandom_u32() % depth` (`init_alloc_hint`), drawn here from a seeded
//!   stream.
//!
//! * freeing is deferred (`sbitmap_deferred_clear_bit`): the bit goes into `map->cleared`
//!   and stays taken in `map->word` until an allocation finds the word full and folds the
//!   cleared bits back (`sbitmap_deferred_clear` in `sbitmap_find_bit_in_index`). So a freed
//!   tag is not reused at once: allocations walk up through a word before wrapping.
//!
//! Not modelled: batch allocation (`__sbitmap_queue_get_batch`, used for plug-cached
//! requests).

use blksim_core::Rng;

#[derive(Clone, Debug)]
pub struct Sbitmap {
    depth: u32,
    shift: u32,
    /// One u64 per word; only the low `1 << shift` bits are used.
    words: Vec<u64>,
    /// `map->cleared`: freed bits not yet folded back into `words`.
    cleared: Vec<u64>,
    hints: Vec<u32>,
    busy: u32,
    /// Shallow depth limit per word (`sbitmap_get_shallow`), u32::MAX = none.
    pub max_busy: u32,
}

/// `sbitmap_calculate_shift`: shrink bits-per-word for small maps so they spread over a few
/// words (cachelines in the kernel).
pub fn sbitmap_calculate_shift(depth: u32) -> u32 {
    let mut shift = 6; // ilog2(BITS_PER_LONG) on 64-bit
    if depth >= 4 {
        while (4u32 << shift) > depth {
            shift -= 1;
        }
    }
    shift
}

impl Sbitmap {
    pub fn new(depth: u32, nr_cpus: usize, rng: &mut Rng) -> Self {
        assert!(depth > 0, "tag depth must be positive");
        let shift = sbitmap_calculate_shift(depth);
        let bpw = 1u32 << shift;
        let map_nr = depth.div_ceil(bpw) as usize;
        let hints = (0..nr_cpus.max(1))
            .map(|_| rng.below(depth as u64) as u32)
            .collect();
        Sbitmap {
            depth,
            shift,
            words: vec![0; map_nr],
            cleared: vec![0; map_nr],
            hints,
            busy: 0,
            max_busy: 0,
        }
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    pub fn busy(&self) -> u32 {
        self.busy
    }

    pub fn is_full(&self) -> bool {
        self.busy >= self.depth
    }

    fn word_depth(&self, index: usize) -> u32 {
        let bpw = 1u32 << self.shift;
        let start = (index as u32) * bpw;
        (self.depth - start).min(bpw)
    }

    /// The CPU's hint slot. A CPU past the hints wraps; the usual one skips the division,
    /// which costs more than the rest of an allocation's arithmetic.
    #[inline]
    fn hint_index(&self, cpu: usize) -> usize {
        let n = self.hints.len();
        if cpu < n {
            cpu
        } else {
            cpu % n
        }
    }

    /// `sbitmap_get` on behalf of `cpu`. Returns the tag or None when the map is full.
    pub fn get(&mut self, cpu: usize) -> Option<u32> {
        let cpu = self.hint_index(cpu);
        let mut hint = self.hints[cpu];
        if hint >= self.depth {
            hint = 0;
        }
        let map_nr = self.words.len();
        let mut index = (hint >> self.shift) as usize;
        let mut nr = None;
        for _ in 0..map_nr {
            let wd = self.word_depth(index);
            let mask = if wd == 64 { u64::MAX } else { (1u64 << wd) - 1 };
            // find_next_zero_bit(word, depth, 0); a full word first folds its deferred
            // clears back (`sbitmap_find_bit_in_index` → `sbitmap_deferred_clear`).
            let mut free = !self.words[index] & mask;
            if free == 0 && self.cleared[index] != 0 {
                self.words[index] &= !self.cleared[index];
                self.cleared[index] = 0;
                free = !self.words[index] & mask;
            }
            if free != 0 {
                let bit = free.trailing_zeros();
                self.words[index] |= 1u64 << bit;
                nr = Some(((index as u32) << self.shift) + bit);
                break;
            }
            index += 1;
            if index >= map_nr {
                index = 0;
            }
        }
        // update_alloc_hint_after_get
        match nr {
            None => self.hints[cpu] = 0,
            Some(n) if n == hint => {
                let mut h = n + 1;
                if h >= self.depth.saturating_sub(1) {
                    h = 0;
                }
                self.hints[cpu] = h;
            }
            Some(_) => {}
        }
        if nr.is_some() {
            self.busy += 1;
            self.max_busy = self.max_busy.max(self.busy);
        }
        nr
    }

    /// `sbitmap_queue_clear(sbq, tag, cpu)`: free `tag`; `cpu` is the request's software
    /// queue CPU, whose hint becomes `tag` (`sbitmap_update_cpu_hint`).
    pub fn put(&mut self, tag: u32, cpu: usize) {
        assert!(tag < self.depth, "tag {tag} out of range");
        let index = (tag >> self.shift) as usize;
        let bit = tag & ((1 << self.shift) - 1);
        assert!(
            self.words[index] & !self.cleared[index] & (1u64 << bit) != 0,
            "tag {tag} freed twice"
        );
        // `sbitmap_deferred_clear_bit`.
        self.cleared[index] |= 1u64 << bit;
        self.busy -= 1;
        let cpu = self.hint_index(cpu);
        self.hints[cpu] = tag;
    }

    pub fn is_set(&self, tag: u32) -> bool {
        let index = (tag >> self.shift) as usize;
        let bit = tag & ((1 << self.shift) - 1);
        self.words[index] & !self.cleared[index] & (1u64 << bit) != 0
    }

    /// Force a CPU's hint (tests that craft tag sequences).
    pub fn set_hint(&mut self, cpu: usize, hint: u32) {
        let n = self.hints.len();
        self.hints[cpu % n] = hint;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_follows_kernel() {
        assert_eq!(sbitmap_calculate_shift(64), 4);
        assert_eq!(sbitmap_calculate_shift(128), 5);
        assert_eq!(sbitmap_calculate_shift(256), 6);
        assert_eq!(sbitmap_calculate_shift(1024), 6);
        assert_eq!(sbitmap_calculate_shift(32), 3);
        assert_eq!(sbitmap_calculate_shift(2), 6);
    }

    #[test]
    fn allocation_follows_hint_word_then_wraps() {
        let mut rng = Rng::from_seed(1);
        let mut sb = Sbitmap::new(64, 1, &mut rng); // 4 words of 16
        sb.set_hint(0, 37); // word 2 (tags 32..47)
        assert_eq!(sb.get(0), Some(32)); // lowest free bit of word 2; hint unchanged (32 != 37)
        assert_eq!(sb.get(0), Some(33));
        for t in 34..48 {
            assert_eq!(sb.get(0), Some(t));
        }
        // word 2 full: next word 3, then wrap to word 0
        assert_eq!(sb.get(0), Some(48));
        sb.put(33, 0); // hint := 33
        assert_eq!(sb.get(0), Some(33)); // 33 == hint → hint := 34
        for _ in 0..15 {
            sb.get(0);
        }
        // words 2 and 3 full now (48..63 taken), so the search wraps to word 0
        assert_eq!(sb.get(0), Some(0));
    }

    #[test]
    fn full_map_returns_none_and_counts() {
        let mut rng = Rng::from_seed(2);
        let mut sb = Sbitmap::new(8, 2, &mut rng);
        let mut got: Vec<u32> = (0..8).map(|i| sb.get(i % 2).unwrap()).collect();
        got.sort();
        assert_eq!(got, (0..8).collect::<Vec<_>>());
        assert_eq!(sb.get(0), None);
        assert_eq!(sb.busy(), 8);
        sb.put(5, 1);
        assert_eq!(sb.get(1), Some(5));
    }

    #[test]
    fn freed_tags_are_reused_only_when_the_word_is_full() {
        let mut rng = Rng::from_seed(3);
        let mut sb = Sbitmap::new(64, 1, &mut rng); // 4 words of 16
        sb.set_hint(0, 5); // word 0
        assert_eq!(sb.get(0), Some(0));
        sb.put(0, 0); // deferred: bit 0 stays taken in the word
        assert!(!sb.is_set(0));
        // The allocation walks on through the word instead of reusing 0 ...
        let walk: Vec<u32> = (0..15).map(|_| sb.get(0).unwrap()).collect();
        assert_eq!(walk, (1..16).collect::<Vec<_>>());
        // ... and only a full word folds the cleared bit back.
        assert_eq!(sb.get(0), Some(0));
        assert_eq!(sb.busy(), 16);
    }
}
