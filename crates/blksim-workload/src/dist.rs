//! Non-uniform offset distributions, ported from fio's `lib/zipf.c` (zipf, pareto) and
//! `lib/gauss.c` (normal). Each returns a *range index* in `[0, nranges)`; the caller
//! multiplies by the block alignment, as fio's `get_next_block` does.
//!
//! fio draws with its 32-bit Tausworthe generator (`__rand`, scaled by `FRAND32_MAX`); we
//! take the top 32 bits of our stream so the quantisation of the uniform variate is the same.
//! `pow`/`log`/`ceil` come from `libm` so results are bit-identical on every platform.

use blksim_core::Rng;

/// `GOLDEN_RATIO_64` from fio's `hash.h`.
pub const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio's `FRAND32_MAX`.
const FRAND32_MAX: f64 = u32::MAX as f64;
/// fio's `ZIPF_MAX_GEN`: zeta(n) is summed over at most this many terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// `__hash_u64`: multiplicative hash that scatters ranks over the region, so that the hot
/// ranks are not all at the start of the device.
#[inline]
pub fn hash_u64(v: u64) -> u64 {
    v.wrapping_mul(GOLDEN_RATIO_64)
}

/// One 32-bit draw, like fio's `__rand()` on a 32-bit Tausworthe state.
#[inline]
pub fn rand32(rng: &mut Rng) -> u32 {
    (rng.next_u64() >> 32) as u32
}

/// `shared_rand_init`: the offset added to every (hashed) rank. A negative `center` means
/// "not given" (fio's -1), in which case it is random.
fn rand_off(nranges: u64, center: f64, rng: &mut Rng) -> u64 {
    let r = rand32(rng) as u64;
    if center < 0.0 {
        r
    } else {
        (nranges as f64 * center) as u64
    }
}

/// `struct zipf_state` for both zipf and pareto.
#[derive(Clone, Debug)]
pub struct Zipf {
    nranges: u64,
    theta: f64,
    zeta2: f64,
    zetan: f64,
    pareto_pow: f64,
    rand_off: u64,
    /// fio disables the hash only for `file_service_type`; offsets are always hashed. Tests
    /// turn it off to check the rank distribution itself.
    pub disable_hash: bool,
}

impl Zipf {
    /// `zipf_init`.
    #[allow(clippy::self_named_constructors)]
    pub fn zipf(nranges: u64, theta: f64, center: f64, rng: &mut Rng) -> Self {
        let nranges = nranges.max(1);
        let rand_off = rand_off(nranges, center, rng);
        let zeta2 = libm::pow(1.0, theta) + libm::pow(0.5, theta);
        // zipf_update: capped at ZIPF_MAX_GEN terms for speed, like fio.
        let to_gen = nranges.min(ZIPF_MAX_GEN);
        let mut zetan = 0.0;
        for i in 0..to_gen {
            zetan += libm::pow(1.0 / (i + 1) as f64, theta);
        }
        Zipf {
            nranges,
            theta,
            zeta2,
            zetan,
            pareto_pow: 0.0,
            rand_off,
            disable_hash: false,
        }
    }

    /// `pareto_init`.
    pub fn pareto(nranges: u64, h: f64, center: f64, rng: &mut Rng) -> Self {
        let nranges = nranges.max(1);
        let rand_off = rand_off(nranges, center, rng);
        let pareto_pow = libm::log(h) / libm::log(1.0 - h);
        Zipf {
            nranges,
            theta: 0.0,
            zeta2: 0.0,
            zetan: 0.0,
            pareto_pow,
            rand_off,
            disable_hash: false,
        }
    }

    pub fn nranges(&self) -> u64 {
        self.nranges
    }

    fn finish(&self, rank: u64) -> u64 {
        let v = if self.disable_hash {
            rank
        } else {
            hash_u64(rank)
        };
        v.wrapping_add(self.rand_off) % self.nranges
    }

