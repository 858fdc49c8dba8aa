//! `read_iolog`: a fio iolog (version 2 or 3) replayed as fio replays it (iolog.c
//! `read_iolog2`, `read_iolog_get`, `iolog_delay`), read a line at a time so that a trace of
//! any length replays in the same memory.
//!
//! Every I/O line gives the next io_u's direction, offset and length. Version 3 lines carry
//! a time in µs; fio holds each I/O until the recorded gap since the previous line has
//! passed since its last issue (`delay_since_ttime`, scaled by `100 / replay_time_scale`,
//! none with `replay_no_stall`). A version 2 `wait` waits until that many µs since the start.
//! File lines (`add`, `open`, `close`) name files; the simulation has one device, so they
//! only pass their gap on. Offsets are divided by `replay_scale` and aligned down to
//! `replay_align`. `sync` and `datasync` lines are flushes (fsync, fdatasync).
//!
//! Traces other tools write — the ASCII traces MQSim and DiskSim read, the MSR Cambridge
//! CSV traces, blkparse's text output — are recognised from their content too
//! ([`crate::foreign`]) and timed by the same gap rule, in ns.

use blksim_job::Ddir;
use std::io::BufRead;

use crate::foreign::{Format, Line};
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
    /// Version 2 `wait`: not before this many ns after the job's start.
    pub at_ns: Option<u64>,
}

/// Replay options (`replay_no_stall`, `replay_time_scale`, `replay_scale`, `replay_align`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayOpts {
    pub no_stall: bool,
    pub time_scale_pct: u64,
    pub scale: u64,
    pub align: u64,
}

pub struct IologReader {
    name: String,
    lines: Box<dyn BufRead>,
    line_no: usize,
    version: u32,
    /// A trace written by another tool, when not a fio log.
    foreign: Option<Format>,
    /// The data of a blkparse preflush+write, issued right after its flush.
    queued: Option<ReplayIo>,
    /// blkparse's summary was reached.
    at_end: bool,
    opts: ReplayOpts,
    last_ttime: Option<u64>,
    /// Gap carried from file lines to the next I/O (µs, unscaled).
    carry_us: u64,
    pending_wait_us: Option<u64>,
    buf: String,
    /// A foreign trace's first line, read to recognise the format.
    pending: Option<String>,
}

impl IologReader {
    /// Open the log at `path`: its first line must be fio's version line.
    pub fn open(path: &str, opts: ReplayOpts) -> Result<Self, String> {
        let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
        Self::from_reader(path, Box::new(std::io::BufReader::new(f)), opts)
    }

    pub fn from_reader(
        name: &str,
        mut lines: Box<dyn BufRead>,
        opts: ReplayOpts,
    ) -> Result<Self, String> {
        let mut first = String::new();
        lines
            .read_line(&mut first)
            .map_err(|e| format!("{name}: {e}"))?;
        // Recognised from the content: fio's version line, or the first line of a trace
        // another tool wrote (crate::foreign), which is read again as a record.
        let (version, foreign) = match first.trim_end() {
            "fio version 2 iolog" => (2, None),
            "fio version 3 iolog" => (3, None),
            other => match Format::recognise(other) {
                Some(f) => (0, Some(f)),
                None => return Err(format!(
                    "{name}:1: not a trace blksim reads: expected 'fio version 2 iolog', 'fio version 3 iolog', an ASCII record 'time_ns device sector sectors 1|0' (MQSim, DiskSim), an MSR Cambridge CSV line, or blkparse output; found '{}'",
                    other.chars().take(60).collect::<String>()
                )),
            },
        };
        let pending = foreign.map(|_| first);
        Ok(IologReader {
            name: name.to_string(),
            lines,
            line_no: if pending.is_some() { 0 } else { 1 },
            version,
            foreign,
            queued: None,
            at_end: false,
            opts,
            last_ttime: None,
            carry_us: 0,
            pending_wait_us: None,
            buf: String::new(),
            pending,
        })
    }

