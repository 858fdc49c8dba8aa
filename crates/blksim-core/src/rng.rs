//! Random number streams.
//!
//! Generator: xoshiro256** (Blackman and Vigna), seeded through SplitMix64. Both are fixed,
//! published algorithms implemented here in a few lines, so results do not change when a
//! dependency is upgraded. Each source of randomness (a job's offsets, its read/write mix, a
//! device's noise...) gets its own stream derived from `(root seed, stream name)`, so adding a
//! new consumer never shifts the numbers another consumer sees.

/// SplitMix64 step: used to expand seeds.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a over bytes: a stable hash for stream names (not for security).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// xoshiro256** generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn from_seed(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, n)` without modulo bias (Lemire's multiply-shift with rejection).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            let lo = m as u64;
            if lo >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// Uniform in `[lo, hi]` inclusive.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi);
        if hi - lo == u64::MAX {
            return self.next_u64();
        }
        lo + self.below(hi - lo + 1)
    }

    /// Uniform f64 in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `pct`/100 (integer percent, as fio's rwmix uses).
    pub fn percent(&mut self, pct: u32) -> bool {
        self.below(100) < pct as u64
    }
}

/// Derives independent named streams from one root seed.
#[derive(Clone, Debug)]
pub struct RngStreams {
    root: u64,
}

impl RngStreams {
    pub fn new(root: u64) -> Self {
        RngStreams { root }
    }

    pub fn root(&self) -> u64 {
        self.root
    }

    /// The stream for `name` (e.g. `"job3.offset"`). Same (root, name) → same stream.
    pub fn stream(&self, name: &str) -> Rng {
        let mut st = self.root ^ fnv1a(name.as_bytes()).rotate_left(17);
        let seed = splitmix64(&mut st);
        Rng::from_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let s = RngStreams::new(42);
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = s.stream("a");
                move |_| r.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut r = s.stream("a");
                move |_| r.next_u64()
            })
            .collect();
        let mut b = s.stream("b");
        assert_eq!(a, a2);
        assert_ne!(a[0], b.next_u64());
        let mut c = RngStreams::new(43).stream("a");
        assert_ne!(a[0], c.next_u64());
    }

    #[test]
    fn below_is_uniform_enough() {
        let mut r = Rng::from_seed(1);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{c}");
        }
    }
}
