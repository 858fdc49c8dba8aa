//! fio's `latency_target` search (`io_u.c`, fio 3.33: `lat_target_init`, `lat_target_check`,
//! `lat_target_success`, `__lat_target_failed`): the job starts at queue depth 1 and, at the
//! end of each `latency_window`, doubles its depth while the window was good (at least
//! `latency_percentile` % of its I/Os under `latency_target`) and halves towards the last
//! good depth when it was not, then bisects between the last good and the first bad depth.
//! When a good window leaves the depth where it was, fio waits for the I/Os in flight,
//! clears the job's statistics and runs one more window at that depth, whose I/Os are what
//! the job reports (`latency_end_run`); then the job ends. With `latency_percentile=100`
//! every I/O over the target fails its window at once, and one at depth 1 ends the job
//! with ETIMEDOUT. `latency_run` keeps adjusting instead of settling.

use blksim_core::Ns;
use blksim_job::JobSpec;

/// What the job does after a window closes or an I/O failed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Go on at the (possibly new) depth.
    Go,
    /// Wait for every I/O in flight (`io_u_quiesce`), then start a new window.
    Quiesce,
    /// Wait for every I/O in flight, clear the statistics (`reset_all_stats`) and run the
    /// final window.
    FinalRun,
    /// The final window was good at the same depth: the job is done (`td->done`).
    Done,
}

pub(crate) struct LatTarget {
    target_ns: Ns,
    window_ns: Ns,
    percentile: f64,
    run: bool,
    iodepth: u32,
    /// `latency_qd`, `latency_qd_high`, `latency_qd_low`, `latency_stable_count`.
    pub(crate) qd: u32,
    qd_high: u32,
    qd_low: u32,
    stable_count: u32,
    /// The window's start (`latency_ts`), the job's completions then (`latency_ios`), and
    /// its I/Os over the target since (`latency_failed`).
    ts: Ns,
    ios: u64,
    failed: u64,
    /// `latency_end_run`: the final window is under way.
    end_run: bool,
}

impl LatTarget {
    /// The search of a job with `latency_target`, at `iodepth` (its `td->o.iodepth`).
    pub(crate) fn new(spec: &JobSpec, iodepth: u32) -> Option<Self> {
        (spec.latency_target_ns > 0).then(|| LatTarget {
            target_ns: spec.latency_target_ns,
            window_ns: spec.latency_window_us.saturating_mul(1000),
            percentile: spec.latency_percentile,
            run: spec.latency_run,
            iodepth: iodepth.max(1),
            qd: 1,
            qd_high: iodepth.max(1),
            qd_low: 1,
            stable_count: 0,
            ts: 0,
            ios: 0,
            failed: 0,
            end_run: false,
        })
    }

    /// `lat_target_init` at the job's start, and `lat_target_reset` when its statistics
    /// are cleared (the end of a ramp): back to depth 1, unless the final window runs.
    pub(crate) fn init(&mut self, now: Ns, io_blocks: u64) {
        if self.end_run {
            return;
        }
        self.qd = 1;
        self.qd_high = self.iodepth;
        self.qd_low = 1;
        self.ts = now;
        self.ios = io_blocks;
    }

    /// `lat_new_cycle`.
    pub(crate) fn new_cycle(&mut self, now: Ns, io_blocks: u64) {
        self.ts = now;
        self.ios = io_blocks;
        self.failed = 0;
    }

    /// An I/O completed in `lat_ns` (from its `start_time`), above the target
    /// (`lat_target_failed`): Err(()) when it ends the job (`lat_fatal`: a failure at depth 1).
    pub(crate) fn over_target(&mut self, lat_ns: Ns) -> Result<Next, ()> {
        if lat_ns <= self.target_ns {
            return Ok(Next::Go);
        }
        if self.percentile == 100.0 {
            return self.failed_window();
        }
        self.failed += 1;
        Ok(Next::Go)
    }

    /// The target whose excess ends the job.
    pub(crate) fn target_ns(&self) -> Ns {
        self.target_ns
    }

    /// `__lat_target_failed`: down towards the last good depth; at depth 1 there is nowhere
    /// to go.
    fn failed_window(&mut self) -> Result<Next, ()> {
        if self.qd == 1 {
            return Err(());
        }
        self.qd_high = self.qd;
        if self.qd == self.qd_low {
            self.qd_low -= 1;
        }
        self.qd = (self.qd + self.qd_low) / 2;
        self.stable_count = 0;
        Ok(Next::Quiesce)
    }

    /// `lat_target_check` after a turn of the job's loop: nothing before the window ends.
    pub(crate) fn check(&mut self, now: Ns, io_blocks: u64) -> Next {
        if now.saturating_sub(self.ts) / 1000 < self.window_ns / 1000 {
            return Next::Go;
        }
        let ios = io_blocks.saturating_sub(self.ios);
        // fio divides by the window's I/Os as doubles: none makes NaN, which fails it.
        let success = (ios.saturating_sub(self.failed)) as f64 / ios as f64 * 100.0;
        if success >= self.percentile {
            self.success(now, io_blocks)
        } else {
            // `lat_target_check` ignores what `__lat_target_failed` returns: at depth 1 a
            // bad window changes nothing, not even the window, which the next turn of the
            // loop judges again with what has come since.
            self.failed_window().unwrap_or(Next::Go)
        }
    }

