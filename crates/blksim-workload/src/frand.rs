//! fio's random numbers and how fio 3.33 seeds them, so a job draws the offsets, sizes and
//! directions the real fio draws for it.
//!
//! * The generators are fio's (`lib/rand.h`, `lib/rand.c`): L'Ecuyer's combined Tausworthe
//!   `taus88` (32-bit, the default `random_generator=tausworthe`) and `taus258`
//!   (`random_generator=tausworthe64`), seeded through fio's LCG and six cranks.
//! * The seeds are `setup_random_seeds` and `td_fill_rand_seeds` (`init.c`): one per stream
//!   (`FIO_RAND_*_OFF`), `randseed` multiplied through `0x9e370001` and by the job's
//!   `thread_number` (its 1-based place among all jobs and clones). With `randrepeat=1`
//!   (the default) the *offset* stream is then reset to `FIO_RANDSEED × thread_number`, so in
//!   fio 3.33 `randseed` changes block sizes, read/write mix and the rest but not which
//!   offsets a random job visits. `allrandrepeat=1` puts every stream on
//!   `FIO_RANDSEED × thread_number + i`. With `randrepeat=0` and no `randseed`, fio reads
//!   the system's entropy; blksim derives the seeds from its `--seed`.
//! * blksim's `--seed` at its default leaves fio's seeds as they are (the run draws what fio
//!   draws); any other `--seed` mixes into every seed (`salt`), so sweeping seeds samples other
//!   workloads, each repeatable. A job that sets `randseed=` pins its seeds whatever
//!   `--seed` is: only the device's and platform's randomness follow `--seed` then.

use blksim_core::rng::splitmix64;

/// `FIO_RANDSEED` (`init.c`).
pub const FIO_RANDSEED: u64 = 0xb189_9bed;

/// fio's stream offsets (`enum { FIO_RAND_BS_OFF = 0, ... }`, `fio.h`, fio 3.33).
pub mod off {
    pub const BS: usize = 0;
    pub const BS1: usize = 1;
    pub const BS2: usize = 2;
    pub const MIX: usize = 4;
    pub const BLOCK: usize = 6;
    pub const SEQ_RAND_READ: usize = 10;
    pub const ZONE: usize = 16;
    /// `FIO_RAND_PRIO_CMDS`: the libaio and io_uring engines' `cmdprio` draws.
    pub const PRIO_CMDS: usize = 19;
    /// `FIO_RAND_NR_OFFS`.
    pub const NR: usize = 21;
}

/// `struct frand_state`: a taus88 or taus258 state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FRand {
    use64: bool,
    s: [u64; 5],
}

/// `__seed`: the lower bounds the Tausworthe components need.
fn at_least(x: u64, m: u64) -> u64 {
    if x < m {
        x + m
    } else {
        x
    }
}

/// `(2^31) + (2^17) + (2^7)` as fio's C evaluates it (`^` is XOR there): 29 + 19 + 5.
const LCG_START: u64 = (2 ^ 31) + (2 ^ 17) + (2 ^ 7);

impl FRand {
    /// `init_rand_seed`: a 32-bit state takes the seed's low 32 bits.
    pub fn new(seed: u64, use64: bool) -> FRand {
        let mut f = FRand { use64, s: [0; 5] };
        if use64 {
            // `__init_rand64`.
            let lcg = |x: u64| x.wrapping_mul(6_906_969_069) ^ seed;
            let mins = [1, 7, 15, 33, 49];
            let mut prev = LCG_START;
            for (i, m) in mins.iter().enumerate() {
                f.s[i] = at_least(lcg(prev), *m);
                prev = f.s[i];
            }
        } else {
            // `__init_rand32`: unsigned int arithmetic.
            let seed = seed as u32;
            let lcg = |x: u32| x.wrapping_mul(69_069) ^ seed;
            let mut prev = LCG_START as u32;
            for (i, m) in [1u64, 7, 15].iter().enumerate() {
                // `__seed` takes and returns uint64_t; the state keeps 32 bits.
                f.s[i] = at_least(lcg(prev) as u64, *m) as u32 as u64;
                prev = f.s[i] as u32;
            }
        }
        for _ in 0..6 {
            f.rand();
        }
        f
    }

