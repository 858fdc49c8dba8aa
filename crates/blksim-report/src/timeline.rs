//! I/Os and bytes completed over time, per direction, in a bounded number of buckets: what
//! the HTML report plots as IOPS and bandwidth over time. Buckets start 1 ms wide; when a run
//! outgrows [`MAX_BUCKETS`] of them, neighbours merge and the width doubles, so memory stays
//! constant however long the run (the same scheme as a doubling histogram).

/// Buckets kept at most.
pub const MAX_BUCKETS: usize = 512;
/// Width of a bucket at the start, ns.
pub const FIRST_WIDTH_NS: u64 = 1_000_000;

#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub start_ns: u64,
    pub width_ns: u64,
    /// Per bucket and direction: I/Os completed.
    pub ios: Vec<[u64; 3]>,
    /// Per bucket and direction: bytes completed.
    pub bytes: Vec<[u64; 3]>,
}

impl Timeline {
    pub fn new(start_ns: u64) -> Timeline {
        Timeline {
            start_ns,
            width_ns: FIRST_WIDTH_NS,
            ios: Vec::new(),
            bytes: Vec::new(),
        }
    }

    fn halve(&mut self) {
        merge_pairs(&mut self.ios);
        merge_pairs(&mut self.bytes);
        self.width_ns *= 2;
    }

    /// An I/O of `bytes` in direction `ddir` completed at `now_ns`.
    pub fn add(&mut self, now_ns: u64, ddir: usize, bytes: u64) {
        let t = now_ns.saturating_sub(self.start_ns);
        while !fits(t, self.width_ns) {
            self.halve();
        }
        let i = (t / self.width_ns) as usize;
        if self.ios.len() <= i {
            self.ios.resize(i + 1, [0; 3]);
            self.bytes.resize(i + 1, [0; 3]);
        }
        self.ios[i][ddir] += 1;
        self.bytes[i][ddir] += bytes;
    }

    /// group_reporting: add `src` (both brought to the coarser width and the earlier start).
    pub fn merge(&mut self, src: &Timeline) {
        let mut src = src.clone();
        let start = self.start_ns.min(src.start_ns);
        for t in [&mut *self, &mut src] {
            // Re-base on the common start: shift by whole buckets, rounding into the first.
            let shift = ((t.start_ns - start) / t.width_ns) as usize;
            if shift > 0 {
                t.ios.splice(0..0, std::iter::repeat_n([0; 3], shift));
                t.bytes.splice(0..0, std::iter::repeat_n([0; 3], shift));
            }
            t.start_ns = start;
        }
        while self.width_ns < src.width_ns {
            self.halve();
        }
        while src.width_ns < self.width_ns {
            src.halve();
        }
        while self.ios.len().max(src.ios.len()) > MAX_BUCKETS {
            self.halve();
            src.halve();
        }
        if self.ios.len() < src.ios.len() {
            self.ios.resize(src.ios.len(), [0; 3]);
            self.bytes.resize(src.ios.len(), [0; 3]);
        }
        for (i, (a, b)) in src.ios.iter().zip(&src.bytes).enumerate() {
            for d in 0..3 {
                self.ios[i][d] += a[d];
                self.bytes[i][d] += b[d];
            }
        }
    }

    /// (bucket end in s, IOPS, KiB/s) of direction `ddir`, one point per bucket. A run that
    /// ended at `end_ns` inside its last bucket has that bucket's rate over the part it ran.
    pub fn rates(&self, ddir: usize, end_ns: u64) -> Vec<(f64, f64, f64)> {
        bucket_spans(self.start_ns, self.width_ns, self.ios.len(), end_ns)
            .zip(self.ios.iter().zip(&self.bytes))
            .map(|((x, w), (c, b))| {
                let w = w as f64 / 1e9;
                (x, c[ddir] as f64 / w, b[ddir] as f64 / 1024.0 / w)
            })
            .collect()
    }
}

