//! The report model: what the writers print. Built by the simulator after a run.

use crate::json::JsonValue;
use crate::stats::{JobStats, DDIR_RWDIR_CNT};

/// The version string fio prints. blksim reports "fio-3.33" so that scripts which key on
/// fio's version (fio-plot, fio_jsonplus_clat2csv, CI parsers) keep working; blksim's own
/// version goes in the top-level `"blksim"` JSON object.
pub const FIO_VERSION: &str = "fio-3.33";

/// Base pid of the deterministic fake pids: job `i` (0-based, in start order) gets
/// `FAKE_PID_BASE + i`. Real pids would make runs differ.
pub const FAKE_PID_BASE: i32 = 1000;

/// fio's `unit_base`: bandwidth in bytes (default) or bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UnitBase {
    #[default]
    Bytes,
    Bits,
}

/// One job section as fio announces it before the run (`init.c: add_job`):
/// `name: (g=0): rw=..., bs=(R) ..., ioengine=..., iodepth=...`, and `...` for clones.
#[derive(Clone, Debug, PartialEq)]
pub struct JobHeader {
    pub name: String,
    pub groupid: u32,
    /// `ddir_str(td_ddir)`: read, write, randread, randrw, trim, ...
    pub rw: String,
    /// (min, max) block size for read, write, trim.
    pub bs: [(u64, u64); DDIR_RWDIR_CNT],
    /// `bs_is_seq_rand`: the trim range is replaced by the literal `bs_is_seq_rand`.
    pub bs_is_seq_rand: bool,
    pub ioengine: String,
    pub iodepth: u32,
    /// `numjobs`: the line is printed once, then `...` once if > 1.
    pub numjobs: u32,
    /// `thread=1`: counted as threads in "Starting ...".
    pub thread: bool,
    /// Engines flagged FIO_NOIO print no header line.
    pub noio: bool,
    pub kb_base: u32,
    pub sig_figs: u32,
}

impl JobHeader {
    pub fn new(name: &str, rw: &str, bs: u64, ioengine: &str, iodepth: u32) -> Self {
        JobHeader {
            name: name.to_string(),
            groupid: 0,
            rw: rw.to_string(),
            bs: [(bs, bs); DDIR_RWDIR_CNT],
            bs_is_seq_rand: false,
            ioengine: ioengine.to_string(),
            iodepth,
            numjobs: 1,
            thread: false,
            noio: false,
            kb_base: 1024,
            sig_figs: 4,
        }
    }
}

/// One reported thread_stat: a job, or a whole group with group_reporting.
#[derive(Clone, Debug, PartialEq)]
pub struct JobReport {
    pub name: String,
    pub groupid: u32,
    /// `jobs=` in the normal output (number of jobs folded in).
    pub members: u32,
    /// Deterministic fake pid (see [`FAKE_PID_BASE`]); for a group, the first job's.
    pub pid: i32,
    pub error: i32,
    /// `verror`, printed as `err=%2d (%s)` when error != 0.
    pub verror: String,
    pub description: String,
    /// The `ctime()` text on the job line, without the trailing newline (wall clock, from
    /// the caller).
    pub ctime: String,
    /// JSON `eta` / `elapsed` (seconds). fio prints INT_MAX for eta of finished jobs.
    pub eta: i64,
    pub elapsed_sec: u64,
    /// The job section's options as written, in order (JSON `"job options"`).
    pub job_options: Vec<(String, String)>,
    pub kb_base: u32,
    pub unit_base: UnitBase,
    pub sig_figs: u32,
    /// `latency   : target=..., window=..., percentile=..., depth=...` (latency_target
    /// in ns, window in us, depth = iodepth in 3.33).
    pub latency_depth: u32,
    pub latency_target: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
    pub continue_on_error: bool,
    pub total_err_count: u64,
    pub first_error: i32,
    pub stats: JobStats,
    /// The steady-state check (`steadystate_duration` set): the last job's of a group.
    pub steadystate: Option<SteadyStateReport>,
}

/// What fio reports of a job's steady-state check (`ts->ss_*`).
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyStateReport {
    /// The criterion: IOPS or bandwidth, slope or mean deviation, limit in % or absolute.
    pub iops: bool,
    pub slope: bool,
    pub pct: bool,
    pub limit: f64,
    /// The window in seconds (one sample each).
    pub dur: u64,
    pub attained: bool,
    /// The criterion's last value, the largest deviation and the slope computed.
    pub criterion: f64,
    pub max_deviation: f64,
    pub slope_value: f64,
    /// The window's samples, oldest first (IOPS; bytes per second).
    pub iops_data: Vec<u64>,
    pub bw_data: Vec<u64>,
}

