//! A small reader for blktrace v7 files, used by tests and to check real captures.
//!
//! It accepts either byte order (blkparse's `check_data_endianness()`), rejects any other
//! magic or version (blktrace.h `verify_trace()`), and finds per-CPU files the way blkparse's
//! `do_file()` does: `<dev>.blktrace.0`, `.1`, ... until the first missing one.

use std::fs;
use std::io;
use std::path::Path;

use crate::record::RECORD_LEN;
use crate::record::{RawRecord, RecordKind, TraceEvent, BLK_IO_TRACE_MAGIC, BLK_IO_TRACE_VERSION};
use crate::writer::cpu_file_path;

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The byte order of a file, from its first record's magic (blkparse's
/// `check_data_endianness()`): true when the magic reads right only big-endian.
fn is_big_endian(h: &[u8]) -> bool {
    let le_magic = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    (le_magic & 0xffff_ff00) != BLK_IO_TRACE_MAGIC
        && (u32::from_be_bytes([h[0], h[1], h[2], h[3]]) & 0xffff_ff00) == BLK_IO_TRACE_MAGIC
}

/// Decode one 48-byte header (its payload left empty), checking magic and version
/// (blktrace.h `verify_trace()`). `at` names the record in errors.
/// Returns the record and its payload length; `at` names the record, formatted only for an
/// error.
fn decode_header(h: &[u8], be: bool, at: impl Fn() -> String) -> io::Result<(RawRecord, usize)> {
    let u16_at = |o: usize| {
        let b = [h[o], h[o + 1]];
        if be {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    };
    let u32_at = |o: usize| {
        let b = [h[o], h[o + 1], h[o + 2], h[o + 3]];
        if be {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[o..o + 8]);
        if be {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        }
    };
    let magic = u32_at(0);
    if magic & 0xffff_ff00 != BLK_IO_TRACE_MAGIC {
        return Err(bad(format!("bad magic {magic:#x} at {}", at())));
    }
    if magic & 0xff != BLK_IO_TRACE_VERSION {
        return Err(bad(format!(
            "unsupported blktrace version {} at {} (only v7 is read)",
            magic & 0xff,
            at()
        )));
    }
    let rec = RawRecord {
        magic,
        sequence: u32_at(4),
        time_ns: u64_at(8),
        sector: u64_at(16),
        bytes: u32_at(24),
        action: u32_at(28),
        pid: u32_at(32),
        device: u32_at(36),
        cpu: u32_at(40),
        error: u16_at(44),
        pdu: Vec::new(),
    };
    Ok((rec, usize::from(u16_at(46))))
}

/// Whether `head` (a file's first bytes) starts like a blktrace file, in either byte order.
pub fn is_blktrace(head: &[u8]) -> bool {
    head.len() >= 4
        && (is_big_endian(head)
            || (u32::from_le_bytes([head[0], head[1], head[2], head[3]]) & 0xffff_ff00)
                == BLK_IO_TRACE_MAGIC)
}

/// Parse one file's worth of records.
pub fn parse_records(data: &[u8]) -> io::Result<Vec<RawRecord>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut big_endian = None;
    while pos < data.len() {
        if data.len() - pos < RECORD_LEN {
            return Err(bad(format!("truncated record header at offset {pos}")));
        }
        let h = &data[pos..pos + RECORD_LEN];
        let be = *big_endian.get_or_insert_with(|| is_big_endian(h));
        let (mut r, pdu_len) = decode_header(h, be, || format!("offset {pos}"))?;
        let end = pos + RECORD_LEN + pdu_len;
        if end > data.len() {
            return Err(bad(format!("truncated payload at offset {pos}")));
        }
        r.pdu = data[pos + RECORD_LEN..end].to_vec();
        out.push(r);
        pos = end;
    }
    Ok(out)
}

/// Records read one at a time from a stream, so that a trace of any length is read in the
/// same memory (fio's `read_blktrace` reads with `fread` the same way). Payloads are read
/// and kept, as [`parse_records`] does.
pub struct RecordStream<R: io::Read> {
    r: R,
    big_endian: Option<bool>,
    /// Records read so far (the next one's index, for errors).
    pub records: u64,
    /// The stream ended inside a record.
    pub truncated: bool,
}

