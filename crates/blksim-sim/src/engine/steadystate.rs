//! fio's steady-state detection (`steadystate.c`): once a second fio's helper thread takes
//! each job's IOPS and bandwidth over the last second (`steadystate_check`), keeps the last
//! `steadystate_duration` seconds of them, and ends the job (`fio_mark_td_terminate`) when
//! they have settled: their largest deviation from the window's mean (`iops`, `bw`), or the
//! slope of a least-squares line through them (`iops_slope`, `bw_slope`), is under the limit,
//! a percentage of the mean or an absolute number. With `group_reporting` the group's sums
//! are judged, by its last job, and the whole group ends.
//!
//! The arithmetic is fio 3.33's, unsigned wrap-arounds included: the same samples give the
//! same decision and the same report. The samples are exact here: each covers 1000 ms of
//! simulated time. fio's helper thread starts before the jobs, so its checks fall a little
//! before each whole second of a job's time (about 0.1 s, measured with fio 3.33); here a
//! check comes first among the events of its instant (a completion or a runtime's end at
//! the same nanosecond comes after it).

use super::*;
use blksim_job::SteadyState;
use blksim_report::SteadyStateReport;

/// The helper thread's period (`STEADYSTATE_MSEC`).
pub(crate) const STEADYSTATE_NS: Ns = 1_000_000_000;

/// `struct steadystate_data` of one job.
#[derive(Clone, Debug)]
pub(crate) struct SsData {
    opts: SteadyState,
    attained: bool,
    ramp_over: bool,
    /// This job holds the window (`FIO_SS_DATA`): every job without `group_reporting`, the
    /// last job of each group with it.
    data: bool,
    buffer_full: bool,
    dur: u64,
    head: u32,
    tail: u32,
    iops_data: Vec<u64>,
    bw_data: Vec<u64>,
    slope: f64,
    deviation: f64,
    criterion: f64,
    sum_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    sum_xy: u64,
    oldest_y: u64,
    /// The last `dur` samples' smallest and largest values, as `(sample number, value)` in
    /// monotone queues (the mean-deviation criterion).
    mins: std::collections::VecDeque<(u64, u64)>,
    maxs: std::collections::VecDeque<(u64, u64)>,
    samples: u64,
    /// fio's `td->epoch`: the job's start, then the end of its ramp (`reset_all_stats`).
    epoch: Ns,
    /// When the last sample was taken: the epoch, then each check.
    prev_time: Ns,
    prev_iops: u64,
    prev_bytes: u64,
}

/// When a job asleep over `[from, until)` sees a `terminate` set at `now`: fio's `usec_sleep`
/// sleeps in slices, rechecking `td->terminate` after each. Of `left` µs it asks
/// `nanosleep` for `ts = left - ns_granularity` (a clock granularity, taken here as just
/// above 0): `tv_sec = ts / 10^6` capped at 1, plus the part of `ts` under a second, so a
/// 5 s thinktime sleeps about 2 s, 2 s and 1 s. None when the sleep's own end comes first.
pub(super) fn usec_sleep_notice(from: Ns, until: Ns, now: Ns) -> Option<Ns> {
    const US: Ns = 1_000;
    const SEC_US: Ns = 1_000_000;
    let left = until.saturating_sub(from) / US;
    if left == 0 {
        return None;
    }
    // The first slice takes what is over whole seconds, so every later one (but a last
    // single second) is 2 s; the slice ends follow in closed form, a long sleep costs no
    // loop.
    let ts = left - 1;
    let first = (ts / SEC_US).min(1) * SEC_US + ts % SEC_US + 1;
    let t1 = from + first * US;
    let at = if t1 >= now {
        t1
    } else {
        let two = 2 * SEC_US * US;
        t1 + (now - t1).div_ceil(two) * two
    };
    (at < from + left * US).then_some(at)
}

/// `criterion < limit` as fio 3.33 computes it: it is built with `-ffast-math`, and the
/// compare (`comisd`, then `jb`) takes an unordered result as below, so a criterion that is
/// not a number (an empty window's 0/0) counts as attained.
fn attained(criterion: f64, limit: f64) -> bool {
    criterion < limit || criterion.is_nan() || limit.is_nan()
}

