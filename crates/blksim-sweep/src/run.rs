//! One point of a sweep: the base job with the point's job options over it, the base
//! device with its profile keys, simulated with the point's seed by a [`Runner`] (the
//! library's entry point, `blksim::api`, for the binary and the Python package); one row per
//! job report entry and direction that moved data, with fio's figures.

use crate::grid::Point;
use crate::spec::{AxisKind, Spec};
use serde_json::Value;

/// What one point asks to simulate.
#[derive(Clone, Debug)]
pub struct PointRun<'a> {
    pub job_text: &'a str,
    /// The job file's name, for messages and `include`.
    pub job_name: &'a str,
    /// fio options over every job: the base's, then the point's job axes.
    pub options: Vec<String>,
    pub device: String,
    /// `--set` values: the base's, then the point's profile axes.
    pub sets: Vec<String>,
    pub seed: u64,
}

/// Simulates a point: fio's JSON report of the run, or an error that says where.
pub trait Runner: Sync {
    fn run(&self, r: &PointRun) -> Result<String, String>;
}

/// The figures of one row, in column order after the point's own columns.
pub const FIGURES: [&str; 10] = [
    "iops",
    "bw_kib",
    "lat_mean_us",
    "clat_mean_us",
    "clat_p50_us",
    "clat_p90_us",
    "clat_p99_us",
    "clat_p99.9_us",
    "total_ios",
    "runtime_ms",
];

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub point: u64,
    pub seed: u64,
    /// The point's value of each axis.
    pub axes: Vec<String>,
    pub job: String,
    pub ddir: String,
    /// [`FIGURES`], in order.
    pub figures: [f64; 10],
}

pub fn run_point(spec: &Spec, p: &Point, runner: &dyn Runner) -> Result<Vec<Row>, String> {
    let mut r = PointRun {
        job_text: &spec.job_text,
        job_name: &spec.job_name,
        options: spec.options.clone(),
        device: spec.device.clone(),
        sets: spec.sets.clone(),
        seed: p.seed,
    };
    for (a, &v) in spec.axes.iter().zip(&p.values) {
        let value = &a.values[v];
        match a.kind {
            AxisKind::Device => r.device = value.clone(),
            AxisKind::Job => r.options.push(format!("--{}={value}", a.key)),
            AxisKind::Set => r.sets.push(format!("{}={value}", a.key)),
        }
    }
    let at = |e: String| format!("{}: point {} ({}): {e}", spec.file, p.index, p.key(spec));
    let json = runner.run(&r).map_err(at)?;
    let v: Value = serde_json::from_str(&json).map_err(|e| at(e.to_string()))?;
    let axes: Vec<String> = spec
        .axes
        .iter()
        .zip(&p.values)
        .map(|(a, &i)| a.values[i].clone())
        .collect();
    let mut rows = Vec::new();
    for j in v["jobs"].as_array().into_iter().flatten() {
        for ddir in ["read", "write", "trim"] {
            let d = &j[ddir];
            if d["io_bytes"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let f = |p: &str| d.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
            rows.push(Row {
                point: p.index,
                seed: p.seed,
                axes: axes.clone(),
                job: j["jobname"].as_str().unwrap_or("").to_string(),
                ddir: ddir.to_string(),
                figures: [
                    f("/iops"),
                    f("/bw"),
                    f("/lat_ns/mean") / 1e3,
                    f("/clat_ns/mean") / 1e3,
                    f("/clat_ns/percentile/50.000000") / 1e3,
                    f("/clat_ns/percentile/90.000000") / 1e3,
                    f("/clat_ns/percentile/99.000000") / 1e3,
                    f("/clat_ns/percentile/99.900000") / 1e3,
                    f("/total_ios"),
                    f("/runtime"),
                ],
            });
        }
    }
    Ok(rows)
}
