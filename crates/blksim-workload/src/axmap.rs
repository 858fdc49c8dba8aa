//! fio's random map (`lib/axmap.c`): a bitmap of bitmaps.
//!
//! Level 0 has one bit per block. A set bit at level N+1 means the whole 64-bit word below it
//! at level N is full, so "find the next free block" skips full regions 64× faster per level,
//! as fio's axmap does. Memory is ~1.016 bits per block; nothing is stored per I/O.
//!
//! Bits past `nr_bits` in the last word of each level are kept set ("used") so that a word
//! is full exactly when all its valid bits are used; this keeps the upper levels exact without
//! special-casing the tail.

#[derive(Clone, Debug)]
pub struct Axmap {
    nr_bits: u64,
    /// `levels[0]` is the block bitmap; `levels[i+1]` has one bit per word of `levels[i]`.
    levels: Vec<Vec<u64>>,
    /// fio's bits at and past `nr_bits` that a run can reach (see [`Axmap::set_run`]): the
    /// rest of the last word, which `axmap_reset` clears, or, when `nr_bits` fills its last
    /// word, the word of memory after the map, which nothing clears. Bit i is `nr_bits + i`.
    beyond: u64,
}

impl Axmap {
    pub fn new(nr_bits: u64) -> Self {
        let mut levels = Vec::new();
        let mut bits = nr_bits.max(1);
        loop {
            let words = bits.div_ceil(64);
            levels.push(vec![0u64; words as usize]);
            if words <= 1 {
                break;
            }
            bits = words;
        }
        let mut m = Axmap {
            nr_bits,
            levels,
            beyond: 0,
        };
        m.reset();
        m
    }

    pub fn nr_bits(&self) -> u64 {
        self.nr_bits
    }

    /// `axmap_reset`: every block free again (start of a new pass).
    pub fn reset(&mut self) {
        for l in &mut self.levels {
            l.iter_mut().for_each(|w| *w = 0);
        }
        // The last word's tail is map memory; the word after a full last word is not.
        if !self.nr_bits.is_multiple_of(64) {
            self.beyond = 0;
        }
        // Mark the tail bits of each level as used (see module doc).
        let mut bits = self.nr_bits;
        for li in 0..self.levels.len() {
            let words = self.levels[li].len() as u64;
            for b in bits..words * 64 {
                self.levels[li][(b / 64) as usize] |= 1u64 << (b % 64);
            }
            // A level-li word that is now entirely tail must be reported full above.
            if li + 1 < self.levels.len() {
                for w in 0..words {
                    if self.levels[li][w as usize] == u64::MAX {
                        self.levels[li + 1][(w / 64) as usize] |= 1u64 << (w % 64);
                    }
                }
            }
            bits = words;
        }
    }

    /// Ask for the cache line of `bit`'s word (see [`blksim_core::prefetch`]).
    #[inline]
    pub fn prefetch(&self, bit: u64) {
        if let Some(w) = self.levels[0].get((bit / 64) as usize) {
            blksim_core::prefetch::prefetch(w);
        }
    }

    /// `axmap_isset`.
    pub fn is_set(&self, bit: u64) -> bool {
        if bit >= self.nr_bits {
            return true;
        }
        self.levels[0][(bit / 64) as usize] & (1u64 << (bit % 64)) != 0
    }

    fn set_bit(&mut self, bit: u64) {
        let mut idx = bit;
        for li in 0..self.levels.len() {
            let w = (idx / 64) as usize;
            self.levels[li][w] |= 1u64 << (idx % 64);
            if self.levels[li][w] != u64::MAX {
                break;
            }
            idx = w as u64; // word became full: mark it in the level above
        }
    }