impl SsData {
    /// `td_steadystate_init` for a job with a window of a second or more; None otherwise (a
    /// shorter `steadystate_duration` rounds to 0 s, and fio's check passes such a job over).
    pub(crate) fn new(opts: &SteadyState) -> Option<Box<SsData>> {
        if opts.dur_s == 0 {
            return None;
        }
        let dur = opts.dur_s;
        Some(Box::new(SsData {
            opts: *opts,
            attained: false,
            ramp_over: opts.ramp_ns == 0,
            data: false,
            buffer_full: false,
            dur,
            head: 0,
            tail: 0,
            iops_data: Vec::new(),
            bw_data: Vec::new(),
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            sum_y: 0,
            sum_x: dur.wrapping_mul(dur.wrapping_sub(1)) / 2,
            sum_x_sq: dur
                .wrapping_sub(1)
                .wrapping_mul(dur)
                .wrapping_mul((2 * dur).wrapping_sub(1))
                / 6,
            sum_xy: 0,
            oldest_y: 0,
            mins: Default::default(),
            maxs: Default::default(),
            samples: 0,
            epoch: 0,
            prev_time: 0,
            prev_iops: 0,
            prev_bytes: 0,
        }))
    }

    /// The job's epoch is `now`: its start (`thread_main`), or its ramp's end
    /// (`reset_all_stats`), where fio's I/O counters restart but `prev_iops` and
    /// `prev_bytes` do not.
    pub(crate) fn set_epoch(&mut self, now: Ns) {
        self.epoch = now;
        self.prev_time = now;
    }

    /// `steadystate_alloc`: this job keeps the window.
    pub(crate) fn alloc(&mut self) {
        self.bw_data = vec![0; self.dur as usize];
        self.iops_data = vec![0; self.dur as usize];
        self.data = true;
    }

    fn value(&self, i: usize) -> u64 {
        if self.opts.iops {
            self.iops_data[i]
        } else {
            self.bw_data[i]
        }
    }

    /// The window is full now, or was already (`tail - head == dur - 1` in fio's unsigned
    /// ints).
    fn window_full(&self) -> bool {
        self.buffer_full || u64::from(self.tail.wrapping_sub(self.head)) == self.dur.wrapping_sub(1)
    }

    fn advance(&mut self) {
        let dur = self.dur as u32;
        self.tail = (self.tail + 1) % dur;
        if self.tail <= self.head {
            self.head = (self.head + 1) % dur;
        }
    }

    /// `steadystate_slope`.
    fn slope_check(&mut self, iops: u64, bw: u64) -> bool {
        let tail = self.tail as usize;
        self.bw_data[tail] = bw;
        self.iops_data[tail] = iops;
        let new_val = if self.opts.iops { iops } else { bw };
        if self.window_full() {
            if !self.buffer_full {
                // First time through.
                self.sum_y = 0;
                for i in 0..self.dur as usize {
                    self.sum_y = self.sum_y.wrapping_add(self.value(i));
                    let j = (self.head as usize + i) % self.dur as usize;
                    self.sum_xy = self
                        .sum_xy
                        .wrapping_add((i as u64).wrapping_mul(self.value(j)));
                }
                self.buffer_full = true;
            } else {
                self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new_val);
                self.sum_xy = self
                    .sum_xy
                    .wrapping_sub(self.sum_y)
                    .wrapping_add(self.dur.wrapping_mul(new_val));
            }
            self.oldest_y = self.value(self.head as usize);
            let n = self.dur as f64;
            self.slope = (self.sum_xy as f64 - self.sum_x as f64 * self.sum_y as f64 / n)
                / (self.sum_x_sq as f64 - self.sum_x as f64 * self.sum_x as f64 / n);
            self.criterion = if self.opts.pct {
                100.0 * self.slope / (self.sum_y / self.dur) as f64
            } else {
                self.slope
            };
            if attained(self.criterion.abs(), self.opts.limit) {
                return true;
            }
        }
        self.advance();
        false
    }

    /// Keep the window's extremes as a sample `v` comes in and the oldest leaves.
    fn slide_extremes(&mut self, v: u64) {
        let n = self.samples;
        self.samples += 1;
        while self.mins.back().is_some_and(|&(_, x)| x >= v) {
            self.mins.pop_back();
        }
        self.mins.push_back((n, v));
        while self.maxs.back().is_some_and(|&(_, x)| x <= v) {
            self.maxs.pop_back();
        }
        self.maxs.push_back((n, v));
        for q in [&mut self.mins, &mut self.maxs] {
            while q.front().is_some_and(|&(i, _)| i + self.dur <= n) {
                q.pop_front();
            }
        }
    }

    /// The window's smallest and largest sample.
    fn extremes(&self) -> (u64, u64) {
        let first = |q: &std::collections::VecDeque<(u64, u64)>| q.front().map_or(0, |&(_, x)| x);
        (first(&self.mins), first(&self.maxs))
    }

    /// `steadystate_deviation`.
    fn deviation_check(&mut self, iops: u64, bw: u64) -> bool {
        let tail = self.tail as usize;
        self.bw_data[tail] = bw;
        self.iops_data[tail] = iops;
        self.slide_extremes(if self.opts.iops { iops } else { bw });
        if self.window_full() {
            if !self.buffer_full {
                self.sum_y =
                    (0..self.dur as usize).fold(0u64, |s, i| s.wrapping_add(self.value(i)));
                self.buffer_full = true;
            } else {
                self.sum_y = self
                    .sum_y
                    .wrapping_sub(self.oldest_y)
                    .wrapping_add(self.value(tail));
            }
            self.oldest_y = self.value(self.head as usize);
            let mean = self.sum_y as f64 / self.dur as f64;
            // The largest |v - mean| is at the window's smallest or largest value (the
            // rounding of a difference is monotone), so the window's extremes, kept as it
            // slides, give fio's scan of every sample in O(1).
            let (lo, hi) = self.extremes();
            self.deviation = (lo as f64 - mean).abs().max((hi as f64 - mean).abs());
            self.criterion = if self.opts.pct {
                100.0 * self.deviation / mean
            } else {
                self.deviation
            };
            if attained(self.criterion, self.opts.limit) {
                return true;
            }
        }
        self.advance();
        false
    }

    /// What fio's report shows (`show_ss_normal`, the JSON `steadystate` object).
    pub(crate) fn report(&self) -> SteadyStateReport {
        let dur = self.dur as usize;
        // "If ss was attained or the buffer is not full, ss->head points to the first element
        // in the list; otherwise it actually points to the second element."
        let first = if self.attained || !self.buffer_full {
            self.head as usize
        } else if self.head == 0 {
            dur.saturating_sub(1)
        } else {
            self.head as usize - 1
        };
        let order = |v: &[u64]| -> Vec<u64> {
            if v.is_empty() {
                return vec![0; dur];
            }
            (0..dur).map(|l| v[(first + l) % dur]).collect()
        };
        SteadyStateReport {
            iops: self.opts.iops,
            slope: self.opts.slope,
            pct: self.opts.pct,
            limit: self.opts.limit,
            dur: self.dur,
            attained: self.attained,
            criterion: self.criterion,
            max_deviation: self.deviation,
            slope_value: self.slope,
            iops_data: order(&self.iops_data),
            bw_data: order(&self.bw_data),
        }
    }
}

