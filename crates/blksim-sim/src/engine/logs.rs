//! A task's fio log files (`write_bw_log`, `write_lat_log`, `write_iops_log`,
//! `write_hist_log`): which files (init.c `add_job` and `gen_log_name`), and which samples go
//! into them (io_u.c `account_io_completion`, stat.c's helper-thread windows). The line
//! formats are `blksim_report::log`'s.
//!
//! Files are named as fio names them, relative to the working directory:
//! `<prefix>_<type>.<n>.log` with `n` the job clone's number over the whole run (fio's
//! `thread_number`), or `<prefix>_<type>.log` with `per_job_logs=0`, where the prefix is the
//! option's value or else the job's name. fio keeps samples in memory and writes them when a
//! job ends; here lines are written as they are made, so memory stays flat. Where clones
//! share a file (`per_job_logs=0`), each clone writes a private file beside it and appends it
//! to the shared one when it ends, which gives fio's order (one job after the other, in the
//! order they end). A shared file is truncated when the run starts (fio would append to what
//! an earlier run left).

use blksim_core::output::OutputFiles;
use blksim_job::{JobSpec, ParseError};
use blksim_report::log::{HistLog, LogFormat, SampleLog};
use blksim_report::stats::{JobStats, WindowSample};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// How the task's bw / IOPS statistics are sampled, given its logs (init.c `add_job`): a bw
/// log makes `bwavgtime` its own window unless `bwavgtime` was set, and averages over the
/// smaller of the two when it was; a log window of 0 samples every I/O.
pub(crate) struct Sampling {
    pub bwavgtime_ms: u64,
    pub iopsavgtime_ms: u64,
    pub bw_per_io: bool,
    pub iops_per_io: bool,
    pub bw_log_avg: u64,
    pub iops_log_avg: u64,
}

pub(crate) fn sampling(spec: &JobSpec) -> Sampling {
    let l = &spec.logs;
    let pick = |log: bool, explicit: bool, avgtime: u64| -> (u64, u64) {
        match (log, explicit) {
            (false, _) => (avgtime, 0),
            (true, true) => (avgtime, l.avg_msec.min(avgtime)),
            (true, false) => (l.avg_msec, l.avg_msec),
        }
    };
    let (bw, bw_log) = pick(
        l.bw.is_some(),
        spec.where_set("bwavgtime").is_some(),
        spec.bwavgtime_ms,
    );
    let (iops, iops_log) = pick(
        l.iops.is_some(),
        spec.where_set("iopsavgtime").is_some(),
        spec.iopsavgtime_ms,
    );
    Sampling {
        bwavgtime_ms: bw.max(1),
        iopsavgtime_ms: iops.max(1),
        bw_per_io: l.bw.is_some() && bw_log == 0,
        iops_per_io: l.iops.is_some() && iops_log == 0,
        bw_log_avg: bw_log,
        iops_log_avg: iops_log,
    }
}

/// One log file: written directly, or (shared with other clones) through a private file
/// appended to the shared one at the end.
struct LogFile {
    path: PathBuf,
    private: Option<PathBuf>,
}

pub(crate) struct TaskLogs {
    lat: Option<SampleLog>,
    slat: Option<SampleLog>,
    clat: Option<SampleLog>,
    bw: Option<SampleLog>,
    iops: Option<SampleLog>,
    hist: Option<HistLog>,
    files: Vec<LogFile>,
    out: Arc<dyn OutputFiles>,
    /// The first write error, reported when the run ends.
    pub error: Option<String>,
}

/// Where a run's log files go, and the shared files (one per log that all of a job's clones
/// write, as fio writes them) it has already started.
pub(crate) struct RunFiles {
    pub files: Arc<dyn OutputFiles>,
    created: Vec<PathBuf>,
}

impl RunFiles {
    pub fn new(files: Arc<dyn OutputFiles>) -> RunFiles {
        RunFiles {
            files,
            created: Vec::new(),
        }
    }

    /// Start the shared file at `path` once per run.
    pub fn create_shared(&mut self, path: &PathBuf) -> std::io::Result<()> {
        if !self.created.contains(path) {
            drop(self.files.create(path)?);
            self.created.push(path.clone());
        }
        Ok(())
    }
}

