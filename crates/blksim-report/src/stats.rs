//! Per-job statistics, fed by the simulation engine in virtual time.
//!
//! Mirrors fio's `struct thread_stat` and the functions that fill it: `add_stat_sample`
//! (Welford), `add_clat_sample` / `add_slat_sample` / `add_lat_sample`,
//! `io_u_mark_latency`, `io_u_mark_depth`, `io_u_mark_submit` / `io_u_mark_complete`,
//! `__add_samples` (bw / iops windows) and, for group_reporting, `sum_thread_stats`.
//! Everything is fixed-size after `JobStats::new`; recording an I/O never allocates.

use crate::hist::{LatHist, DEFAULT_PERCENTILES};

/// Direction indexes, as fio's `enum fio_ddir`.
pub const DDIR_READ: usize = 0;
pub const DDIR_WRITE: usize = 1;
pub const DDIR_TRIM: usize = 2;
/// Number of read/write/trim directions (`DDIR_RWDIR_CNT`).
pub const DDIR_RWDIR_CNT: usize = 3;

/// `FIO_IO_U_MAP_NR`: depth / submit / complete distributions have 7 buckets.
pub const IO_U_MAP_NR: usize = 7;
/// `FIO_IO_U_LAT_N_NR`, `FIO_IO_U_LAT_U_NR`, `FIO_IO_U_LAT_M_NR`.
pub const LAT_N_NR: usize = 10;
pub const LAT_U_NR: usize = 10;
pub const LAT_M_NR: usize = 12;

/// fio's `LOG_MSEC_SLACK` on Linux: a bw/iops window may be closed up to 1 ms early.
pub const LOG_MSEC_SLACK_MS: u64 = 1;

/// Options that shape what is collected. Plain data; `Default` is fio's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct StatsOptions {
    /// `percentile_list` (sorted ascending by `JobStats::new`, as fio's qsort does).
    pub percentile_list: Vec<f64>,
    /// `percentile_precision` (decimals in the normal output's percentile keys).
    pub percentile_precision: u32,
    /// `clat_percentiles` (default on), `lat_percentiles`, `slat_percentiles`.
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// Record submission latency. fio records none for sync engines (`FIO_SYNCIO`) and with
    /// `disable_slat`; the engine knows which engine it models and sets this.
    pub record_slat: bool,
    /// `disable_clat`, `disable_lat`, `disable_bw_measurement`.
    pub disable_clat: bool,
    pub disable_lat: bool,
    pub disable_bw: bool,
    /// io_u.c's `gtod_reduce()` (the option, or clat, slat and bw all disabled): no per-I/O
    /// IOPS log samples. The option itself also disables the four latencies and bandwidth
    /// samples, which the job's options already say.
    pub gtod_reduce: bool,
    /// `bwavgtime` / `iopsavgtime` in ms (default 500).
    pub bwavgtime_ms: u64,
    pub iopsavgtime_ms: u64,
    /// `ramp_time` in ns: completions before `start + ramp` are not counted and the
    /// runtime and sampling clocks start at the end of the ramp (fio resets the stats then).
    pub ramp_ns: u64,
    /// `stats=0` turns all collection off.
    pub stats: bool,
    /// A per-I/O bandwidth / IOPS log (`write_bw_log` / `write_iops_log` with no averaging
    /// window, fio's `per_unit_log`): fio then samples bw and IOPS per I/O
    /// (`add_bw_sample`: bytes × 10^6 / clat ns; `add_iops_sample`: 1) instead of per window,
    /// and the report's bw / IOPS statistics are those samples.
    pub bw_per_io: bool,
    pub iops_per_io: bool,
    /// Keep each bw / IOPS window's rates in [`JobStats::window_log`] for a windowed log.
    pub keep_windows: bool,
    /// Keep I/Os and bytes over time in [`JobStats::timeline`] (the HTML report's charts).
    pub timeline: bool,
}

impl Default for StatsOptions {
    fn default() -> Self {
        StatsOptions {
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            percentile_precision: 2,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            record_slat: true,
            disable_clat: false,
            disable_lat: false,
            disable_bw: false,
            gtod_reduce: false,
            bwavgtime_ms: 500,
            iopsavgtime_ms: 500,
            ramp_ns: 0,
            stats: true,
            bw_per_io: false,
            iops_per_io: false,
            keep_windows: false,
            timeline: false,
        }
    }
}

/// fio's `struct io_stat`: min, max, Welford running mean and S, sample count, plus the
/// histogram fio keeps beside it when percentiles are enabled for this statistic.
#[derive(Clone, Debug, PartialEq)]
pub struct LatStat {
    pub min: u64,
    pub max: u64,
    pub samples: u64,
    pub mean: f64,
    /// Welford's S (sum of squared deviations).
    pub s: f64,
    pub hist: Option<LatHist>,
}

impl Default for LatStat {
    fn default() -> Self {
        Self::new(false)
    }
}

impl LatStat {
    /// `init_thread_stat_min_vals`: min starts at ULONG_MAX.
    pub fn new(with_hist: bool) -> Self {
        LatStat {
            min: u64::MAX,
            max: 0,
            samples: 0,
            mean: 0.0,
            s: 0.0,
            hist: if with_hist {
                Some(LatHist::new())
            } else {
                None
            },
        }
    }

    /// Build from summary numbers (tests, imports). `stddev` is the sample stddev.
    pub fn from_summary(min: u64, max: u64, mean: f64, stddev: f64, n: u64) -> Self {
        let s = if n > 1 {
            stddev * stddev * (n - 1) as f64
        } else {
            0.0
        };
        LatStat {
            min: if n == 0 { u64::MAX } else { min },
            max,
            samples: n,
            mean,
            s,
            hist: None,
        }
    }

    /// `add_stat_sample` exactly (same operation order, so same doubles as fio).
    #[inline]
    pub fn add(&mut self, data: u64) {
        self.add_stat_only(data);
        if let Some(h) = self.hist.as_mut() {
            h.add(data);
        }
    }

