//! Rebuild the stats behind real fio 3.33 JSON / JSON+ outputs and check that our writer
//! prints the same document byte for byte, and that our percentiles computed from the
//! json+ bins equal fio's.
mod common;

use blksim_report::hist::plat_val_to_idx;
use blksim_report::stats::{PrioStat, DDIR_RWDIR_CNT, IO_U_MAP_NR, LAT_M_NR, LAT_N_NR, LAT_U_NR};
use blksim_report::{
    write_json, DiskUtil, JobReport, JobStats, JsonValue, LatHist, LatStat, RunReport, StatsOptions,
};
use common::*;
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap()
}
fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn percentile_pairs(p: &Value) -> Vec<(f64, u64)> {
    p.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.parse::<f64>().unwrap(), u(v)))
        .collect()
}

fn hist_from_bins(bins: &Value) -> LatHist {
    let mut h = LatHist::new();
    for (k, c) in bins.as_object().unwrap() {
        h.add_to_bucket(plat_val_to_idx(k.parse().unwrap()), u(c));
    }
    h
}

fn lat_stat(v: &Value) -> LatStat {
    let mut s = LatStat::from_summary(
        u(&v["min"]),
        u(&v["max"]),
        f(&v["mean"]),
        f(&v["stddev"]),
        u(&v["N"]),
    );
    if let Some(b) = v.get("bins") {
        s.hist = Some(hist_from_bins(b));
    } else if let Some(p) = v.get("percentile") {
        s.hist = Some(hist_from_percentiles(&percentile_pairs(p), s.samples));
    }
    s
}

fn dist_vals(v: &Value) -> Vec<f64> {
    v.as_object().unwrap().values().map(f).collect()
}

fn counts<const N: usize>(v: &Value, total: u64, floor: f64) -> [u64; N] {
    let mut out = [0; N];
    for (i, x) in dist_vals(v).iter().enumerate() {
        out[i] = count_for(*x, total, 6, floor).unwrap_or_else(|| panic!("{x} of {total}"));
    }
    out
}

