//! Block traces written by other tools, recognised from their first line and read one
//! record per line, so that `read_iolog` and `blksim replay` take them as they take fio's
//! own logs:
//!
//! - **ASCII** (MQSim, DiskSim): `arrival_time_ns device first_sector sectors type`,
//!   type 1 = read, 0 = write, sectors of 512 bytes.
//! - **MSR Cambridge** (SNIA IOTTA, Narayanan et al., "Write off-loading", FAST 2008):
//!   `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, the time in Windows
//!   FILETIME ticks of 100 ns, `Type` `Read` or `Write`, offset and size in bytes.
//! - **blkparse** text output (blktrace's default format, `blkparse_fmt.c`): `dev cpu seq
//!   time pid action rwbs [sector + sectors] [process]`, the time in seconds with nine
//!   decimals. Only `Q` events are replayed — what was submitted, before the scheduler
//!   merged or split it — mapped as fio's `queue_trace` maps a binary trace's: the RWBS
//!   letters (`blk_fill_rwbs`) give the operation, a discard (`D`) is a trim, then a flush
//!   (a leading `F`) is a flush alone (fio replays no data with it), then `W` a write and
//!   `R` a read; a `Q` of no bytes is skipped, and FUA (a trailing `F`) is not modelled.
//!   The per-CPU summary blkparse appends ends the trace.
//! - **Alibaba Cloud block traces** (Li et al., IISWC 2020; github.com/alibaba/block-traces):
//!   `device_id,opcode,offset,length,timestamp`, opcode `R` or `W`, offset and length in
//!   bytes, the time in µs since the Unix epoch.
//! - **Tencent CBS** (SNIA IOTTA; Zhang et al., "OSCA", ATC 2020):
//!   `Timestamp,Offset,Size,IOType,VolumeID`, the time in whole seconds (so a second's
//!   requests arrive together), offset and size in 512-byte sectors, IOType 0 = read,
//!   1 = write.
//!
//! Every device's records are replayed on the one simulated device.

use blksim_job::Ddir;

/// What a record asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecOp {
    /// Direction, byte offset and byte length.
    Io(Ddir, u64, u64),
    Flush,
}

/// A record of a foreign trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Arrival time (ns, on the trace's own clock; only differences are used).
    pub t_ns: u64,
    pub op: RecOp,
}

/// What one line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    Rec(Record),
    /// A record with the response time the trace states for it (MSR's `ResponseTime`).
    Responded(Record, u64),
    /// A request queued on a device (blkparse `Q`), answered by a later [`Line::Completed`].
    Queued(Record, u64),
    /// blkparse `C`: `sectors` from `sector` on the device completed.
    Completed {
        t_ns: u64,
        dev: u64,
        sector: u64,
        sectors: u64,
    },
    /// Nothing to replay (blkparse events other than `Q`, a header).
    Skip,
    /// The end of the records (blkparse's summary).
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Ascii,
    Msr,
    Blkparse,
    Alibaba,
    Tencent,
}

impl Format {
    /// The format whose record, header or other event `line` is, if any.
    pub fn recognise(line: &str) -> Option<Format> {
        if line.trim().is_empty() {
            return None;
        }
        [
            Format::Ascii,
            Format::Msr,
            Format::Blkparse,
            Format::Alibaba,
            Format::Tencent,
        ]
        .into_iter()
        .find(|f| f.parse(line).is_ok_and(|l| l != Line::End))
    }