    #[inline]
    fn add_stat_only(&mut self, data: u64) {
        let val = data as f64;
        if data > self.max {
            self.max = data;
        }
        if data < self.min {
            self.min = data;
        }
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// `calc_lat`: (min, max, mean, sample stddev), or None without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        let dev = if n > 1.0 {
            (self.s / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min, self.max, self.mean, dev))
    }

    pub fn stddev(&self) -> f64 {
        self.calc().map(|c| c.3).unwrap_or(0.0)
    }

    /// `sum_stat(dst, src, false)` / `__sum_stat`: parallel-variance merge of two
    /// latency statistics, plus the histogram sum `sum_thread_stats` does separately.
    pub fn merge(&mut self, src: &LatStat) {
        if let (Some(d), Some(s)) = (self.hist.as_mut(), src.hist.as_ref()) {
            d.merge(s);
        } else if self.hist.is_none() {
            if let Some(s) = src.hist.as_ref() {
                self.hist = Some(s.clone());
            }
        }
        if src.samples == 0 {
            return;
        }
        let first = self.samples == 0;
        self.min = self.min.min(src.min);
        self.max = self.max.max(src.max);
        let (mean, s) = if first {
            (src.mean, src.s)
        } else {
            let delta = src.mean - self.mean;
            let ds = self.samples as f64;
            let ss = src.samples as f64;
            let mean = ((src.mean * ss) + (self.mean * ds)) / (ds + ss);
            // fio: pow(delta, 2.0) * (dst->samples * src->samples) / (dst + src), the
            // product of the counts done in integer arithmetic.
            let prod = (self.samples.wrapping_mul(src.samples)) as f64;
            let s = src.s + self.s + delta.powi(2) * prod / (self.samples + src.samples) as f64;
            (mean, s)
        };
        self.samples += src.samples;
        self.mean = mean;
        self.s = s;
    }

    /// `sum_stat(dst, src, true)`: bw / iops statistics of a group are plain sums
    /// (min, max, mean and S are added, so the group's bw is the sum of its jobs').
    pub fn merge_pure_sum(&mut self, src: &LatStat) {
        if src.samples == 0 {
            return;
        }
        if self.samples == 0 {
            self.min = src.min;
            self.max = src.max;
            self.samples = src.samples;
            self.mean = src.mean;
            self.s = src.s;
        } else {
            self.min += src.min;
            self.max += src.max;
            self.samples += src.samples;
            self.mean += src.mean;
            self.s += src.s;
        }
    }
}

/// A priority's sample of an I/O: `add_clat_sample`'s, or `add_lat_sample`'s with
/// `lat_percentiles` (only jobs whose engine gives priorities of their own get here).
#[cold]
#[inline(never)]
fn record_prio(o: &StatsOptions, d: &mut DirStats, prio: u16, slat_ns: u64, clat_ns: u64) {
    let p = &mut d.prios[prio as usize].lat;
    if o.lat_percentiles {
        if !o.disable_lat {
            p.add(slat_ns + clat_ns);
        }
    } else if !o.disable_clat {
        p.add(clat_ns);
    }
}

/// One I/O priority's latencies in a direction (`struct clat_prio_stat`): completion
/// latencies, or total latencies with `lat_percentiles` (fio keeps the `clat_` names for
/// both), with their histogram when percentiles are on.
#[derive(Clone, Debug, PartialEq)]
pub struct PrioStat {
    /// The priority value (class above bit 13, level below).
    pub ioprio: u32,
    pub lat: LatStat,
}

/// Statistics of one direction (read, write or trim) of one job.
#[derive(Clone, Debug, PartialEq)]
pub struct DirStats {
    pub io_bytes: u64,
    /// `total_io_u`: I/Os counted for this direction (blksim counts at completion).
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    pub slat: LatStat,
    pub clat: LatStat,
    pub lat: LatStat,
    /// KiB/s per `bwavgtime` window.
    pub bw: LatStat,
    /// I/Os per second per `iopsavgtime` window.
    pub iops: LatStat,
    /// `ts->runtime[ddir]` in ms (0 when the direction did no I/O).
    pub runtime_ms: u64,
    /// A replayed trace's own response times for this direction (MSR's `ResponseTime`,
    /// a blktrace's queue-to-completion times), with their histogram; empty otherwise.
    pub recorded: LatStat,
    /// Latencies per I/O priority (`ts->clat_prio[ddir]`): index 0 is the job's own
    /// priority, the others the engine's `cmdprio` values; empty when the engine sets none
    /// for this direction.
    pub prios: Vec<PrioStat>,
    // Sampling state (fio's td->stat_io_bytes / stat_io_blocks).
    stat_io_bytes: u64,
    stat_io_blocks: u64,
}

impl DirStats {
    fn new(o: &StatsOptions) -> Self {
        DirStats {
            io_bytes: 0,
            total_ios: 0,
            short_ios: 0,
            drop_ios: 0,
            slat: LatStat::new(o.slat_percentiles),
            clat: LatStat::new(o.clat_percentiles),
            lat: LatStat::new(o.lat_percentiles),
            recorded: LatStat::new(true),
            prios: Vec::new(),
            bw: LatStat::new(false),
            iops: LatStat::new(false),
            runtime_ms: 0,
            stat_io_bytes: 0,
            stat_io_blocks: 0,
        }
    }

    /// `get_nr_prios_with_samples`: fio shows the per-priority latencies from two on.
    pub fn prios_with_samples(&self) -> usize {
        self.prios.iter().filter(|p| p.lat.samples > 0).count()
    }

    /// A direction fio would print (`show_thread_status_normal`: io_bytes != 0).
    pub fn has_io(&self) -> bool {
        self.io_bytes != 0
    }

    /// `bw_bytes` = 1000 * io_bytes / runtime (bytes/s), 0 without runtime.
    pub fn bw_bytes(&self) -> u64 {
        if self.runtime_ms == 0 {
            0
        } else {
            ((1000u128 * self.io_bytes as u128) / self.runtime_ms as u128) as u64
        }
    }

    /// Integer IOPS as the normal output computes it.
    pub fn iops_int(&self) -> u64 {
        (1000 * self.total_ios)
            .checked_div(self.runtime_ms)
            .unwrap_or(0)
    }

