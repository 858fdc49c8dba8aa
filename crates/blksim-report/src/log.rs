//! fio's per-job log files (`write_bw_log`, `write_lat_log`, `write_iops_log`,
//! `write_hist_log`): the entries stat.c's `add_log_sample` and `add_clat_sample` make, in
//! the line formats of iolog.c's `flush_samples` and `flush_hist_samples`, written as the run
//! goes so that memory does not grow with the run.
//!
//! A value log line is `time, value, ddir, bs, prio` (with `log_offset`:
//! `time, value, ddir, bs, offset, prio`); time in ms since the job's epoch, the value in ns
//! (latency logs), KiB/s (bandwidth) or I/Os per second. With `log_prio` the priority is
//! printed as `0x%04x` of the I/O priority value, otherwise as 1 for the real-time class and 0
//! for the others. A histogram line is `time, ddir, bs, bin0, ..., binN` with the clat
//! histogram's counts since the previous line of that direction, `2^log_hist_coarseness`
//! buckets summed per bin.

use crate::hist::{LatHist, PLAT_NR};
use std::io::{self, Write};

/// fio's `LOG_MSEC_SLACK`: a window of a log filled from the helper thread (bw, iops) may be
/// closed up to 1 ms early; logs filled from the I/O path (latencies) wait for the full window.
const LOG_MSEC_SLACK: u64 = 1;

/// `struct io_stat` as `add_stat_sample` updates it (what a log window averages).
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    samples: u64,
    max: u64,
    mean: f64,
}

impl Window {
    fn add(&mut self, v: u64) {
        if v > self.max {
            self.max = v;
        }
        let val = v as f64;
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
        }
        self.samples += 1;
    }
}

/// How a job's logs are shaped (`log_avg_msec`, `log_max_value`, `log_offset`, `log_prio`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogFormat {
    pub offset: bool,
    pub prio: bool,
}

/// One log of values: fio's `struct io_log` for the lat, slat, clat, bw or iops log.
pub struct SampleLog {
    out: Box<dyn Write>,
    /// Window in ms; 0 logs every sample (`per_unit_log`).
    avg_msec: u64,
    /// Filled from the I/O path (latency logs): no slack on the window.
    inline: bool,
    max_value: bool,
    fmt: LogFormat,
    window: [Window; 3],
    avg_last: [u64; 3],
}

impl SampleLog {
    pub fn new(
        out: Box<dyn Write>,
        avg_msec: u64,
        inline: bool,
        max_value: bool,
        fmt: LogFormat,
    ) -> Self {
        SampleLog {
            out,
            avg_msec,
            inline,
            max_value,
            fmt,
            window: [Window::default(); 3],
            avg_last: [0; 3],
        }
    }

    /// Whether every sample is a line of its own (`per_unit_log`).
    pub fn per_unit(&self) -> bool {
        self.avg_msec == 0
    }

    fn line(
        &mut self,
        t: u64,
        val: u64,
        ddir: usize,
        bs: u64,
        offset: u64,
        prio: u32,
    ) -> io::Result<()> {
        // `flush_samples`: "%lu, %PRId64, %u, %llu[, %llu], %u" or the prio as "0x%04x".
        let o = &mut self.out;
        write!(o, "{t}, {}, {ddir}, {bs}, ", val as i64)?;
        if self.fmt.offset {
            write!(o, "{offset}, ")?;
        }
        if self.fmt.prio {
            writeln!(o, "0x{prio:04x}")
        } else {
            // `ioprio_value_is_class_rt`: class 1 (IOPRIO_CLASS_RT) in the top bits.
            writeln!(o, "{}", u32::from(prio >> 13 == 1))
        }
    }

    /// `add_log_sample`: `elapsed` ms since the job's epoch; `prio` is the I/O priority value.
    pub fn add(
        &mut self,
        elapsed: u64,
        val: u64,
        ddir: usize,
        bs: u64,
        offset: u64,
        prio: u32,
    ) -> io::Result<()> {
        if ddir > 2 {
            return Ok(());
        }
        if self.avg_msec == 0 {
            return self.line(elapsed, val, ddir, bs, offset, prio);
        }
        self.window[ddir].add(val);
        if elapsed < self.avg_last[ddir] {
            return Ok(());
        }
        let this_window = elapsed - self.avg_last[ddir];
        if this_window < self.avg_msec {
            let diff = self.avg_msec - this_window;
            if self.inline || diff > LOG_MSEC_SLACK {
                return Ok(());
            }
        }
        self.close(ddir, elapsed)?;
        self.avg_last[ddir] = elapsed - elapsed % self.avg_msec;
        Ok(())
    }

    /// `__add_stat_to_log`: the window's mean (rounded, `mean + 0.50`) or maximum, with block
    /// size and offset 0, if it holds samples.
    fn close(&mut self, ddir: usize, elapsed: u64) -> io::Result<()> {
        let w = std::mem::take(&mut self.window[ddir]);
        if w.samples == 0 {
            return Ok(());
        }
        let v = if self.max_value {
            w.max
        } else {
            (w.mean + 0.50) as u64
        };
        self.line(elapsed, v, ddir, 0, 0, 0)
    }

