//! `blksim replay TRACE [options]`: replay a trace `read_iolog` reads (fio iologs, blktrace
//! binary files, blkparse text, MSR Cambridge and MQSim/DiskSim traces) as one job, after a
//! summary of the trace read in one streaming pass: I/Os and flushes per direction, bytes,
//! a size histogram, the span of offsets, the recorded duration and arrival rate (version 3
//! logs), and the footprint (distinct 4 KiB blocks, estimated in constant memory with a
//! HyperLogLog of 2^14 registers, about 1 % error).

use blksim_job::Ddir;
use blksim_workload::iolog::{IologReader, ReplayOp};
use std::fmt::Write as _;

pub const USAGE: &str = "\
usage: blksim replay TRACE [--iodepth=N] [fio options...] [blksim options...]
       Replays TRACE as one job (fio's read_iolog): a fio iolog (version 2 or 3), a blktrace
       binary file or per-CPU set (dev for dev.blktrace.0, .1, ...), blkparse text, an MSR
       Cambridge, Alibaba or Tencent CSV, or an MQSim/DiskSim ASCII trace. ioengine=libaio
       and direct=1 unless given; iodepth=32 unless given, or for blktrace files the depth
       fio probes from the trace. A null_blk device grows to hold the trace's highest I/O
       unless --set=size= is given. A summary of the trace goes to stderr first. Any `blksim run` option applies (--device, --set, --output-format, ...).
";

/// HyperLogLog (Flajolet et al. 2007) over 4 KiB block numbers, 2^14 registers.
struct Hll {
    reg: Vec<u8>,
}

impl Hll {
    const B: u32 = 14;
    fn new() -> Self {
        Hll {
            reg: vec![0; 1 << Self::B],
        }
    }
    fn add(&mut self, x: u64) {
        let mut s = x;
        let h = blksim_core::rng::splitmix64(&mut s);
        let idx = (h >> (64 - Self::B)) as usize;
        let rank = ((h << Self::B) | (1 << (Self::B - 1))).leading_zeros() as u8 + 1;
        self.reg[idx] = self.reg[idx].max(rank);
    }
    fn estimate(&self) -> f64 {
        let m = self.reg.len() as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let z: f64 = self.reg.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let e = alpha * m * m / z;
        let zeros = self.reg.iter().filter(|&&r| r == 0).count() as f64;
        if e <= 2.5 * m && zeros > 0.0 {
            m * (m / zeros).ln() // small range: linear counting
        } else {
            e
        }
    }
}

fn size_label(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Options that shape what a replay reads, taken from the run's arguments for the summary
/// (`merge_blktrace_file` is left to the run, which writes it).
const READ_OPTIONS: [&str; 11] = [
    "name",
    "read_iolog",
    "read_iolog_format",
    "replay_device",
    "replay_skip",
    "replay_skip_bad",
    "replay_scale",
    "replay_align",
    "merge_blktrace_scalars",
    "merge_blktrace_iters",
    "replay_redirect",
];

/// The summary of the trace at `path` as the run's arguments `args` will read it, and the
/// end of its highest I/O (bytes).
pub fn summary(path: &str, args: &[String]) -> Result<(String, u64), String> {
    let read: Vec<String> = args
        .iter()
        .filter(|a| {
            a.strip_prefix("--")
                .and_then(|k| k.split('=').next())
                .is_some_and(|k| READ_OPTIONS.contains(&k))
        })
        .cloned()
        .collect();
    let jobs = blksim_job::cli::parse_cli(&read).map_err(|e| e.to_string())?;
    let mut spec = jobs.jobs[0].replay.clone();
    // The recorded pace, whatever the run's replay_time_scale or replay_no_stall.
    spec.no_stall = false;
    spec.time_scale_pct = 100;
    let mut r = IologReader::open_job(&spec)?;
    let (mut ios, mut bytes, mut syncs) = ([0u64; 3], [0u64; 3], 0u64);
    let mut sizes: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    let mut t_ns = 0u64;
    let mut hll = Hll::new();
    while let Some(x) = r.next_io()? {
        // Response times are the run's to show; dropped here as they come.
        r.take_recorded().for_each(drop);
        t_ns = t_ns.saturating_add(x.gap_ns);
        let io = match x.op {
            ReplayOp::Io(io) => io,
            ReplayOp::Sync { .. } => {
                syncs += 1;
                continue;
            }
        };
        let d = match io.ddir {
            Ddir::Read => 0,
            Ddir::Write => 1,
            Ddir::Trim => 2,
        };
        ios[d] += 1;
        bytes[d] = bytes[d].saturating_add(io.len);
        *sizes.entry(63 - io.len.max(1).leading_zeros()).or_default() += 1;
        lo = lo.min(io.offset);
        hi = hi.max(io.offset.saturating_add(io.len));
        let end = io.offset.saturating_add(io.len);
        let (first, last) = (io.offset >> 12, (end - 1) >> 12);
        for blk in first..=last.min(first + 4096) {
            hll.add(blk);
        }
    }
    let total: u64 = ios.iter().sum();
    let mut o = String::new();
    let _ = writeln!(o, "trace {path}:");
    let _ = writeln!(
        o,
        "  I/Os: {total} (read {}, write {}, trim {}), flushes {syncs}",
        ios[0], ios[1], ios[2]
    );
    if total > 0 {
        let _ = writeln!(
            o,
            "  bytes: read {}, write {}, trim {}; reads {:.1} % of I/Os",
            size_label(bytes[0]),
            size_label(bytes[1]),
            size_label(bytes[2]),
            100.0 * ios[0] as f64 / total as f64
        );
        let _ = write!(o, "  sizes:");
        for (p, n) in &sizes {
            let _ = write!(o, " {}..{}: {n};", size_label(1 << p), size_label(2 << p));
        }
        o.push('\n');
        let _ = writeln!(
            o,
            "  offsets: {} .. {} (span {}); footprint about {} (distinct 4 KiB blocks)",
            lo,
            hi,
            size_label(hi - lo),
            size_label((hll.estimate() * 4096.0) as u64)
        );
        if t_ns > 0 {
            let _ = writeln!(
                o,
                "  recorded duration {:.3} s, {:.1} I/Os per second",
                t_ns as f64 / 1e9,
                total as f64 / (t_ns as f64 / 1e9)
            );
        } else {
            o.push_str(
                "  no recorded times (version 2, or all at once): replayed without stalls\n",
            );
        }
    }
    Ok((o, hi))
}

/// The `blksim run` arguments for the replay of `trace` with the user's `rest`. A device
/// whose capacity is a profile key (null_blk's `size`, MiB) grows to hold the trace's
/// highest I/O (`end`, bytes) unless `--set=size=` is given; a device of fixed capacity
/// is left as it is, and an I/O beyond it stops the run with its file and line.
pub fn run_args(trace: &str, rest: &[String], end: u64) -> Vec<String> {
    let given = |k: &str| rest.iter().any(|a| a.starts_with(&format!("--{k}")));
    let mut a = vec!["--name=replay".to_string(), format!("--read_iolog={trace}")];
    // A blktrace binary trace takes the depth fio probes from it (setup::prepare_replay).
    let binary = blksim_workload::iolog::TraceFiles::parse(trace, &[], &[])
        .is_ok_and(|f| blksim_workload::iolog::all_blktrace(&f));
    for (k, v) in [("ioengine", "libaio"), ("iodepth", "32"), ("direct", "1")] {
        let probed = k == "iodepth" && binary;
        if !given(k) && !probed {
            a.push(format!("--{k}={v}"));
        }
    }
    if !rest.iter().any(|a| a.starts_with("--set=size=")) {
        let device = rest
            .iter()
            .find_map(|a| a.strip_prefix("--device="))
            .unwrap_or(blksim_sim::profile::DEFAULT_DEVICE);
        let size_mib = blksim_sim::profile::Profile::load(device)
            .ok()
            .and_then(|p| p.get("size"))
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(mib) = size_mib {
            let need = end.div_ceil(1 << 20);
            if need > mib {
                a.push(format!("--set=size={need}"));
            }
        }
    }
    a.extend(rest.iter().cloned());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperloglog_counts_within_two_percent() {
        for n in [1_000u64, 100_000, 1_000_000] {
            let mut h = Hll::new();
            for i in 0..n {
                h.add(i * 7);
                h.add(i * 7); // duplicates do not count
            }
            let e = h.estimate();
            assert!((e / n as f64 - 1.0).abs() < 0.02, "{n}: {e}");
        }
    }
}