    /// JSON `iops`: `(1000.0 * total_io_u) / runt` in double.
    pub fn iops_f64(&self) -> f64 {
        if self.runtime_ms == 0 {
            0.0
        } else {
            (1000.0 * self.total_ios as f64) / self.runtime_ms as f64
        }
    }

    fn merge(&mut self, src: &DirStats) {
        self.clat.merge(&src.clat);
        self.slat.merge(&src.slat);
        self.lat.merge(&src.lat);
        self.recorded.merge(&src.recorded);
        self.bw.merge_pure_sum(&src.bw);
        self.iops.merge_pure_sum(&src.iops);
        self.io_bytes += src.io_bytes;
        self.runtime_ms = self.runtime_ms.max(src.runtime_ms);
        self.total_ios += src.total_ios;
        self.short_ios += src.short_ios;
        self.drop_ios += src.drop_ios;
    }
}

/// One bw/iops window that has been closed but not yet committed: fio's helper thread
/// does not get to sample a window that ends within `LOG_MSEC_SLACK` of the job's end
/// (the job has stopped), which is why an N-second time_based job reports 2N-1 samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct PendingWindow {
    active: bool,
    end_ns: u64,
    vals: [Option<u64>; DDIR_RWDIR_CNT],
}

/// What fio counts before the ramp's end, shown only by a job that ends inside its ramp.
/// fio adds `io_bytes`, `total_io_u` and the depth, submit and complete marks from the
/// job's start and clears them when the ramp ends (`ramp_time_over` → `reset_all_stats`,
/// `reset_io_stats`); latencies and bw/iops samples are never taken in the ramp
/// (`should_account`, `add_bw_samples`' `in_ramp_time`). A job that stops first (by size,
/// `number_ios` or `io_size`) never reaches the reset, so fio reports these from its start.
#[derive(Clone, Debug, Default, PartialEq)]
struct RampTally {
    io_bytes: [u64; DDIR_RWDIR_CNT],
    total_ios: [u64; DDIR_RWDIR_CNT],
    sync_total_ios: u64,
    io_u_map: [u64; IO_U_MAP_NR],
    io_u_submit: [u64; IO_U_MAP_NR],
    io_u_complete: [u64; IO_U_MAP_NR],
    total_submit: u64,
    total_complete: u64,
}

/// Everything fio's `struct thread_stat` holds for one job (or, after `merge`, a group).
#[derive(Clone, Debug, PartialEq)]
pub struct JobStats {
    /// The job's own I/O priority (`ts->ioprio`: `prio`/`prioclass`, 0 without them).
    pub ioprio: u32,
    pub opts: StatsOptions,
    pub dir: [DirStats; DDIR_RWDIR_CNT],
    /// fsync/fdatasync latency (`sync_stat`), with `io_u_sync_plat` when percentiles on.
    pub sync: LatStat,
    /// `total_io_u[DDIR_SYNC]`.
    pub sync_total_ios: u64,
    /// `io_u_map`: buckets 1, 2, 4, 8, 16, 32, >=64 of the queue depth at submission.
    pub io_u_map: [u64; IO_U_MAP_NR],
    /// `io_u_submit` / `io_u_complete`: buckets 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
    pub io_u_submit: [u64; IO_U_MAP_NR],
    pub io_u_complete: [u64; IO_U_MAP_NR],
    pub total_submit: u64,
    pub total_complete: u64,
    /// `io_u_lat_n/u/m`: completion latency distribution, counted per I/O from the exact
    /// clat value (`io_u_mark_latency`).
    pub io_u_lat_n: [u64; LAT_N_NR],
    pub io_u_lat_u: [u64; LAT_U_NR],
    pub io_u_lat_m: [u64; LAT_M_NR],
    /// CPU accounting; the simulator has no CPU model, the caller may fill these.
    pub usr_time_ms: u64,
    pub sys_time_ms: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// `total_run_time` in ms (JSON `job_runtime`, the cpu% denominator).
    pub total_run_time_ms: u64,
    /// Virtual start of the job and (after `finish`) its end, ns.
    pub start_ns: u64,
    pub end_ns: u64,
    // Sampling clocks.
    bw_sample_ns: u64,
    iops_sample_ns: u64,
    /// No window closes at or before this time: [`Self::advance_samples`] has nothing to do
    /// until a completion comes later (0 until its first call works it out).
    samples_due_ns: u64,
    /// Completions count from here: `start_ns`, or never with `stats=0`.
    count_from: u64,
    bw_pending: PendingWindow,
    iops_pending: PendingWindow,
    finished: bool,
    sample_window_ops: u64,
    /// With `keep_windows`: the window rates committed since the caller last drained it.
    pub window_log: Vec<WindowSample>,
    /// With `timeline`: completions over time.
    pub timeline: Option<crate::timeline::Timeline>,
    /// Counts before the ramp's end (`ramp_ns` > 0 only).
    ramp: Box<RampTally>,
    /// The job ended inside its ramp: the report holds what fio counts from the job's start
    /// (I/O, depths; no latencies), as fio never reached `reset_all_stats`.
    pub ended_in_ramp: bool,
}

/// One bw or IOPS window's rate for one direction, as the helper thread logs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSample {
    pub is_bw: bool,
    /// End of the window, ns of virtual time.
    pub end_ns: u64,
    pub ddir: usize,
    /// KiB/s or I/Os per second.
    pub value: u64,
}

/// When completions start to count: at `start_ns`, or never with `stats=0`.
fn count_from(stats: bool, start_ns: u64) -> u64 {
    if stats {
        start_ns
    } else {
        u64::MAX
    }
}