    /// What a line of this format should look like, for errors.
    pub fn expected(self) -> &'static str {
        match self {
            Format::Ascii => {
                "'time_ns device sector sectors type' (five whole numbers, type 1 = read, 0 = write)"
            }
            Format::Msr => {
                "'Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime' (Type Read or Write)"
            }
            Format::Blkparse => "'dev cpu seq time pid action rwbs [sector + sectors] [process]'",
            Format::Alibaba => "'device_id,opcode,offset,length,timestamp' (opcode R or W)",
            Format::Tencent => "'Timestamp,Offset,Size,IOType,VolumeID' (IOType 0 or 1)",
        }
    }

    /// The device (disk, volume) a line names, for `replay_device`: MQSim's and DiskSim's
    /// device, MSR's DiskNumber, Alibaba's device_id, Tencent's VolumeID, blkparse's
    /// `major,minor` as the kernel's dev_t (major << 20 | minor). None when it has none.
    pub fn device(self, line: &str) -> Option<u64> {
        let csv = |i: usize| line.split(',').nth(i).and_then(|x| x.trim().parse().ok());
        match self {
            Format::Ascii => line.split_whitespace().nth(1)?.parse().ok(),
            Format::Msr => csv(2),
            Format::Alibaba => csv(0),
            Format::Tencent => csv(4),
            Format::Blkparse => {
                let (a, b) = line.split_whitespace().next()?.split_once(',')?;
                Some(u64::from(blksim_trace::mkdev(
                    a.parse().ok()?,
                    b.parse().ok()?,
                )))
            }
        }
    }

    /// Parse one line (without its newline). Err names what was wrong.
    pub fn parse(self, line: &str) -> Result<Line, String> {
        match self {
            Format::Ascii => ascii(line),
            Format::Msr => msr(line),
            Format::Blkparse => blkparse(line),
            Format::Alibaba => alibaba(line),
            Format::Tencent => tencent(line),
        }
    }
}

fn whole(s: &str, what: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .map_err(|_| format!("{what} '{s}' is not a whole number"))
}

fn bytes(sectors: u64) -> u64 {
    sectors.saturating_mul(512)
}

fn ascii(line: &str) -> Result<Line, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() != 5 {
        return Err(format!("expected {}", Format::Ascii.expected()));
    }
    let t = whole(f[0], "time")?;
    whole(f[1], "device")?;
    let sector = whole(f[2], "sector")?;
    let n = whole(f[3], "sectors")?;
    let ddir = match f[4] {
        "1" => Ddir::Read,
        "0" => Ddir::Write,
        o => return Err(format!("type '{o}' is neither 1 (read) nor 0 (write)")),
    };
    if n == 0 {
        return Err("a request of 0 sectors".into());
    }
    Ok(Line::Rec(Record {
        t_ns: t,
        op: RecOp::Io(ddir, bytes(sector), bytes(n)),
    }))
}

fn msr(line: &str) -> Result<Line, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 7 {
        return Err(format!("expected {}", Format::Msr.expected()));
    }
    if f[0] == "Timestamp" {
        return Ok(Line::Skip);
    }
    let ticks = whole(f[0], "Timestamp")?;
    whole(f[2], "DiskNumber")?;
    let ddir = match f[3] {
        "Read" => Ddir::Read,
        "Write" => Ddir::Write,
        o => return Err(format!("Type '{o}' is neither Read nor Write")),
    };
    let offset = whole(f[4], "Offset")?;
    let size = whole(f[5], "Size")?;
    let resp = whole(f[6], "ResponseTime")?;
    if size == 0 {
        return Err("a request of 0 bytes".into());
    }
    // FILETIME and ResponseTime count 100 ns ticks.
    Ok(Line::Responded(
        Record {
            t_ns: ticks.saturating_mul(100),
            op: RecOp::Io(ddir, offset, size),
        },
        resp.saturating_mul(100),
    ))
}

fn alibaba(line: &str) -> Result<Line, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 5 {
        return Err(format!("expected {}", Format::Alibaba.expected()));
    }
    whole(f[0], "device_id")?;
    let ddir = match f[1] {
        "R" => Ddir::Read,
        "W" => Ddir::Write,
        o => return Err(format!("opcode '{o}' is neither R nor W")),
    };
    let offset = whole(f[2], "offset")?;
    let len = whole(f[3], "length")?;
    let us = whole(f[4], "timestamp")?;
    if len == 0 {
        return Err("a request of 0 bytes".into());
    }
    Ok(Line::Rec(Record {
        t_ns: us.saturating_mul(1000),
        op: RecOp::Io(ddir, offset, len),
    }))
}

fn tencent(line: &str) -> Result<Line, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 5 {
        return Err(format!("expected {}", Format::Tencent.expected()));
    }
    if f[0] == "Timestamp" {
        return Ok(Line::Skip);
    }
    let s = whole(f[0], "Timestamp")?;
    let sector = whole(f[1], "Offset")?;
    let n = whole(f[2], "Size")?;
    let ddir = match f[3] {
        "0" => Ddir::Read,
        "1" => Ddir::Write,
        o => return Err(format!("IOType '{o}' is neither 0 (read) nor 1 (write)")),
    };
    whole(f[4], "VolumeID")?;
    if n == 0 {
        return Err("a request of 0 sectors".into());
    }
    Ok(Line::Rec(Record {
        t_ns: s.saturating_mul(1_000_000_000),
        op: RecOp::Io(ddir, bytes(sector), bytes(n)),
    }))
}