impl Sim {
    /// Set up fio's steady-state check when a job asks for it (`steadystate_setup`): the
    /// window goes to each job, or with `group_reporting` to each group's last job; the
    /// helper thread's first check is one period after the run starts.
    pub(crate) fn steadystate_setup(&mut self) {
        let with_ss: Vec<usize> = (0..self.tasks.len())
            .filter(|&t| self.tasks[t].ss.is_some())
            .collect();
        if with_ss.is_empty() {
            return;
        }
        // fio's loop: every job without `group_reporting`; of those with it, the last of each
        // run of one group id.
        let (grouped, alone): (Vec<usize>, Vec<usize>) =
            with_ss.iter().partition(|&&t| self.group_reporting[t]);
        let group = |t: usize| self.tasks[t].groupid;
        let last_of_runs: Vec<usize> = grouped
            .iter()
            .enumerate()
            .filter(|&(i, &t)| grouped.get(i + 1).is_none_or(|&n| group(n) != group(t)))
            .map(|(_, &t)| t)
            .collect();
        for t in alone.into_iter().chain(last_of_runs) {
            if let Some(ss) = self.tasks[t].ss.as_mut() {
                ss.alloc();
            }
        }
        self.ss_tick_reset(0);
    }

    /// The helper thread's timers restart (`helper_reset`, at a ramp's end): the next check
    /// is one period after `now`.
    pub(crate) fn ss_tick_reset(&mut self, now: Ns) {
        let slot = self.ss_timer_slot();
        // First among the events of its instant (see the module doc).
        self.evq.set_timer(
            slot,
            now + STEADYSTATE_NS,
            EventQueue::<Ev>::FIRST_AT_ITS_TIME,
            Ev::SteadyStateCheck,
        );
    }