fn opts_of(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Rebuild a RunReport from a fio JSON document.
fn report_from_json(doc: &Value) -> RunReport {
    let mut r = RunReport {
        timestamp: u(&doc["timestamp"]),
        timestamp_ms: u(&doc["timestamp_ms"]),
        time: doc["time"].as_str().unwrap().to_string(),
        global_options: opts_of(&doc["global options"]),
        ..Default::default()
    };
    for (i, j) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let mut js = JobStats::new(0, &StatsOptions::default());
        for (d, name) in ["read", "write", "trim"].iter().enumerate() {
            let dv = &j[*name];
            let ds = &mut js.dir[d];
            ds.io_bytes = u(&dv["io_bytes"]);
            ds.total_ios = u(&dv["total_ios"]);
            ds.short_ios = u(&dv["short_ios"]);
            ds.drop_ios = u(&dv["drop_ios"]);
            ds.runtime_ms = u(&dv["runtime"]);
            ds.slat = lat_stat(&dv["slat_ns"]);
            ds.clat = lat_stat(&dv["clat_ns"]);
            ds.lat = lat_stat(&dv["lat_ns"]);
            for p in dv["prios"].as_array().into_iter().flatten() {
                let st = p.get("clat_ns").or_else(|| p.get("lat_ns")).unwrap();
                ds.prios.push(PrioStat {
                    ioprio: (u(&p["prioclass"]) << 13 | u(&p["prio"])) as u32,
                    lat: lat_stat(st),
                });
            }
            ds.bw = LatStat::from_summary(
                u(&dv["bw_min"]),
                u(&dv["bw_max"]),
                f(&dv["bw_mean"]),
                f(&dv["bw_dev"]),
                u(&dv["bw_samples"]),
            );
            ds.iops = LatStat::from_summary(
                u(&dv["iops_min"]),
                u(&dv["iops_max"]),
                f(&dv["iops_mean"]),
                f(&dv["iops_stddev"]),
                u(&dv["iops_samples"]),
            );
        }
        js.sync_total_ios = u(&j["sync"]["total_ios"]);
        js.sync = lat_stat(&j["sync"]["lat_ns"]);
        js.total_run_time_ms = u(&j["job_runtime"]);
        let rt = js.total_run_time_ms as f64;
        js.usr_time_ms = (f(&j["usr_cpu"]) * rt / 100.0).round() as u64;
        js.sys_time_ms = (f(&j["sys_cpu"]) * rt / 100.0).round() as u64;
        js.ctx = u(&j["ctx"]);
        js.majf = u(&j["majf"]);
        js.minf = u(&j["minf"]);
        let total = js.total_rw_ios();
        js.io_u_map = counts::<IO_U_MAP_NR>(&j["iodepth_level"], total, 0.1);
        let (ts, cs) = find_total(&dist_vals(&j["iodepth_submit"]), 6, 0.1);
        js.total_submit = ts;
        js.io_u_submit.copy_from_slice(&cs);
        let (tc, cc) = find_total(&dist_vals(&j["iodepth_complete"]), 6, 0.1);
        js.total_complete = tc;
        js.io_u_complete.copy_from_slice(&cc);
        js.io_u_lat_n = counts::<LAT_N_NR>(&j["latency_ns"], total, 0.01);
        js.io_u_lat_u = counts::<LAT_U_NR>(&j["latency_us"], total, 0.01);
        js.io_u_lat_m = counts::<LAT_M_NR>(&j["latency_ms"], total, 0.01);
        let mut jr = JobReport::new(
            j["jobname"].as_str().unwrap(),
            u(&j["groupid"]) as u32,
            i as u32,
            u(&j["latency_depth"]) as u32,
            js,
        );
        jr.error = j["error"].as_i64().unwrap() as i32;
        jr.eta = j["eta"].as_i64().unwrap();
        jr.elapsed_sec = u(&j["elapsed"]);
        jr.job_options = opts_of(&j["job options"]);
        jr.latency_target = u(&j["latency_target"]);
        jr.latency_window = u(&j["latency_window"]);
        jr.latency_percentile = f(&j["latency_percentile"]);
        r.jobs.push(jr);
    }
    if let Some(disks) = doc.get("disk_util") {
        for d in disks.as_array().unwrap() {
            let (io_ticks, msec) = util_parts(f(&d["util"]), 6);
            r.disk_util.push(DiskUtil {
                name: d["name"].as_str().unwrap().to_string(),
                ios: [u(&d["read_ios"]), u(&d["write_ios"])],
                merges: [u(&d["read_merges"]), u(&d["write_merges"])],
                sectors: [0, 0],
                ticks: [u(&d["read_ticks"]), u(&d["write_ticks"])],
                in_queue: u(&d["in_queue"]),
                io_ticks,
                msec,
            });
        }
    }
    r.compute_groups();
    r
}

fn check_roundtrip(file: &str, plus: bool) {
    let text = data(file);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let r = report_from_json(&doc);
    let mut out = Vec::new();
    write_json(&r, plus, &mut out).unwrap();
    let ours = String::from_utf8(out).unwrap();
    // Key paths and order first (clearer failure), then the exact text.
    let theirs_v: Value = serde_json::from_str(&text).unwrap();
    let ours_v: Value = serde_json::from_str(&ours).expect("our JSON parses");
    assert_eq!(
        key_paths(&ours_v, ""),
        key_paths(&theirs_v, ""),
        "{file}: key paths"
    );
    for (n, (a, b)) in ours.lines().zip(text.lines()).enumerate() {
        assert_eq!(a, b, "{file}: line {}", n + 1);
    }
    assert_eq!(ours, text, "{file}");
}

fn key_paths(v: &Value, pre: &str) -> Vec<String> {
    let mut out = Vec::new();
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let p = format!("{pre}/{k}");
                out.push(p.clone());
                out.extend(key_paths(c, &p));
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                out.extend(key_paths(c, &format!("{pre}[{i}]")));
            }
        }
        _ => {}
    }
    out
}

#[test]
fn json_null_randread() {
    check_roundtrip("null_randread.json", false);
}

