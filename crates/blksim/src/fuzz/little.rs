//! Little's law on fio's report: the I/Os a job has in flight never outnumber its `iodepth`,
//! so the latencies it reports add up to at most `iodepth × runtime`.
//!
//! fio stamps an io_u's `start_time` in `get_io_u()` and ends its `lat` at completion
//! (`account_io_completion`), and a job takes a new io_u only while `cur_depth < iodepth`
//! (`do_io`), so the job's lifetimes overlap at most `iodepth` deep. Summed over the I/Os a
//! report counts, `Σ lat = mean × N ≤ iodepth × runtime`, with two allowances:
//! - `ramp_time`'s stats reset (`zero_stats`) keeps I/Os in flight across it, whose latencies
//!   began before the counted runtime: at most `iodepth × max lat`;
//! - `job_runtime` is in whole milliseconds: `iodepth × 1 ms`.
//!
//! With `group_reporting` one entry sums several jobs, and the bound is the sum of every
//! job's depth (`numjobs` clones included).

use super::case::{Case, Section};
use serde_json::Value;

/// fio's directions in a job's report whose `lat_ns` (or `clat_ns`) samples are I/Os in
/// flight: syncs occupy a slot of the depth too.
const DIRS: [&str; 4] = ["read", "write", "trim", "sync"];

/// Checks every job entry of `report` against the depth the case's job file gives it.
pub fn check(case: &Case, report: &Value) -> Result<(), String> {
    let Some(jobs) = report["jobs"].as_array() else {
        return Ok(());
    };
    let global = case.sections.iter().find(|s| s.name == "global");
    let grouped = case.sections.iter().any(|s| s.has("group_reporting"));
    // The depth of each job section: its own iodepth, else [global]'s, else fio's default 1.
    let depth = |s: &Section| -> Option<u64> {
        match s
            .get("iodepth")
            .or_else(|| global.and_then(|g| g.get("iodepth")))
        {
            Some(Some(v)) => v.trim().parse().ok(),
            Some(None) => None,
            None => Some(1),
        }
    };
    let numjobs = |s: &Section| -> Option<u64> {
        match s
            .get("numjobs")
            .or_else(|| global.and_then(|g| g.get("numjobs")))
        {
            Some(Some(v)) => v.trim().parse().ok(),
            Some(None) => None,
            None => Some(1),
        }
    };
    let sections: Vec<&Section> = case
        .sections
        .iter()
        .filter(|s| s.name != "global")
        .collect();
    // An option the fuzzer wrote in a form this check does not read: no bound, no verdict.
    let mut all = 0u64;
    for s in &sections {
        let (Some(d), Some(n)) = (depth(s), numjobs(s)) else {
            return Ok(());
        };
        all = all.saturating_add(d.saturating_mul(n));
    }
    for j in jobs {
        let name = j["jobname"].as_str().unwrap_or("?");
        let d = if grouped {
            all
        } else {
            // Each clone of a section reports on its own under the section's name.
            match sections
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| depth(s))
            {
                Some(d) => d,
                None => return Ok(()),
            }
        };
        bound(j, d).map_err(|e| format!("job {name} (iodepth {d}): {e}"))?;
    }
    Ok(())
}

/// `Σ lat ≤ depth × (runtime + 1 ms + max lat)` for one job entry of fio's JSON.
fn bound(job: &Value, depth: u64) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::exec;

    fn case(sections: Vec<Section>) -> Case {
        Case {
            index: 0,
            seed: 1,
            device: "null_blk".into(),
            sets: Vec::new(),
            sections,
            json_plus: false,
            max_events: 1,
            max_ios: 1,
            debug_drop_completion: 0,
        }
    }

    fn job(name: &str, opts: &[(&str, &str)]) -> Section {
        let mut s = Section::new(name);
        for (k, v) in opts {
            s.set(k, Some(v.to_string()));
        }
        s
    }

    fn report(jobs: &[(&str, u64, u64, f64, u64)]) -> Value {
        let jobs: Vec<Value> = jobs
            .iter()
            .map(|&(name, runtime, n, mean, max)| {
                serde_json::json!({
                    "jobname": name,
                    "job_runtime": runtime,
                    "read": {"lat_ns": {"N": n, "mean": mean, "max": max}},
                })
            })
            .collect();
        serde_json::json!({ "jobs": jobs })
    }

    #[test]
    fn a_full_queue_meets_the_bound_and_one_more_io_in_flight_breaks_it() {
        // 8 in flight for 50 ms, 10 µs each: 40000 I/Os, 400 ms of latency.
        let c = case(vec![job("a", &[("iodepth", "8")])]);
        check(&c, &report(&[("a", 50, 40_000, 10_000.0, 10_000)])).unwrap();
        // Ramp straddlers and the millisecond runtime: up to 8 × (1 ms + 10 µs) more.
        check(&c, &report(&[("a", 50, 40_808, 10_000.0, 10_000)])).unwrap();
        let e = check(&c, &report(&[("a", 50, 45_000, 10_000.0, 10_000)])).unwrap_err();
        assert!(e.contains("job a (iodepth 8)"), "{e}");
    }

    #[test]
    fn the_depth_comes_from_the_section_then_global_then_fio_default() {
        let r = report(&[("a", 100, 1000, 400_000.0, 500_000)]); // 4 in flight
        let none = case(vec![job("a", &[])]);
        assert!(check(&none, &r).is_err());
        let global = case(vec![job("global", &[("iodepth", "4")]), job("a", &[])]);
        check(&global, &r).unwrap();
        let own = case(vec![
            job("global", &[("iodepth", "1")]),
            job("a", &[("iodepth", "4")]),
        ]);
        check(&own, &r).unwrap();
        // A grouped report sums every job's depth, clones included.
        let mut g = job("a", &[("numjobs", "2"), ("iodepth", "2")]);
        g.set("group_reporting", None);
        check(&case(vec![g]), &r).unwrap();
    }

    #[test]
    fn fios_own_reports_meet_the_bound() {
        // fio 3.33's reports in blksim-report's test data, each checked against a case built
        // from the options it echoes (`global options`, `job options`). libaio at depth 16
        // comes within 0.3 % of iodepth × runtime: 124216 reads of 257 µs in 2 s.
        let all = exec::FIO_JSON.iter().chain(exec::FIO_JSON_PLUS);
        let mut checked = 0;
        for text in all {
            let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
            let section = |name: &str, opts: &Value| {
                let mut s = Section::new(name);
                for (k, o) in opts.as_object().into_iter().flatten() {
                    s.set(k, o.as_str().map(str::to_string));
                }
                s
            };
            let mut sections = vec![section("global", &v["global options"])];
            for j in v["jobs"].as_array().unwrap() {
                let name = j["jobname"].as_str().unwrap();
                if let Some(opts) = j.get("job options") {
                    sections.push(section(name, opts));
                    checked += 1;
                }
            }
            check(&case(sections), &v).unwrap();
        }
        assert!(checked >= 5, "{checked}");
        // The same reports at a lower depth than they ran at fail.
        let t = exec::FIO_JSON_PLUS[1];
        let v: Value = serde_json::from_str(&t[t.find('{').unwrap()..]).unwrap();
        assert!(bound(&v["jobs"][0], 15).is_err());
    }
}
