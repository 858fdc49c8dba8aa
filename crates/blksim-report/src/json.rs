//! fio's JSON and JSON+ output (`stat.c: show_thread_status_json`,
//! `add_ddir_status_json`, `add_ddir_lat_json`, printed by `json.c`).
//!
//! A tiny ordered JSON value type is printed with json.c's layout: two spaces per level,
//! `"key" : value`, integers as `%lld`, floats as `%f`, one member per line.

use std::io::{self, Write};

use crate::hist::LatHist;
use crate::report::{GroupRunStats, JobReport, RunReport};
use crate::stats::{DirStats, JobStats, LatStat, DDIR_RWDIR_CNT, IO_U_MAP_NR};

/// An ordered JSON value. Objects keep insertion order (fio's key order is part of the
/// format); there is no map, so output never depends on hashing.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonValue {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    /// Printed as `%f` (six decimals), like every fio float.
    Float(f64),
    Str(String),
    Array(Vec<JsonValue>),
    Object(Vec<(String, JsonValue)>),
}

impl JsonValue {
    pub fn object() -> Self {
        JsonValue::Object(Vec::new())
    }

    /// Append a member to an object (panics on non-objects: a programming error).
    pub fn push(&mut self, key: impl Into<String>, v: JsonValue) -> &mut Self {
        match self {
            JsonValue::Object(m) => m.push((key.into(), v)),
            _ => panic!("JsonValue::push on a non-object"),
        }
        self
    }

    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Print with fio's layout; `level` is the nesting level of this value.
    pub fn write_fio(&self, out: &mut dyn Write, level: usize) -> io::Result<()> {
        match self {
            JsonValue::Null => out.write_all(b"null"),
            JsonValue::Bool(b) => write!(out, "{b}"),
            JsonValue::Int(i) => write!(out, "{i}"),
            JsonValue::UInt(u) => write!(out, "{u}"),
            JsonValue::Float(f) => write!(out, "{}", fmt_f(*f)),
            JsonValue::Str(s) => write_str(out, s),
            // json_print_object: "{\n", pairs joined by ",\n", "\n", indent, "}".
            JsonValue::Object(m) => {
                out.write_all(b"{\n")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",\n")?;
                    }
                    indent(out, level + 1)?;
                    write_str(out, k)?;
                    out.write_all(b" : ")?;
                    v.write_fio(out, level + 1)?;
                }
                out.write_all(b"\n")?;
                indent(out, level)?;
                out.write_all(b"}")
            }
            // json_print_array: same shape with [ ].
            JsonValue::Array(a) => {
                out.write_all(b"[\n")?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",\n")?;
                    }
                    indent(out, level + 1)?;
                    v.write_fio(out, level + 1)?;
                }
                out.write_all(b"\n")?;
                indent(out, level)?;
                out.write_all(b"]")
            }
        }
    }
}

fn indent(out: &mut dyn Write, level: usize) -> io::Result<()> {
    for _ in 0..level {
        out.write_all(b"  ")?;
    }
    Ok(())
}

/// fio escapes only `\` and `"`; we also escape control characters so the output stays
/// valid JSON (fio would emit them raw; job names never contain them in practice).
fn write_str(out: &mut dyn Write, s: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    for c in s.chars() {
        match c {
            '\\' => out.write_all(b"\\\\")?,
            '"' => out.write_all(b"\\\"")?,
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32)?,
            c => write!(out, "{c}")?,
        }
    }
    out.write_all(b"\"")
}

/// C's `%f`.
pub fn fmt_f(f: f64) -> String {
    fmt_c(f, 6)
}

/// C's `%.<prec>f`: `-nan`, `nan`, `-inf` and `inf` as glibc prints them.
pub fn fmt_c(f: f64, prec: usize) -> String {
    if f.is_nan() {
        if f.is_sign_negative() { "-nan" } else { "nan" }.to_string()
    } else if f.is_infinite() {
        if f < 0.0 { "-inf" } else { "inf" }.to_string()
    } else {
        format!("{f:.prec$}")
    }
}

fn int(v: u64) -> JsonValue {
    JsonValue::UInt(v)
}