    /// `axmap_set_nr`: set up to `nr` contiguous bits from `bit`, stopping at the first bit
    /// that is already set (fio "only sets contig regions"). Returns how many were set.
    pub fn set_run(&mut self, bit: u64, nr: u64) -> u64 {
        // `axmap_set_nr`: one 64-block unit at a time, each from `bit` up to the first block
        // already set (`axmap_set_fn`). `__axmap_set` refuses only a unit that starts past
        // the map's end (`bit_nr > nr_bits`), and does not clip the unit to the map: a run
        // that starts inside, or exactly at the end, goes on setting bits past it, in the
        // last word's tail or, when the map fills its last word, in the memory after it.
        // With strided zones an I/O crosses its zone's map end often, so fio's I/O sizes
        // there depend on those bits.
        let (mut bit, mut nr) = (bit, nr);
        let mut set = 0;
        while nr > 0 {
            if bit > self.nr_bits {
                break;
            }
            let this = nr.min(64 - (bit & 63));
            let mut k = 0;
            while k < this {
                let b = bit + k;
                if b < self.nr_bits {
                    if self.is_set(b) {
                        break;
                    }
                    self.set_bit(b);
                } else {
                    let m = 1u64 << (b - self.nr_bits);
                    if self.beyond & m != 0 {
                        break;
                    }
                    self.beyond |= m;
                }
                k += 1;
            }
            set += k;
            if k != this {
                break;
            }
            nr -= k;
            bit += k;
        }
        set
    }

    /// First free bit with index >= `idx` (None if there is none up to the end).
    fn find_from(&self, idx: u64) -> Option<u64> {
        let top = self.levels.len() - 1;
        let mut li = 0usize;
        let mut i = idx;
        // Climb while the rest of the current word is full.
        loop {
            let words = self.levels[li].len() as u64;
            let w = i / 64;
            if w >= words {
                return None;
            }
            let masked = !self.levels[li][w as usize] & (u64::MAX << (i % 64));
            if masked != 0 {
                let mut pos = w * 64 + masked.trailing_zeros() as u64;
                // Descend: a clear bit at level li means that word of level li-1 is not full.
                while li > 0 {
                    li -= 1;
                    let word = self.levels[li][pos as usize];
                    pos = pos * 64 + (!word).trailing_zeros() as u64;
                }
                return if pos < self.nr_bits { Some(pos) } else { None };
            }
            if li == top {
                return None;
            }
            li += 1;
            i = w + 1;
        }
    }

    /// `axmap_next_free`: `bit` is taken; the next free bit after it, wrapping to the first
    /// free bit of the map; None when the map is full.
    pub fn next_free(&self, bit: u64) -> Option<u64> {
        self.find_from(bit.saturating_add(1))
            .or_else(|| self.find_from(0))
    }

    /// True when every block has been used.
    pub fn is_full(&self) -> bool {
        self.find_from(0).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_free_skips_and_wraps() {
        for n in [1u64, 63, 64, 65, 4095, 4096, 4097, 300_000] {
            let mut m = Axmap::new(n);
            let mut count = 0;
            let mut b = 0;
            while let Some(nb) = if m.is_set(b) { m.next_free(b) } else { Some(b) } {
                assert!(!m.is_set(nb));
                assert_eq!(m.set_run(nb, 1), 1);
                count += 1;
                b = (nb * 7 + 13) % n;
            }
            assert_eq!(count, n, "n={n}");
            assert!(m.is_full());
            m.reset();
            assert_eq!(m.next_free(0), if n > 1 { Some(1) } else { Some(0) });
        }
    }

    #[test]
    fn set_run_stops_at_used_block() {
        let mut m = Axmap::new(1000);
        assert_eq!(m.set_run(10, 1), 1);
        assert_eq!(m.set_run(5, 10), 5);
        // Past the end the run goes on into the last word's tail (fio's `__axmap_set`
        // clips nothing); a run that starts past the end sets nothing.
        assert_eq!(m.set_run(995, 10), 10);
        assert_eq!(m.set_run(1003, 3), 0);
        assert_eq!(m.next_free(5), Some(11));
        assert_eq!(m.next_free(999), Some(0));
        // A map that fills its last word: a run reaching its end goes on into the word
        // after it, which no reset clears; a run starting past the end sets nothing.
        let mut m = Axmap::new(128);
        assert_eq!(m.set_run(120, 16), 16);
        m.reset();
        assert_eq!(m.set_run(124, 8), 4);
        assert_eq!(m.set_run(129, 1), 0);
    }
}