impl JobStats {
    /// Stats for a job starting at `start_ns` of virtual time.
    pub fn new(start_ns: u64, opts: &StatsOptions) -> Self {
        let mut o = opts.clone();
        // calc_clat_percentiles qsorts the list in place; every later use sees it sorted.
        o.percentile_list
            .sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        o.percentile_list.truncate(crate::hist::LIST_MAX_LEN);
        let epoch = start_ns + o.ramp_ns;
        let d = DirStats::new(&o);
        JobStats {
            ioprio: 0,
            dir: [d.clone(), d.clone(), d],
            sync: LatStat::new(o.clat_percentiles || o.lat_percentiles),
            sync_total_ios: 0,
            io_u_map: [0; IO_U_MAP_NR],
            io_u_submit: [0; IO_U_MAP_NR],
            io_u_complete: [0; IO_U_MAP_NR],
            total_submit: 0,
            total_complete: 0,
            io_u_lat_n: [0; LAT_N_NR],
            io_u_lat_u: [0; LAT_U_NR],
            io_u_lat_m: [0; LAT_M_NR],
            usr_time_ms: 0,
            sys_time_ms: 0,
            ctx: 0,
            majf: 0,
            minf: 0,
            total_run_time_ms: 0,
            start_ns: epoch,
            end_ns: epoch,
            bw_sample_ns: epoch,
            iops_sample_ns: epoch,
            samples_due_ns: 0,
            count_from: count_from(o.stats, epoch),
            bw_pending: PendingWindow::default(),
            iops_pending: PendingWindow::default(),
            finished: false,
            sample_window_ops: 0,
            window_log: Vec::new(),
            timeline: o.timeline.then(|| crate::timeline::Timeline::new(epoch)),
            opts: o,
            ramp: Box::default(),
            ended_in_ramp: false,
        }
    }

    /// `opts.stats && now_ns >= start_ns`, from one field: it is asked several times per I/O.
    #[inline]
    fn counting(&self, now_ns: u64) -> bool {
        debug_assert_eq!(self.count_from, count_from(self.opts.stats, self.start_ns));
        now_ns >= self.count_from
    }

    /// Not [`Self::counting`]: the tally of the ramp, if `now_ns` is in it.
    #[cold]
    fn ramp_tally(&mut self, now_ns: u64) -> Option<&mut RampTally> {
        (self.opts.stats && now_ns < self.start_ns).then_some(&mut *self.ramp)
    }

    /// A read/write/trim I/O that ended with an error: fio counted it in `total_io_u` when
    /// it queued it (`td_io_queue`), and it brings no bytes and no latency.
    pub fn record_failed(&mut self, ddir: usize, now_ns: u64) {
        if self.counting(now_ns) {
            self.dir[ddir].total_ios += 1;
        }
    }

    /// A completed read/write/trim I/O (fio's `account_io_completion`): `bytes`
    /// transferred, submission latency `slat_ns` (start to issue) and completion latency
    /// `clat_ns` (issue to completion); total latency is `slat + clat`.
    #[inline]
    pub fn record_io(&mut self, ddir: usize, now_ns: u64, bytes: u64, slat_ns: u64, clat_ns: u64) {
        self.record_io_prio(ddir, now_ns, bytes, slat_ns, clat_ns, 0);
    }

    /// The priorities a direction's I/O may take (`init_cmdprio_values`, `init_ts_clat_prio`):
    /// the job's own ([`Self::ioprio`]) first, then each other value once; `prio` of
    /// [`Self::record_io_prio`] indexes this list. None of them for a direction without.
    pub fn set_prios(&mut self, ddir: usize, others: &[u32]) {
        let ioprio = self.ioprio;
        let hist = self.opts.clat_percentiles || self.opts.lat_percentiles;
        let d = &mut self.dir[ddir];
        d.prios.clear();
        if others.is_empty() {
            return;
        }
        for &p in std::iter::once(&ioprio).chain(others) {
            if !d.prios.iter().any(|s| s.ioprio == p) {
                d.prios.push(PrioStat {
                    ioprio: p,
                    lat: LatStat::new(hist),
                });
            }
        }
    }

    /// Empty statistics for a job (re)starting at `start_ns` with `opts`, kept by the same
    /// priorities: at the job's start, and at `reset_all_stats` in its middle.
    pub fn restarted(&self, start_ns: u64, opts: &StatsOptions) -> JobStats {
        let mut out = JobStats::new(start_ns, opts);
        out.ioprio = self.ioprio;
        for (d, s) in out.dir.iter_mut().zip(&self.dir) {
            d.prios = s
                .prios
                .iter()
                .map(|p| PrioStat {
                    ioprio: p.ioprio,
                    lat: LatStat::new(p.lat.hist.is_some()),
                })
                .collect();
        }
        out
    }

    /// [`Self::record_io`] of an I/O that took priority `prio` (an index of the direction's
    /// [`Self::set_prios`]; 0, the job's own, when it has none).
    #[inline]
    pub fn record_io_prio(
        &mut self,
        ddir: usize,
        now_ns: u64,
        bytes: u64,
        slat_ns: u64,
        clat_ns: u64,
        prio: u16,
    ) {
        debug_assert!(ddir < DDIR_RWDIR_CNT);
        if !self.counting(now_ns) {
            if let Some(r) = self.ramp_tally(now_ns) {
                r.io_bytes[ddir] += bytes;
                r.total_ios[ddir] += 1;
            }
            return;
        }
        // Close any bw/iops windows that ended before this completion.
        self.advance_samples(now_ns);
        if let Some(t) = self.timeline.as_mut() {
            t.add(now_ns, ddir, bytes);
        }
        let o = &self.opts;
        let (record_slat, disable_lat, disable_clat) =
            (o.record_slat, o.disable_lat, o.disable_clat);
        let d = &mut self.dir[ddir];
        if record_slat {
            d.slat.add(slat_ns);
        }
        if !disable_lat {
            d.lat.add(slat_ns + clat_ns);
        }
        if !disable_clat {
            d.clat.add(clat_ns);
        }
        if !d.prios.is_empty() {
            record_prio(o, d, prio, slat_ns, clat_ns);
        }
        d.io_bytes += bytes;
        d.total_ios += 1;
        // `account_io_completion` with a per-I/O bw / iops log.
        if o.bw_per_io && !o.disable_bw {
            let rate = (bytes * 1_000_000).checked_div(clat_ns).unwrap_or(0);
            d.bw.add(rate);
        }
        if o.iops_per_io && !o.gtod_reduce {
            d.iops.add(1);
        }
        if !disable_clat {
            self.mark_latency(clat_ns);
        }
    }

    /// A short (partial) I/O, `short_io_u`.
    pub fn record_short(&mut self, ddir: usize) {
        self.dir[ddir].short_ios += 1;
    }

    /// A dropped I/O, `drop_io_u`.
    pub fn record_drop(&mut self, ddir: usize) {
        self.dir[ddir].drop_ios += 1;
    }

