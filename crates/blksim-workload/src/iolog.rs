//! `read_iolog`: a fio iolog (version 2 or 3) replayed as fio replays it (iolog.c
//! `read_iolog2`, `read_iolog_get`, `iolog_delay`), read a line at a time so that a trace of
//! any length replays in the same memory.
//!
//! Every I/O line gives the next io_u's direction, offset and length. Version 3 lines carry
//! a time in µs; fio holds each I/O until the recorded gap since the previous line has
//! passed since its last issue (`delay_since_ttime`, scaled by `100 / replay_time_scale`,
//! none with `replay_no_stall`). A version 2 `wait` waits until that many ms since the run began.
//! File lines (`add`, `open`, `close`) name files; the simulation has one device, so they
//! only pass their gap on. Offsets are divided by `replay_scale` and aligned down to
//! `replay_align`. `sync` and `datasync` lines are flushes (fsync, fdatasync). `trim` lines
//! are dropped after their time is taken, as `read_iolog2` drops them ("bad ddir").
//!
//! Traces other tools write — the ASCII traces MQSim and DiskSim read, the MSR Cambridge
//! CSV traces, blkparse's text output — are recognised from their content too
//! ([`crate::foreign`]) and timed by the same gap rule, in ns.

use blksim_job::Ddir;
use std::io::BufRead;

use crate::blktrace::BlktraceReader;
use crate::foreign::{Format, Line, RecOp, Record};
use crate::recorded::Outstanding;
use crate::IoU;

/// What a log line asks for: an I/O, or a flush (`sync`, `datasync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayOp {
    Io(IoU),
    Sync { datasync: bool },
}

/// One I/O (or flush) of the log and when it may be issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayIo {
    pub op: ReplayOp,
    /// Version 3: ns that must pass since the previous I/O's issue (fio's `ipo->delay`
    /// net of the time since `last_issue`). Version 2 `wait`: see [`ReplayIo::at_ns`].
    pub gap_ns: u64,
    /// Version 2 `wait`: not before this many ns after the run's start (fio's genesis).
    pub at_ns: Option<u64>,
}

/// Replay options (`replay_no_stall`, `replay_time_scale`, `replay_scale`, `replay_align`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayOpts {
    pub no_stall: bool,
    pub time_scale_pct: u64,
    pub scale: u64,
    pub align: u64,
    /// `replay_skip`: bit `Ddir as usize` for read, write and trim, `REPLAY_SKIP_SYNC`.
    /// Applied to blktrace files and other tools' traces; a fio iolog ignores it, as fio
    /// 3.33's `read_iolog2` does.
    pub skip: u8,
    /// `replay_skip_bad`: pass over malformed lines of a text trace, counting them.
    pub skip_bad: bool,
    /// `read_iolog_format`: the trace's format as given, not recognised from the content.
    pub format: Option<blksim_job::TraceFormat>,
    /// `replay_device`: replay only this device's (disk's, volume's) records.
    pub device: Option<u64>,
}

impl ReplayOpts {
    /// Whether `replay_skip` drops this operation.
    fn skips(&self, op: &ReplayOp) -> bool {
        match op {
            ReplayOp::Io(io) => self.skips_ddir(io.ddir),
            ReplayOp::Sync { .. } => self.skip & blksim_job::REPLAY_SKIP_SYNC != 0,
        }
    }

    fn skips_ddir(&self, ddir: Ddir) -> bool {
        self.skip & (1 << ddir as u8) != 0
    }
}

pub struct IologReader {
    name: String,
    lines: Box<dyn BufRead>,
    line_no: usize,
    version: u32,
    /// A text trace written by another tool, when not a fio log.
    foreign: Option<Format>,
    /// A blktrace binary trace (one file or a merge).
    blktrace: Option<Box<BlktraceReader>>,
    /// blkparse's summary was reached.
    at_end: bool,
    opts: ReplayOpts,
    /// fio's `io_log_last_ttime`: the previous record's time, 0 for none.
    last_ttime: u64,
    /// Gap carried from file lines to the next I/O (µs, unscaled).
    carry_us: u64,
    /// A version 2 `wait`'s time, ms since the run began, for the next I/O.
    pending_wait_ms: Option<u64>,
    buf: String,
    /// A foreign trace's first line, read to recognise the format.
    pending: Option<String>,
    /// The trace's own response times, for a text trace that has them.
    recorded: Outstanding,
    /// Malformed lines passed over (`skip_bad`), and the first one's error.
    skipped: u64,
    first_bad: Option<String>,
    /// Trim lines of a fio iolog, which fio does not replay, and the first one's line.
    trims_dropped: u64,
    first_trim_line: usize,
}