impl<R: io::Read> RecordStream<R> {
    pub fn new(r: R) -> Self {
        RecordStream {
            r,
            big_endian: None,
            records: 0,
            truncated: false,
        }
    }

    /// The next record; None at the end. A file that ends inside a record ends there, as
    /// fio's `read_blktrace` stops at a short read (a capture cut off mid-write); see
    /// [`RecordStream::truncated`].
    pub fn next_record(&mut self) -> io::Result<Option<RawRecord>> {
        let mut h = [0u8; RECORD_LEN];
        let mut got = 0;
        while got < RECORD_LEN {
            match self.r.read(&mut h[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if got == 0 {
            return Ok(None);
        }
        if got < RECORD_LEN {
            self.truncated = true;
            return Ok(None);
        }
        let be = *self.big_endian.get_or_insert_with(|| is_big_endian(&h));
        let n = self.records + 1;
        let (mut rec, pdu_len) = decode_header(&h, be, || format!("record {n}"))?;
        rec.pdu = vec![0; pdu_len];
        if self.r.read_exact(&mut rec.pdu).is_err() {
            self.truncated = true;
            return Ok(None);
        }
        self.records += 1;
        Ok(Some(rec))
    }
}

/// All records of `DIR/<devname>.blktrace.<cpu>`, file by file (CPU 0 first), each file in
/// its stored order. The outer index is the CPU of the file.
pub fn read_records(dir: &Path, devname: &str) -> io::Result<Vec<Vec<RawRecord>>> {
    let mut files = Vec::new();
    for cpu in 0u32.. {
        let path = cpu_file_path(dir, devname, cpu);
        match fs::read(&path) {
            Ok(data) => files
                .push(parse_records(&data).map_err(|e| bad(format!("{}: {e}", path.display())))?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e) => return Err(e),
        }
    }
    if files.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no {}", cpu_file_path(dir, devname, 0).display()),
        ));
    }
    Ok(files)
}

/// The block-layer events of a trace (notify records left out), merged across CPUs in time
/// order; ties keep CPU order, then file order (a stable sort, so deterministic).
pub fn read_trace(dir: &Path, devname: &str) -> io::Result<Vec<TraceEvent>> {
    let mut events: Vec<TraceEvent> = read_records(dir, devname)?
        .iter()
        .flatten()
        .filter_map(TraceEvent::decode)
        .collect();
    events.sort_by_key(|e| e.time_ns);
    Ok(events)
}

/// The block-layer events of a trace, CPU file by CPU file, after checking what blkparse
/// relies on and the kernel's relay buffers give: each CPU's file in time order and its data
/// records numbered 1, 2, ... without a gap (`bt->sequence`). A file that is not is
/// `io::ErrorKind::InvalidData`, naming the CPU.
pub fn read_trace_checked(dir: &Path, devname: &str) -> io::Result<Vec<TraceEvent>> {
    let mut events = Vec::new();
    for (cpu, recs) in read_records(dir, devname)?.iter().enumerate() {
        let (mut last, mut seq) = (0u64, 0u32);
        for r in recs {
            if r.time_ns < last {
                return Err(bad(format!(
                    "cpu {cpu}: a record at {} ns after one at {last} ns",
                    r.time_ns
                )));
            }
            last = r.time_ns;
            if let Some(e) = TraceEvent::decode(r) {
                seq += 1;
                if r.sequence != seq {
                    return Err(bad(format!(
                        "cpu {cpu}: sequence {} where {seq} was due",
                        r.sequence
                    )));
                }
                events.push(e);
            }
        }
    }
    Ok(events)
}

/// The message notes of a trace as `(time_ns, cpu, text)`, in time order.
pub fn read_messages(dir: &Path, devname: &str) -> io::Result<Vec<(u64, u32, String)>> {
    let mut msgs: Vec<(u64, u32, String)> = read_records(dir, devname)?
        .iter()
        .flatten()
        .filter_map(|r| match r.kind() {
            RecordKind::Message(m) => Some((r.time_ns, r.cpu, m)),
            _ => None,
        })
        .collect();
    msgs.sort_by_key(|m| m.0);
    Ok(msgs)
}