    /// `__rand`.
    pub fn rand(&mut self) -> u64 {
        if self.use64 {
            // `__rand64` (taus258).
            let s = &mut self.s;
            let x = ((s[0] << 1) ^ s[0]) >> 53;
            s[0] = ((s[0] & 18446744073709551614) << 10) ^ x;
            let x = ((s[1] << 24) ^ s[1]) >> 50;
            s[1] = ((s[1] & 18446744073709551104) << 5) ^ x;
            let x = ((s[2] << 3) ^ s[2]) >> 23;
            s[2] = ((s[2] & 18446744073709547520) << 29) ^ x;
            let x = ((s[3] << 5) ^ s[3]) >> 24;
            s[3] = ((s[3] & 18446744073709420544) << 23) ^ x;
            let x = ((s[4] << 3) ^ s[4]) >> 33;
            s[4] = ((s[4] & 18446744073701163008) << 8) ^ x;
            s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
        } else {
            // `__rand32` (taus88): `TAUSWORTHE(s,a,b,c,d) ((s&c)<<d) ^ (((s<<a) ^ s)>>b)`.
            let t = |s: u32, a: u32, b: u32, c: u32, d: u32| ((s & c) << d) ^ (((s << a) ^ s) >> b);
            let s1 = t(self.s[0] as u32, 13, 19, 4294967294, 12);
            let s2 = t(self.s[1] as u32, 2, 25, 4294967288, 4);
            let s3 = t(self.s[2] as u32, 3, 11, 4294967280, 17);
            self.s[0] = s1 as u64;
            self.s[1] = s2 as u64;
            self.s[2] = s3 as u64;
            (s1 ^ s2 ^ s3) as u64
        }
    }

    /// `rand_max`.
    pub fn rand_max(&self) -> u64 {
        if self.use64 {
            u64::MAX
        } else {
            u32::MAX as u64
        }
    }

    /// `r / (rand_max + 1.0)` for a fresh draw `r`: uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        let r = self.rand();
        // `rand_max + 1.0` is 2^64 or 2^32 (`u64::MAX as f64` rounds up to 2^64): multiplying by
        // its inverse, a power of two, gives the quotient exactly, without a division's latency
        // on fio's offset path (`perf annotate`: 13 % of `IoGen::next` on the null path).
        const INV64: f64 = 1.0 / 18446744073709551616.0;
        const INV32: f64 = 1.0 / 4294967296.0;
        debug_assert_eq!(
            self.rand_max() as f64 + 1.0,
            if self.use64 { 1.0 / INV64 } else { 1.0 / INV32 }
        );
        r as f64 * if self.use64 { INV64 } else { INV32 }
    }

    /// `rand_between(start, end)`, both inclusive (`rand32_upto`/`rand64_upto`), with C's
    /// unsigned wrap-around.
    pub fn rand_between(&mut self, start: u64, end: u64) -> u64 {
        let r = self.rand();
        let n = end.wrapping_sub(start).wrapping_add(1);
        if self.use64 {
            start.wrapping_add((n as f64 * (r as f64 / 18446744073709551616.0)) as u64)
        } else {
            // `(int) ((double)end * (r / FRAND32_MAX_PLUS_ONE))`, end a uint32_t: a value past
            // INT_MAX converts to INT_MIN on x86 (cvttsd2si), 0x80000000 as the uint32_t.
            let v = n as u32 as f64 * (r as f64 / 4294967296.0);
            let i = if v >= 2147483648.0 {
                0x8000_0000
            } else {
                v as u32
            };
            start.wrapping_add(i as u64)
        }
    }
}

/// One job's stream seeds, as fio 3.33 computes them (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadSeeds {
    pub seeds: [u64; off::NR],
    /// The seeds are fio's own: not drawn from its entropy (`randrepeat=0` without
    /// `randseed`) and not mixed with another `--seed`.
    pub fios_own: bool,
}