impl SteadyStateReport {
    /// `steadystate_bw_mean`.
    pub fn bw_mean(&self) -> u64 {
        Self::mean(&self.bw_data)
    }

    /// `steadystate_iops_mean`.
    pub fn iops_mean(&self) -> u64 {
        Self::mean(&self.iops_data)
    }

    fn mean(v: &[u64]) -> u64 {
        if v.is_empty() {
            return 0;
        }
        v.iter().fold(0u64, |s, &x| s.wrapping_add(x)) / v.len() as u64
    }
}

impl JobReport {
    /// A report for job number `index` (0-based) with defaults fio would print.
    pub fn new(name: &str, groupid: u32, index: u32, iodepth: u32, stats: JobStats) -> Self {
        let elapsed_sec = stats.end_ns.div_ceil(1_000_000_000).max(1);
        JobReport {
            name: name.to_string(),
            groupid,
            members: 1,
            pid: FAKE_PID_BASE + index as i32,
            error: 0,
            verror: String::new(),
            description: String::new(),
            ctime: String::new(),
            eta: i32::MAX as i64,
            elapsed_sec,
            job_options: Vec::new(),
            kb_base: 1024,
            unit_base: UnitBase::Bytes,
            sig_figs: 4,
            latency_depth: iodepth,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
            continue_on_error: false,
            total_err_count: 0,
            first_error: 0,
            stats,
            steadystate: None,
        }
    }

    /// group_reporting: fold the jobs of one group into one report, as
    /// `__show_run_stats` does: name, pid, description and bases come from the first
    /// job; the error is the first non-zero one; the job options are the last job's
    /// (fio keeps overwriting `opt_lists[j]`); stats are summed with `sum_thread_stats`.
    pub fn merge_group(jobs: &[JobReport]) -> Option<JobReport> {
        let (first, rest) = jobs.split_first()?;
        let mut out = first.clone();
        for j in rest {
            out.stats.merge(&j.stats);
            out.members += j.members;
            if out.error == 0 && j.error != 0 {
                out.error = j.error;
                out.verror = j.verror.clone();
            }
            out.total_err_count += j.total_err_count;
            out.first_error = j.first_error;
            out.job_options = j.job_options.clone();
            out.latency_depth = j.latency_depth;
            // `__show_run_stats` overwrites the ss fields with each job's, and clears them
            // for a job without the check.
            out.steadystate = j.steadystate.clone();
            out.elapsed_sec = out.elapsed_sec.max(j.elapsed_sec);
        }
        let stats: Vec<&JobStats> = jobs.iter().map(|j| &j.stats).collect();
        for (d, p) in JobStats::sum_prios(&stats).into_iter().enumerate() {
            out.stats.dir[d].prios = p;
        }
        Some(out)
    }
}

/// `struct group_run_stats` for one group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRunStats {
    pub groupid: u32,
    pub min_run: [u64; DDIR_RWDIR_CNT],
    pub max_run: [u64; DDIR_RWDIR_CNT],
    pub min_bw: [u64; DDIR_RWDIR_CNT],
    pub max_bw: [u64; DDIR_RWDIR_CNT],
    pub io_bytes: [u64; DDIR_RWDIR_CNT],
    /// Aggregate bandwidth: group bytes * 1000 / max runtime (bytes/s).
    pub agg: [u64; DDIR_RWDIR_CNT],
    pub kb_base: u32,
    pub unit_base: UnitBase,
    pub sig_figs: u32,
}

impl GroupRunStats {
    /// `__show_run_stats`: fold the reports (jobs or group_reporting groups) that belong
    /// to `groupid`.
    pub fn compute(groupid: u32, reports: &[JobReport]) -> Self {
        let mut rs = GroupRunStats {
            groupid,
            min_run: [u64::MAX; DDIR_RWDIR_CNT],
            max_run: [0; DDIR_RWDIR_CNT],
            min_bw: [u64::MAX; DDIR_RWDIR_CNT],
            max_bw: [0; DDIR_RWDIR_CNT],
            io_bytes: [0; DDIR_RWDIR_CNT],
            agg: [0; DDIR_RWDIR_CNT],
            kb_base: 1024,
            unit_base: UnitBase::Bytes,
            sig_figs: 4,
        };
        for ts in reports.iter().filter(|r| r.groupid == groupid) {
            rs.kb_base = ts.kb_base;
            rs.unit_base = ts.unit_base;
            rs.sig_figs = ts.sig_figs;
            for j in 0..DDIR_RWDIR_CNT {
                let d = &ts.stats.dir[j];
                if d.runtime_ms == 0 {
                    continue;
                }
                if d.runtime_ms < rs.min_run[j] || rs.min_run[j] == 0 {
                    rs.min_run[j] = d.runtime_ms;
                }
                if d.runtime_ms > rs.max_run[j] {
                    rs.max_run[j] = d.runtime_ms;
                }
                let bw = d.bw_bytes();
                rs.min_bw[j] = rs.min_bw[j].min(bw);
                rs.max_bw[j] = rs.max_bw[j].max(bw);
                rs.io_bytes[j] += d.io_bytes;
            }
        }
        for j in 0..DDIR_RWDIR_CNT {
            if rs.max_run[j] != 0 {
                rs.agg[j] = ((rs.io_bytes[j] as u128 * 1000) / rs.max_run[j] as u128) as u64;
            }
        }
        rs
    }
}