    /// The next record of a foreign trace ([`crate::foreign`]).
    fn next_foreign(&mut self, format: Format) -> Result<Option<ReplayIo>, String> {
        if let Some(q) = self.queued.take() {
            return Ok(Some(q));
        }
        loop {
            let line = match self.pending.take() {
                Some(l) => l,
                None => {
                    self.buf.clear();
                    let n = self
                        .lines
                        .read_line(&mut self.buf)
                        .map_err(|e| self.bad(&e.to_string()))?;
                    if n == 0 {
                        return Ok(None);
                    }
                    std::mem::take(&mut self.buf)
                }
            };
            self.line_no += 1;
            if line.trim().is_empty() {
                continue;
            }
            let rec = match format.parse(line.trim_end()).map_err(|e| self.bad(&e))? {
                Line::Rec(r) => r,
                Line::Skip => continue,
                Line::End => {
                    // Nothing after blkparse's summary is replayed.
                    self.pending = None;
                    self.at_end = true;
                    return Ok(None);
                }
            };
            // The same gap rule as fio's logs, in ns: since the previous record, scaled.
            let gap = match self.last_ttime {
                Some(last) if !self.opts.no_stall && rec.t_ns >= last => {
                    let raw = rec.t_ns - last;
                    if self.opts.time_scale_pct == 100 {
                        raw
                    } else {
                        (raw as f64 * 100.0 / self.opts.time_scale_pct as f64) as u64
                    }
                }
                _ => 0,
            };
            self.last_ttime = Some(rec.t_ns);
            let io = rec.io.map(|(ddir, offset, len)| ReplayIo {
                op: ReplayOp::Io(IoU {
                    ddir,
                    offset: self.shape(offset),
                    len,
                }),
                gap_ns: if rec.preflush { 0 } else { gap },
                at_ns: None,
            });
            if !rec.preflush {
                return Ok(io);
            }
            // A preflush goes first; the data follows it at once.
            self.queued = io;
            return Ok(Some(ReplayIo {
                op: ReplayOp::Sync { datasync: false },
                gap_ns: gap,
                at_ns: None,
            }));
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

    /// `file:line` of the last line read.
    pub fn location(&self) -> String {
        format!("{}:{}", self.name, self.line_no)
    }

    fn bad(&self, what: &str) -> String {
        format!("{}:{}: {what}", self.name, self.line_no)
    }

    /// `delay_since_ttime` (µs): nothing for the first line, with `replay_no_stall`, or for
    /// a time before the previous one.
    fn delay_us(&mut self, ttime: u64) -> u64 {
        let d = match self.last_ttime {
            Some(last) if !self.opts.no_stall && ttime >= last => {
                let raw = ttime - last;
                if self.opts.time_scale_pct == 100 {
                    raw
                } else {
                    (raw as f64 * 100.0 / self.opts.time_scale_pct as f64) as u64
                }
            }
            _ => 0,
        };
        self.last_ttime = Some(ttime);
        d
    }

    /// The next I/O, None at the end of the log.
    pub fn next_io(&mut self) -> Result<Option<ReplayIo>, String> {
        if let Some(f) = self.foreign {
            if self.at_end {
                return Ok(None);
            }
            return self.next_foreign(f);
        }
        loop {
            self.buf.clear();
            let n = self
                .lines
                .read_line(&mut self.buf)
                .map_err(|e| self.bad(&e.to_string()))?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let line = std::mem::take(&mut self.buf);
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
                (self.delay_us(t), &f[1..])
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
                    let gap = (gap_us + std::mem::take(&mut self.carry_us)).saturating_mul(1000);
                    return Ok(Some(ReplayIo {
                        op: ReplayOp::Sync {
                            datasync: act == "datasync",
                        },
                        gap_ns: gap,
                        at_ns: self.pending_wait_us.take().map(|u| u.saturating_mul(1000)),
                    }));
                }
                "add" | "open" | "close" => {
                    self.carry_us += gap_us;
                    continue;
                }
                "wait" if self.version == 2 => {
                    let at = num(args.first().copied().unwrap_or(""), "wait time")?;
                    self.pending_wait_us = Some(at);
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
            offset = self.shape(offset);
            let gap = (gap_us + std::mem::take(&mut self.carry_us)).saturating_mul(1000);
            return Ok(Some(ReplayIo {
                op: ReplayOp::Io(IoU { ddir, offset, len }),
                gap_ns: gap,
                at_ns: self.pending_wait_us.take().map(|u| u.saturating_mul(1000)),
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
    };

    fn io(x: ReplayIo) -> IoU {
        match x.op {
            ReplayOp::Io(io) => io,
            ReplayOp::Sync { .. } => panic!("a sync"),
        }
    }

    #[test]
    fn v3_gaps_scale_and_file_lines_pass_their_gap_on() {
        let log = "fio version 3 iolog\n0 f add\n10 f open\n110 f read 4096 512\n\
                   150 f sync 0 0\n350 f write 8192 4096\n400 f close\n";
        let mut r = reader(log, OPTS).unwrap();
        let a = r.next_io().unwrap().unwrap();
        let ai = io(a);
        assert_eq!(
            (ai.ddir, ai.offset, ai.len, a.gap_ns),
            (Ddir::Read, 4096, 512, 110_000)
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
        assert_eq!(r.next_io().unwrap().unwrap().gap_ns, 55_000);
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
    fn blkparse_preflush_goes_first_and_the_summary_ends_the_trace() {
        let log = "259,0 0 1 0.000010000 9 Q R 8 + 8 [fio]\n\
                   259,0 0 2 0.000010000 9 G R 8 + 8 [fio]\n\
                   259,0 0 3 0.000040000 9 Q FWS 16 + 8 [fio]\n\
                   259,0 0 4 0.000050000 9 Q FWS [fio]\n\
                   CPU0 (259,0):\n\
                   259,0 0 5 0.000090000 9 Q R 8 + 8 [fio]\n";
        let mut r = reader(log, OPTS).unwrap();
        let a = r.next_io().unwrap().unwrap();
        assert_eq!((io(a).ddir, io(a).offset, a.gap_ns), (Ddir::Read, 4096, 0));
        let f = r.next_io().unwrap().unwrap();
        assert_eq!(
            (f.op, f.gap_ns),
            (ReplayOp::Sync { datasync: false }, 30_000)
        );
        let w = r.next_io().unwrap().unwrap();
        assert_eq!((io(w).ddir, io(w).offset, w.gap_ns), (Ddir::Write, 8192, 0));
        let f2 = r.next_io().unwrap().unwrap();
        assert_eq!(
            (f2.op, f2.gap_ns),
            (ReplayOp::Sync { datasync: false }, 10_000)
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
    fn bad_logs_are_errors_naming_file_and_line() {
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
        // Version 2: no times; `wait` sets a time since the start.
        let mut r = reader(
            "fio version 2 iolog\nf add\nf wait 500 0\nf read 0 512\n",
            OPTS,
        )
        .unwrap();
        let a = r.next_io().unwrap().unwrap();
        assert_eq!((a.gap_ns, a.at_ns), (0, Some(500_000)));
    }
}