    /// `_add_stat_to_log` at the end (`finalize_logs`): what every window still holds.
    pub fn finalize(&mut self, elapsed: u64) -> io::Result<()> {
        if self.avg_msec > 0 {
            for ddir in 0..3 {
                self.close(ddir, elapsed)?;
            }
        }
        self.out.flush()
    }
}

/// The completion latency histogram log (`write_hist_log` with `log_hist_msec`).
pub struct HistLog {
    out: Box<dyn Write>,
    hist_msec: u64,
    stride: usize,
    /// Per direction: ms of the last entry (0 = none yet, as fio's `hist_last`) and the
    /// histogram then.
    last: [u64; 3],
    prev: [Vec<u64>; 3],
}

impl HistLog {
    /// `hist_msec` 0 writes nothing (fio: the file "will be empty unless log_hist_msec has
    /// also been set").
    pub fn new(out: Box<dyn Write>, hist_msec: u64, coarseness: u32) -> Self {
        HistLog {
            out,
            hist_msec,
            stride: 1 << coarseness.min(6),
            last: [0; 3],
            prev: [vec![0; PLAT_NR], vec![0; PLAT_NR], vec![0; PLAT_NR]],
        }
    }

    /// The histogram part of `add_clat_sample`, after the I/O's clat was counted in `hist`.
    pub fn add(
        &mut self,
        elapsed: u64,
        ddir: usize,
        bs: u64,
        hist: Option<&LatHist>,
    ) -> io::Result<()> {
        if self.hist_msec == 0 || ddir > 2 {
            return Ok(());
        }
        if self.last[ddir] == 0 {
            self.last[ddir] = elapsed;
        }
        let this_window = elapsed.saturating_sub(self.last[ddir]);
        if this_window < self.hist_msec {
            return Ok(());
        }
        write!(self.out, "{elapsed}, {ddir}, {bs}, ")?;
        let prev = &mut self.prev[ddir];
        let mut first = true;
        for j in (0..PLAT_NR).step_by(self.stride) {
            let mut sum = 0u64;
            for (k, p) in prev.iter_mut().enumerate().skip(j).take(self.stride) {
                let cur = hist.map_or(0, |h| h.bucket(k));
                sum += cur - *p;
                *p = cur;
            }
            if !first {
                write!(self.out, ", ")?;
            }
            first = false;
            write!(self.out, "{sum}")?;
        }
        writeln!(self.out)?;
        self.last[ddir] = elapsed - (this_window - self.hist_msec);
        Ok(())
    }

    pub fn finalize(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Buf(Rc<RefCell<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.borrow().clone()).unwrap()
        }
    }

    #[test]
    fn per_unit_lines_have_fios_columns() {
        let b = Buf::default();
        let mut l = SampleLog::new(Box::new(b.clone()), 0, true, false, LogFormat::default());
        l.add(3, 15000, 0, 4096, 8192, 0).unwrap();
        let o = Buf::default();
        let fmt = LogFormat {
            offset: true,
            prio: true,
        };
        let mut m = SampleLog::new(Box::new(o.clone()), 0, true, false, fmt);
        m.add(7, 9, 1, 512, 1024, 0x2004).unwrap();
        assert_eq!(b.text(), "3, 15000, 0, 4096, 0\n");
        assert_eq!(o.text(), "7, 9, 1, 512, 1024, 0x2004\n");
    }

    /// Windowed: the mean of a direction's samples (rounded half up), bs and offset 0, when
    /// the window has passed; the rest at the end.
    #[test]
    fn windows_log_the_rounded_mean_or_the_max() {
        for (max, want) in [
            (false, "100, 2, 0, 0, 0\n250, 10, 0, 0, 0\n"),
            (true, "100, 3, 0, 0, 0\n250, 10, 0, 0, 0\n"),
        ] {
            let b = Buf::default();
            let mut l = SampleLog::new(Box::new(b.clone()), 100, true, max, LogFormat::default());
            for (t, v) in [(10, 1), (50, 2), (99, 3)] {
                l.add(t, v, 0, 4096, 0, 0).unwrap();
            }
            // The window closes at the first sample at or after 100 ms, which it includes.
            l.add(100, 2, 0, 4096, 0, 0).unwrap();
            l.add(130, 10, 0, 4096, 0, 0).unwrap();
            l.finalize(250).unwrap();
            assert_eq!(b.text(), want);
        }
    }

    #[test]
    fn histogram_lines_are_deltas_summed_over_the_stride() {
        let b = Buf::default();
        let mut l = HistLog::new(Box::new(b.clone()), 10, 6);
        let mut h = LatHist::new();
        h.add(1000);
        l.add(5, 0, 4096, Some(&h)).unwrap(); // starts the window
        h.add(1000);
        h.add(2_000_000);
        l.add(15, 0, 4096, Some(&h)).unwrap();
        h.add(1000);
        l.add(26, 0, 4096, Some(&h)).unwrap();
        let t = b.text();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2);
        let bins: Vec<u64> = lines[0]
            .split(", ")
            .skip(3)
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(bins.len(), PLAT_NR / 64);
        assert_eq!(bins.iter().sum::<u64>(), 3, "{}", lines[0]);
        assert!(lines[0].starts_with("15, 0, 4096, "));
        let bins2: u64 = lines[1]
            .split(", ")
            .skip(3)
            .map(|x| x.parse::<u64>().unwrap())
            .sum();
        assert_eq!(bins2, 1, "only the delta since the last line");
    }
}
