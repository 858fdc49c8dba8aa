//! Closed-form bounds on fio's report that hold whatever the device does, and its balance
//! with the bytes the device completed.
//!
//! **Little's law.** The I/Os a job has in flight never outnumber its `iodepth`, so the
//! latencies it reports add up to at most `iodepth × runtime`. fio stamps an io_u's
//! `start_time` in `get_io_u()` and ends its `lat` at completion (`account_io_completion`),
//! and a job takes a new io_u only while `cur_depth < iodepth` (`do_io`), so the job's
//! lifetimes overlap at most `iodepth` deep. Summed over the I/Os a report counts,
//! `Σ lat = mean × N ≤ iodepth × runtime`, with two allowances:
//! - `ramp_time`'s stats reset (`zero_stats`) keeps I/Os in flight across it, whose latencies
//!   began before the counted runtime: at most `iodepth × max lat`;
//! - `job_runtime` is in whole milliseconds: `iodepth × 1 ms`.
//!
//! With `group_reporting` one entry sums several jobs, and the bound is the sum of every
//! job's depth (`numjobs` clones included).
//!
//! **The rate limit.** A job with `rate` or `rate_iops` (`rate_process=linear`) issues an
//! I/O of a direction only once the bytes issued before it fit the rate since the rate clock
//! started (`usec_for_io`: `rate_iops` counts the direction's smallest block), so a
//! direction's `io_bytes` are at most `rate × runtime`, plus the I/O issued at the end and
//! the `iodepth` issued before the ramp's reset and counted after it. Left out: poisson
//! gaps (random by design), a verify phase (its reads and trims are not rated) and a
//! grouped report (its entry sums jobs of different rates).
//!
//! **The bytes.** What fio counted is what the device served, as the trace shows it
//! ([`conserved`]).

use super::case::Case;
use blksim_job::{IoEngine, JobSet, JobSpec};
use serde_json::Value;

/// fio's directions in a job's report whose `lat_ns` (or `clat_ns`) samples are I/Os in
/// flight: syncs occupy a slot of the depth too.
const DIRS: [&str; 4] = ["read", "write", "trim", "sync"];

/// Which bound a report broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    Little,
    Rate,
}

/// Checks every job entry of `report` against the job file of `case`, parsed as the
/// simulator parses it (a job file that does not parse has no bounds).
pub fn check(case: &Case, report: &Value) -> Result<(), (Broken, String)> {
    match super::gen::parse_case(case) {
        Some(set) => check_set(&set, report),
        None => Ok(()),
    }
}

fn check_set(set: &JobSet, report: &Value) -> Result<(), (Broken, String)> {
    let Some(entries) = report["jobs"].as_array() else {
        return Ok(());
    };
    let clones = || {
        set.jobs
            .iter()
            .flat_map(|j| std::iter::repeat_n(j, j.numjobs.max(1) as usize))
    };
    if set.jobs.iter().any(|j| j.group_reporting) {
        let all = clones().map(|j| u64::from(j.iodepth.max(1))).sum::<u64>();
        for e in entries {
            little(e, all).map_err(|m| (Broken::Little, format!("grouped jobs: {m}")))?;
        }
        return Ok(());
    }
    // Ungrouped, fio reports each clone on its own, in the order of the job file.
    if clones().count() != entries.len() {
        return Ok(());
    }
    for (j, e) in clones().zip(entries) {
        let depth = u64::from(j.iodepth.max(1));
        let who = |m: String| format!("job {} (iodepth {depth}): {m}", j.name);
        little(e, depth).map_err(|m| (Broken::Little, who(m)))?;
        rate(e, j).map_err(|m| (Broken::Rate, who(m)))?;
    }
    Ok(())
}

