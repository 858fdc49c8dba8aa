//! One point of a sweep: the base job with the point's job options over it, the base
//! device with its profile keys, simulated with the point's seed; one row per job report
//! entry and direction that moved data, with fio's figures.

use crate::grid::Point;
use crate::spec::{AxisKind, Spec};
use blksim_sim::setup::{self, RunOptions, WallClock};
use blksim_sim::Profile;
use serde_json::Value;

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

/// Events one point may take before it counts as runaway.
pub const MAX_EVENTS: u64 = 2_000_000_000;

pub fn run_point(spec: &Spec, p: &Point) -> Result<Vec<Row>, String> {
    let at = |e: String| format!("{}: point {} ({}): {e}", spec.file, p.index, p.key(spec));
    let mut jobs = blksim_job::jobfile::parse_job_str(&spec.job_text, &spec.job_name, &|_| None)
        .map_err(|e| at(e.to_string()))?;
    let mut args = spec.options.clone();
    let mut device = spec.device.clone();
    let mut sets = spec.sets.clone();
    for (a, &v) in spec.axes.iter().zip(&p.values) {
        let value = &a.values[v];
        match a.kind {
            AxisKind::Device => device = value.clone(),
            AxisKind::Job => args.push(format!("--{}={value}", a.key)),
            AxisKind::Set => sets.push(format!("{}={value}", a.key)),
        }
    }
    let (opts, other) = blksim_job::cli::split_cli_options(&args);
    if let Some((_, o)) = other.first() {
        return Err(at(format!("[base] options: '{o}' is not a fio option")));
    }
    blksim_job::cli::apply_overrides(&mut jobs, &opts).map_err(|e| at(e.to_string()))?;
    setup::prepare_replay(&mut jobs).map_err(at)?;
    let mut profile = Profile::load(&device).map_err(at)?;
    for s in &sets {
        profile.set(s).map_err(at)?;
    }
    let ro = RunOptions {
        seed: p.seed,
        max_events: Some(MAX_EVENTS),
        ..Default::default()
    };
    let out = setup::run(&jobs, &profile, &ro).map_err(at)?;
    let report = setup::build_report(&jobs, &profile, &ro, &out, &WallClock::default());
    let mut buf = Vec::new();
    blksim_report::json::write_json(&report, false, &mut buf).map_err(|e| at(e.to_string()))?;
    let v: Value = serde_json::from_slice(&buf).map_err(|e| at(e.to_string()))?;
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