    /// A sync that ended with an error: counted when queued (`td_io_queue`: `total_io_u`
    /// of DDIR_SYNC), with no latency.
    pub fn record_sync_failed(&mut self, now_ns: u64, fsync: bool) {
        self.count_sync(now_ns, fsync);
    }

    /// Count a sync queued (an fsync in `sync.total_ios`, the ramp's tally during the ramp);
    /// whether the stats are counting.
    fn count_sync(&mut self, now_ns: u64, fsync: bool) -> bool {
        if !self.counting(now_ns) {
            if let Some(r) = self.ramp_tally(now_ns) {
                r.sync_total_ios += fsync as u64;
            }
            return false;
        }
        self.sync_total_ios += fsync as u64;
        true
    }

    /// A completed fsync/fdatasync (`add_sync_clat_sample`). `fsync` counts it in
    /// `total_io_u[DDIR_SYNC]`, which fio's `sync.total_ios` shows; an fdatasync
    /// (`DDIR_DATASYNC`) adds only its latency.
    pub fn record_sync(&mut self, now_ns: u64, lat_ns: u64, fsync: bool) {
        // Counted as any sync queued, then its latency.
        if self.count_sync(now_ns, fsync) && !self.opts.disable_clat {
            self.sync.add(lat_ns);
        }
    }

    /// One I/O submitted with `cur_depth` I/Os in flight including itself
    /// (`io_u_mark_depth(td, 1)`), at `now_ns`.
    #[inline]
    pub fn record_depth(&mut self, now_ns: u64, cur_depth: u32) {
        self.record_depth_n(now_ns, cur_depth, 1);
    }

