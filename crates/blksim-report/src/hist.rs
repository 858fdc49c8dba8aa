//! fio's log-linear latency histogram (`io_u_plat`), bucket for bucket.
//!
//! fio never keeps latency samples: every completion bumps one of
//! `FIO_IO_U_PLAT_NR` = 1856 counters (`stat.c: add_lat_percentile_sample`), and the
//! percentiles in every report are read back from those counters by
//! `calc_clat_percentiles`. Reproducing the bucket scheme and that walk exactly is what
//! makes our percentile values (bucket midpoints such as 28800 or 11200) equal fio's.
//!
//! Memory is one fixed array of 1856 `u64`s (14.5 KiB) per histogram, whatever the sample
//! count; `add` never allocates.

/// `FIO_IO_U_PLAT_BITS`: 64 buckets per power-of-two group (relative error ≤ 1/128).
pub const PLAT_BITS: u32 = 6;
/// `FIO_IO_U_PLAT_VAL`.
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// `FIO_IO_U_PLAT_GROUP_NR`.
pub const PLAT_GROUP_NR: usize = 29;
/// `FIO_IO_U_PLAT_NR` = 29 * 64 = 1856 buckets.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;
/// `FIO_IO_U_LIST_MAX_LEN`: fio accepts at most 20 percentiles.
pub const LIST_MAX_LEN: usize = 20;

/// fio's default `percentile_list` (`options.c`, `def_percentile_list`).
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// `stat.c: plat_val_to_idx`. Values whose MSB is at most bit 6 index themselves; above
/// that, `error_bits = msb - 6` low bits are dropped and the next 6 bits pick one of 64
/// buckets in group `error_bits + 1`. Clamped to the last bucket.
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = ((PLAT_VAL - 1) & (val >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// `stat.c: plat_idx_to_val`: the value a bucket stands for, its midpoint
/// `base + (k + 0.5) * 2^error_bits`. The C code computes the midpoint in double and
/// truncates back to an integer; for error_bits ≥ 1 it is exact, for error_bits = 0 it
/// never happens (those indexes return early), so integer arithmetic is identical.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    assert!(idx < PLAT_NR, "plat index {idx} out of range");
    if idx < (PLAT_VAL << 1) as usize {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = idx as u64 % PLAT_VAL;
    // (k + 0.5) * 2^e == k * 2^e + 2^(e-1), e >= 1 here.
    base + (k << error_bits) + (1u64 << (error_bits - 1))
}

/// One latency histogram (fio's `uint64_t io_u_plat[FIO_IO_U_PLAT_NR]`).
#[derive(Clone, PartialEq, Eq)]
pub struct LatHist {
    buckets: Box<[u64; PLAT_NR]>,
    total: u64,
}

impl std::fmt::Debug for LatHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatHist")
            .field("total", &self.total)
            .field("nonempty_buckets", &self.bins().count())
            .finish()
    }
}

impl Default for LatHist {
    fn default() -> Self {
        Self::new()
    }
}

impl LatHist {
    pub fn new() -> Self {
        LatHist {
            buckets: Box::new([0; PLAT_NR]),
            total: 0,
        }
    }

    /// Count one sample of `ns` nanoseconds (`add_lat_percentile_sample`).
    #[inline]
    pub fn add(&mut self, ns: u64) {
        self.buckets[plat_val_to_idx(ns)] += 1;
        self.total += 1;
    }

    /// Add `count` to bucket `idx` directly (used to rebuild a histogram from json+ bins).
    pub fn add_to_bucket(&mut self, idx: usize, count: u64) {
        self.buckets[idx] += count;
        self.total += count;
    }