    /// `lat_target_success`.
    fn success(&mut self, now: Ns, io_blocks: u64) -> Next {
        let qd = self.qd;
        self.qd_low = self.qd;
        if self.qd + 1 == self.qd_high {
            // Stuck one below the first bad depth: after three good windows try it again.
            self.stable_count += 1;
            if self.stable_count >= 3 {
                self.qd_high += 1;
                self.stable_count = 0;
            }
        }
        // Double up to a bad depth, then bisect.
        self.qd = if self.qd_high != self.iodepth {
            (self.qd + self.qd_high) / 2
        } else {
            self.qd * 2
        };
        self.qd = self.qd.min(self.iodepth);
        if !self.run && self.qd == qd {
            if self.end_run {
                return Next::Done;
            }
            self.end_run = true;
            return Next::FinalRun;
        }
        self.new_cycle(now, io_blocks);
        Next::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(iodepth: u32, percentile: f64, run: bool) -> LatTarget {
        let spec = JobSpec {
            latency_target_ns: 1000,
            latency_window_us: 10,
            latency_percentile: percentile,
            latency_run: run,
            ..Default::default()
        };
        let mut l = LatTarget::new(&spec, iodepth).unwrap();
        l.init(0, 0);
        l
    }

    /// One window of `ios` I/Os, `bad` of them over the target; what the job does then.
    fn window(l: &mut LatTarget, now: &mut Ns, blocks: &mut u64, ios: u64, bad: u64) -> Next {
        for i in 0..ios {
            let lat = if i < bad { 2000 } else { 500 };
            assert_eq!(l.over_target(lat), Ok(Next::Go));
        }
        *blocks += ios;
        // Not before the window's end.
        assert_eq!(l.check(*now + 9_999, *blocks), Next::Go);
        *now += 10_000;
        let next = l.check(*now, *blocks);
        if next == Next::Quiesce || next == Next::FinalRun {
            l.new_cycle(*now, *blocks);
        }
        next
    }

    /// `lat_target_success` doubles from 1 up to `iodepth`, runs a final window at the same
    /// depth, and is done after it.
    #[test]
    fn good_windows_double_to_the_iodepth_then_settle() {
        let mut l = search(32, 99.0, false);
        let (mut now, mut blocks) = (0, 0);
        let mut depths = vec![l.qd];
        while window(&mut l, &mut now, &mut blocks, 100, 0) == Next::Go {
            depths.push(l.qd);
        }
        assert_eq!(depths, [1, 2, 4, 8, 16, 32]);
        assert!(l.end_run, "the final window follows");
        assert_eq!(window(&mut l, &mut now, &mut blocks, 100, 0), Next::Done);
        assert_eq!(l.qd, 32);
    }

    /// A bad window goes down halfway to the last good depth (after waiting for the I/Os in
    /// flight), a good one halfway up to the first bad one; one below a bad depth, three good
    /// windows in a row try it again (`latency_stable_count`).
    #[test]
    fn bad_windows_bisect_between_the_last_good_and_the_first_bad_depth() {
        let mut l = search(64, 90.0, false);
        let (mut now, mut blocks) = (0, 0);
        // Good up to depth 10, bad from 11 (more than 10 % over the target).
        let mut step = |l: &mut LatTarget| {
            let bad = if l.qd > 10 { 50 } else { 5 };
            let qd = l.qd;
            (qd, window(l, &mut now, &mut blocks, 100, bad))
        };
        let mut seen = Vec::new();
        loop {
            let (qd, next) = step(&mut l);
            seen.push((qd, next));
            if next == Next::Done {
                break;
            }
        }
        use Next::*;
        assert_eq!(
            seen,
            [
                (1, Go),
                (2, Go),
                (4, Go),
                (8, Go),
                (16, Quiesce),
                (12, Quiesce),
                (10, Go),
                (11, Quiesce),
                (10, FinalRun),
                (10, Done)
            ]
        );
    }

    /// With `latency_percentile=100` one I/O over the target fails the window at once; at
    /// depth 1 it ends the job. A bad window judged at depth 1 changes nothing.
    #[test]
    fn at_100_percent_one_late_io_goes_down_and_at_depth_1_ends_the_job() {
        let mut l = search(8, 100.0, false);
        assert_eq!(l.over_target(999), Ok(Next::Go));
        assert_eq!(l.over_target(1001), Err(()));
        let mut l = search(8, 100.0, false);
        l.qd = 8;
        assert_eq!(l.over_target(1001), Ok(Next::Quiesce));
        assert_eq!(l.qd, 4);
        let mut l = search(8, 99.0, false);
        l.failed = 50;
        assert_eq!(l.check(10_000, 100), Next::Go);
        assert_eq!((l.qd, l.ts), (1, 0), "no new window");
        // No I/O in a window: fio's 0/0 is NaN, a bad window.
        let mut l = search(8, 99.0, false);
        l.qd = 4;
        assert_eq!(l.check(10_000, 0), Next::Quiesce);
    }

    /// `latency_run` keeps adjusting: no final window.
    #[test]
    fn latency_run_never_settles() {
        let mut l = search(4, 99.0, true);
        let (mut now, mut blocks) = (0, 0);
        for _ in 0..10 {
            assert_eq!(window(&mut l, &mut now, &mut blocks, 100, 0), Next::Go);
        }
        assert_eq!(l.qd, 4);
    }
}