    /// `io_u_mark_depth(td, nr)`: `nr` I/Os submitted at depth `cur_depth`. Like the
    /// submit and complete marks, not during `ramp_time`: `reset_io_stats` clears
    /// `io_u_map`, `io_u_submit` and `io_u_complete` when the ramp ends.
    #[inline]
    pub fn record_depth_n(&mut self, now_ns: u64, cur_depth: u32, nr: u32) {
        let idx = match cur_depth {
            0 | 1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        if !self.counting(now_ns) {
            if let Some(r) = self.ramp_tally(now_ns) {
                r.io_u_map[idx] += nr as u64;
            }
            return;
        }
        self.io_u_map[idx] += nr as u64;
    }

    /// One submission call that queued `batch` I/Os (`io_u_mark_submit`), at `now_ns`.
    #[inline]
    pub fn record_submit(&mut self, now_ns: u64, batch: u32) {
        if !self.counting(now_ns) {
            if let Some(r) = self.ramp_tally(now_ns) {
                r.io_u_submit[map_idx(batch)] += 1;
                r.total_submit += 1;
            }
            return;
        }
        self.io_u_submit[map_idx(batch)] += 1;
        self.total_submit += 1;
    }

    /// One reap call that completed `batch` I/Os (`io_u_mark_complete`), at `now_ns`.
    #[inline]
    pub fn record_complete(&mut self, now_ns: u64, batch: u32) {
        if !self.counting(now_ns) {
            if let Some(r) = self.ramp_tally(now_ns) {
                r.io_u_complete[map_idx(batch)] += 1;
                r.total_complete += 1;
            }
            return;
        }
        self.io_u_complete[map_idx(batch)] += 1;
        self.total_complete += 1;
    }

    /// `io_u_mark_latency`: bucket the exact clat into ns / us / ms ranges.
    #[inline]
    fn mark_latency(&mut self, nsec: u64) {
        // Labels 2,4,10,20,50,100,250,500,750,1000: bucket i holds [label(i-1), label(i)).
        #[inline]
        fn idx10(v: u64) -> usize {
            match v {
                0..=1 => 0,
                2..=3 => 1,
                4..=9 => 2,
                10..=19 => 3,
                20..=49 => 4,
                50..=99 => 5,
                100..=249 => 6,
                250..=499 => 7,
                500..=749 => 8,
                _ => 9,
            }
        }
        if nsec < 1000 {
            self.io_u_lat_n[idx10(nsec)] += 1;
        } else if nsec < 1_000_000 {
            self.io_u_lat_u[idx10(nsec / 1000)] += 1;
        } else {
            let msec = nsec / 1_000_000;
            let idx = match msec {
                0..=999 => idx10(msec),
                1000..=1999 => 10,
                _ => 11,
            };
            self.io_u_lat_m[idx] += 1;
        }
    }

    /// Close every bw / iops window whose boundary lies before `now_ns`, in constant time:
    /// only the first of them can hold data (nothing completed since the last call), the
    /// others are empty and add no sample, so they are skipped in one step. The cost of a run
    /// follows its completions, not the simulated time between them (a 10^8 s thinktime).
    #[inline]
    fn advance_samples(&mut self, now_ns: u64) {
        // Most completions fall inside the current windows (a 500 ms window holds millions of
        // null_blk I/Os): one comparison for them.
        if now_ns > self.samples_due_ns {
            self.advance_samples_slow(now_ns);
        }
    }

    fn advance_samples_slow(&mut self, now_ns: u64) {
        let mut due = u64::MAX;
        // `calc_log_samples`: no window sampling where a per-I/O log samples instead; the
        // helper thread samples whatever `gtod_reduce` and `disable_bw` say (fio 3.33 gives
        // a `gtod_reduce=1` job its bw and iops samples).
        if !self.opts.bw_per_io {
            let w = self.opts.bwavgtime_ms * 1_000_000;
            self.advance_windows(true, w, now_ns);
            if w > 0 {
                due = due.min(self.bw_sample_ns.saturating_add(w));
            }
        }
        if !self.opts.iops_per_io {
            let w = self.opts.iopsavgtime_ms * 1_000_000;
            self.advance_windows(false, w, now_ns);
            if w > 0 {
                due = due.min(self.iops_sample_ns.saturating_add(w));
            }
        }
        self.samples_due_ns = due;
    }

    fn advance_windows(&mut self, is_bw: bool, w: u64, now_ns: u64) {
        let start = if is_bw {
            self.bw_sample_ns
        } else {
            self.iops_sample_ns
        };
        if w == 0 || start.saturating_add(w) >= now_ns {
            return;
        }
        // Windows [start + (k-1)w, start + kw) for k = 1..=n all end before `now_ns`.
        let n = (now_ns - start - 1) / w;
        self.sample_window_ops += 1;
        self.close_window(is_bw, start + w);
        let end = start + n * w;
        if n >= 2 {
            // The first window is no longer the last one: commit it. The n-1 empty windows
            // after it leave only the last, empty, as the pending one.
            let first = if is_bw {
                self.bw_pending
            } else {
                self.iops_pending
            };
            self.commit(is_bw, &first);
            let empty = PendingWindow {
                active: true,
                end_ns: end,
                vals: [None; DDIR_RWDIR_CNT],
            };
            if is_bw {
                self.bw_pending = empty;
            } else {
                self.iops_pending = empty;
            }
        }
        if is_bw {
            self.bw_sample_ns = end;
        } else {
            self.iops_sample_ns = end;
        }
    }

    /// Sample-window steps taken so far (at most one per window kind per completion, whatever
    /// the simulated time between completions).
    pub fn sample_window_ops(&self) -> u64 {
        self.sample_window_ops
    }

    /// `__add_samples` for one window of exactly `avg_time` ms: per direction, skip if no
    /// bytes moved, else rate = delta * 1000 / spent (/ 1024 for bw, KiB/s).
    fn close_window(&mut self, is_bw: bool, end_ns: u64) {
        // Commit the previous window first: it was not the last one.
        let pending = if is_bw {
            self.bw_pending
        } else {
            self.iops_pending
        };
        if pending.active {
            self.commit(is_bw, &pending);
        }
        let spent = if is_bw {
            self.opts.bwavgtime_ms
        } else {
            self.opts.iopsavgtime_ms
        };
        let mut p = PendingWindow {
            active: true,
            end_ns,
            vals: [None; DDIR_RWDIR_CNT],
        };
        for (ddir, d) in self.dir.iter_mut().enumerate() {
            if is_bw {
                let delta = d.io_bytes - d.stat_io_bytes;
                if delta == 0 {
                    continue;
                }
                p.vals[ddir] = Some(delta * 1000 / spent / 1024);
                d.stat_io_bytes = d.io_bytes;
            } else {
                let delta = d.total_ios - d.stat_io_blocks;
                if delta == 0 {
                    continue;
                }
                p.vals[ddir] = Some(delta * 1000 / spent);
                d.stat_io_blocks = d.total_ios;
            }
        }
        if is_bw {
            self.bw_pending = p;
        } else {
            self.iops_pending = p;
        }
    }

    fn commit(&mut self, is_bw: bool, p: &PendingWindow) {
        for (ddir, v) in p.vals.iter().enumerate() {
            if let Some(v) = v {
                if is_bw {
                    self.dir[ddir].bw.add(*v);
                } else {
                    self.dir[ddir].iops.add(*v);
                }
                if self.opts.keep_windows {
                    self.window_log.push(WindowSample {
                        is_bw,
                        end_ns: p.end_ns,
                        ddir,
                        value: *v,
                    });
                }
            }
        }
        if is_bw {
            self.bw_pending.active = false;
        } else {
            self.iops_pending.active = false;
        }
    }

    /// End of the job at `end_ns`: close the sampling windows, set per-direction
    /// runtimes (`update_runtime`: µs elapsed rounded up to ms, only for directions that
    /// moved data) and `total_run_time`.
    pub fn finish(&mut self, end_ns: u64) {
        if self.finished {
            return;
        }
        self.finished = true;
        if end_ns < self.start_ns && self.opts.ramp_ns > 0 {
            self.take_ramp_tally();
        }
        let end_ns = end_ns.max(self.start_ns);
        self.end_ns = end_ns;
        self.advance_samples(end_ns);
        let slack = LOG_MSEC_SLACK_MS * 1_000_000;
        for is_bw in [true, false] {
            let p = if is_bw {
                self.bw_pending
            } else {
                self.iops_pending
            };
            if p.active && p.end_ns + slack < end_ns {
                self.commit(is_bw, &p);
            }
        }
        self.bw_pending.active = false;
        self.iops_pending.active = false;
        let elapsed_ns = end_ns - self.start_ns;
        let elapsed_us = elapsed_ns / 1000;
        let runtime_ms = elapsed_us.div_ceil(1000);
        for d in self.dir.iter_mut() {
            if d.io_bytes != 0 {
                d.runtime_ms = runtime_ms;
            }
        }
        self.total_run_time_ms = elapsed_ns / 1_000_000;
    }

    /// The job ended inside its ramp: fio never reset its counts, so they run from the job's
    /// start, and its runtime too (`td->start` was never moved to the ramp's end).
    fn take_ramp_tally(&mut self) {
        let r = std::mem::take(&mut *self.ramp);
        for (d, (b, n)) in self.dir.iter_mut().zip(r.io_bytes.iter().zip(r.total_ios)) {
            d.io_bytes = *b;
            d.total_ios = n;
        }
        self.sync_total_ios = r.sync_total_ios;
        self.io_u_map = r.io_u_map;
        self.io_u_submit = r.io_u_submit;
        self.io_u_complete = r.io_u_complete;
        self.total_submit = r.total_submit;
        self.total_complete = r.total_complete;
        self.start_ns -= self.opts.ramp_ns;
        self.ended_in_ramp = true;
    }

    /// group_reporting: fold `src` into `self` (`sum_thread_stats`, unified_rw_reporting
    /// off). Latency statistics merge with the parallel-variance formula, bw / iops
    /// statistics are summed, runtimes take the max, counters add.
    pub fn merge(&mut self, src: &JobStats) {
        for (d, s) in self.dir.iter_mut().zip(src.dir.iter()) {
            d.merge(s);
        }
        self.sync.merge(&src.sync);
        self.usr_time_ms += src.usr_time_ms;
        self.sys_time_ms += src.sys_time_ms;
        self.ctx += src.ctx;
        self.majf += src.majf;
        self.minf += src.minf;
        for k in 0..IO_U_MAP_NR {
            self.io_u_map[k] += src.io_u_map[k];
            self.io_u_submit[k] += src.io_u_submit[k];
            self.io_u_complete[k] += src.io_u_complete[k];
        }
        for k in 0..LAT_N_NR {
            self.io_u_lat_n[k] += src.io_u_lat_n[k];
        }
        for k in 0..LAT_U_NR {
            self.io_u_lat_u[k] += src.io_u_lat_u[k];
        }
        for k in 0..LAT_M_NR {
            self.io_u_lat_m[k] += src.io_u_lat_m[k];
        }
        self.sync_total_ios += src.sync_total_ios;
        self.total_run_time_ms += src.total_run_time_ms;
        self.total_submit += src.total_submit;
        self.total_complete += src.total_complete;
        self.start_ns = self.start_ns.min(src.start_ns);
        self.count_from = count_from(self.opts.stats, self.start_ns);
        self.end_ns = self.end_ns.max(src.end_ns);
        match (self.timeline.as_mut(), src.timeline.as_ref()) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.timeline = Some(b.clone()),
            _ => {}
        }
    }