    /// Bucket-wise sum, as `sum_thread_stats` does for group_reporting.
    pub fn merge(&mut self, other: &LatHist) {
        for (d, s) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *d += *s;
        }
        self.total += other.total;
    }

    /// Number of samples counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Count in bucket `idx`.
    pub fn bucket(&self, idx: usize) -> u64 {
        self.buckets[idx]
    }

    /// Non-empty buckets in index order as `(plat_idx_to_val(idx), count)`: the json+
    /// `"bins"` object (`add_ddir_lat_json`).
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0)
            .map(|(i, c)| (plat_idx_to_val(i), *c))
    }

    /// Percentile values (ns bucket midpoints) for `plist`, in the order of `plist`,
    /// computed against this histogram's own sample count.
    pub fn percentiles(&self, plist: &[f64]) -> Vec<u64> {
        self.percentiles_with_nr(plist, self.total)
    }

    /// `stat.c: calc_clat_percentiles` with fio's `nr` (the io_stat's sample count, which
    /// equals the histogram total unless a caller feeds them separately).
    ///
    /// fio sorts the list (in place) and walks the buckets once, emitting bucket `i` for
    /// every percentile `p` with `sum >= (long double) p / 100.0 * nr`. The comparison is
    /// done in x87 80-bit `long double` on x86-64 Linux (where the reference samples were
    /// made); [`threshold_reached`] emulates that rounding exactly so the edge cases where
    /// `p * nr / 100` is a whole number pick the same bucket fio picks.
    /// Entries not reached (fio's "error calculating latency percentiles") are 0.
    pub fn percentiles_with_nr(&self, plist: &[f64], nr: u64) -> Vec<u64> {
        let len = plist.len().min(LIST_MAX_LEN);
        let mut order: Vec<usize> = (0..len).collect();
        // double_cmp: stable ordering by value (NaN unsupported, as in fio).
        order.sort_by(|a, b| {
            plist[*a]
                .partial_cmp(&plist[*b])
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let mut out = vec![0u64; len];
        if len == 0 {
            return out;
        }
        let mut sum: u64 = 0;
        let mut j = 0usize;
        'outer: for i in 0..PLAT_NR {
            sum += self.buckets[i];
            while threshold_reached(sum, plist[order[j]], nr) {
                out[order[j]] = plat_idx_to_val(i);
                if j == len - 1 {
                    break 'outer;
                }
                j += 1;
            }
        }
        out
    }
}

/// `sum >= ((long double) p / 100.0 * nr)` evaluated the way x86-64 gcc evaluates it:
/// `p` (a double) is widened exactly, divided by 100 with the result rounded to a 64-bit
/// significand (round-to-nearest-even), multiplied by `nr` (exact as long double) and
/// rounded again, then compared with `sum` (exact). Done in integers so it is the same on
/// every host.
pub fn threshold_reached(sum: u64, p: f64, nr: u64) -> bool {
    if p.is_nan() || p <= 0.0 || nr == 0 {
        // p == 0 never occurs in a fio list (0 terminates it); threshold 0 is always met.
        return true;
    }
    assert!(p.is_finite());
    // p = m * 2^e with m < 2^53.
    let bits = p.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp_field == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_field - 1075)
    };
    // q = round64(m * 2^e / 100): scale m up so the quotient keeps > 64 significant bits.
    let shift_up = (m.leading_zeros() as i32) + 64; // m << shift_up still fits in u128
    let n = (m as u128) << shift_up;
    let (qm, qe) = round64(n / 100, !n.is_multiple_of(100));
    let q_exp = e - shift_up + qe;
    // r = round64(q * nr): exact product fits in u128 since qm < 2^64 and nr < 2^64.
    let prod = (qm as u128) * (nr as u128);
    let (rm, re) = round64(prod, false);
    let r_exp = q_exp + re;
    // Compare sum >= rm * 2^r_exp.
    if r_exp >= 0 {
        if r_exp >= 64 {
            return false; // rm >= 1, so r >= 2^64 > sum
        }
        let r = (rm as u128) << r_exp;
        (sum as u128) >= r
    } else {
        let k = (-r_exp) as u32;
        if k >= 64 {
            // r < 2^64 / 2^64 = 1: any sum >= 1 reaches it, sum == 0 does not (r > 0).
            return sum >= 1;
        }
        ((sum as u128) << k) >= rm as u128
    }
}

