//! Helpers that rebuild blksim-report inputs from real fio 3.33 outputs, so the writers
//! can be compared with fio's own text.
#![allow(dead_code)]

use blksim_report::hist::{plat_idx_to_val, plat_val_to_idx, threshold_reached};
use blksim_report::LatHist;

pub fn data(name: &str) -> String {
    let p = format!("{}/tests/data/{}", env!("CARGO_MANIFEST_DIR"), name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// A histogram of `n` samples whose percentiles (fio's walk) are exactly `pv`
/// (sorted (percentile, ns bucket value) pairs).
pub fn hist_from_percentiles(pv: &[(f64, u64)], n: u64) -> LatHist {
    let mut h = LatHist::new();
    let mut placed = 0u64;
    let mut last_idx = 0;
    for &(p, v) in pv {
        let need = (0..=n).find(|s| threshold_reached(*s, p, n)).unwrap();
        let idx = plat_val_to_idx(v);
        assert_eq!(plat_idx_to_val(idx), v, "not a bucket value: {v}");
        if need > placed {
            h.add_to_bucket(idx, need - placed);
            placed = need;
        }
        last_idx = idx;
    }
    if n > placed {
        h.add_to_bucket(last_idx, n - placed);
    }
    h
}

/// Bucket value `m` whose `(m + 999) / 1000` scaled `steps` times equals `printed`.
pub fn bucket_for_scaled(printed: u64, steps: u32) -> u64 {
    let mult = 1000u64.pow(steps);
    let target = printed * mult;
    let start = plat_val_to_idx(target);
    for idx in (start.saturating_sub(4)..=start + 1).rev() {
        let mut m = plat_idx_to_val(idx);
        let orig = m;
        for _ in 0..steps {
            m = m.div_ceil(1000);
        }
        if m == printed {
            return orig;
        }
    }
    panic!("no bucket prints as {printed}");
}

fn pct(c: u64, total: u64) -> f64 {
    c as f64 / total as f64 * 100.0
}

/// An integer count that `stat_calc_dist`/`stat_calc_lat` shows as `want` (formatted
/// with `prec` decimals), given the floor value fio substitutes for tiny non-zero counts.
pub fn count_for(want: f64, total: u64, prec: usize, floor: f64) -> Option<u64> {
    let w = format!("{want:.prec$}");
    if want == 0.0 {
        return Some(0);
    }
    let shown = |c: u64| {
        let mut v = pct(c, total);
        if v < floor && c != 0 {
            v = floor;
        }
        format!("{v:.prec$}")
    };
    let guess = (want * total as f64 / 100.0).round() as i64;
    for d in [0i64, -1, 1, -2, 2, -3, 3] {
        let c = guess + d;
        if c < 1 {
            continue;
        }
        if shown(c as u64) == w {
            return Some(c as u64);
        }
    }
    if shown(1) == w {
        return Some(1);
    }
    None
}

/// Smallest denominator for which every value has a count.
pub fn find_total(vals: &[f64], prec: usize, floor: f64) -> (u64, Vec<u64>) {
    for t in 1..3_000_000u64 {
        let cs: Option<Vec<u64>> = vals.iter().map(|v| count_for(*v, t, prec, floor)).collect();
        if let Some(cs) = cs {
            return (t, cs);
        }
    }
    panic!("no total for {vals:?}");
}

/// (io_ticks, msec) with `100 * io_ticks / msec` shown as `util` (`%3.2f` or `%f`).
pub fn util_parts(util: f64, prec: usize) -> (u64, u64) {
    let w = format!("{util:.prec$}");
    for msec in 1..1_000_000u64 {
        let t = (util * msec as f64 / 100.0).round() as u64;
        if format!("{:.prec$}", 100.0 * t as f64 / msec as f64) == w {
            return (t, msec);
        }
    }
    panic!("util {util}");
}