    /// `__show_run_stats` and `sum_clat_prio_stats` for the jobs of a report: per priority
    /// latencies are kept when a job had several (`cmdprio`) or the jobs' own priorities
    /// differ (else `disable_prio_stat`); a job with one priority brings its clat (lat
    /// with `lat_percentiles`) under its own; equal priorities add up, new ones are
    /// appended in the order met.
    pub fn sum_prios(jobs: &[&JobStats]) -> [Vec<PrioStat>; DDIR_RWDIR_CNT] {
        let mut out: [Vec<PrioStat>; DDIR_RWDIR_CNT] = Default::default();
        let Some(first) = jobs.first() else {
            return out;
        };
        let keep = jobs
            .iter()
            .any(|j| j.ioprio != first.ioprio || j.dir.iter().any(|d| !d.prios.is_empty()));
        if !keep {
            return out;
        }
        for (d, dst) in out.iter_mut().enumerate() {
            let add = |dst: &mut Vec<PrioStat>, ioprio: u32, st: &LatStat| {
                if st.samples == 0 {
                    return;
                }
                let i = match dst.iter().position(|p| p.ioprio == ioprio) {
                    Some(i) => i,
                    None => {
                        dst.push(PrioStat {
                            ioprio,
                            lat: LatStat::new(false),
                        });
                        dst.len() - 1
                    }
                };
                dst[i].lat.merge(st);
            };
            for j in jobs {
                let src = &j.dir[d];
                if src.prios.is_empty() {
                    let st = if j.opts.lat_percentiles {
                        &src.lat
                    } else {
                        &src.clat
                    };
                    add(dst, j.ioprio, st);
                } else if dst.is_empty() {
                    // `clat_prio_stats_copy`: the first array is taken whole.
                    *dst = src.prios.clone();
                } else {
                    for p in &src.prios {
                        add(dst, p.ioprio, &p.lat);
                    }
                }
            }
        }
        out
    }

    /// Sum of read+write+trim `total_io_u` (`ddir_rw_sum`).
    pub fn total_rw_ios(&self) -> u64 {
        self.dir.iter().map(|d| d.total_ios).sum()
    }

    pub fn total_rw_bytes(&self) -> u64 {
        self.dir.iter().map(|d| d.io_bytes).sum()
    }

    /// usr/sys cpu % as `show_thread_status_normal` computes them.
    pub fn cpu_pct(&self) -> (f64, f64) {
        if self.total_run_time_ms == 0 {
            (0.0, 0.0)
        } else {
            let r = self.total_run_time_ms as f64;
            (
                self.usr_time_ms as f64 * 100.0 / r,
                self.sys_time_ms as f64 * 100.0 / r,
            )
        }
    }

    /// `stat_calc_dist` over `io_u_map` with the rw I/O total.
    pub fn depth_dist(&self) -> [f64; IO_U_MAP_NR] {
        calc_dist(&self.io_u_map, self.total_rw_ios())
    }

    pub fn submit_dist(&self) -> [f64; IO_U_MAP_NR] {
        calc_dist(&self.io_u_submit, self.total_submit)
    }

    pub fn complete_dist(&self) -> [f64; IO_U_MAP_NR] {
        calc_dist(&self.io_u_complete, self.total_complete)
    }

    /// `stat_calc_lat_n/u/m`: percentages of the rw I/O total, non-zero below 0.01 shown
    /// as 0.01.
    pub fn lat_dist_n(&self) -> [f64; LAT_N_NR] {
        calc_lat(&self.io_u_lat_n, self.total_rw_ios())
    }

    pub fn lat_dist_u(&self) -> [f64; LAT_U_NR] {
        calc_lat(&self.io_u_lat_u, self.total_rw_ios())
    }

    pub fn lat_dist_m(&self) -> [f64; LAT_M_NR] {
        calc_lat(&self.io_u_lat_m, self.total_rw_ios())
    }
}

/// `__io_u_mark_map`.
#[inline]
fn map_idx(nr: u32) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// `stat_calc_dist`: non-zero buckets below 0.1% are shown as 0.1.
pub fn calc_dist(map: &[u64; IO_U_MAP_NR], total: u64) -> [f64; IO_U_MAP_NR] {
    let mut out = [0.0; IO_U_MAP_NR];
    for i in 0..IO_U_MAP_NR {
        if total != 0 {
            let mut v = map[i] as f64 / total as f64;
            v *= 100.0;
            if v < 0.1 && map[i] != 0 {
                v = 0.1;
            }
            out[i] = v;
        }
    }
    out
}