/// Round a positive integer `v` (plus a sticky "there was a non-zero remainder below"
/// flag) to a 64-bit significand, round-to-nearest-even. Returns (significand, exponent)
/// with value = significand * 2^exponent.
fn round64(v: u128, sticky: bool) -> (u64, i32) {
    let bl = 128 - v.leading_zeros() as i32;
    if bl <= 64 {
        // Exact. A sticky remainder below a <=64-bit integer would need extra bits; callers
        // never hit this (the quotient always has > 64 bits).
        return (v as u64, 0);
    }
    let shift = (bl - 64) as u32;
    let mut mant = v >> shift;
    let rem = v & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let round_up = rem > half || (rem == half && (sticky || (mant & 1) == 1));
    let mut exp = shift as i32;
    if round_up {
        mant += 1;
        if mant == (1u128 << 64) {
            mant >>= 1;
            exp += 1;
        }
    }
    (mant as u64, exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idx_val_known_points() {
        // Group 0/1: identity.
        for v in 0..128u64 {
            assert_eq!(plat_val_to_idx(v), v as usize);
            assert_eq!(plat_idx_to_val(v as usize), v);
        }
        // 128 has msb 7: error_bits 1, base 128, offset 64 -> 192.
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_val_to_idx(129), 128);
        assert_eq!(plat_val_to_idx(130), 129);
        assert_eq!(plat_idx_to_val(128), 129); // 128 + 0.5*2
                                               // Values seen in the samples are bucket midpoints.
        for v in [28800u64, 11200, 1160, 398, 4292608, 156672, 236544, 58624] {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v, "{v}");
        }
        // Last bucket clamps.
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
        // Every bucket's value maps back to itself.
        for i in 0..PLAT_NR - 1 {
            assert_eq!(plat_val_to_idx(plat_idx_to_val(i)), i);
        }
    }

    #[test]
    fn crafted_distribution() {
        // 100 samples: 1..=100 ns. 1% -> 1st sample (1), 50% -> 50, 99% -> 99.
        let mut h = LatHist::new();
        for v in 1..=100u64 {
            h.add(v);
        }
        let p = h.percentiles(&[1.0, 50.0, 99.0, 99.99]);
        assert_eq!(p, vec![1, 50, 99, 100]);
        // Unsorted input keeps input order for the output.
        assert_eq!(h.percentiles(&[99.0, 1.0]), vec![99, 1]);
        // Large values land on midpoints: 1_000_000 ns -> bucket midpoint.
        let mut h = LatHist::new();
        h.add(1_000_000);
        let mid = plat_idx_to_val(plat_val_to_idx(1_000_000));
        assert_eq!(h.percentiles(&[50.0]), vec![mid]);
        assert_eq!(mid, 1_003_520);
    }

    #[test]
    fn long_double_threshold_edges() {
        // Plain cases agree with f64 arithmetic.
        for &(p, nr) in &[(50.0, 16384u64), (99.9, 16384), (1.0, 16384), (95.0, 7)] {
            let t = p / 100.0 * nr as f64;
            for sum in 0..=nr {
                assert_eq!(
                    threshold_reached(sum, p, nr),
                    sum as f64 >= t,
                    "{p} {nr} {sum}"
                );
            }
        }
        // Exact integer thresholds: sum == p*nr/100 must be reached or not consistently
        // with 80-bit rounding; at minimum monotone and bracketing.
        for &(p, nr) in &[(1.0, 100u64), (99.99, 10000), (99.9, 1000), (5.0, 200)] {
            let exact = (p * nr as f64 / 100.0).round() as u64;
            assert!(!threshold_reached(exact - 1, p, nr));
            assert!(threshold_reached(exact + 1, p, nr));
        }
    }
}