/// `Σ lat ≤ depth × (runtime + 1 ms + max lat)` for one job entry of fio's JSON.
fn little(job: &Value, depth: u64) -> Result<(), String> {
    let runtime_ms = job["job_runtime"].as_f64().unwrap_or(0.0);
    let (mut sum_ns, mut max_ns) = (0.0f64, 0.0f64);
    for d in DIRS {
        // `lat_ns` unless fio left it out (`disable_lat`, `gtod_reduce`); `clat_ns` is a part
        // of it, so a bound on it is looser, not wrong.
        let l = [&job[d]["lat_ns"], &job[d]["clat_ns"]]
            .into_iter()
            .find(|l| l["N"].as_u64().unwrap_or(0) > 0);
        if let Some(l) = l {
            sum_ns += l["N"].as_f64().unwrap_or(0.0) * l["mean"].as_f64().unwrap_or(0.0);
            max_ns = max_ns.max(l["max"].as_f64().unwrap_or(0.0));
        }
    }
    let limit = depth as f64 * (runtime_ms * 1e6 + 1e6 + max_ns);
    if sum_ns > limit * (1.0 + 1e-9) {
        return Err(format!(
            "latencies sum to {:.3} ms over a {runtime_ms} ms runtime, {:.2} I/Os in flight \
             on average; at most {:.3} ms (max lat {:.3} ms)",
            sum_ns / 1e6,
            sum_ns / (runtime_ms.max(1.0) * 1e6),
            limit / 1e6,
            max_ns / 1e6
        ));
    }
    Ok(())
}

/// `io_bytes ≤ rate × (runtime + 1 ms) + (iodepth + 1) × max bs` per rated direction (the
/// largest size the direction's I/Os can take).
fn rate(job: &Value, j: &JobSpec) -> Result<(), String> {
    if j.rate_poisson || j.verify.is_some() || j.replay.file.is_some() {
        return Ok(());
    }
    let runtime_ms = job["job_runtime"].as_f64().unwrap_or(0.0);
    for (d, name) in DIRS[..3].iter().enumerate() {
        let bps = match (j.rate[d], j.rate_iops[d]) {
            (0, 0) => continue,
            (0, iops) => iops.saturating_mul(j.bs[d].min.max(1)),
            (bps, _) => bps,
        };
        let bytes = job[*name]["io_bytes"].as_f64().unwrap_or(0.0);
        // With `bs_is_seq_rand` a direction's I/O takes the read or the write sizes.
        let max_bs = if j.bs_is_seq_rand {
            j.bs[0].max.max(j.bs[1].max)
        } else {
            j.bs[d].max
        };
        let slack = (f64::from(j.iodepth.max(1)) + 1.0) * max_bs as f64;
        let limit = bps as f64 * (runtime_ms + 1.0) / 1e3 + slack;
        if bytes > limit * (1.0 + 1e-9) {
            return Err(format!(
                "{name}: {bytes} bytes in {runtime_ms} ms at a rate of {bps} bytes/s; at most \
                 {limit:.0}"
            ));
        }
    }
    Ok(())
}

/// What fio counted is what the device served: the bytes of a report's reads, writes and
/// trims, summed over its jobs, against the bytes of the requests the trace shows completing
/// without an error (`device`: read, write, discard). blksim has no page cache, so a job's
/// every byte goes to the device once, merged or split: the same bytes when every I/O is in
/// whole logical blocks, at least as many when a buffered I/O is not (the device reads or
/// writes the blocks it touches). Left out: fio's null engine (no device), `ramp_time` (its I/Os are
/// served but not counted), `latency_target` (the statistics restart for its final
/// window) and `stats=0` (fio counts nothing), eraseblock (its gap reads and combined writes are the
/// elevator's own), runs with I/O errors or injected faults, and a power cut (after it the
/// job reads back what survived, which fio does not count).
pub fn conserved(case: &Case, report: &Value, device: [u64; 3]) -> Result<(), String> {
    match super::gen::parse_case(case) {
        Some(set) => conserved_set(&set, report, device),
        None => Ok(()),
    }
}