/// `stat_calc_lat`.
pub fn calc_lat<const N: usize>(src: &[u64; N], total: u64) -> [f64; N] {
    let mut out = [0.0; N];
    for i in 0..N {
        if total != 0 {
            let mut v = src[i] as f64 / total as f64;
            v *= 100.0;
            if v < 0.01 && src[i] != 0 {
                v = 0.01;
            }
            out[i] = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welford_matches_definition() {
        let mut s = LatStat::new(true);
        let xs = [5u64, 7, 9, 100, 3];
        for x in xs {
            s.add(x);
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<u64>() as f64 / n;
        let var = xs.iter().map(|x| (*x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let (min, max, m, d) = s.calc().unwrap();
        assert_eq!((min, max), (3, 100));
        assert!((m - mean).abs() < 1e-12);
        assert!((d - var.sqrt()).abs() < 1e-9);
        assert_eq!(s.hist.as_ref().unwrap().total(), 5);
    }

    #[test]
    fn merge_equals_single_stream() {
        let mut a = LatStat::new(true);
        let mut b = LatStat::new(true);
        let mut all = LatStat::new(true);
        for x in 0..1000u64 {
            let v = x * x % 977 + 10;
            if x % 3 == 0 {
                a.add(v)
            } else {
                b.add(v)
            }
            all.add(v);
        }
        a.merge(&b);
        assert_eq!(a.samples, all.samples);
        assert_eq!((a.min, a.max), (all.min, all.max));
        assert!((a.mean - all.mean).abs() < 1e-9);
        assert!((a.stddev() - all.stddev()).abs() < 1e-9);
        assert_eq!(a.hist, all.hist);
    }

    #[test]
    fn pure_sum_merge() {
        let mut a = LatStat::from_summary(10, 20, 15.0, 1.0, 3);
        let b = LatStat::from_summary(1, 2, 1.5, 0.5, 3);
        a.merge_pure_sum(&b);
        assert_eq!((a.min, a.max, a.samples), (11, 22, 6));
        assert_eq!(a.mean, 16.5);
    }

    #[test]
    fn depth_submit_latency_buckets() {
        let mut j = JobStats::new(0, &StatsOptions::default());
        for d in [1, 2, 3, 4, 8, 16, 32, 64, 1000] {
            j.record_depth(0, d);
        }
        assert_eq!(j.io_u_map, [1, 2, 1, 1, 1, 1, 2]);
        for b in [0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65] {
            j.record_submit(0, b);
        }
        assert_eq!(j.io_u_submit, [1, 2, 2, 2, 2, 2, 1]);
        assert_eq!(j.total_submit, 12);
        for (i, c) in [
            1u64,
            3,
            999,
            1000,
            1999,
            2000,
            999_999,
            1_000_000,
            2_500_000_000,
        ]
        .iter()
        .enumerate()
        {
            j.record_io(0, 1 + i as u64, 4096, 0, *c);
        }
        assert_eq!(j.io_u_lat_n, [1, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(j.io_u_lat_u, [2, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(j.io_u_lat_m, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn bw_iops_windows() {
        let o = StatsOptions::default();
        // Short run: no samples.
        let mut j = JobStats::new(0, &o);
        for i in 0..100u64 {
            j.record_io(0, i * 100_000, 4096, 100, 1000);
        }
        j.finish(23_000_000);
        assert_eq!(j.dir[0].bw.samples, 0);
        assert_eq!(j.dir[0].iops.samples, 0);
        assert_eq!(j.dir[0].runtime_ms, 23);

        // 2 s run, one 4 KiB I/O every 0.5 ms (2000 IOPS, 8000 KiB/s): 3 samples
        // (the window ending at 2.000 s is within the slack of the end at 2.0005 s).
        let mut j = JobStats::new(0, &o);
        let mut t = 250_000u64;
        while t < 2_000_000_000 {
            j.record_io(0, t, 4096, 100, 1000);
            t += 500_000;
        }
        j.finish(2_000_500_000);
        let d = &j.dir[0];
        assert_eq!(d.bw.samples, 3);
        assert_eq!((d.bw.min, d.bw.max), (8000, 8000));
        assert_eq!(d.iops.samples, 3);
        assert_eq!(d.iops.mean, 2000.0);
        assert_eq!(d.runtime_ms, 2001);
        assert_eq!(j.dir[1].runtime_ms, 0);
        assert_eq!(j.total_run_time_ms, 2000);
    }

    /// Idle windows skipped in one step give exactly what closing them one by one gives
    /// (stepping `advance_samples` through every boundary forces the one-by-one path), and a
    /// gap of 10^17 ns costs no more steps than a gap of 1 s.
    #[test]
    fn idle_windows_are_skipped_in_constant_time_with_the_same_samples() {
        let o = StatsOptions::default();
        let w = o.bwavgtime_ms * 1_000_000;
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _case in 0..20 {
            let mut fast = JobStats::new(0, &o);
            let mut slow = JobStats::new(0, &o);
            let mut t = 0u64;
            for _ in 0..200 {
                // Mostly short gaps, some of several windows.
                let gap = match next() % 10 {
                    0 => w * (1 + next() % 6) + next() % w,
                    _ => next() % (w / 3),
                };
                let step_from = slow.bw_sample_ns.min(slow.iops_sample_ns);
                t += gap;
                let mut b = step_from + w + 1;
                while b < t {
                    slow.advance_samples(b);
                    b += w;
                }
                let ddir = (next() % 2) as usize;
                fast.record_io(ddir, t, 4096, 10, 1000);
                slow.record_io(ddir, t, 4096, 10, 1000);
            }
            fast.finish(t + next() % (3 * w));
            slow.finish(fast.end_ns);
            for d in 0..DDIR_RWDIR_CNT {
                assert_eq!(fast.dir[d].bw, slow.dir[d].bw);
                assert_eq!(fast.dir[d].iops, slow.dir[d].iops);
            }
        }
        let steps = |gap: u64| {
            let mut j = JobStats::new(0, &o);
            j.record_io(0, 1, 4096, 0, 1);
            j.record_io(0, gap, 4096, 0, 1);
            j.record_io(0, gap + 1, 4096, 0, 1);
            j.finish(gap + 2);
            j.sample_window_ops()
        };
        assert_eq!(steps(1_000_000_000), steps(100_000_000_000_000_000));
    }

    #[test]
    fn ramp_time_excludes_early_io() {
        let o = StatsOptions {
            ramp_ns: 1_000_000,
            ..Default::default()
        };
        let mut j = JobStats::new(0, &o);
        j.record_io(1, 500_000, 4096, 0, 10);
        j.record_io(1, 1_500_000, 4096, 0, 10);
        j.finish(3_000_000);
        assert_eq!(j.dir[1].total_ios, 1);
        assert_eq!(j.dir[1].runtime_ms, 2);
    }
}