    /// The zipf rank (0-based) before hashing: Gray et al.'s quick approximation, as
    /// `zipf_next` does it.
    pub fn zipf_rank(&self, rng: &mut Rng) -> u64 {
        let n = self.nranges;
        let alpha = 1.0 / (1.0 - self.theta);
        let eta =
            (1.0 - libm::pow(2.0 / n as f64, 1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan);
        let rand_uni = rand32(rng) as f64 / FRAND32_MAX;
        let rand_z = rand_uni * self.zetan;
        let val = if rand_z < 1.0 {
            1
        } else if rand_z < 1.0 + libm::pow(0.5, self.theta) {
            2
        } else {
            1 + (n as f64 * libm::pow(eta * rand_uni - eta + 1.0, alpha)) as u64
        };
        val - 1
    }

    /// `zipf_next`.
    pub fn zipf_next(&self, rng: &mut Rng) -> u64 {
        let r = self.zipf_rank(rng);
        self.finish(r)
    }

    /// The pareto rank before hashing (`pareto_next`): `(n-1) * u^(ln h / ln(1-h))`, so a
    /// fraction `h` of the ranks receives a fraction `1-h` of the accesses.
    pub fn pareto_rank(&self, rng: &mut Rng) -> u64 {
        let r = rand32(rng) as f64 / FRAND32_MAX;
        ((self.nranges - 1) as f64 * libm::pow(r, self.pareto_pow)) as u64
    }

    /// `pareto_next`.
    pub fn pareto_next(&self, rng: &mut Rng) -> u64 {
        let r = self.pareto_rank(rng);
        self.finish(r)
    }
}

/// `struct gauss_state`.
#[derive(Clone, Debug)]
pub struct Gauss {
    nranges: u64,
    stddev: u64,
    rand_off: u64,
    pub disable_hash: bool,
}

/// `GAUSS_ITERS`: the sum of 12 uniforms approximates a normal (Irwin–Hall).
const GAUSS_ITERS: u64 = 12;

impl Gauss {
    /// `gauss_init`: `dev` is the deviation in percent of the range.
    pub fn new(nranges: u64, dev: f64, center: f64) -> Self {
        let nranges = nranges.max(1);
        let mut stddev = 0;
        if dev != 0.0 {
            stddev = libm::ceil(nranges as f64 * dev / 100.0) as u64;
            if stddev > nranges / 2 {
                stddev = nranges / 2;
            }
        }
        // fio: rand_off = nranges * (center - 0.5), stored unsigned; we keep it modulo the
        // range so a center below 0.5 shifts left instead of relying on C's conversion.
        let rand_off = if center < 0.0 {
            0
        } else {
            let off = (nranges as f64 * (center - 0.5)) as i64;
            off.rem_euclid(nranges as i64) as u64
        };
        Gauss {
            nranges,
            stddev,
            rand_off,
            disable_hash: false,
        }
    }

    /// `gauss_dev`: uniform in `[-stddev/2, stddev/2)`.
    fn dev(&self, rng: &mut Rng) -> i64 {
        if self.stddev == 0 {
            return 0;
        }
        let r = rand32(rng) as f64;
        let vr = (self.stddev as f64 * (r / (FRAND32_MAX + 1.0))) as i64;
        vr - (self.stddev / 2) as i64
    }

    /// `gauss_next`.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        let mut sum: u64 = 0;
        for _ in 0..GAUSS_ITERS {
            sum += rng.next_u64() % (self.nranges + 1);
        }
        sum = sum.div_ceil(GAUSS_ITERS);
        if self.stddev != 0 {
            let mut dev = self.dev(rng);
            // fio halves the deviation until it lands inside the range (its unsigned
            // arithmetic also rejects a result below zero).
            while sum as i64 + dev < 0 || (sum as i64 + dev) as u64 >= self.nranges {
                dev /= 2;
                if dev == 0 {
                    break;
                }
            }
            sum = (sum as i64 + dev) as u64;
        }
        let v = if self.disable_hash {
            sum
        } else {
            hash_u64(sum)
        };
        v.wrapping_add(self.rand_off) % self.nranges
    }
}
