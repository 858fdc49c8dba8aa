//! Queue depth over time at each stage of the path, and the time the device was busy, in a
//! bounded number of buckets: what the HTML report plots. A stage's depth in a bucket is the
//! time-weighted mean number of requests there (the sum of their overlaps with the bucket
//! over its width: `iostat`'s `aqu-sz`, split by stage); busy is the fraction of the bucket
//! with at least one request at the driver (`iostat`'s `%util`, from the kernel's
//! `io_ticks`). Intervals may arrive in any order (a layer reports a request when it leaves),
//! so the buckets only add overlaps. Buckets start 1 ms wide and double when a run outgrows
//! [`crate::timeline::MAX_BUCKETS`], as in [`crate::timeline`].

use crate::timeline::{bucket_spans, fits, merge_pairs, FIRST_WIDTH_NS};

/// Stages kept at most.
pub const MAX_SERIES: usize = 8;

#[derive(Clone, Debug, PartialEq)]
pub struct DepthTimeline {
    pub start_ns: u64,
    pub width_ns: u64,
    /// Series names, in index order.
    pub names: Vec<&'static str>,
    /// Per bucket and series: request-nanoseconds spent there within the bucket.
    pub area: Vec<[u64; MAX_SERIES]>,
    /// Per bucket: nanoseconds with at least one request at the driver.
    pub busy: Vec<u64>,
    /// The end of the run (the last bucket's rates are over the part it ran).
    pub end_ns: u64,
}

impl DepthTimeline {
    pub fn new(start_ns: u64, names: &[&'static str]) -> DepthTimeline {
        assert!(names.len() <= MAX_SERIES);
        DepthTimeline {
            start_ns,
            width_ns: FIRST_WIDTH_NS,
            names: names.to_vec(),
            area: Vec::new(),
            busy: Vec::new(),
            end_ns: start_ns,
        }
    }

    fn halve(&mut self) {
        merge_pairs(&mut self.area);
        merge_pairs(&mut self.busy);
        self.width_ns *= 2;
    }

    /// Whether series `s` received any interval (every interval adds a non-zero overlap).
    pub fn seen(&self, s: usize) -> bool {
        self.area.iter().any(|a| a[s] > 0)
    }

    /// Make room for time `to` (exclusive) and call `f(bucket, overlap)` for each bucket
    /// `[from, to)` overlaps.
    fn spread(&mut self, from: u64, to: u64, mut f: impl FnMut(&mut Self, usize, u64)) {
        let a = from.max(self.start_ns) - self.start_ns;
        let Some(b) = to.checked_sub(self.start_ns).filter(|&b| b > a) else {
            return;
        };
        while !fits(b - 1, self.width_ns) {
            self.halve();
        }
        let last = ((b - 1) / self.width_ns) as usize;
        if self.area.len() <= last {
            self.area.resize(last + 1, [0; MAX_SERIES]);
            self.busy.resize(last + 1, 0);
        }
        self.end_ns = self.end_ns.max(to);
        for i in (a / self.width_ns) as usize..=last {
            let lo = i as u64 * self.width_ns;
            let overlap = b.min(lo + self.width_ns) - a.max(lo);
            f(self, i, overlap);
        }
    }

    /// A request spent `[from, to)` at stage `series`.
    pub fn add(&mut self, series: usize, from: u64, to: u64) {
        self.spread(from, to, |t, i, o| t.area[i][series] += o);
    }

    /// The driver had a request during `[from, to)` (busy intervals never overlap).
    pub fn add_busy(&mut self, from: u64, to: u64) {
        self.spread(from, to, |t, i, o| t.busy[i] += o);
    }

    /// The run ended at `end_ns`.
    pub fn finish(&mut self, end_ns: u64) {
        self.end_ns = self.end_ns.max(end_ns);
    }

    /// (bucket end in s, width in ns) of each bucket; the last one ends at the run's end.
    fn buckets(&self) -> impl Iterator<Item = (f64, u64)> {
        bucket_spans(self.start_ns, self.width_ns, self.area.len(), self.end_ns)
    }

    /// (bucket end in s, mean requests at stage `series`), one point per bucket.
    pub fn depth(&self, series: usize) -> Vec<(f64, f64)> {
        self.buckets()
            .zip(&self.area)
            .map(|((x, w), a)| (x, a[series] as f64 / w as f64))
            .collect()
    }

    /// (bucket end in s, fraction of the bucket the driver was busy).
    pub fn busy_fraction(&self) -> Vec<(f64, f64)> {
        self.buckets()
            .zip(&self.busy)
            .map(|((x, w), b)| (x, (*b as f64 / w as f64).min(1.0)))
            .collect()
    }

    /// Mean requests at stage `series` over the whole run.
    pub fn mean_depth(&self, series: usize) -> f64 {
        let total: u64 = self.area.iter().map(|a| a[series]).sum();
        total as f64 / (self.end_ns - self.start_ns).max(1) as f64
    }

    /// Fraction of the run the driver was busy.
    pub fn util(&self) -> f64 {
        self.busy.iter().sum::<u64>() as f64 / (self.end_ns - self.start_ns).max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::MAX_BUCKETS;

    /// Little's law on a closed form: 4 requests always in flight, each 10 µs at the driver
    /// after 2 µs in the block layer, for 2 s. Mean depth 4 × 10/12 at the driver and
    /// 4 × 2/12 in the block layer, in every bucket; busy throughout.
    #[test]
    fn depth_is_the_time_weighted_count() {
        let mut t = DepthTimeline::new(0, &["block", "driver"]);
        let n = 2_000_000_000 / 12_000u64;
        // Reported at completion and out of order: the four streams one after another.
        for s in 0..4u64 {
            for k in 0..n {
                let a = k * 12_000 + s * 3_000;
                t.add(0, a, a + 2_000);
                t.add(1, a + 2_000, a + 12_000);
            }
        }
        t.add_busy(2_000, n * 12_000 + 9_000);
        t.finish(n * 12_000 + 9_000);
        assert!(t.area.len() <= MAX_BUCKETS);
        assert_eq!(t.width_ns, 4_000_000);
        for (i, (_, d)) in t.depth(1).iter().enumerate().take(t.area.len() - 1) {
            assert!((d - 4.0 * 10.0 / 12.0).abs() < 1e-2, "bucket {i}: {d}");
        }
        for (_, d) in t.depth(0).iter().take(t.area.len() - 1) {
            assert!((d - 4.0 * 2.0 / 12.0).abs() < 1e-2, "{d}");
        }
        assert!((t.mean_depth(1) - 4.0 * 10.0 / 12.0).abs() < 1e-3);
        assert!(t.busy_fraction()[1..].iter().all(|&(_, b)| b == 1.0));
        assert!(t.util() > 0.999);
    }

    #[test]
    fn a_span_over_many_buckets_is_split_by_overlap() {
        let mut t = DepthTimeline::new(1_000, &["x"]);
        // 2.5 ms from 0.5 ms into the run: half of bucket 0, all of 1 and 2.
        t.add(0, 501_000, 3_001_000);
        t.finish(3_001_000);
        assert_eq!(
            t.area.iter().map(|a| a[0]).collect::<Vec<_>>(),
            vec![500_000, 1_000_000, 1_000_000]
        );
        let d = t.depth(0);
        assert_eq!(
            d.iter().map(|p| p.1).collect::<Vec<_>>(),
            vec![0.5, 1.0, 1.0]
        );
        assert_eq!(d[2].0, 0.003);
        assert!(t.seen(0) && !t.seen(1));
    }
}