    /// A job still needs the check: it has one, has not attained, and has not ended.
    pub(crate) fn ss_live(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| t.ss.as_ref().is_some_and(|s| !s.attained) && t.state != TaskState::Done)
    }

    /// The event queue's timer slot for the check: the one after the hardware queues'.
    fn ss_timer_slot(&self) -> u32 {
        u32::from(self.queue.nr_hw_queues())
    }

    /// The check is no longer needed once every job that asked for it has ended: it must
    /// not keep the run's clock going after the last I/O.
    pub(crate) fn ss_tick_stop_if_done(&mut self) {
        if !self.ss_live() {
            let slot = self.ss_timer_slot();
            self.evq.cancel_timer(slot);
        }
    }

    /// `steadystate_check`, then the next period.
    pub(crate) fn steadystate_check(&mut self, now: Ns) {
        let mut prev_groupid: Option<u32> = None;
        let (mut group_bw, mut group_iops, mut group_ramp_over) = (0u64, 0u64, 0u32);
        let mut terminate: Vec<usize> = Vec::new();
        for t in 0..self.tasks.len() {
            let group_reporting = self.group_reporting[t];
            let task = &mut self.tasks[t];
            let groupid = task.groupid;
            // Jobs not started or in their ramp (`TD_RAMP`, before `TD_SETTING_UP`), and
            // jobs that ended, are passed over.
            let in_ramp = !task.ramp_over && task.stats.start_ns > task.start_ns;
            if task.state != TaskState::Running || in_ramp {
                continue;
            }
            let Some(ss) = task.ss.as_mut() else { continue };
            if ss.attained {
                continue;
            }
            if !group_reporting || prev_groupid != Some(groupid) {
                (group_bw, group_iops, group_ramp_over) = (0, 0, 0);
            }
            prev_groupid = Some(groupid);
            // "Begin recording data one second after ss->ramp_time has elapsed." fio's helper
            // thread starts before the jobs, so its checks fall just before each whole
            // second of a job's time (about 0.1 s before, measured with fio 3.33) and the
            // `>=` of the check that lands on the boundary here fails there: strictly past
            // the boundary gives fio's count of checks.
            if ss.opts.ramp_ns > 0
                && !ss.ramp_over
                && now.saturating_sub(ss.epoch) > ss.opts.ramp_ns + STEADYSTATE_NS
            {
                ss.ramp_over = true;
            }
            let (td_iops, td_bytes) = (task.ss_ios, task.ss_bytes);
            // `mtime_since` in whole ms; fio's helper thread is never exactly on the job's
            // start, where a zero would divide: a check at that instant takes no sample.
            let rate_ms = now.saturating_sub(ss.prev_time) / 1_000_000;
            if rate_ms == 0 {
                continue;
            }
            ss.prev_time = now;
            if ss.ramp_over {
                // fio's unsigned arithmetic: the counters restart at the end of a ramp
                // (`reset_all_stats`) while `prev_*` do not, and the difference wraps.
                group_bw = group_bw.wrapping_add(
                    1000u64.wrapping_mul(td_bytes.wrapping_sub(ss.prev_bytes)) / rate_ms,
                );
                group_iops = group_iops.wrapping_add(
                    1000u64.wrapping_mul(td_iops.wrapping_sub(ss.prev_iops)) / rate_ms,
                );
                group_ramp_over += 1;
            }
            ss.prev_iops = td_iops;
            ss.prev_bytes = td_bytes;
            if group_reporting && !ss.data {
                continue;
            }
            if group_ramp_over == 0 {
                continue;
            }
            let done = if ss.opts.slope {
                ss.slope_check(group_iops, group_bw)
            } else {
                ss.deviation_check(group_iops, group_bw)
            };
            if done {
                if group_reporting {
                    for (u, other) in self.tasks.iter().enumerate() {
                        if other.groupid == groupid && other.ss.is_some() {
                            terminate.push(u);
                        }
                    }
                } else {
                    terminate.push(t);
                }
            }
        }
        for t in terminate {
            let task = &mut self.tasks[t];
            if let Some(ss) = task.ss.as_mut() {
                ss.attained = true;
            }
            self.mark_terminate(t, now);
        }
        if self.ss_live() {
            self.ss_tick_reset(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's `usec_sleep` loop, slice by slice (`ns_granularity` just above 0).
    fn by_slices(from: Ns, until: Ns, now: Ns) -> Option<Ns> {
        let mut at = from;
        let mut left = until.saturating_sub(from) / 1_000;
        while left > 0 {
            let ts = left - 1;
            let slice = (ts / 1_000_000).min(1) * 1_000_000 + ts % 1_000_000 + 1;
            at += slice * 1_000;
            left -= slice;
            if at >= now && left > 0 {
                return Some(at);
            }
        }
        None
    }

    /// The closed form gives the loop's slice ends: 5 s sleeps 2, 2 and 1 s; 2.5 s sleeps
    /// 1.5 and 1 s; under a second is one slice.
    #[test]
    fn sleep_slices_follow_usec_sleep() {
        assert_eq!(
            usec_sleep_notice(0, 5_000_000_000, 3_000_000_000),
            Some(4_000_000_000)
        );
        assert_eq!(
            usec_sleep_notice(0, 2_500_000_000, 100),
            Some(1_500_000_000)
        );
        assert_eq!(usec_sleep_notice(0, 900_000_000, 100), None);
        let mut r = blksim_core::Rng::from_seed(7);
        for _ in 0..20_000 {
            let from = r.below(1 << 40);
            let until = from + r.below(20_000_000_000);
            let now = from + r.below(until - from + 1);
            assert_eq!(
                usec_sleep_notice(from, until, now),
                by_slices(from, until, now),
                "{from} {until} {now}"
            );
        }
    }
}