impl WorkloadSeeds {
    /// `setup_random_seeds` then `td_fill_rand_seeds`' adjustments for the job with
    /// `thread_number` (1-based). `salt` 0 gives fio's own seeds.
    pub fn new(
        randseed: u64,
        randseed_set: bool,
        randrepeat: bool,
        allrandrepeat: bool,
        thread_number: u64,
        salt: u64,
    ) -> WorkloadSeeds {
        let mut seeds = [0u64; off::NR];
        let entropy = !randrepeat && !randseed_set;
        if entropy {
            // fio: `init_random_seeds` from the system's entropy (then td_fill_rand_seeds,
            // whose allrandrepeat still applies).
            for (i, s) in seeds.iter_mut().enumerate() {
                let mut st = salt ^ 0x6e6f_7265_7065_6174 ^ (thread_number << 32) ^ i as u64;
                *s = splitmix64(&mut st);
            }
        } else {
            let mut seed = randseed;
            for _ in 0..4 {
                seed = seed.wrapping_mul(0x9e37_0001);
            }
            for (i, s) in seeds.iter_mut().enumerate() {
                *s = seed.wrapping_mul(thread_number).wrapping_add(i as u64);
                seed = seed.wrapping_mul(0x9e37_0001);
            }
        }
        if allrandrepeat {
            for (i, s) in seeds.iter_mut().enumerate() {
                *s = FIO_RANDSEED.wrapping_mul(thread_number) + i as u64;
            }
        }
        if randrepeat {
            seeds[off::BLOCK] = FIO_RANDSEED.wrapping_mul(thread_number);
        }
        // The salt: blksim's --seed on seeds fio would repeat (the entropy seeds already
        // come from it; allrandrepeat pins every stream).
        if salt != 0 && !randseed_set && !entropy && !allrandrepeat {
            for (i, s) in seeds.iter_mut().enumerate() {
                let mut st = salt.rotate_left(i as u32) ^ *s;
                *s = splitmix64(&mut st);
            }
        }
        let salted = salt != 0 && !randseed_set && !allrandrepeat;
        WorkloadSeeds {
            seeds,
            fios_own: !entropy && !salted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `unit` is fio's `r / (rand_max + 1.0)` to the bit, for both generators.
    #[test]
    fn unit_is_the_quotient_exactly() {
        for use64 in [false, true] {
            let mut a = FRand::new(0x1234_5678, use64);
            let mut b = a;
            for _ in 0..100_000 {
                let u = a.unit();
                let r = b.rand();
                let q = r as f64 / (b.rand_max() as f64 + 1.0);
                assert_eq!(u.to_bits(), q.to_bits(), "use64={use64} r={r}");
            }
            // The largest draws: the quotient rounds to 1.0 for 64 bits, as in fio.
            let top = b.rand_max();
            let q = top as f64 / (top as f64 + 1.0);
            let inv = if use64 {
                1.0 / 18446744073709551616.0
            } else {
                1.0 / 4294967296.0
            };
            assert_eq!((top as f64 * inv).to_bits(), q.to_bits());
        }
    }

    /// The numbers of fio 3.33's `lib/rand.c` for seed 1 (`init_rand`), computed by hand
    /// from the C: the first state after seeding and six cranks.
    #[test]
    fn taus88_seeding_follows_fios_lcg() {
        let f = FRand::new(1, false);
        // LCG(53, 1) = 53 * 69069 ^ 1 = 3660656; then s2 = LCG(s1), s3 = LCG(s2) (32 bits).
        let s1 = 53u32.wrapping_mul(69069) ^ 1;
        assert_eq!(s1, 3660656);
        let s2 = s1.wrapping_mul(69069) ^ 1;
        let s3 = s2.wrapping_mul(69069) ^ 1;
        let mut g = FRand {
            use64: false,
            s: [s1 as u64, s2 as u64, s3 as u64, 0, 0],
        };
        for _ in 0..6 {
            g.rand();
        }
        assert_eq!(f, g);
        // 32-bit draws stay 32-bit; rand_between stays in its bounds.
        let mut h = FRand::new(FIO_RANDSEED, false);
        for _ in 0..10_000 {
            assert!(h.rand() <= u32::MAX as u64);
            let v = h.rand_between(1, 100);
            assert!((1..=100).contains(&v));
        }
        let mut w = FRand::new(FIO_RANDSEED, true);
        for _ in 0..10_000 {
            let v = w.rand_between(1, 100);
            assert!((1..=100).contains(&v));
        }
    }

    /// randrepeat=1 pins the offset seed whatever randseed is; the other streams follow
    /// randseed; allrandrepeat pins them all; a salt changes every one.
    #[test]
    fn which_seeds_follow_which_option() {
        let a = WorkloadSeeds::new(0x89, false, true, false, 1, 0);
        let b = WorkloadSeeds::new(1234, true, true, false, 1, 0);
        assert_eq!(a.seeds[off::BLOCK], FIO_RANDSEED);
        assert_eq!(b.seeds[off::BLOCK], FIO_RANDSEED);
        assert_ne!(a.seeds[off::BS], b.seeds[off::BS]);
        let c = WorkloadSeeds::new(1234, true, false, false, 1, 0);
        assert_ne!(c.seeds[off::BLOCK], FIO_RANDSEED);
        let d = WorkloadSeeds::new(0x89, false, true, true, 2, 0);
        assert_eq!(d.seeds[off::MIX], 2 * FIO_RANDSEED + off::MIX as u64);
        let e = WorkloadSeeds::new(0x89, false, true, false, 1, 7);
        assert!(e.seeds.iter().zip(&a.seeds).all(|(x, y)| x != y));
        // An explicit randseed pins them: randseed=0x89 is fio's default seeding.
        assert_eq!(WorkloadSeeds::new(0x89, true, true, false, 1, 7), a);
    }
}