/// `seconds.nanoseconds` as blkparse prints it (`%5T.%9t`), exactly, without floats.
fn seconds_ns(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ns: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    sec.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(ns)
}

/// `major,minor` as the kernel's dev_t (`MKDEV`: major << 20 | minor), in 64 bits so that
/// no major wraps onto another.
fn dev_t(s: &str) -> Option<u64> {
    let (a, b) = s.split_once(',')?;
    let (maj, min): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
    (min < 1 << 20).then_some(u64::from(maj) << 20 | u64::from(min))
}

fn is_dev(s: &str) -> bool {
    s.split_once(',').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

fn blkparse(line: &str) -> Result<Line, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.is_empty() {
        return Ok(Line::Skip);
    }
    // The summary: "CPU0 (259,0):", "Total (259,0):", then totals and throughput lines.
    if f[0].starts_with("CPU") || f[0] == "Total" {
        return Ok(Line::End);
    }
    if f.len() < 7 || !is_dev(f[0]) {
        return Err(format!("expected {}", Format::Blkparse.expected()));
    }
    let t_ns = seconds_ns(f[3]).ok_or_else(|| format!("time '{}' is not seconds", f[3]))?;
    let dev = dev_t(f[0]).ok_or_else(|| format!("device '{}' is not major,minor", f[0]))?;
    if f[5] == "C" {
        if let (Some(sector), Some(&"+"), Some(n)) = (f.get(7), f.get(8), f.get(9)) {
            return Ok(Line::Completed {
                t_ns,
                dev,
                sector: whole(sector, "sector")?,
                sectors: whole(n, "sectors")?,
            });
        }
        return Ok(Line::Skip);
    }
    if f[5] != "Q" {
        return Ok(Line::Skip);
    }
    let rwbs = f[6];
    // blk_fill_rwbs: an optional F (preflush), then one of D, W, R, N, then F (FUA), ...
    let flush = rwbs.starts_with('F');
    let op = rwbs.trim_start_matches('F');
    let (sector, n) = match (f.get(7), f.get(8), f.get(9)) {
        (Some(sector), Some(&"+"), Some(n)) => (whole(sector, "sector")?, whole(n, "sectors")?),
        _ => (0, 0),
    };
    // fio's queue_trace order: discard, then flush, then data (handle_trace_fs skips a Q
    // of no bytes).
    let op = match op.chars().next() {
        Some('D') if n > 0 => RecOp::Io(Ddir::Trim, bytes(sector), bytes(n)),
        _ if flush => RecOp::Flush,
        Some('W') if n > 0 => RecOp::Io(Ddir::Write, bytes(sector), bytes(n)),
        Some('R') if n > 0 => RecOp::Io(Ddir::Read, bytes(sector), bytes(n)),
        _ => return Ok(Line::Skip),
    };
    Ok(match op {
        RecOp::Io(..) => Line::Queued(Record { t_ns, op }, dev),
        RecOp::Flush => Line::Rec(Record { t_ns, op }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(f: Format, l: &str) -> Record {
        match f.parse(l).unwrap() {
            Line::Rec(r) | Line::Responded(r, _) | Line::Queued(r, _) => r,
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn each_format_is_recognised_from_a_record_and_only_its_own() {
        assert_eq!(Format::recognise("1000 0 8 16 1"), Some(Format::Ascii));
        assert_eq!(
            Format::recognise("128166372003061629,wdev,0,Write,3995500544,4096,1318"),
            Some(Format::Msr)
        );
        assert_eq!(
            Format::recognise("259,0    0        1     0.000000000  1000  Q  WS 34768 + 8 [fio]"),
            Some(Format::Blkparse)
        );
        // MSR's header, and blkparse events other than Q, are of their format too.
        assert_eq!(
            Format::recognise("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
            Some(Format::Msr)
        );
        assert_eq!(
            Format::recognise("8,0 0 0 0.000000000 0 m N cfq schedule dispatch"),
            Some(Format::Blkparse)
        );
        assert_eq!(Format::recognise("fio version 3 iolog"), None);
        assert_eq!(Format::recognise("1000 0 8 16 7"), None);
        assert_eq!(Format::recognise(""), None);
    }

    #[test]
    fn alibaba_and_tencent_units() {
        let a = "0,R,126703644672,4096,1577808000000626";
        assert_eq!(Format::recognise(a), Some(Format::Alibaba));
        assert_eq!(
            rec(Format::Alibaba, a),
            Record {
                t_ns: 1_577_808_000_000_626_000,
                op: RecOp::Io(Ddir::Read, 126_703_644_672, 4096)
            }
        );
        let t = "1538323200,2048,16,1,1283";
        assert_eq!(Format::recognise(t), Some(Format::Tencent));
        assert_eq!(
            rec(Format::Tencent, t),
            Record {
                t_ns: 1_538_323_200_000_000_000,
                op: RecOp::Io(Ddir::Write, 1 << 20, 8192)
            }
        );
        assert_eq!(
            Format::recognise("Timestamp,Offset,Size,IOType,VolumeID"),
            Some(Format::Tencent)
        );
        assert!(Format::Alibaba.parse("0,T,0,4096,1").is_err());
        assert!(Format::Tencent.parse("1,0,8,2,1").is_err());
    }

    #[test]
    fn msr_ticks_are_100ns_and_offsets_bytes() {
        let r = rec(
            Format::Msr,
            "128166372003061629,wdev,0,Write,3995500544,4096,1318",
        );
        assert_eq!(r.t_ns, 12_816_637_200_306_162_900);
        assert_eq!(r.op, RecOp::Io(Ddir::Write, 3_995_500_544, 4096));
        assert_eq!(
            Format::Msr.parse("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
            Ok(Line::Skip)
        );
        let e = Format::Msr.parse("1,h,0,Trim,0,4096,1").unwrap_err();
        assert!(e.contains("'Trim'"), "{e}");
    }

    #[test]
    fn blkparse_rwbs_and_times() {
        let r = rec(
            Format::Blkparse,
            "259,0    0        1     1.000250000  1000  Q  WS 34768 + 8 [fio]",
        );
        assert_eq!(r.t_ns, 1_000_250_000);
        assert_eq!(r.op, RecOp::Io(Ddir::Write, 34768 * 512, 4096));
        let f = rec(
            Format::Blkparse,
            "259,0    0       25     0.000060000  1000  Q FWS [fio]",
        );
        assert_eq!(f.op, RecOp::Flush);
        // A preflush write is a flush alone, as fio replays it.
        let fw = rec(Format::Blkparse, "8,0 1 3 0.5 7 Q FWFS 8 + 16 [jbd2]");
        assert_eq!((fw.t_ns, fw.op), (500_000_000, RecOp::Flush));
        let d = rec(Format::Blkparse, "8,0 1 3 0.5 7 Q DS 0 + 2048 [fstrim]");
        assert_eq!(d.op, RecOp::Io(Ddir::Trim, 0, 1 << 20));
        for skip in [
            "259,0    0       26     0.000060000  1000  G FWS [fio]",
            "8,0 1 3 0.5 7 Q N [kworker]",
            "8,0 1 3 0.5 7 Q WS 8 + 0 [kworker]",
            "",
        ] {
            assert_eq!(Format::Blkparse.parse(skip), Ok(Line::Skip), "{skip}");
        }
        assert_eq!(Format::Blkparse.parse("CPU0 (259,0):"), Ok(Line::End));
        assert_eq!(
            Format::Blkparse
                .parse("259,0    0      163     0.000370000  1000  C  WS 122656 + 8 [0]"),
            Ok(Line::Completed {
                t_ns: 370_000,
                dev: 259 << 20,
                sector: 122656,
                sectors: 8
            })
        );
        assert_eq!(
            Format::Msr.parse("1,h,0,Read,0,4096,26"),
            Ok(Line::Responded(
                Record {
                    t_ns: 100,
                    op: RecOp::Io(Ddir::Read, 0, 4096)
                },
                2600
            ))
        );
        assert!(Format::Blkparse.parse("8,0 1 3 x 7 Q R 0 + 8 [a]").is_err());
        assert!(Format::Blkparse
            .parse("8,0 1 3 0.1 7 Q R 0 + y [a]")
            .is_err());
        assert_eq!(seconds_ns("2.5"), Some(2_500_000_000));
        assert_eq!(seconds_ns("0.0000000001"), None);
    }
}