impl TaskLogs {
    /// The logs of clone `thread_number` (1-based over the run) of `spec`; None without any.
    /// `shared` holds the shared files already truncated by an earlier clone.
    pub fn open(
        spec: &JobSpec,
        thread_number: usize,
        s: &Sampling,
        shared: &mut RunFiles,
    ) -> Result<Option<TaskLogs>, ParseError> {
        let l = &spec.logs;
        if !l.any() {
            return Ok(None);
        }
        let fmt = LogFormat {
            offset: l.offset,
            prio: l.prio,
        };
        let mut files = Vec::new();
        let mut open = |option: &'static str,
                        prefix: &str,
                        kind: &str|
         -> Result<Box<dyn Write>, ParseError> {
            // `make_log_name`: the option's value, or the job's name.
            let pre = if prefix.is_empty() {
                spec.name.as_str()
            } else {
                prefix
            };
            let name = if l.per_job {
                format!("{pre}_{kind}.{thread_number}.log")
            } else {
                format!("{pre}_{kind}.log")
            };
            let path = PathBuf::from(&name);
            let located = |e: std::io::Error, p: &PathBuf| {
                spec.error_at(&[option], format!("cannot write {}: {e}", p.display()))
            };
            let (target, private) = if l.per_job {
                (path.clone(), None)
            } else {
                shared.create_shared(&path).map_err(|e| located(e, &path))?;
                let p = PathBuf::from(format!("{name}.{thread_number}.part"));
                (p.clone(), Some(p))
            };
            let f = shared
                .files
                .create(&target)
                .map_err(|e| located(e, &target))?;
            files.push(LogFile { path, private });
            Ok(Box::new(BufWriter::new(f)))
        };
        // One value log: `inline` logs are filled from the I/O path (latencies), the others
        // from the bw / IOPS windows.
        let mut values = |option: &'static str,
                          prefix: &Option<String>,
                          kind: &str,
                          avg: u64,
                          inline: bool|
         -> Result<Option<SampleLog>, ParseError> {
            prefix
                .as_deref()
                .map(|p| -> Result<SampleLog, ParseError> {
                    Ok(SampleLog::new(
                        open(option, p, kind)?,
                        avg,
                        inline,
                        l.max_value,
                        fmt,
                    ))
                })
                .transpose()
        };
        let lat = values("write_lat_log", &l.lat, "lat", l.avg_msec, true)?;
        // Sync engines record no submission latency: fio creates the file, empty.
        let slat = values("write_lat_log", &l.lat, "slat", l.avg_msec, true)?;
        let clat = values("write_lat_log", &l.lat, "clat", l.avg_msec, true)?;
        let bw = values("write_bw_log", &l.bw, "bw", s.bw_log_avg, false)?;
        let iops = values("write_iops_log", &l.iops, "iops", s.iops_log_avg, false)?;
        let hist = l
            .hist
            .as_deref()
            .map(|p| -> Result<HistLog, ParseError> {
                Ok(HistLog::new(
                    open("write_hist_log", p, "clat_hist")?,
                    l.hist_msec,
                    l.hist_coarseness,
                ))
            })
            .transpose()?;
        Ok(Some(TaskLogs {
            lat,
            slat,
            clat,
            bw,
            iops,
            hist,
            files,
            out: shared.files.clone(),
            error: None,
        }))
    }

    fn keep(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            self.error
                .get_or_insert_with(|| format!("writing a log file: {e}"));
        }
    }

    /// A completed read, write or trim (`account_io_completion`), after `stats` counted it:
    /// at `elapsed` ms since the job's epoch, issued at `issued` ms, with the io_u's
    /// priority value (`io_u->ioprio`).
    #[allow(clippy::too_many_arguments)]
    pub fn io_done(
        &mut self,
        stats: &JobStats,
        elapsed: u64,
        issued: u64,
        ddir: usize,
        bytes: u64,
        offset: u64,
        slat: u64,
        clat: u64,
        record_slat: bool,
        prio: u32,
    ) {
        let mut r = Ok(());
        if let Some(l) = self.lat.as_mut() {
            r = r.and(l.add(elapsed, slat + clat, ddir, bytes, offset, prio));
        }
        // `add_slat_sample` runs when the I/O is issued (`io_u_queued`).
        if record_slat {
            if let Some(l) = self.slat.as_mut() {
                r = r.and(l.add(issued, slat, ddir, bytes, offset, prio));
            }
        }
        if let Some(l) = self.clat.as_mut() {
            r = r.and(l.add(elapsed, clat, ddir, bytes, offset, prio));
        }
        if let Some(h) = self.hist.as_mut() {
            r = r.and(h.add(elapsed, ddir, bytes, stats.dir[ddir].clat.hist.as_ref()));
        }
        if let Some(l) = self.bw.as_mut().filter(|l| l.per_unit()) {
            let rate = (bytes * 1_000_000).checked_div(clat).unwrap_or(0);
            r = r.and(l.add(elapsed, rate, ddir, bytes, offset, prio));
        }
        if let Some(l) = self.iops.as_mut().filter(|l| l.per_unit()) {
            r = r.and(l.add(elapsed, 1, ddir, bytes, offset, prio));
        }
        self.keep(r);
    }

    /// The bw / IOPS windows `stats` closed (`__add_samples` → `add_log_sample`, block size
    /// 0 for windows), `epoch_ns` being the job's epoch.
    pub fn windows(&mut self, samples: &[WindowSample], epoch_ns: u64) {
        let mut r = Ok(());
        for w in samples {
            let t = w.end_ns.saturating_sub(epoch_ns) / 1_000_000;
            let log = if w.is_bw {
                self.bw.as_mut()
            } else {
                self.iops.as_mut()
            };
            if let Some(l) = log {
                r = r.and(l.add(t, w.value, w.ddir, 0, 0, 0));
            }
        }
        self.keep(r);
    }

    /// The job ended at `elapsed` ms (`finalize_logs`): flush the windows and the files, and
    /// append private files to the shared ones.
    pub fn finish(&mut self, elapsed: u64) {
        let mut r = Ok(());
        for l in [
            &mut self.lat,
            &mut self.slat,
            &mut self.clat,
            &mut self.bw,
            &mut self.iops,
        ]
        .into_iter()
        .flatten()
        {
            r = r.and(l.finalize(elapsed));
        }
        if let Some(h) = self.hist.as_mut() {
            r = r.and(h.finalize());
        }
        // Close the writers before the private files are read back.
        self.lat = None;
        self.slat = None;
        self.clat = None;
        self.bw = None;
        self.iops = None;
        self.hist = None;
        for f in std::mem::take(&mut self.files) {
            if let Some(p) = f.private {
                r = r.and(self.out.append_and_remove(&p, &f.path));
            }
        }
        self.keep(r);
    }
}