/// One "Disk stats" record (`struct disk_util_stat`), filled from the simulated device.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DiskUtil {
    pub name: String,
    /// [read, write]
    pub ios: [u64; 2],
    pub merges: [u64; 2],
    pub sectors: [u64; 2],
    /// ms spent in reads / writes.
    pub ticks: [u64; 2],
    /// `time_in_queue` (ms).
    pub in_queue: u64,
    /// `io_ticks` (ms busy) and `msec` (ms observed): util = 100 * io_ticks / msec.
    pub io_ticks: u64,
    pub msec: u64,
}

impl DiskUtil {
    /// `print_disk_util`: capped at 100, 0 when nothing was observed.
    pub fn util(&self) -> f64 {
        let mut u = 0.0;
        if self.msec != 0 {
            u = 100.0 * self.io_ticks as f64 / self.msec as f64;
        }
        if u > 100.0 {
            u = 100.0;
        }
        u
    }
}

/// Everything one fio run reports.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// Always [`FIO_VERSION`] unless a caller knows better.
    pub fio_version: String,
    /// Wall-clock fields (the only things allowed to differ between runs).
    pub timestamp: u64,
    pub timestamp_ms: u64,
    /// ctime() text without the newline, e.g. "Sun Nov 22 01:25:35 2026".
    pub time: String,
    /// `[global]` options as written (JSON `"global options"`, omitted when empty).
    pub global_options: Vec<(String, String)>,
    /// Pre-run header lines, one per job section.
    pub headers: Vec<JobHeader>,
    /// Lines fio prints between "Starting ..." and the results, e.g.
    /// "rr: Laying out IO file (1 file / 64MiB)".
    pub pre_run_lines: Vec<String>,
    /// Per job, or per group with group_reporting, in fio's order.
    pub jobs: Vec<JobReport>,
    /// One per group id 0..=max (see [`RunReport::compute_groups`]).
    pub groups: Vec<GroupRunStats>,
    pub disk_util: Vec<DiskUtil>,
    /// Extra top-level JSON object, printed last under `"blksim"`.
    pub blksim: Option<JsonValue>,
    /// Queue depth at each stage and device busy over time (the HTML report), when kept.
    pub depth: Option<crate::depth::DepthTimeline>,
}

impl Default for RunReport {
    fn default() -> Self {
        RunReport {
            fio_version: FIO_VERSION.to_string(),
            timestamp: 0,
            timestamp_ms: 0,
            time: String::new(),
            global_options: Vec::new(),
            headers: Vec::new(),
            pre_run_lines: Vec::new(),
            jobs: Vec::new(),
            groups: Vec::new(),
            disk_util: Vec::new(),
            blksim: None,
            depth: None,
        }
    }
}

impl RunReport {
    /// Recompute `groups` from `jobs` (group ids 0..=max, as fio loops `groupid + 1`).
    pub fn compute_groups(&mut self) {
        let max = self.jobs.iter().map(|j| j.groupid).max();
        self.groups = match max {
            None => Vec::new(),
            Some(m) => (0..=m)
                .map(|g| GroupRunStats::compute(g, &self.jobs))
                .collect(),
        };
    }

    pub fn group(&self, groupid: u32) -> Option<&GroupRunStats> {
        self.groups.iter().find(|g| g.groupid == groupid)
    }
}

/// `strerror(3)` (glibc's text) for the errno values a simulated run can report.
pub fn strerror(errno: i32) -> &'static str {
    match errno {
        0 => "Success",
        5 => "Input/output error",
        22 => "Invalid argument",
        84 => "Invalid or incomplete multibyte or wide character",
        110 => "Connection timed out",
        _ => "Unknown error",
    }
}
