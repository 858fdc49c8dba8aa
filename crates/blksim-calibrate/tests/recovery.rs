//! Parameter recovery: results simulated with known parameter values, written as fio JSON,
//! must calibrate back to those values from a base that has others, for each device model.
//! A fit that stops early, a loss that ignores a metric, or jobs rebuilt wrongly from the
//! JSON all move the recovered values off.

use blksim_calibrate::fiojson::{parse_run, Run};
use blksim_calibrate::{calibrate, Options};
use blksim_sim::setup::{self, RunOptions, WallClock};
use blksim_sim::Profile;

/// `job` run on `device` with `truth` set, as the fio JSON text `blksim run` prints, read
/// back as a calibration run.
fn measured(device: &str, truth: &[&str], name: &str, job: &str) -> Run {
    let jobs = blksim_job::jobfile::parse_job_str(job, name, &|_| None).unwrap();
    let mut p = Profile::load(device).unwrap();
    for s in truth {
        p.set(s).unwrap();
    }
    // Another seed than the fit's: the fit must not depend on replaying the same draws.
    let opts = RunOptions {
        seed: 7,
        ..Default::default()
    };
    let out = setup::run(&jobs, &p, &opts).unwrap();
    let r = setup::build_report(&jobs, &p, &opts, &out, &WallClock::default());
    let mut buf = Vec::new();
    blksim_report::json::write_json(&r, false, &mut buf).unwrap();
    parse_run(&String::from_utf8(buf).unwrap(), name).unwrap()
}

fn check(device: &str, truth: &[(&str, u64)], tol: f64, jobs: &[(&str, &str)]) {
    let sets: Vec<String> = truth.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let runs: Vec<Run> = jobs
        .iter()
        .map(|(n, j)| measured(device, &sets, n, j))
        .collect();
    let opts = Options {
        device: device.to_string(),
        fit: truth.iter().map(|(k, _)| k.to_string()).collect(),
        loo: false,
        ..Default::default()
    };
    let c = calibrate(runs, &opts).unwrap();
    let text = blksim_calibrate::report_text(&c);
    for ((k, want), r) in truth.iter().zip(&c.params) {
        assert_eq!(r.param.key, *k);
        assert_ne!(r.param.base, *want, "{k}: the base must start elsewhere");
        let err = r.value as f64 / *want as f64 - 1.0;
        assert!(
            err.abs() <= tol,
            "{k}: recovered {} for {want} ({:+.2}%, tolerance {:.0}%)\n{text}",
            r.value,
            100.0 * err,
            100.0 * tol
        );
        assert!(r.identified(), "{k} not identified\n{text}");
    }
    assert!(c.loss < 1e-4, "loss {}\n{text}", c.loss);
    eprintln!("{text}");
}

#[test]
fn emmc_card_times_are_recovered() {
    let g = "[global]\nsize=256m\nruntime=500ms\n";
    check(
        "emmc-hbg4a2",
        &[
            ("card.read_fw_ns", 15_000),
            ("card.write_fw_ns", 14_000),
            ("card.t_prog_ns", 600_000),
        ],
        0.03,
        &[
            ("rr1.json", &format!("{g}[rr1]\nrw=randread\nbs=4k\n")),
            (
                "rr8.json",
                &format!("{g}[rr8]\nrw=randread\nbs=16k\nioengine=libaio\niodepth=8\n"),
            ),
            ("rw1.json", &format!("{g}[rw1]\nrw=randwrite\nbs=4k\n")),
            (
                "sw.json",
                &format!("{g}[sw]\nrw=write\nbs=64k\nioengine=libaio\niodepth=4\n"),
            ),
        ],
    );
}

#[test]
fn null_blk_completion_time_is_recovered() {
    let g = "[global]\nsize=1g\nruntime=50ms\nioengine=libaio\n";
    check(
        "null_blk",
        &[("completion_nsec", 37_000)],
        0.02,
        &[
            ("qd1.json", &format!("{g}[qd1]\nrw=randread\nbs=4k\n")),
            (
                "qd4.json",
                &format!("{g}[qd4]\nrw=randwrite\nbs=8k\niodepth=4\n"),
            ),
        ],
    );
}

#[test]
fn loop_worker_costs_are_recovered() {
    let g = "[global]\nsize=512m\nruntime=50ms\n";
    check(
        "loop-2cpu",
        &[
            ("worker_ns", 3_000),
            ("copy_ns_per_kib", 250),
            ("worker_wakeup_ns", 25_000),
        ],
        0.05,
        &[
            ("r4k.json", &format!("{g}[r4k]\nrw=randread\nbs=4k\n")),
            ("r128k.json", &format!("{g}[r128k]\nrw=randread\nbs=128k\n")),
            (
                "w16.json",
                &format!("{g}[w16]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\n"),
            ),
        ],
    );
}
