//! blktrace binary files replayed as fio replays them (blktrace.c): only `Q` (queue) events
//! that are not passthrough (`BLK_TC_PC`) or notifications become I/Os (`queue_trace`); a
//! discard is a trim, then a flush category is a flush alone (no data), then the write
//! category a write and anything else a read (`handle_trace_fs`, which skips a `Q` of no
//! bytes); the offset is `sector * 512`. Either byte order is read (`is_blktrace` tries the
//! swapped magic), and only version 7, as fio 3.33 checks.
//!
//! Several files — a per-CPU set `dev.blktrace.0`, `.1`, ..., or traces of different
//! devices — are merged by time as fio's `merge_blktrace_file` merges them
//! (`blktrace_merge`, `find_earliest_io`: the earliest `Q` next, ties to the first file),
//! each file's times scaled by its `merge_blktrace_scalars` percentage and the file
//! replayed `merge_blktrace_iters` times, each pass shifted by the file's last time
//! (`read_trace`). Files are read a record at a time, so a trace of any length is merged and
//! replayed in the same memory.

use std::io::{BufReader, Read};

use blksim_job::Ddir;
use blksim_trace::record::{blk_tc_act, ta, tc};
use blksim_trace::{RawRecord, RecordStream};

use crate::foreign::{RecOp, Record};
use crate::recorded::Outstanding;

/// One file of a merge.
struct Src {
    path: String,
    stream: RecordStream<Box<dyn Read>>,
    /// The next event of this file and its time, scaled and shifted.
    peek: Option<(u64, RawRecord)>,
    scalar_pct: u64,
    iters: u64,
    iter: u64,
    /// The last time read in the current pass (the shift of the next pass).
    last_time: u64,
    length: u64,
}

/// The merged `Q` events of one or more blktrace files.
pub struct BlktraceReader {
    srcs: Vec<Src>,
    /// The file (index into `srcs`) and record number of the last record returned.
    at: (usize, u64),
    /// Queued requests waiting for their completions: the trace's response times.
    pub recorded: Outstanding,
    /// `replay_device`: only this device's events (the kernel's dev_t).
    pub device: Option<u64>,
}

/// What a `Q` event replays as (`queue_trace`), None for events fio skips.
pub fn replay_op(r: &RawRecord) -> Option<RecOp> {
    if r.action & 0xffff != ta::QUEUE
        || r.action & blk_tc_act(tc::PC) != 0
        || r.action & blk_tc_act(tc::NOTIFY) != 0
    {
        return None;
    }
    let off = r.sector.saturating_mul(512);
    let len = u64::from(r.bytes);
    if r.action & blk_tc_act(tc::DISCARD) != 0 {
        return (len > 0).then_some(RecOp::Io(Ddir::Trim, off, len));
    }
    if r.action & blk_tc_act(tc::FLUSH) != 0 {
        return Some(RecOp::Flush);
    }
    if len == 0 {
        return None;
    }
    let ddir = if r.action & blk_tc_act(tc::WRITE) != 0 {
        Ddir::Write
    } else {
        Ddir::Read
    };
    Some(RecOp::Io(ddir, off, len))
}

fn open(path: &str) -> Result<Box<dyn Read>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
}

impl Src {
    fn new(path: &str, stream: RecordStream<Box<dyn Read>>, scalar_pct: u64, iters: u64) -> Self {
        Src {
            path: path.to_string(),
            stream,
            peek: None,
            scalar_pct,
            iters: iters.max(1),
            iter: 0,
            last_time: 0,
            length: 0,
        }
    }

    /// Read this file's next event (rewinding for another pass when asked).
    fn advance(&mut self) -> Result<(), String> {
        self.peek = None;
        loop {
            let rec = self
                .stream
                .next_record()
                .map_err(|e| format!("{}: {e}", self.path))?;
            let Some(rec) = rec else {
                // fio's read_trace: a file's length is its last time; the next pass starts
                // that much later.
                if self.length == 0 {
                    self.length = self.last_time;
                }
                self.iter += 1;
                if self.iter >= self.iters {
                    return Ok(());
                }
                self.stream = RecordStream::new(open(&self.path)?);
                continue;
            };
            if rec.action & blk_tc_act(tc::NOTIFY) != 0 {
                continue;
            }
            self.last_time = rec.time_ns;
            // In 128 bits: a large scale or many passes must not saturate and tie.
            let t = (u128::from(rec.time_ns) + u128::from(self.iter) * u128::from(self.length))
                * u128::from(self.scalar_pct)
                / 100;
            let t = u64::try_from(t).unwrap_or(u64::MAX);
            self.peek = Some((t, rec));
            return Ok(());
        }
    }
}

