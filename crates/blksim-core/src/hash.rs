//! A fixed, fast hasher for maps keyed by small integers. `std`'s default hasher is seeded at
//! random per process; nothing in a run may depend on that, and the maps here are never
//! iterated for results, but a fixed hasher keeps even their memory layout the same run to
//! run. The mixing step is FxHash's (rustc's `rustc-hash`): a rotate, a xor and a multiply.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Clone, Copy, Default)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with [`FxHasher`]. Iterate it only where the order cannot reach a result.
pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn the_hash_is_fixed_and_spreads_neighbouring_keys() {
        let b = BuildHasherDefault::<FxHasher>::default();
        let h = |k: (u64, u64)| b.hash_one(k);
        assert_eq!(h((8, 16)), h((8, 16)));
        let mut low: Vec<u64> = (0..1024u64).map(|i| h((i * 8, i * 8 + 8)) >> 54).collect();
        low.sort_unstable();
        low.dedup();
        // 1024 neighbouring extents over the top 10 bits' 1024 buckets: most buckets used.
        assert!(low.len() > 500, "{}", low.len());
    }
}