fn conserved_set(set: &JobSet, report: &Value, device: [u64; 3]) -> Result<(), String> {
    let b = &report["blksim"];
    let skip = set
        .jobs
        .iter()
        .any(|j| {
            j.ioengine == IoEngine::Null || j.ramp_time_ns > 0 || j.latency_target_ns > 0 || !j.stats
        })
        || b["scheduler"] == "eraseblock"
        || b["power_cut"].is_object()
        || b["io_errors"].as_u64() != Some(0)
        // Only the MMC profiles report `blksim.faults`.
        || b["faults"]["injected"].as_u64().unwrap_or(0) != 0;
    if skip {
        return Ok(());
    }
    let exact = set.jobs.iter().all(in_blocks);
    let jobs = report["jobs"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for (d, name) in DIRS[..3].iter().enumerate() {
        let fio: u64 = jobs
            .iter()
            .map(|j| j[*name]["io_bytes"].as_u64().unwrap_or(0))
            .sum();
        if fio > device[d] || (exact && fio != device[d]) {
            return Err(format!(
                "fio's jobs counted {fio} bytes of {name}, the device completed {}{}",
                device[d],
                if exact {
                    " (every I/O in whole 4 KiB blocks)"
                } else {
                    ""
                }
            ));
        }
    }
    Ok(())
}

/// Whether every I/O of the job is in whole logical blocks of any device (4 KiB, the largest
/// logical block a profile may set): its block sizes are, they are not `bs_unaligned`, its
/// offsets (aligned to `blockalign`, by default the smallest block) start on one, and no
/// strided zone or `rw=...:N` gap moves them off it.
fn in_blocks(j: &JobSpec) -> bool {
    let s = |n: u64| n.is_multiple_of(4096);
    // A percentage offset or increment is aligned to `offset_align`, else the smallest block.
    let pct =
        matches!(j.offset, blksim_job::SizeOrPct::PctMilli(_)) || j.offset_increment_pct.is_some();
    let offset = match j.offset {
        blksim_job::SizeOrPct::Bytes(o) => s(o),
        blksim_job::SizeOrPct::PctMilli(_) => true,
    };
    !j.bs_unaligned
        && j.zonemode == blksim_job::ZoneMode::None
        && j.rw_seq_skip == 0
        && offset
        && s(j.offset_increment)
        && (!pct || j.offset_align.is_none_or(s))
        && j.bs
            .iter()
            .all(|b| s(b.min) && s(b.max) && b.split.iter().all(|p| s(p.bs)))
        && j.blockalign.iter().all(|a| a.is_none_or(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::exec;

    fn set(text: &str) -> JobSet {
        blksim_job::jobfile::parse_job_str(text, "t.fio", &|_| None).unwrap()
    }

    /// Entries of (name, runtime ms, lat N, lat mean ns, lat max ns, read io_bytes).
    fn report(jobs: &[(&str, u64, u64, f64, u64, u64)]) -> Value {
        let jobs: Vec<Value> = jobs
            .iter()
            .map(|&(name, runtime, n, mean, max, bytes)| {
                serde_json::json!({
                    "jobname": name,
                    "job_runtime": runtime,
                    "read": {"io_bytes": bytes, "lat_ns": {"N": n, "mean": mean, "max": max}},
                })
            })
            .collect();
        serde_json::json!({ "jobs": jobs })
    }

    fn broken(r: Result<(), (Broken, String)>) -> Broken {
        r.unwrap_err().0
    }

    #[test]
    fn a_full_queue_meets_the_bound_and_one_more_io_in_flight_breaks_it() {
        // 8 in flight for 50 ms, 10 µs each: 40000 I/Os, 400 ms of latency.
        let s = set("[a]\nrw=randread\niodepth=8\n");
        let r = |n| report(&[("a", 50, n, 10_000.0, 10_000, 0)]);
        check_set(&s, &r(40_000)).unwrap();
        // Ramp straddlers and the millisecond runtime: up to 8 × (1 ms + 10 µs) more.
        check_set(&s, &r(40_808)).unwrap();
        let e = check_set(&s, &r(45_000)).unwrap_err();
        assert_eq!(e.0, Broken::Little);
        assert!(e.1.contains("job a (iodepth 8)"), "{}", e.1);
    }

    #[test]
    fn the_depth_is_each_clones_own_or_every_jobs_when_grouped() {
        let r = report(&[("a", 100, 1000, 400_000.0, 500_000, 0)]); // 4 in flight
        assert_eq!(broken(check_set(&set("[a]\n"), &r)), Broken::Little);
        check_set(&set("[global]\niodepth=4\n[a]\n"), &r).unwrap();
        // Two clones report apart, each at its own depth.
        let two = report(&[
            ("a", 100, 1000, 200_000.0, 500_000, 0),
            ("a", 100, 1000, 400_000.0, 500_000, 0),
        ]);
        assert_eq!(
            broken(check_set(&set("[a]\nnumjobs=2\niodepth=2\n"), &two)),
            Broken::Little
        );
        // A grouped report sums every job's depth, clones included.
        check_set(&set("[a]\nnumjobs=2\niodepth=2\ngroup_reporting\n"), &r).unwrap();
    }

    #[test]
    fn a_rated_direction_stays_within_its_rate() {
        // 1000 reads of 4 KiB per second for 2 s: 8 MB, plus two blocks at depth 1.
        let s = set("[a]\nrw=randread\nrate_iops=1000\n");
        let r = |bytes| report(&[("a", 2000, 2000, 1000.0, 1000, bytes)]);
        check_set(&s, &r(2000 * 4096)).unwrap();
        check_set(&s, &r(2003 * 4096)).unwrap();
        assert_eq!(broken(check_set(&s, &r(2010 * 4096))), Broken::Rate);
        // In bytes per second; poisson gaps and a verify phase are left out.
        let bw = set("[a]\nrw=randread\nrate=1m\n");
        assert_eq!(broken(check_set(&bw, &r(2200 * 1024))), Broken::Rate);
        check_set(&bw, &r(2048 * 1024)).unwrap();
        let poisson = set("[a]\nrw=randread\nrate_iops=1000\nrate_process=poisson\n");
        check_set(&poisson, &r(2010 * 4096)).unwrap();
    }

    #[test]
    fn fios_bytes_are_the_devices_and_at_most_them_out_of_whole_blocks() {
        // A report of a device without `blksim.faults` (only the MMC profiles have it).
        let r = |bytes: u64| {
            serde_json::json!({
                "jobs": [{"read": {"io_bytes": bytes}}],
                "blksim": {"scheduler": "none", "io_errors": 0},
            })
        };
        let aligned = set("[a]\nrw=read\nbs=4k\n");
        conserved_set(&aligned, &r(8192), [8192, 0, 0]).unwrap();
        assert!(conserved_set(&aligned, &r(8192), [12288, 0, 0]).is_err());
        assert!(conserved_set(&aligned, &r(8192), [4096, 0, 0]).is_err());
        // Out of whole blocks of a 4 KiB device, or moved off them: the device reads the
        // blocks the I/O touches.
        for text in [
            "[a]\nrw=read\nbs=1000\n",
            "[a]\nrw=read\nbs=512\n",
            "[a]\nrw=read\nbs=4k\nzonemode=strided\nzonesize=64k\nzoneskip=37\n",
            "[a]\nrw=read:3k\nbs=4k\n",
            "[a]\nrw=read\nbsrange=1k-8k\nbs_unaligned\n",
            "[a]\nrw=read\nnumjobs=2\noffset_increment=15%\noffset_align=1\n",
        ] {
            let s = set(text);
            conserved_set(&s, &r(8000), [8192, 0, 0]).unwrap();
            assert!(conserved_set(&s, &r(8000), [7680, 0, 0]).is_err(), "{text}");
        }
    }

    #[test]
    fn fios_own_reports_meet_the_bound() {
        // fio 3.33's reports in blksim-report's test data, each checked against the options
        // it echoes (`global options`, `job options`). libaio at depth 16 comes within
        // 0.3 % of iodepth × runtime: 124216 reads of 257 µs in 2 s; its rate_iops=2000 job
        // within a read of its rate.
        let all = exec::FIO_JSON.iter().chain(exec::FIO_JSON_PLUS);
        let mut checked = 0;
        for text in all {
            let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
            let section = |name: &str, opts: &Value| {
                let mut s = format!("[{name}]\n");
                for (k, o) in opts.as_object().into_iter().flatten() {
                    if k != "name" {
                        s += &format!("{k}={}\n", o.as_str().unwrap());
                    }
                }
                s
            };
            let mut text = section("global", &v["global options"]);
            for j in v["jobs"].as_array().unwrap() {
                let name = j["jobname"].as_str().unwrap();
                if let Some(opts) = j.get("job options") {
                    text += &section(name, opts);
                    checked += 1;
                }
            }
            check_set(&set(&text), &v).unwrap();
        }
        assert!(checked >= 5, "{checked}");
        // The same reports at a lower depth than they ran at fail.
        let t = exec::FIO_JSON_PLUS[1];
        let v: Value = serde_json::from_str(&t[t.find('{').unwrap()..]).unwrap();
        assert!(little(&v["jobs"][0], 15).is_err());
    }
}