impl BlktraceReader {
    /// Open the files of a merge: each with its time scale (%) and pass count.
    pub fn open(files: &[(String, u64, u64)]) -> Result<Self, String> {
        let mut srcs = Vec::with_capacity(files.len());
        for (path, scalar_pct, iters) in files {
            srcs.push(Src::new(
                path,
                RecordStream::new(open(path)?),
                *scalar_pct,
                *iters,
            ));
        }
        Self::start(srcs)
    }

    /// One trace from a stream (tests, fuzzing).
    pub fn from_reader(name: &str, r: Box<dyn Read>) -> Result<Self, String> {
        Self::start(vec![Src::new(name, RecordStream::new(r), 100, 1)])
    }

    fn start(mut srcs: Vec<Src>) -> Result<Self, String> {
        for s in &mut srcs {
            s.advance()?;
        }
        Ok(BlktraceReader {
            srcs,
            at: (0, 0),
            recorded: Outstanding::default(),
            device: None,
        })
    }

    /// The next `Q` of the merge, in time order (ties to the first file), with its raw
    /// record (for `merge_blktrace_file`). Every event is taken in time order on the way,
    /// so that completions pair with the requests they answer.
    pub fn next_raw(&mut self) -> Result<Option<(Record, RawRecord)>, String> {
        loop {
            let mut best: Option<usize> = None;
            for (i, s) in self.srcs.iter().enumerate() {
                if let Some((t, _)) = &s.peek {
                    if best.is_none_or(|b| *t < self.srcs[b].peek.as_ref().unwrap().0) {
                        best = Some(i);
                    }
                }
            }
            let Some(i) = best else { return Ok(None) };
            let s = &mut self.srcs[i];
            let (t, rec) = s.peek.take().unwrap();
            self.at = (i, s.stream.records);
            s.advance()?;
            if self.device.is_some_and(|d| d != u64::from(rec.device)) {
                continue;
            }
            match replay_op(&rec) {
                Some(op) => {
                    if let RecOp::Io(ddir, _, _) = op {
                        self.recorded
                            .queued(u64::from(rec.device), rec.sector, rec.time_ns, ddir);
                    }
                    return Ok(Some((Record { t_ns: t, op }, rec)));
                }
                None if rec.action & 0xffff == ta::COMPLETE => {
                    self.recorded.completed(
                        u64::from(rec.device),
                        rec.sector,
                        u64::from(rec.bytes) / 512,
                        rec.time_ns,
                    );
                }
                None => {}
            }
        }
    }

    pub fn next_record(&mut self) -> Result<Option<Record>, String> {
        Ok(self.next_raw()?.map(|(r, _)| r))
    }

    /// The file and record number of the last record returned.
    pub fn location(&self) -> String {
        format!("{}: record {}", self.srcs[self.at.0].path, self.at.1)
    }
}

/// Merge `files` into one blktrace file at `out`, as fio's `merge_blktrace_file` does: only
/// the `Q` events, in merged time order, with their scaled times and no payload.
pub fn merge_to_file(files: &[(String, u64, u64)], out: &str) -> Result<u64, String> {
    use std::io::Write;
    let mut r = BlktraceReader::open(files)?;
    let f = std::fs::File::create(out).map_err(|e| format!("{out}: {e}"))?;
    let mut w = std::io::BufWriter::new(f);
    let mut n = 0u64;
    while let Some((rec, mut raw)) = r.next_raw()? {
        // Response times are not shown here: drop them as they come.
        r.recorded.take();
        raw.time_ns = rec.t_ns;
        raw.pdu.clear();
        let h = raw.header_bytes();
        w.write_all(&h).map_err(|e| format!("{out}: {e}"))?;
        n += 1;
    }
    w.flush().map_err(|e| format!("{out}: {e}"))?;
    Ok(n)
}

/// `t_get_ddir`: the direction a record's categories give, for the depth count.
fn depth_ddir(r: &RawRecord) -> Option<usize> {
    if r.action & blk_tc_act(tc::READ) != 0 {
        Some(Ddir::Read as usize)
    } else if r.action & blk_tc_act(tc::WRITE) != 0 {
        Some(Ddir::Write as usize)
    } else if r.action & blk_tc_act(tc::DISCARD) != 0 {
        Some(Ddir::Trim as usize)
    } else {
        None
    }
}