/// Whether offset `t` (ns from the start) falls within [`MAX_BUCKETS`] buckets of `width_ns`;
/// if not, the buckets must be halved (merged in pairs, the width doubled) until it does.
pub(crate) fn fits(t: u64, width_ns: u64) -> bool {
    t / width_ns < MAX_BUCKETS as u64
}

/// What a bucket holds: a count, or one count per series.
pub(crate) trait Bucket: Copy {
    fn add(&mut self, other: &Self);
}

impl Bucket for u64 {
    fn add(&mut self, other: &Self) {
        *self += other;
    }
}

impl<const N: usize> Bucket for [u64; N] {
    fn add(&mut self, other: &Self) {
        for (x, y) in self.iter_mut().zip(other) {
            *x += y;
        }
    }
}

/// Merge neighbouring buckets in pairs, in place (the width doubles).
pub(crate) fn merge_pairs<B: Bucket>(v: &mut Vec<B>) {
    let n = v.len().div_ceil(2);
    for i in 0..n {
        let mut m = v[2 * i];
        if let Some(b) = v.get(2 * i + 1) {
            m.add(b);
        }
        v[i] = m;
    }
    v.truncate(n);
}

/// (end in s since `start_ns`, width in ns) of each of `n` buckets of `width_ns`; the last one
/// ends at `end_ns` when the run ended inside it, so its rate is over the part it ran.
pub(crate) fn bucket_spans(
    start_ns: u64,
    width_ns: u64,
    n: usize,
    end_ns: u64,
) -> impl Iterator<Item = (f64, u64)> {
    (0..n).map(move |i| {
        let from = start_ns + i as u64 * width_ns;
        let mut w = width_ns;
        if i + 1 == n && end_ns > from {
            w = w.min(end_ns - from);
        }
        ((from + w - start_ns) as f64 / 1e9, w)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_double_and_keep_every_io() {
        let mut t = Timeline::new(0);
        // One 4 KiB read every 100 µs for 2 s: 20000 I/Os, 10 per ms.
        for k in 0..20_000u64 {
            t.add(k * 100_000 + 50_000, 0, 4096);
        }
        assert!(t.ios.len() <= MAX_BUCKETS);
        assert_eq!(
            t.width_ns, 4_000_000,
            "1 ms doubled until 2 s fits in 512 buckets"
        );
        assert_eq!(t.ios.iter().map(|b| b[0]).sum::<u64>(), 20_000);
        // Every bucket shows the steady 10000 IOPS and 40000 KiB/s.
        for (_, iops, kib) in &t.rates(0, 2_000_000_000) {
            assert_eq!((*iops, *kib), (10_000.0, 40_000.0));
        }
        // Ending at 1.998 s, inside the last 4 ms bucket: that bucket's rate is over the
        // 2 ms it ran, not its whole width.
        let mut u = Timeline::new(0);
        for k in 0..19_980u64 {
            u.add(k * 100_000 + 50_000, 0, 4096);
        }
        let last = *u.rates(0, 1_998_000_000).last().unwrap();
        assert_eq!((last.0, last.1), (1.998, 10_000.0));
    }

    #[test]
    fn merged_timelines_add_up() {
        let (mut a, mut b) = (Timeline::new(0), Timeline::new(3_000_000));
        for k in 0..100u64 {
            a.add(k * 1_000_000, 0, 512);
        }
        for k in 0..2000u64 {
            b.add(3_000_000 + k * 1_000_000, 1, 1024);
        }
        a.merge(&b);
        assert_eq!(a.ios.iter().map(|x| x[0]).sum::<u64>(), 100);
        assert_eq!(a.ios.iter().map(|x| x[1]).sum::<u64>(), 2000);
        assert_eq!(a.bytes.iter().map(|x| x[1]).sum::<u64>(), 2000 * 1024);
        assert!(a.ios.len() <= MAX_BUCKETS);
    }
}