/// How `read_iolog` names its files: one path, or several joined by `:` (a blktrace
/// per-CPU set or traces to merge), each with its `merge_blktrace_scalars` (%) and
/// `merge_blktrace_iters`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFiles(pub Vec<(String, u64, u64)>);

impl TraceFiles {
    /// `read_iolog`'s value split as fio's `blktrace_merge` splits it (at `:`, unless the
    /// whole value names a file), with the merge options.
    pub fn parse(value: &str, scalars: &[u64], iters: &[u64]) -> Result<Self, String> {
        let exists = |p: &str| std::path::Path::new(p).exists();
        let mut names: Vec<String> = if exists(value) || !value.contains(':') {
            vec![value.to_string()]
        } else {
            value
                .split(':')
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect()
        };
        // A per-CPU set named by its device, as blkparse -i takes it: dev.blktrace.0, .1, ...
        // up to the first missing one.
        if names.len() == 1 && !exists(value) && exists(&format!("{value}.blktrace.0")) {
            names = (0..)
                .map(|cpu| format!("{value}.blktrace.{cpu}"))
                .take_while(|p| exists(p))
                .collect();
        }
        if names.is_empty() {
            return Err(format!("'{value}' names no file"));
        }
        for (what, list) in [
            ("merge_blktrace_scalars", scalars),
            ("merge_blktrace_iters", iters),
        ] {
            if !list.is_empty() && list.len() != names.len() {
                return Err(format!(
                    "{what} gives {} values for {} trace files",
                    list.len(),
                    names.len()
                ));
            }
        }
        Ok(TraceFiles(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    (
                        n.clone(),
                        scalars.get(i).copied().unwrap_or(100),
                        iters.get(i).copied().unwrap_or(1),
                    )
                })
                .collect(),
        ))
    }
}

/// Whether the file at `path` starts like a blktrace binary trace.
pub fn is_blktrace_file(path: &str) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .is_ok_and(|n| blksim_trace::is_blktrace(&head[..n]))
}

/// An empty file: what blktrace leaves for a CPU that saw no I/O.
fn is_empty_file(path: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == 0)
}

/// Whether `files` are a blktrace trace: each a blktrace file or empty, one at least not.
pub fn all_blktrace(files: &TraceFiles) -> bool {
    files.0.iter().any(|(p, _, _)| is_blktrace_file(p))
        && files
            .0
            .iter()
            .all(|(p, _, _)| is_blktrace_file(p) || is_empty_file(p))
}

/// The iodepth fio gives a job replaying blktrace binary files when `iodepth` is not set
/// (`read_blktrace`, [`crate::blktrace::probe_depth`]); None for other traces. A
/// `merge_blktrace_file` holds only `Q` events, no completions, so fio probes 1 from it.
pub fn probed_iodepth(r: &blksim_job::ReplaySpec) -> Result<Option<u32>, String> {
    let Some(file) = &r.file else { return Ok(None) };
    let files = TraceFiles::parse(file, &r.merge_scalars, &r.merge_iters)?;
    let forced = r.format == Some(blksim_job::TraceFormat::Blktrace);
    if !forced && !all_blktrace(&files) {
        return Ok(None);
    }
    if r.merge_file.is_some() {
        return Ok(Some(1));
    }
    crate::blktrace::probe_depth(&files.0, r.device).map(Some)
}

impl IologReader {
    /// Open the trace at `path`: a fio iolog, a blktrace binary file, or a text trace
    /// another tool wrote, recognised from the content.
    pub fn open(path: &str, opts: ReplayOpts) -> Result<Self, String> {
        Self::open_files(&TraceFiles::parse(path, &[], &[])?, opts)
    }

    /// Open what a job's `read_iolog` and replay options name. With `merge_blktrace_file`
    /// the merged trace is written there first and that file replayed, as fio does.
    pub fn open_job(r: &blksim_job::ReplaySpec) -> Result<Self, String> {
        let file = r.file.as_deref().ok_or("no read_iolog")?;
        let opts = ReplayOpts {
            no_stall: r.no_stall,
            time_scale_pct: r.time_scale_pct,
            scale: r.scale,
            align: r.align,
            skip: r.skip,
            skip_bad: r.skip_bad,
            format: r.format,
            device: r.device,
        };
        let files = TraceFiles::parse(file, &r.merge_scalars, &r.merge_iters)?;
        match &r.merge_file {
            Some(out) => {
                crate::blktrace::merge_to_file(&files.0, out)?;
                Self::open(out, opts)
            }
            None => Self::open_files(&files, opts),
        }
    }

