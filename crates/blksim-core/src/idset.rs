//! A set of small ids as a bitmap, whose lowest member is found by scanning words: for the
//! free slots of a table that hands out its lowest free slot, so that ids (which events
//! carry and the event digest covers) do not depend on how slots were freed.

#[derive(Clone, Debug, Default)]
pub struct IdSet {
    words: Vec<u64>,
}

impl IdSet {
    /// Add `id`; returns whether it was new.
    #[inline]
    pub fn insert(&mut self, id: u32) -> bool {
        let (w, b) = (id as usize / 64, id % 64);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        let new = self.words[w] & (1 << b) == 0;
        self.words[w] |= 1 << b;
        new
    }

    /// Remove `id`; returns whether it was there.
    #[inline]
    pub fn remove(&mut self, id: u32) -> bool {
        let (w, b) = (id as usize / 64, id % 64);
        match self.words.get_mut(w) {
            Some(word) if *word & (1 << b) != 0 => {
                *word &= !(1 << b);
                true
            }
            _ => false,
        }
    }

    /// The lowest member.
    #[inline]
    pub fn first(&self) -> Option<u32> {
        self.words
            .iter()
            .position(|&w| w != 0)
            .map(|i| (i * 64) as u32 + self.words[i].trailing_zeros())
    }

    /// Members, counted (not kept: nothing on the hot path asks).
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Random inserts and removals (present and absent, across word boundaries) answer as a
    /// `BTreeSet` does, and the lowest member is the same after each.
    #[test]
    fn agrees_with_a_btreeset() {
        let mut rng = crate::Rng::from_seed(0x1d5e7);
        let mut a = IdSet::default();
        let mut b = BTreeSet::new();
        for _ in 0..50_000 {
            let id = rng.below(200) as u32;
            if rng.below(2) == 0 {
                assert_eq!(a.insert(id), b.insert(id));
            } else {
                assert_eq!(a.remove(id), b.remove(&id));
            }
            assert_eq!(a.first(), b.first().copied());
            assert_eq!((a.len(), a.is_empty()), (b.len(), b.is_empty()));
        }
    }
}