fn float(v: f64) -> JsonValue {
    JsonValue::Float(v)
}

/// `json_add_job_opts`: nothing when the list is empty; values that are empty strings
/// are dropped (fio's `strdup_escape` returns NULL for "" and the pair is never added,
/// which is why `time_based` or `stonewall` never show up).
fn job_opts(opts: &[(String, String)]) -> Option<JsonValue> {
    if opts.is_empty() {
        return None;
    }
    let mut o = JsonValue::object();
    for (k, v) in opts {
        if !v.is_empty() {
            o.push(k.clone(), JsonValue::Str(v.clone()));
        }
    }
    Some(o)
}

/// `add_ddir_lat_json`.
fn lat_json(
    stat: &LatStat,
    percentiles: bool,
    plist: &[f64],
    hist: Option<&LatHist>,
    plus: bool,
) -> JsonValue {
    let (min, max, mean, dev) = stat.calc().unwrap_or((0, 0, 0.0, 0.0));
    let mut o = JsonValue::object();
    o.push("min", int(min))
        .push("max", int(max))
        .push("mean", float(mean))
        .push("stddev", float(dev))
        .push("N", int(stat.samples));
    if percentiles && stat.samples != 0 {
        let empty = LatHist::new();
        let h = hist.unwrap_or(&empty);
        let vals = h.percentiles_with_nr(plist, stat.samples);
        let mut p = JsonValue::object();
        for (pct, v) in plist.iter().zip(vals) {
            p.push(format!("{pct:.6}"), int(v));
        }
        o.push("percentile", p);
        if plus {
            let mut b = JsonValue::object();
            for (val, count) in h.bins() {
                b.push(val.to_string(), int(count));
            }
            o.push("bins", b);
        }
    }
    o
}

/// `convert_agg_kbytes_percent`: note fio passes the mean as an `int`.
pub(crate) fn agg_percent(rs: Option<&GroupRunStats>, ddir: usize, mean: f64) -> f64 {
    let mut p = 100.0;
    if let Some(rs) = rs {
        if rs.agg[ddir] > 1024 {
            let mean_i = mean as i32 as f64;
            p = mean_i * 100.0 / (rs.agg[ddir] as f64 / 1024.0);
            if p > 100.0 {
                p = 100.0;
            }
        }
    }
    p
}

const DDIR_NAMES: [&str; DDIR_RWDIR_CNT] = ["read", "write", "trim"];