    /// Open `files`: several are merged, and must all be blktrace binary files.
    pub fn open_files(files: &TraceFiles, opts: ReplayOpts) -> Result<Self, String> {
        let first = &files.0[0].0;
        let f = std::fs::File::open(first).map_err(|e| format!("{first}: {e}"))?;
        let mut r = std::io::BufReader::new(f);
        let head = r.fill_buf().map_err(|e| format!("{first}: {e}"))?;
        let binary = match opts.format {
            Some(blksim_job::TraceFormat::Blktrace) => true,
            Some(_) => false,
            None => blksim_trace::is_blktrace(head) || (files.0.len() > 1 && all_blktrace(files)),
        };
        if files.0.len() == 1 && files.0[0].1 == 100 && files.0[0].2 == 1 && !binary {
            return Self::from_reader(first, Box::new(r), opts);
        }
        for (p, _, _) in &files.0 {
            if opts.format != Some(blksim_job::TraceFormat::Blktrace)
                && !is_blktrace_file(p)
                && !is_empty_file(p)
            {
                return Err(format!(
                    "{p}: not a blktrace file (merging takes blktrace binary files only)"
                ));
            }
        }
        let mut bt = BlktraceReader::open(&files.0)?;
        bt.device = opts.device;
        Ok(Self::binary(first, bt, opts))
    }

    /// A blktrace binary trace from a stream (tests, fuzzing).
    pub fn from_blktrace(
        name: &str,
        r: Box<dyn std::io::Read>,
        opts: ReplayOpts,
    ) -> Result<Self, String> {
        let mut bt = BlktraceReader::from_reader(name, r)?;
        bt.device = opts.device;
        Ok(Self::binary(name, bt, opts))
    }

    fn binary(name: &str, bt: BlktraceReader, opts: ReplayOpts) -> Self {
        Self::new(
            name,
            Box::new(std::io::empty()),
            0,
            None,
            None,
            opts,
            Some(bt),
        )
    }

    fn new(
        name: &str,
        lines: Box<dyn BufRead>,
        version: u32,
        foreign: Option<Format>,
        pending: Option<String>,
        opts: ReplayOpts,
        blktrace: Option<BlktraceReader>,
    ) -> Self {
        IologReader {
            name: name.to_string(),
            lines,
            line_no: if pending.is_some() { 0 } else { 1 },
            version,
            foreign,
            blktrace: blktrace.map(Box::new),
            at_end: false,
            opts,
            last_ttime: 0,
            carry_us: 0,
            pending_wait_ms: None,
            buf: String::new(),
            pending,
            recorded: Outstanding::default(),
            skipped: 0,
            first_bad: None,
            trims_dropped: 0,
            first_trim_line: 0,
        }
    }

    pub fn from_reader(
        name: &str,
        mut lines: Box<dyn BufRead>,
        opts: ReplayOpts,
    ) -> Result<Self, String> {
        // Blank lines before the first record are passed over, as they are after it.
        let mut first = String::new();
        let mut blank = 0usize;
        loop {
            first.clear();
            let n = lines
                .read_line(&mut first)
                .map_err(|e| format!("{name}: {e}"))?;
            if n == 0 || !first.trim().is_empty() {
                break;
            }
            blank += 1;
        }
        // Recognised from the content: fio's version line, or the first line of a trace
        // another tool wrote (crate::foreign), which is read again as a record.
        use blksim_job::TraceFormat as T;
        let text = |f| match f {
            T::Ascii => Some(Format::Ascii),
            T::Msr => Some(Format::Msr),
            T::Blkparse => Some(Format::Blkparse),
            T::Alibaba => Some(Format::Alibaba),
            T::Tencent => Some(Format::Tencent),
            T::Fio | T::Blktrace => None,
        };
        let (version, foreign) = match (first.trim_end(), opts.format) {
            ("fio version 2 iolog", None | Some(T::Fio)) => (2, None),
            ("fio version 3 iolog", None | Some(T::Fio)) => (3, None),
            (_, Some(f)) if text(f).is_some() => (0, text(f)),
            (other, Some(f)) => {
                return Err(format!(
                    "{name}:{}: read_iolog_format={}: expected 'fio version 2 iolog' or 'fio version 3 iolog', found '{}'",
                    blank + 1,
                    f.name(),
                    other.chars().take(60).collect::<String>()
                ))
            }
            (other, None) => match Format::recognise(other) {
                Some(f) => (0, Some(f)),
                None => return Err(format!(
                    "{name}:{}: not a trace blksim reads: expected 'fio version 2 iolog', 'fio version 3 iolog', a blktrace binary file, an ASCII record 'time_ns device sector sectors 1|0' (MQSim, DiskSim), an MSR Cambridge, Alibaba or Tencent CSV line, or blkparse output; found '{}'",
                    blank + 1,
                    other.chars().take(60).collect::<String>()
                )),
            },
        };
        let pending = foreign.map(|_| first);
        let mut me = Self::new(name, lines, version, foreign, pending, opts, None);
        me.line_no += blank;
        Ok(me)
    }

