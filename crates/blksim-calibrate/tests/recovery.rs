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
        assert!(r.identified, "{k} not identified\n{text}");
    }
    assert!(c.loss < 1e-4, "loss {}\n{text}", c.loss);
    eprintln!("{text}");
}

#[test]
fn emmc_card_times_are_recovered() {
    // randseed=0x89 (fio's default, set explicitly) pins the workload to the offsets the real
    // fio draws, as in a real measurement; only the device's randomness follows --seed. The
    // card's map cache makes the rate of a 4k random read depend on ~1 % on which offsets
    // were drawn, which read_fw (15 of 160 µs) would have to absorb.
    let g = "[global]\nsize=256m\nruntime=500ms\nrandseed=0x89\n";
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

/// Reads only: the write firmware time changes nothing, and the read firmware time and the
/// NAND sense time only appear as their sum at queue depth one. Both are reported, and the
/// sum itself is still recovered.
#[test]
fn what_the_runs_cannot_tell_is_reported() {
    let truth = ["card.read_fw_ns=15000", "card.t_r_ns=70000"];
    let job = "[global]\nsize=256m\nruntime=300ms\n[rr]\nrw=randread\nbs=4k\n";
    let runs = vec![
        measured("emmc-hbg4a2", &truth, "rr.json", job),
        measured(
            "emmc-hbg4a2",
            &truth,
            "rr64k.json",
            &job.replace("bs=4k", "bs=64k"),
        ),
    ];
    let opts = Options {
        device: "emmc-hbg4a2".to_string(),
        fit: vec![
            "card.read_fw_ns".into(),
            "card.t_r_ns".into(),
            "card.write_fw_ns".into(),
        ],
        loo: false,
        ..Default::default()
    };
    let c = calibrate(runs, &opts).unwrap();
    let text = blksim_calibrate::report_text(&c);
    let by = |k: &str| c.params.iter().find(|p| p.param.key == k).unwrap();
    assert!(!by("card.read_fw_ns").identified, "{text}");
    assert!(!by("card.write_fw_ns").identified, "{text}");
    assert_eq!(by("card.write_fw_ns").dloss, 0.0, "{text}");
    assert!(
        text.contains("these trade off") && text.contains("barely change"),
        "{text}"
    );
    let sum = (by("card.read_fw_ns").value + by("card.t_r_ns").value) as f64;
    assert!(
        (sum / 85_000.0 - 1.0).abs() < 0.03,
        "read_fw + t_R = {sum}\n{text}"
    );
    assert!(c.loss < 1e-4, "{text}");
}

/// A true value outside the search range: the fit ends at the bound and says so.
#[test]
fn a_value_at_its_bound_is_reported() {
    let g = "[global]\nsize=1g\nruntime=50ms\nioengine=libaio\n[qd1]\nrw=randread\nbs=4k\n";
    let runs = vec![measured(
        "null_blk",
        &["completion_nsec=200000"],
        "qd1.json",
        g,
    )];
    let opts = Options {
        device: "null_blk".to_string(),
        fit: vec!["completion_nsec=1us..100us".into()],
        loo: false,
        ..Default::default()
    };
    let c = calibrate(runs, &opts).unwrap();
    let text = blksim_calibrate::report_text(&c);
    assert_eq!(c.params[0].at_bound, Some("upper"), "{text}");
    assert!(c.params[0].value >= 99_000, "{text}");
    assert!(text.contains("at its upper bound"), "{text}");
    let profile = blksim_calibrate::profile_text(&c, Some("nb"));
    let line = format!(
        "completion_nsec = {}  # calib: fitted on 1 runs, bounds [1000, 100000] ns, at its upper bound",
        c.params[0].value
    );
    assert!(profile.contains(&line), "{profile}");
}

/// The same inputs and seed give the same report and profile, on one thread or all cores
/// (the runs of an evaluation are summed in run order, whatever finishes first).
#[test]
fn a_calibration_is_deterministic_on_any_number_of_threads() {
    let g = "[global]\nsize=1g\nruntime=20ms\nioengine=libaio\n";
    let go = || {
        let runs = vec![
            measured(
                "null_blk",
                &["completion_nsec=23000"],
                "a.json",
                &format!("{g}[a]\nrw=randread\nbs=4k\n"),
            ),
            measured(
                "null_blk",
                &["completion_nsec=23000"],
                "b.json",
                &format!("{g}[b]\nrw=randwrite\nbs=4k\niodepth=8\n"),
            ),
        ];
        let opts = Options {
            device: "null_blk".to_string(),
            fit: vec!["completion_nsec".into()],
            ..Default::default()
        };
        let c = calibrate(runs, &opts).unwrap();
        (
            blksim_calibrate::report_text(&c),
            blksim_calibrate::profile_text(&c, None),
        )
    };
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(go);
    let all = go();
    assert_eq!(one, all);
    assert!(one.0.contains("leave-one-out"), "{}", one.0);
}