/// `add_ddir_status_json` for a read/write/trim direction.
fn ddir_json(
    js: &JobStats,
    d: &DirStats,
    ddir: usize,
    rs: Option<&GroupRunStats>,
    plus: bool,
) -> JsonValue {
    let o = &js.opts;
    let plist = &o.percentile_list;
    let mut v = JsonValue::object();
    v.push("io_bytes", int(d.io_bytes))
        .push("io_kbytes", int(d.io_bytes >> 10))
        .push("bw_bytes", int(d.bw_bytes()))
        .push("bw", int(d.bw_bytes() / 1024))
        .push("iops", float(d.iops_f64()))
        .push("runtime", int(d.runtime_ms))
        .push("total_ios", int(d.total_ios))
        .push("short_ios", int(d.short_ios))
        .push("drop_ios", int(d.drop_ios));
    v.push(
        "slat_ns",
        lat_json(
            &d.slat,
            o.slat_percentiles,
            plist,
            d.slat.hist.as_ref(),
            plus,
        ),
    );
    v.push(
        "clat_ns",
        lat_json(
            &d.clat,
            o.clat_percentiles,
            plist,
            d.clat.hist.as_ref(),
            plus,
        ),
    );
    v.push(
        "lat_ns",
        lat_json(&d.lat, o.lat_percentiles, plist, d.lat.hist.as_ref(), plus),
    );
    // Per priority, from two priorities with samples on (`get_nr_prios_with_samples`).
    if d.prios_with_samples() >= 2 {
        let name = if o.lat_percentiles {
            "lat_ns"
        } else {
            "clat_ns"
        };
        let pct = o.clat_percentiles || o.lat_percentiles;
        let prios = d
            .prios
            .iter()
            .filter(|p| p.lat.samples > 0)
            .map(|p| {
                let mut e = JsonValue::object();
                e.push("prioclass", int(u64::from(p.ioprio >> 13)))
                    .push("prio", int(u64::from(p.ioprio & 7)))
                    .push(
                        name,
                        lat_json(&p.lat, pct, plist, p.lat.hist.as_ref(), plus),
                    );
                e
            })
            .collect();
        v.push("prios", JsonValue::Array(prios));
    }
    // A replayed trace's own response times (not in fio): only when the trace had them.
    if d.recorded.samples > 0 {
        v.push(
            "recorded_lat_ns",
            lat_json(&d.recorded, true, plist, d.recorded.hist.as_ref(), plus),
        );
    }
    let (bmin, bmax, bagg, bmean, bdev) = match d.bw.calc() {
        Some((mn, mx, mean, dev)) => (mn, mx, agg_percent(rs, ddir, mean), mean, dev),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    v.push("bw_min", int(bmin))
        .push("bw_max", int(bmax))
        .push("bw_agg", float(bagg))
        .push("bw_mean", float(bmean))
        .push("bw_dev", float(bdev))
        .push("bw_samples", int(d.bw.samples));
    let (imin, imax, imean, idev) = d.iops.calc().unwrap_or((0, 0, 0.0, 0.0));
    v.push("iops_min", int(imin))
        .push("iops_max", int(imax))
        .push("iops_mean", float(imean))
        .push("iops_stddev", float(idev))
        .push("iops_samples", int(d.iops.samples));
    v
}

fn dist_obj(keys: &[&str], vals: &[f64]) -> JsonValue {
    let mut o = JsonValue::object();
    for (k, v) in keys.iter().zip(vals) {
        o.push(*k, float(*v));
    }
    o
}

const LAT_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

/// `show_thread_status_json` (fio 3.33 key set: no `job_start`, no `*_ns`/`*_us`
/// latency-target duplicates, no `prios`).
pub fn job_json(jr: &JobReport, rs: Option<&GroupRunStats>, plus: bool) -> JsonValue {
    let js = &jr.stats;
    let mut root = JsonValue::object();
    root.push("jobname", JsonValue::Str(jr.name.clone()))
        .push("groupid", int(jr.groupid as u64))
        .push("error", JsonValue::Int(jr.error as i64))
        .push("eta", JsonValue::Int(jr.eta))
        .push("elapsed", int(jr.elapsed_sec));
    if let Some(o) = job_opts(&jr.job_options) {
        root.push("job options", o);
    }
    for (ddir, name) in DDIR_NAMES.iter().enumerate().take(DDIR_RWDIR_CNT) {
        root.push(*name, ddir_json(js, &js.dir[ddir], ddir, rs, plus));
    }
    let mut sync = JsonValue::object();
    sync.push("total_ios", int(js.sync_total_ios));
    sync.push(
        "lat_ns",
        lat_json(
            &js.sync,
            js.opts.lat_percentiles || js.opts.clat_percentiles,
            &js.opts.percentile_list,
            js.sync.hist.as_ref(),
            plus,
        ),
    );
    root.push("sync", sync);
    let (usr, sys) = js.cpu_pct();
    root.push("job_runtime", int(js.total_run_time_ms))
        .push("usr_cpu", float(usr))
        .push("sys_cpu", float(sys))
        .push("ctx", int(js.ctx))
        .push("majf", int(js.majf))
        .push("minf", int(js.minf));
    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let sub_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    root.push("iodepth_level", dist_obj(&level_keys, &js.depth_dist()));
    root.push("iodepth_submit", dist_obj(&sub_keys, &js.submit_dist()));
    root.push("iodepth_complete", dist_obj(&sub_keys, &js.complete_dist()));
    debug_assert_eq!(level_keys.len(), IO_U_MAP_NR);
    root.push("latency_ns", dist_obj(&LAT_KEYS[..10], &js.lat_dist_n()));
    root.push("latency_us", dist_obj(&LAT_KEYS[..10], &js.lat_dist_u()));
    root.push("latency_ms", dist_obj(&LAT_KEYS, &js.lat_dist_m()));
    if jr.continue_on_error {
        root.push("total_err", int(jr.total_err_count))
            .push("first_error", JsonValue::Int(jr.first_error as i64));
    }
    if jr.latency_depth != 0 {
        root.push("latency_depth", int(jr.latency_depth as u64))
            .push("latency_target", int(jr.latency_target))
            .push("latency_percentile", float(jr.latency_percentile))
            .push("latency_window", int(jr.latency_window));
    }
    if !jr.description.is_empty() {
        root.push("desc", JsonValue::Str(jr.description.clone()));
    }
    if let Some(ss) = jr.steadystate.as_ref().filter(|s| s.dur > 0) {
        root.push("steadystate", steadystate_json(ss));
    }
    root
}

/// The `steadystate` object of `show_thread_status_json`; fio prints the limit and the
/// criterion through a `(float)` cast.
fn steadystate_json(ss: &crate::report::SteadyStateReport) -> JsonValue {
    let pct = if ss.pct { "%" } else { "" };
    let mut o = JsonValue::object();
    o.push(
        "ss",
        JsonValue::Str(format!(
            "{}{}:{}{pct}",
            if ss.iops { "iops" } else { "bw" },
            if ss.slope { "_slope" } else { "" },
            fmt_f(ss.limit as f32 as f64)
        )),
    )
    .push("duration", int(ss.dur))
    .push("attained", int(ss.attained as u64))
    .push(
        "criterion",
        JsonValue::Str(format!("{}{pct}", fmt_f(ss.criterion as f32 as f64))),
    )
    .push("max_deviation", float(ss.max_deviation))
    .push("slope", float(ss.slope_value));
    let arr = |v: &[u64]| JsonValue::Array(v.iter().map(|&x| int(x)).collect());
    let mut data = JsonValue::object();
    data.push("bw_mean", int(ss.bw_mean()))
        .push("iops_mean", int(ss.iops_mean()))
        .push("iops", arr(&ss.iops_data))
        .push("bw", arr(&ss.bw_data));
    o.push("data", data);
    o
}

/// The whole JSON document as a value (`__show_run_stats` JSON branch plus
/// `show_disk_util`), with the caller's `"blksim"` object last.
pub fn report_json(r: &RunReport, plus: bool) -> JsonValue {
    let mut root = JsonValue::object();
    root.push("fio version", JsonValue::Str(r.fio_version.clone()))
        .push("timestamp", int(r.timestamp))
        .push("timestamp_ms", int(r.timestamp_ms))
        .push("time", JsonValue::Str(r.time.clone()));
    if let Some(g) = job_opts(&r.global_options) {
        root.push("global options", g);
    }
    let jobs = r
        .jobs
        .iter()
        .map(|j| job_json(j, r.group(j.groupid), plus))
        .collect();
    root.push("jobs", JsonValue::Array(jobs));
    if !r.disk_util.is_empty() {
        let disks = r
            .disk_util
            .iter()
            .map(|d| {
                // fio 3.33 json_array_add_disk_util (no sectors).
                let mut o = JsonValue::object();
                o.push("name", JsonValue::Str(d.name.clone()))
                    .push("read_ios", int(d.ios[0]))
                    .push("write_ios", int(d.ios[1]))
                    .push("read_merges", int(d.merges[0]))
                    .push("write_merges", int(d.merges[1]))
                    .push("read_ticks", int(d.ticks[0]))
                    .push("write_ticks", int(d.ticks[1]))
                    .push("in_queue", int(d.in_queue))
                    .push("util", float(d.util()));
                o
            })
            .collect();
        root.push("disk_util", JsonValue::Array(disks));
    }
    if let Some(b) = &r.blksim {
        root.push("blksim", b.clone());
    }
    root
}

/// fio's `--output-format=json` (`plus = false`) or `json+` (`plus = true`): the
/// document followed by a newline.
pub fn write_json(r: &RunReport, plus: bool, out: &mut dyn Write) -> io::Result<()> {
    report_json(r, plus).write_fio(out, 0)?;
    out.write_all(b"\n")
}