#[test]
fn json_file_mixed_two_jobs_disk_util() {
    check_roundtrip("file_mixed.json", false);
}

#[test]
fn json_numjobs_group_reporting() {
    check_roundtrip("numjobs_group.json", false);
}

/// libaio with `cmdprio_percentage=25,40 cmdprio_class=2,1`: the per-priority `prios`
/// arrays after each direction's `lat_ns`.
#[test]
fn json_cmdprio_per_priority() {
    check_roundtrip("cmdprio.json", false);
}

#[test]
fn jsonplus_cmdprio_per_priority() {
    check_roundtrip("cmdprio.jsonplus.json", true);
}

/// Two null-engine trim jobs at `prio=1` and `prio=5` reported as one group: the group's
/// `prios` sum each job's latencies under its own priority (`sum_clat_prio_stats`).
#[test]
fn json_group_of_two_priorities() {
    check_roundtrip("prio_group_trim.json", false);
}

#[test]
fn jsonplus_group_of_two_priorities() {
    check_roundtrip("prio_group_trim.jsonplus.json", true);
}

#[test]
fn jsonplus_null_randread() {
    check_roundtrip("null_randread.jsonplus.json", true);
}

#[test]
fn jsonplus_libaio_direct_timed() {
    check_roundtrip("libaio_direct_timed.jsonplus.json", true);
}

/// The core claim: fio's percentiles are a function of the histogram only. Rebuild the
/// histogram from json+ bins and recompute every percentile.
#[test]
fn percentiles_from_jsonplus_bins_equal_fio() {
    let mut checked = 0;
    for file in [
        "null_randread.jsonplus.json",
        "libaio_direct_timed.jsonplus.json",
    ] {
        let doc: Value = serde_json::from_str(&data(file)).unwrap();
        for j in doc["jobs"].as_array().unwrap() {
            for d in ["read", "write", "trim"] {
                let c = &j[d]["clat_ns"];
                let Some(bins) = c.get("bins") else { continue };
                let h = hist_from_bins(bins);
                assert_eq!(h.total(), u(&c["N"]));
                // bins() gives back fio's keys and counts in fio's order.
                let ours: Vec<(String, u64)> = h.bins().map(|(v, n)| (v.to_string(), n)).collect();
                let theirs: Vec<(String, u64)> = bins
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), u(v)))
                    .collect();
                assert_eq!(ours, theirs);
                let pv = percentile_pairs(&c["percentile"]);
                let plist: Vec<f64> = pv.iter().map(|p| p.0).collect();
                let want: Vec<u64> = pv.iter().map(|p| p.1).collect();
                assert_eq!(h.percentiles(&plist), want, "{file} {d}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4);
}

#[test]
fn blksim_key_is_last_and_empty_values_dropped() {
    let mut js = JobStats::new(0, &StatsOptions::default());
    js.record_io(0, 1000, 4096, 10, 500);
    js.finish(2_000_000);
    let mut jr = JobReport::new("j", 0, 0, 1, js);
    jr.job_options = vec![
        ("rw".into(), "read".into()),
        ("time_based".into(), String::new()),
    ];
    let mut extra = JsonValue::object();
    extra
        .push("version", JsonValue::Str("0.1.0".into()))
        .push("seed", JsonValue::UInt(7));
    let mut r = RunReport {
        jobs: vec![jr],
        blksim: Some(extra),
        ..Default::default()
    };
    r.compute_groups();
    let mut out = Vec::new();
    write_json(&r, false, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "fio version",
            "timestamp",
            "timestamp_ms",
            "time",
            "jobs",
            "blksim"
        ]
    );
    assert_eq!(v["fio version"], "fio-3.33");
    assert_eq!(v["blksim"]["seed"], 7);
    let jo = v["jobs"][0]["job options"].as_object().unwrap();
    assert_eq!(jo.len(), 1);
    // Empty directions are present and zero-filled.
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 0);
    assert_eq!(v["jobs"][0]["trim"]["clat_ns"]["N"], 0);
    assert!(v["jobs"][0]["trim"]["clat_ns"].get("percentile").is_none());
    let _ = DDIR_RWDIR_CNT;
}