/// The iodepth fio gives a blktrace replay when `iodepth` is not set (`read_blktrace`):
/// per direction, each `Q` adds one, each back or front merge takes one away, and each
/// completion records the count so far as a candidate and restarts it; the deepest
/// candidate, at most 1024, at least 1 for a direction with I/O. The files' records are
/// taken in time order (ties to the first file), as one merged trace.
pub fn probe_depth(files: &[(String, u64, u64)], device: Option<u64>) -> Result<u32, String> {
    let mut streams = Vec::with_capacity(files.len());
    for (p, _, _) in files {
        streams.push((p, RecordStream::new(open(p)?), None::<RawRecord>));
    }
    let mut this = [0i64; 3];
    let mut depth = [0i64; 3];
    let mut ios = [0u64; 3];
    loop {
        for (p, s, peek) in streams.iter_mut() {
            if peek.is_none() {
                *peek = s.next_record().map_err(|e| format!("{p}: {e}"))?;
            }
        }
        let mut best: Option<usize> = None;
        for (i, (_, _, peek)) in streams.iter().enumerate() {
            if let Some(r) = peek {
                if best.is_none_or(|b| r.time_ns < streams[b].2.as_ref().unwrap().time_ns) {
                    best = Some(i);
                }
            }
        }
        let Some(i) = best else { break };
        let r = streams[i].2.take().unwrap();
        if r.action & blk_tc_act(tc::NOTIFY) != 0
            || device.is_some_and(|d| d != u64::from(r.device))
        {
            continue;
        }
        let Some(d) = depth_ddir(&r) else { continue };
        match r.action & 0xffff {
            ta::QUEUE => {
                this[d] += 1;
                if replay_op(&r).is_some() {
                    ios[d] += 1;
                }
            }
            ta::BACKMERGE | ta::FRONTMERGE => this[d] -= 1,
            ta::COMPLETE => {
                depth[d] = depth[d].max(this[d]);
                this[d] = 0;
            }
            _ => {}
        }
    }
    let mut max = 0;
    for d in 0..3 {
        let v = if depth[d] > 1024 {
            1024
        } else if depth[d] <= 0 && ios[d] > 0 {
            1
        } else {
            depth[d].max(0)
        };
        max = max.max(v);
    }
    Ok(max.max(1) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blksim_trace::{BLK_IO_TRACE_MAGIC, BLK_IO_TRACE_VERSION};

    fn raw(time_ns: u64, code: u32, cats: u32, sector: u64, bytes: u32) -> RawRecord {
        RawRecord {
            magic: BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION,
            sequence: 0,
            time_ns,
            sector,
            bytes,
            action: code | blk_tc_act(cats),
            pid: 1,
            device: 0,
            cpu: 0,
            error: 0,
            pdu: Vec::new(),
        }
    }

    fn file(recs: &[RawRecord], big_endian: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for r in recs {
            let mut h = r.header_bytes();
            if big_endian {
                // Every field reversed in place: the layout of a big-endian host's file.
                for (o, n) in [
                    (0, 4),
                    (4, 4),
                    (8, 8),
                    (16, 8),
                    (24, 4),
                    (28, 4),
                    (32, 4),
                    (36, 4),
                    (40, 4),
                    (44, 2),
                    (46, 2),
                ] {
                    h[o..o + n].reverse();
                }
            }
            out.extend_from_slice(&h);
        }
        out
    }

    fn all(r: &mut BlktraceReader) -> Vec<Record> {
        std::iter::from_fn(|| r.next_record().unwrap()).collect()
    }

    #[test]
    fn only_queue_events_become_ios_as_fio_maps_them() {
        let recs = [
            raw(10, ta::QUEUE, tc::READ, 8, 4096),
            raw(11, ta::GETRQ, tc::READ, 8, 4096),
            raw(20, ta::QUEUE, tc::WRITE | tc::DISCARD, 0, 1 << 20),
            raw(30, ta::QUEUE, tc::WRITE | tc::FLUSH | tc::SYNC, 16, 4096),
            raw(40, ta::QUEUE, tc::WRITE | tc::SYNC, 24, 8192),
            raw(50, ta::QUEUE, tc::WRITE, 24, 0),
            raw(60, ta::QUEUE, tc::READ | tc::PC, 0, 512),
            raw(70, ta::COMPLETE, tc::READ, 8, 4096),
        ];
        for be in [false, true] {
            let mut r = BlktraceReader::from_reader(
                "t.bin",
                Box::new(std::io::Cursor::new(file(&recs, be))),
            )
            .unwrap();
            let got = all(&mut r);
            assert_eq!(
                got,
                [
                    Record {
                        t_ns: 10,
                        op: RecOp::Io(Ddir::Read, 4096, 4096)
                    },
                    Record {
                        t_ns: 20,
                        op: RecOp::Io(Ddir::Trim, 0, 1 << 20)
                    },
                    Record {
                        t_ns: 30,
                        op: RecOp::Flush
                    },
                    Record {
                        t_ns: 40,
                        op: RecOp::Io(Ddir::Write, 12288, 8192)
                    },
                ],
                "big-endian {be}"
            );
        }
        // A bad magic, a short record: errors naming the file and the record.
        let mut bad = file(&recs[..2], false);
        bad[51] ^= 0xff;
        let e = BlktraceReader::from_reader("t.bin", Box::new(std::io::Cursor::new(bad)))
            .and_then(|mut r| r.next_record().map(|_| ()))
            .unwrap_err();
        assert!(
            e.starts_with("t.bin: bad magic") && e.contains("record 2"),
            "{e}"
        );
        // A capture cut off inside a record replays what came before, as fio's does.
        let mut cut = file(&recs[..2], false);
        cut.truncate(48 + 40);
        let mut r =
            BlktraceReader::from_reader("t.bin", Box::new(std::io::Cursor::new(cut))).unwrap();
        assert_eq!(all(&mut r).len(), 1);
    }

    fn tmp(name: &str, bytes: &[u8]) -> String {
        let p = std::env::temp_dir().join(format!("blksim-bt-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    }

    #[test]
    fn merges_by_time_with_scalars_and_iterations() {
        let a = tmp(
            "a",
            &file(
                &[
                    raw(100, ta::QUEUE, tc::READ, 0, 512),
                    raw(300, ta::QUEUE, tc::READ, 1, 512),
                ],
                false,
            ),
        );
        let b = tmp(
            "b",
            &file(
                &[
                    raw(100, ta::QUEUE, tc::WRITE, 2, 512),
                    raw(400, ta::COMPLETE, tc::WRITE, 2, 512),
                ],
                false,
            ),
        );
        // b at 50 %, twice: its Q at 50, then (100 + 400) * 50 % = 250 in the second pass.
        let mut r = BlktraceReader::open(&[(a.clone(), 100, 1), (b.clone(), 50, 2)]).unwrap();
        let got: Vec<(u64, u64)> = all(&mut r)
            .iter()
            .map(|x| match x.op {
                RecOp::Io(_, off, _) => (x.t_ns, off / 512),
                RecOp::Flush => unreachable!(),
            })
            .collect();
        assert_eq!(got, [(50, 2), (100, 0), (250, 2), (300, 1)]);
        // The merged file holds those Q events with their merged times.
        let out = std::env::temp_dir().join(format!("blksim-bt-{}-m", std::process::id()));
        let n = merge_to_file(
            &[(a.clone(), 100, 1), (b.clone(), 50, 2)],
            out.to_str().unwrap(),
        )
        .unwrap();
        assert_eq!(n, 4);
        let back = blksim_trace::parse_records(&std::fs::read(&out).unwrap()).unwrap();
        let times: Vec<u64> = back.iter().map(|r| r.time_ns).collect();
        assert_eq!(times, [50, 100, 250, 300]);
    }

    #[test]
    fn probed_depth_follows_read_blktrace() {
        // Three reads queued, one merged away, then a completion: depth 2. Writes: one.
        let p = tmp(
            "d",
            &file(
                &[
                    raw(1, ta::QUEUE, tc::READ, 0, 512),
                    raw(2, ta::QUEUE, tc::READ, 8, 512),
                    raw(3, ta::QUEUE, tc::READ, 1, 512),
                    raw(4, ta::BACKMERGE, tc::READ, 1, 512),
                    raw(5, ta::COMPLETE, tc::READ, 0, 1024),
                    raw(6, ta::QUEUE, tc::WRITE, 64, 512),
                ],
                false,
            ),
        );
        assert_eq!(probe_depth(&[(p, 100, 1)], None).unwrap(), 2);
    }
}
