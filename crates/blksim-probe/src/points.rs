//! The performance points a probe measures, each the equivalent of one fio job, and the fio
//! JSON result each is saved as (so `blksim calibrate` reads probes and fio runs alike).

use crate::target::{Batch, Op};
use blksim_report::JsonValue;

/// One measured configuration.
#[derive(Clone, Debug)]
pub struct Point {
    /// Job name in the saved result: `randread-4k-qd1`.
    pub name: String,
    /// fio's `rw`.
    pub rw: &'static str,
    pub bs: u32,
    pub qd: u32,
}

impl Point {
    fn new(rw: &'static str, bs: u32, qd: u32) -> Point {
        Point {
            name: format!("{rw}-{}k-qd{qd}", bs / 1024),
            rw,
            bs,
            qd,
        }
    }

    pub fn write(&self) -> bool {
        self.rw.contains("write")
    }

    fn sequential(&self) -> bool {
        !self.rw.starts_with("rand")
    }
}

/// What a probe measures: read latency against block size, random against sequential, and
/// queue-depth scaling; with `write`, the same for writes.
pub fn plan(write: bool) -> Vec<Point> {
    let mut p = vec![
        Point::new("randread", 4096, 1),
        Point::new("randread", 16384, 1),
        Point::new("randread", 65536, 1),
        Point::new("randread", 262144, 1),
        Point::new("read", 4096, 1),
        Point::new("read", 131072, 1),
        Point::new("randread", 4096, 4),
        Point::new("randread", 4096, 16),
        Point::new("randread", 4096, 64),
    ];
    if write {
        p.extend([
            Point::new("randwrite", 4096, 1),
            Point::new("write", 131072, 1),
            Point::new("randwrite", 4096, 16),
        ]);
    }
    p
}

/// `n` I/Os of `p` over `size` bytes: random offsets aligned to the block size (drawn
/// independently, as fio with `norandommap`), or a sequential stream from a random start
/// that wraps at the end.
pub fn ops(p: &Point, size: u64, n: usize, seed: u64) -> Vec<Op> {
    let blocks = (size / p.bs as u64).max(1);
    let mut s = seed;
    let mut draw = || blksim_core::rng::splitmix64(&mut s) % blocks;
    let start = draw();
    (0..n as u64)
        .map(|i| {
            let b = if p.sequential() {
                (start + i) % blocks
            } else {
                draw()
            };
            Op {
                write: p.write(),
                offset: b * p.bs as u64,
                len: p.bs,
            }
        })
        .collect()
}

/// fio's default `percentile_list`.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

fn lat_obj(b: &Batch, with_pct: bool) -> JsonValue {
    let n = b.lat_ns.len() as u64;
    let mean = b.mean_ns();
    let var = if n > 1 {
        b.lat_ns
            .iter()
            .map(|&x| (x as f64 - mean).powi(2))
            .sum::<f64>()
            / (n - 1) as f64
    } else {
        0.0
    };
    let mut o = JsonValue::object();
    o.push(
        "min",
        JsonValue::UInt(b.lat_ns.iter().copied().min().unwrap_or(0)),
    )
    .push(
        "max",
        JsonValue::UInt(b.lat_ns.iter().copied().max().unwrap_or(0)),
    )
    .push("mean", JsonValue::Float(mean))
    .push("stddev", JsonValue::Float(var.sqrt()))
    .push("N", JsonValue::UInt(n));
    if with_pct {
        let mut pct = JsonValue::object();
        for q in PERCENTILES {
            pct.push(format!("{q:.6}"), JsonValue::UInt(b.percentile_ns(q)));
        }
        o.push("percentile", pct);
    }
    o
}

fn dir_obj(b: Option<(&Batch, u32)>) -> JsonValue {
    let empty = Batch::default();
    let (b, bs) = b.unwrap_or((&empty, 0));
    let n = b.lat_ns.len() as u64;
    let bytes = n * bs as u64;
    let secs = b.elapsed_ns as f64 / 1e9;
    let bw = if secs > 0.0 { bytes as f64 / secs } else { 0.0 };
    let mut o = JsonValue::object();
    o.push("io_bytes", JsonValue::UInt(bytes))
        .push("io_kbytes", JsonValue::UInt(bytes / 1024))
        .push("bw_bytes", JsonValue::UInt(bw as u64))
        .push("bw", JsonValue::UInt((bw / 1024.0) as u64))
        .push("iops", JsonValue::Float(b.iops()))
        .push("runtime", JsonValue::UInt(b.elapsed_ns / 1_000_000))
        .push("total_ios", JsonValue::UInt(n))
        .push("short_ios", JsonValue::UInt(0))
        .push("drop_ios", JsonValue::UInt(0))
        .push("clat_ns", lat_obj(b, n > 0))
        .push("lat_ns", lat_obj(b, false));
    o
}

/// One point's measurement as fio's JSON output of the equivalent job (`filename`, `direct=1`,
/// `rw`, `bs`, `ioengine`, `iodepth`, `norandommap`, `time_based=1` for the measured time).
pub fn fio_json(
    p: &Point,
    b: &Batch,
    engine: &str,
    filename: &str,
    size: u64,
    simulated: bool,
) -> String {
    let mut g = JsonValue::object();
    g.push("filename", JsonValue::Str(filename.to_string()))
        .push("direct", JsonValue::Str("1".into()))
        .push("size", JsonValue::Str(size.to_string()));
    let mut jo = JsonValue::object();
    jo.push("rw", JsonValue::Str(p.rw.into()))
        .push("bs", JsonValue::Str(p.bs.to_string()))
        .push("ioengine", JsonValue::Str(engine.into()))
        .push("iodepth", JsonValue::Str(p.qd.to_string()))
        .push("norandommap", JsonValue::Str("1".into()))
        .push("time_based", JsonValue::Str("1".into()))
        .push(
            "runtime",
            JsonValue::Str(format!("{}ms", (b.elapsed_ns / 1_000_000).max(1))),
        );
    let mut j = JsonValue::object();
    j.push("jobname", JsonValue::Str(p.name.clone()))
        .push("groupid", JsonValue::UInt(0))
        .push("error", JsonValue::UInt(0))
        .push("job options", jo);
    let w = p.write();
    j.push("read", dir_obj((!w).then_some((b, p.bs))))
        .push("write", dir_obj(w.then_some((b, p.bs))))
        .push("trim", dir_obj(None));
    let mut meta = JsonValue::object();
    meta.push("target", JsonValue::Str(filename.to_string()))
        .push(
            "measured",
            JsonValue::Str(if simulated { "simulated" } else { "real" }.into()),
        );
    let mut root = JsonValue::object();
    root.push(
        "fio version",
        JsonValue::Str(blksim_report::FIO_VERSION.into()),
    )
    .push("blksim probe", meta)
    .push("global options", g)
    .push("jobs", JsonValue::Array(vec![j]));
    let mut out = Vec::new();
    root.write_fio(&mut out, 0).expect("writing to a Vec");
    out.push(b'\n');
    String::from_utf8(out).expect("JSON is UTF-8")
}