    /// The next line of a text trace, None at its end.
    fn read_line(&mut self) -> Result<Option<String>, String> {
        self.buf.clear();
        match self.lines.read_line(&mut self.buf) {
            Ok(n) => Ok((n > 0).then(|| std::mem::take(&mut self.buf))),
            // The line was read (and consumed) but is not text: counted as read, so that the
            // error names it and replay_skip_bad can pass over it.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                self.line_no += 1;
                Err(self.bad("not valid UTF-8 text"))
            }
            Err(e) => Err(self.bad(&e.to_string())),
        }
    }

    /// The next record of a foreign text trace ([`crate::foreign`]).
    fn next_foreign(&mut self, format: Format) -> Result<Option<Record>, String> {
        loop {
            let line = match self.pending.take() {
                Some(l) => l,
                None => match self.read_line()? {
                    Some(l) => l,
                    None => return Ok(None),
                },
            };
            self.line_no += 1;
            if line.trim().is_empty() {
                continue;
            }
            if let Some(d) = self.opts.device {
                if format.device(line.trim_end()) != Some(d) {
                    continue;
                }
            }
            match format.parse(line.trim_end()).map_err(|e| self.bad(&e))? {
                Line::Rec(r) => return Ok(Some(r)),
                Line::Responded(r, ns) => {
                    if let RecOp::Io(ddir, ..) = r.op {
                        self.recorded.direct(ddir, ns);
                    }
                    return Ok(Some(r));
                }
                Line::Queued(r, dev) => {
                    if let RecOp::Io(ddir, off, _) = r.op {
                        self.recorded.queued(dev, off / 512, r.t_ns, ddir);
                    }
                    return Ok(Some(r));
                }
                Line::Completed {
                    t_ns,
                    dev,
                    sector,
                    sectors,
                } => self.recorded.completed(dev, sector, sectors, t_ns),
                Line::Skip => continue,
                Line::End => {
                    // Nothing after blkparse's summary is replayed.
                    self.at_end = true;
                    return Ok(None);
                }
            }
        }
    }

    /// A record of a trace other than a fio log, timed by fio's rule in ns and shaped.
    fn replay_record(&mut self, rec: Record) -> ReplayIo {
        let gap = self.delay(rec.t_ns);
        let op = match rec.op {
            RecOp::Io(ddir, offset, len) => ReplayOp::Io(IoU {
                ddir,
                offset: self.shape(offset),
                len,
            }),
            RecOp::Flush => ReplayOp::Sync { datasync: false },
        };
        ReplayIo {
            op,
            gap_ns: gap,
            at_ns: None,
        }
    }

    /// `replay_scale`, then `replay_align`, as fio's `iolog_file_offset` applies them.
    fn shape(&self, mut offset: u64) -> u64 {
        if self.opts.scale > 1 {
            offset /= self.opts.scale;
        }
        if self.opts.align > 1 {
            offset &= !(self.opts.align - 1);
        }
        offset
    }

    /// The trace's own response times found since the last call (MSR's `ResponseTime`, the
    /// queue-to-completion times of a blktrace or blkparse trace), per direction, in ns.
    pub fn take_recorded(&mut self) -> impl Iterator<Item = (Ddir, u64)> + '_ {
        let opts = self.opts;
        let drain = match self.blktrace.as_mut() {
            Some(b) => b.recorded.take(),
            None => self.recorded.take(),
        };
        // Directions `replay_skip` drops have no simulated side to stand beside.
        drain.filter(move |&(ddir, _)| !opts.skips_ddir(ddir))
    }

    /// `file:line` (or `file: record N`) of the last record read.
    pub fn location(&self) -> String {
        match &self.blktrace {
            Some(b) => b.location(),
            None => format!("{}:{}", self.name, self.line_no),
        }
    }

    fn bad(&self, what: &str) -> String {
        format!("{}:{}: {what}", self.name, self.line_no)
    }

    /// fio's `delay_since_ttime`, in the trace's unit: nothing with `replay_no_stall`, for
    /// a time before the previous one, or when the previous time is 0 — fio keeps "no
    /// previous time" as 0, so the gap after a record at time 0 is not waited, and a replay
    /// that starts at 0 runs that much shorter than the trace, as fio's does.
    fn delay(&mut self, ttime: u64) -> u64 {
        let last = std::mem::replace(&mut self.last_ttime, ttime);
        if last == 0 || self.opts.no_stall || ttime < last {
            0
        } else if self.opts.time_scale_pct == 100 {
            ttime - last
        } else {
            ((ttime - last) as f64 * 100.0 / self.opts.time_scale_pct as f64) as u64
        }
    }

    /// The next I/O, None at the end of the log. With `skip_bad`, a malformed line of a
    /// text trace is counted and passed over (a read that makes no progress still stops).
    pub fn next_io(&mut self) -> Result<Option<ReplayIo>, String> {
        loop {
            let at = self.line_no;
            match self.next_io_strict() {
                Err(e) if self.opts.skip_bad && self.blktrace.is_none() && self.line_no > at => {
                    self.skipped += 1;
                    self.first_bad.get_or_insert(e);
                }
                r => return r,
            }
        }
    }

    /// Malformed records passed over with `skip_bad`, and the first one's error.
    pub fn skipped(&self) -> (u64, Option<&str>) {
        (self.skipped, self.first_bad.as_deref())
    }

    /// What the replay left out of a fio iolog as fio 3.33 does, for stderr: its trim
    /// lines, and `replay_skip`, which fio applies to blktrace replays only.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.is_fio_log() && self.opts.skip != 0 {
            notes.push(format!(
                "{}: replay_skip is not applied to a fio iolog: fio 3.33 applies it to blktrace replays only",
                self.name
            ));
        }
        if self.trims_dropped > 0 {
            notes.push(format!(
                "{}:{}: {} trim line(s) not replayed: fio 3.33's read_iolog replays no trims (\"bad ddir: 2\")",
                self.name, self.first_trim_line, self.trims_dropped
            ));
        }
        notes
    }

    /// A fio iolog (version 2 or 3), read as fio's `read_iolog2` reads it.
    fn is_fio_log(&self) -> bool {
        self.blktrace.is_none() && self.foreign.is_none()
    }

    fn next_io_strict(&mut self) -> Result<Option<ReplayIo>, String> {
        if self.blktrace.is_some() || self.foreign.is_some() {
            loop {
                let rec = match (self.blktrace.as_mut(), self.foreign) {
                    (Some(b), _) => b.next_record()?,
                    (None, Some(_)) if self.at_end => None,
                    (None, Some(f)) => self.next_foreign(f)?,
                    (None, None) => unreachable!(),
                };
                let Some(rec) = rec else { return Ok(None) };
                // fio drops a skipped record after taking its time: its gap is not waited.
                let io = self.replay_record(rec);
                if !self.opts.skips(&io.op) {
                    return Ok(Some(io));
                }
            }
        }
        loop {
            let Some(line) = self.read_line()? else {
                return Ok(None);
            };
            self.line_no += 1;
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            let (name, line_no) = (self.name.clone(), self.line_no);
            let num = move |s: &str, what: &str| -> Result<u64, String> {
                s.parse::<u64>()
                    .map_err(|_| format!("{name}:{line_no}: {what} '{s}' is not a whole number"))
            };
            // Version 3: time file action [offset length]; version 2: file action [...].
            let (gap_us, rest) = if self.version == 3 {
                let t = num(f[0], "time")?;
                (self.delay(t), &f[1..])
            } else {
                (0, &f[..])
            };
            if rest.len() < 2 {
                return Err(self.bad("expected a file name and an action"));
            }
            let act = rest[1];
            let args = &rest[2..];
            let ddir = match act {
                "read" => Some(Ddir::Read),
                "write" => Some(Ddir::Write),
                "trim" => Some(Ddir::Trim),
                "sync" | "datasync" => {
                    let gap = gap_us
                        .saturating_add(std::mem::take(&mut self.carry_us))
                        .saturating_mul(1000);
                    return Ok(Some(ReplayIo {
                        op: ReplayOp::Sync {
                            datasync: act == "datasync",
                        },
                        gap_ns: gap,
                        at_ns: self
                            .pending_wait_ms
                            .take()
                            .map(|m| m.saturating_mul(1_000_000)),
                    }));
                }
                "add" | "open" | "close" => {
                    self.carry_us = self.carry_us.saturating_add(gap_us);
                    continue;
                }
                "wait" if self.version == 2 => {
                    // fio's read_iolog2 takes a line of four fields only ("bad iolog2"
                    // otherwise), and read_iolog_get waits until the offset field's
                    // milliseconds since the run began (`mtime_since_genesis`); HOWTO's
                    // "microseconds relative to the previous wait" is not what it does.
                    if args.len() < 2 {
                        return Err(self.bad("wait needs a time (ms) and a length"));
                    }
                    let at = num(args[0], "wait time")?;
                    if !self.opts.no_stall {
                        self.pending_wait_ms = Some(at);
                    }
                    continue;
                }
                "wait" => {
                    // fio: "ignoring wait command with version 3".
                    continue;
                }
                other => return Err(self.bad(&format!("unknown action '{other}'"))),
            };
            let Some(ddir) = ddir else { continue };
            if args.len() < 2 {
                return Err(self.bad(&format!("{act} needs an offset and a length")));
            }
            let mut offset = num(args[0], "offset")?;
            let len = num(args[1], "length")?;
            if len == 0 {
                return Err(self.bad(&format!("{act} of length 0")));
            }
            if ddir == Ddir::Trim {
                // fio's read_iolog2 takes a trim's time (io_log_last_ttime) and then
                // drops it ("bad ddir: 2"): its gap is not waited. fio's write_iolog
                // writes trims, but fio 3.33 (and its master of 2026) replays none.
                self.trims_dropped += 1;
                if self.first_trim_line == 0 {
                    self.first_trim_line = self.line_no;
                }
                continue;
            }
            offset = self.shape(offset);
            let gap = gap_us
                .saturating_add(std::mem::take(&mut self.carry_us))
                .saturating_mul(1000);
            return Ok(Some(ReplayIo {
                op: ReplayOp::Io(IoU { ddir, offset, len }),
                gap_ns: gap,
                at_ns: self
                    .pending_wait_ms
                    .take()
                    .map(|m| m.saturating_mul(1_000_000)),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(text: &str, opts: ReplayOpts) -> Result<IologReader, String> {
        IologReader::from_reader(
            "t.iolog",
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            opts,
        )
    }

    const OPTS: ReplayOpts = ReplayOpts {
        no_stall: false,
        time_scale_pct: 100,
        scale: 1,
        align: 1,
        skip: 0,
        skip_bad: false,
        format: None,
        device: None,
    };

    fn io(x: ReplayIo) -> IoU {
        match x.op {
            ReplayOp::Io(io) => io,
            ReplayOp::Sync { .. } => panic!("a sync"),
        }
    }

    #[test]
    fn v3_gaps_scale_and_file_lines_pass_their_gap_on() {
        // fio's delay_since_ttime: the gap after the line at time 0 is not waited.
        let log = "fio version 3 iolog\n0 f add\n10 f open\n110 f read 4096 512\n\
                   150 f sync 0 0\n350 f write 8192 4096\n400 f close\n";
        let mut r = reader(log, OPTS).unwrap();
        let a = r.next_io().unwrap().unwrap();
        let ai = io(a);
        assert_eq!(
            (ai.ddir, ai.offset, ai.len, a.gap_ns),
            (Ddir::Read, 4096, 512, 100_000)
        );
        let s = r.next_io().unwrap().unwrap();
        assert_eq!(
            (s.op, s.gap_ns),
            (ReplayOp::Sync { datasync: false }, 40_000)
        );
        let b = r.next_io().unwrap().unwrap();
        assert_eq!((io(b).ddir, b.gap_ns), (Ddir::Write, 200_000));
        assert_eq!(r.next_io().unwrap(), None);
        // Twice as fast, and no stall at all.
        let fast = ReplayOpts {
            time_scale_pct: 200,
            ..OPTS
        };
        let mut r = reader(log, fast).unwrap();
        assert_eq!(r.next_io().unwrap().unwrap().gap_ns, 50_000);
        let nostall = ReplayOpts {
            no_stall: true,
            ..OPTS
        };
        let mut r = reader(log, nostall).unwrap();
        assert_eq!(r.next_io().unwrap().unwrap().gap_ns, 0);
        // Offsets scaled down, then aligned.
        let shaped = ReplayOpts {
            scale: 2,
            align: 4096,
            ..OPTS
        };
        let mut r = reader(log, shaped).unwrap();
        r.next_io().unwrap();
        r.next_io().unwrap();
        assert_eq!(io(r.next_io().unwrap().unwrap()).offset, 4096);
    }

    /// A gap that `replay_time_scale` stretches past the u64 range, plus the gap carried over
    /// file lines before it, saturates instead of overflowing (the run then stops at the end
    /// of virtual time with an error, as any other gap past it does).
    #[test]
    fn huge_gaps_saturate() {
        let slow = ReplayOpts {
            time_scale_pct: 3,
            ..OPTS
        };
        let log = format!(
            "fio version 3 iolog\n1 f add\n2 f open\n{} f read 0 512\n",
            u64::MAX / 2
        );
        let mut r = reader(&log, slow).unwrap();
        assert_eq!(r.next_io().unwrap().unwrap().gap_ns, u64::MAX);
        let log = format!(
            "fio version 3 iolog\n1 f add\n2 f open\n{} f sync 0 0\n",
            u64::MAX / 2
        );
        let mut r = reader(&log, slow).unwrap();
        assert_eq!(r.next_io().unwrap().unwrap().gap_ns, u64::MAX);
        let log = format!(
            "fio version 3 iolog\n1 f add\n{} f open\n{} f close\n2 f read 0 512\n",
            u64::MAX / 2,
            u64::MAX
        );
        let mut r = reader(&log, slow).unwrap();
        assert_eq!(r.next_io().unwrap().unwrap().gap_ns, u64::MAX);
    }

    #[test]
    fn mqsim_ascii_records_are_sectors_and_ns() {
        let log = "1000 0 8 16 1\n4000 2 64 8 0\n";
        let mut r = reader(log, OPTS).unwrap();
        let a = r.next_io().unwrap().unwrap();
        assert_eq!(
            (io(a).ddir, io(a).offset, io(a).len, a.gap_ns),
            (Ddir::Read, 4096, 8192, 0)
        );
        let b = r.next_io().unwrap().unwrap();
        assert_eq!(
            (io(b).ddir, io(b).offset, io(b).len, b.gap_ns),
            (Ddir::Write, 32768, 4096, 3000)
        );
        assert_eq!(r.next_io().unwrap(), None);
        let mut r = reader("1000 0 8 16 1\n2000 0 8 x 0\n", OPTS).unwrap();
        r.next_io().unwrap();
        let e = r.next_io().err().unwrap();
        assert!(e.starts_with("t.iolog:2: sectors 'x'"), "{e}");
    }

    #[test]
    fn blkparse_flushes_and_the_summary_ends_the_trace() {
        let log = "259,0 0 1 0.000010000 9 Q R 8 + 8 [fio]\n\
                   259,0 0 2 0.000010000 9 G R 8 + 8 [fio]\n\
                   259,0 0 3 0.000040000 9 Q FWS 16 + 8 [fio]\n\
                   259,0 0 4 0.000050000 9 Q WS 16 + 8 [fio]\n\
                   CPU0 (259,0):\n\
                   259,0 0 5 0.000090000 9 Q R 8 + 8 [fio]\n";
        let mut r = reader(log, OPTS).unwrap();
        let a = r.next_io().unwrap().unwrap();
        assert_eq!((io(a).ddir, io(a).offset, a.gap_ns), (Ddir::Read, 4096, 0));
        // A preflush write replays as the flush alone, as fio's queue_trace does.
        let f = r.next_io().unwrap().unwrap();
        assert_eq!(
            (f.op, f.gap_ns),
            (ReplayOp::Sync { datasync: false }, 30_000)
        );
        let w = r.next_io().unwrap().unwrap();
        assert_eq!(
            (io(w).ddir, io(w).offset, w.gap_ns),
            (Ddir::Write, 8192, 10_000)
        );
        assert_eq!(r.next_io().unwrap(), None);
        assert_eq!(r.next_io().unwrap(), None);
        // MSR: a header, then 100 ns ticks.
        let msr = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                   1000,h,0,Read,8192,4096,5\n1500,h,1,Write,0,512,5\n";
        let mut r = reader(msr, OPTS).unwrap();
        r.next_io().unwrap();
        let b = r.next_io().unwrap().unwrap();
        assert_eq!(
            (io(b).ddir, io(b).len, b.gap_ns),
            (Ddir::Write, 512, 50_000)
        );
        assert_eq!(r.location(), "t.iolog:3");
    }

    #[test]
    fn edges_of_real_traces() {
        // No file named at all.
        assert!(TraceFiles::parse(":", &[], &[])
            .unwrap_err()
            .contains("names no file"));
        // Blank lines before the first record, as after it.
        let mut r = reader("\n\n1000 0 8 16 1\n", OPTS).unwrap();
        assert_eq!(io(r.next_io().unwrap().unwrap()).offset, 4096);
        assert_eq!(r.location(), "t.iolog:3");
        // A line that is not text is that line's error, and can be passed over.
        let bin: &[u8] = b"fio version 3 iolog\n0 f read 0 512\n\xff\xfe\n2 f read 512 512\n";
        let open = |skip_bad| {
            IologReader::from_reader(
                "t.iolog",
                Box::new(std::io::Cursor::new(bin.to_vec())),
                ReplayOpts { skip_bad, ..OPTS },
            )
            .unwrap()
        };
        let mut r = open(false);
        r.next_io().unwrap();
        assert_eq!(r.next_io().unwrap_err(), "t.iolog:3: not valid UTF-8 text");
        let mut r = open(true);
        let n = std::iter::from_fn(|| r.next_io().unwrap()).count();
        assert_eq!((n, r.skipped().0), (2, 1));
        // With replay_device, a record whose device is not that one (or unreadable) is not
        // replayed.
        let mut r = reader(
            "1,h,0,Read,0,4096,1\n2,h,x,Read,4096,4096,1\n",
            ReplayOpts {
                device: Some(0),
                ..OPTS
            },
        )
        .unwrap();
        assert_eq!(std::iter::from_fn(|| r.next_io().unwrap()).count(), 1);
    }

    #[test]
    fn one_device_and_a_forced_format() {
        let msr = "100,h,0,Read,0,4096,1\n200,h,1,Write,4096,4096,1\n300,h,0,Read,8192,4096,1\n";
        let mut r = reader(
            msr,
            ReplayOpts {
                device: Some(0),
                ..OPTS
            },
        )
        .unwrap();
        let offs: Vec<u64> = std::iter::from_fn(|| r.next_io().unwrap())
            .map(|x| io(x).offset)
            .collect();
        assert_eq!(offs, [0, 8192]);
        // blkparse's major,minor, as a dev_t.
        let bp = "8,0 0 1 0.1 7 Q R 0 + 8 [a]\n8,16 0 2 0.2 7 Q R 8 + 8 [a]\n";
        let mut r = reader(
            bp,
            ReplayOpts {
                device: Some(8 << 20 | 16),
                ..OPTS
            },
        )
        .unwrap();
        assert_eq!(io(r.next_io().unwrap().unwrap()).offset, 4096);
        assert_eq!(r.next_io().unwrap(), None);
        // Forced: a first line of another shape is an error of that format's, not a guess.
        let forced = |f| ReplayOpts {
            format: Some(f),
            ..OPTS
        };
        let mut r = reader("1000 0 8 16 1\n", forced(blksim_job::TraceFormat::Ascii)).unwrap();
        assert_eq!(io(r.next_io().unwrap().unwrap()).offset, 4096);
        let mut r = reader("1000 0 8 16 1\n", forced(blksim_job::TraceFormat::Msr)).unwrap();
        let e = r.next_io().err().unwrap();
        assert!(e.starts_with("t.iolog:1: expected 'Timestamp"), "{e}");
        let e = reader("1000 0 8 16 1\n", forced(blksim_job::TraceFormat::Fio))
            .err()
            .unwrap();
        assert!(e.contains("read_iolog_format=fio: expected"), "{e}");
    }

    #[test]
    fn bad_logs_are_errors_naming_file_and_line() {
        // Passed over and counted with skip_bad; the good lines around them replay.
        let log =
            "fio version 3 iolog\n0 f read 0 512\n1 f fly 0 512\n2 f read 0\n3 f read 512 512\n";
        let mut r = reader(
            log,
            ReplayOpts {
                skip_bad: true,
                ..OPTS
            },
        )
        .unwrap();
        assert_eq!(io(r.next_io().unwrap().unwrap()).offset, 0);
        assert_eq!(io(r.next_io().unwrap().unwrap()).offset, 512);
        assert_eq!(r.next_io().unwrap(), None);
        assert_eq!(r.skipped(), (2, Some("t.iolog:3: unknown action 'fly'")));
        let e = reader("fio version 9 iolog\n", OPTS).err().unwrap();
        assert!(e.starts_with("t.iolog:1: not a trace blksim reads"), "{e}");
        for (log, want) in [
            (
                "fio version 3 iolog\nx f read 0 512\n",
                "t.iolog:2: time 'x'",
            ),
            (
                "fio version 3 iolog\n0 f read 0\n",
                "t.iolog:2: read needs an offset",
            ),
            (
                "fio version 3 iolog\n0 f fly 0 512\n",
                "t.iolog:2: unknown action 'fly'",
            ),
            (
                "fio version 2 iolog\nf read 0 0\n",
                "t.iolog:2: read of length 0",
            ),
        ] {
            let mut r = reader(log, OPTS).unwrap();
            let e = r.next_io().err().unwrap();
            assert!(e.starts_with(want), "{e}");
        }
        // Version 2: no times; `wait` sets a time since the run's start, in ms.
        let mut r = reader(
            "fio version 2 iolog\nf add\nf wait 500 0\nf read 0 512\n",
            OPTS,
        )
        .unwrap();
        let a = r.next_io().unwrap().unwrap();
        assert_eq!((a.gap_ns, a.at_ns), (0, Some(500_000_000)));
    }
}
