//! fio's steady-state check (`steadystate`, `steadystate_duration`, `steadystate_ramp_time`;
//! fio's steadystate.c): once a second each job's IOPS and bandwidth over the last second go
//! into a window of `steadystate_duration` samples, and the job ends once the window's
//! largest deviation from its mean, or its least-squares slope, is under the limit. Each case
//! runs at a closed-form rate: psync on null_blk completing every I/O in 1 ms, 1000 IOPS.

mod common;
use common::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// A psync job `name` at exactly 1000 IOPS of 4 KiB reads, time-based (10 s unless `extra`
/// says otherwise), with `extra` options, appended to `args`.
fn job<'a>(args: &mut Vec<&'a str>, name: &'a str, extra: &[&'a str]) {
    args.extend_from_slice(&[
        name,
        "--rw=randread",
        "--bs=4k",
        "--ioengine=psync",
        "--time_based",
        "--runtime=10",
    ]);
    args.extend_from_slice(extra);
}

/// One such job.
fn steady<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = Vec::new();
    job(&mut a, "--name=ss", extra);
    a
}

const SETS: &[&str] = &["irqmode=2", "completion_nsec=1000000"];

fn run_ss(extra: &[&str]) -> blksim_sim::engine::SimOutput {
    run(&steady(extra), SETS)
}

/// The job's length (from its start to its end, ramp included).
fn ran_ns(out: &blksim_sim::engine::SimOutput, t: usize) -> u64 {
    out.tasks[t].end_ns - out.tasks[t].start_ns
}

/// Mean deviation: the window is full at the third check (3 s) and steady (every sample is
/// 1000 I/Os, the first one less the I/O that completes on the check's instant), so the job
/// ends there, not at its 10 s runtime.
#[test]
fn a_steady_job_ends_after_one_window() {
    let out = run_ss(&["--ss=iops:5%", "--ss_dur=3"]);
    let ss = out.tasks[0]
        .steadystate
        .as_ref()
        .expect("steady-state data");
    assert!(ss.attained);
    assert_eq!(ss.dur, 3);
    assert!(
        ss.iops_data.iter().all(|&x| (999..=1000).contains(&x)),
        "{:?}",
        ss.iops_data
    );
    // Bandwidth is bytes per second: 4 KiB per I/O.
    for (i, b) in ss.iops_data.iter().zip(&ss.bw_data) {
        assert_eq!(*b, i * 4096);
    }
    assert!(ss.criterion < 5.0 && ss.max_deviation <= 1.0, "{ss:?}");
    let ran = ran_ns(&out, 0);
    assert!((3 * S..3 * S + 2 * MS).contains(&ran), "ran {ran} ns");
}

/// A limit that can never be met (a deviation under 0 %): the job runs its whole runtime and
/// reports the last window, oldest sample first.
#[test]
fn an_unmet_limit_runs_to_the_runtime() {
    let out = run_ss(&["--ss=iops:0%", "--ss_dur=4", "--runtime=6"]);
    let ss = out.tasks[0].steadystate.as_ref().unwrap();
    assert!(!ss.attained);
    assert_eq!(ss.iops_data.len(), 4);
    assert!(
        ss.iops_data.iter().all(|&x| x == 1000),
        "{:?}",
        ss.iops_data
    );
    let ran = ran_ns(&out, 0);
    assert!((6 * S..6 * S + 2 * MS).contains(&ran), "ran {ran} ns");
}

/// `steadystate_ramp_time`: samples start one second after it (the check strictly past 2 s
/// for a 1 s ramp, the one at 3 s), so a 2-sample slope window is full at 4 s. The slope of
/// a flat line is 0.
#[test]
fn the_steady_state_ramp_delays_the_samples() {
    let out = run_ss(&["--ss=iops_slope:0.1%", "--ss_dur=2", "--ss_ramp=1"]);
    let ss = out.tasks[0].steadystate.as_ref().unwrap();
    assert!(ss.attained && ss.slope);
    assert_eq!(ss.slope_value, 0.0);
    let ran = ran_ns(&out, 0);
    assert!((4 * S..4 * S + 2 * MS).contains(&ran), "ran {ran} ns");
}

/// fio's `ramp_time` resets the helper thread's timers when it ends (`reset_all_stats` →
/// `helper_reset`) and its checks pass over a job still in its ramp: with a 1.5 s ramp the
/// checks fall at 2.5 s and 3.5 s, and a 2-sample window is full at 3.5 s.
#[test]
fn a_ramp_time_restarts_the_checks_at_its_end() {
    let out = run_ss(&["--ss=iops:5%", "--ss_dur=2", "--ramp_time=1500ms"]);
    let ss = out.tasks[0].steadystate.as_ref().unwrap();
    assert!(ss.attained);
    assert!(
        ss.iops_data.iter().all(|&x| (999..=1000).contains(&x)),
        "{:?}",
        ss.iops_data
    );
    let ran = ran_ns(&out, 0);
    assert!((3500 * MS..3502 * MS).contains(&ran), "ran {ran} ns");
}

/// `group_reporting`: the group's IOPS are summed and judged by its last job, and the whole
/// group ends together; its report is the last job's window.
#[test]
fn a_group_is_judged_on_its_sum_and_ends_together() {
    let out = run(
        &steady(&[
            "--ss=bw:1%",
            "--ss_dur=2",
            "--group_reporting",
            "--numjobs=2",
        ]),
        SETS,
    );
    for t in 0..2 {
        let ran = ran_ns(&out, t);
        assert!(
            (2 * S..2 * S + 2 * MS).contains(&ran),
            "job {t} ran {ran} ns"
        );
        assert!(out.tasks[t].steadystate.as_ref().unwrap().attained);
    }
    let last = out.tasks[1].steadystate.as_ref().unwrap();
    assert!(
        last.iops_data.iter().all(|&x| (1998..=2000).contains(&x)),
        "{:?}",
        last.iops_data
    );
}

/// fio rejects jobs of one group whose steady-state options differ.
#[test]
fn steady_state_options_must_agree_within_a_group() {
    let j = jobs(&[
        "--name=a",
        "--rw=read",
        "--size=1m",
        "--ss=iops:5%",
        "--ss_dur=2",
        "--name=b",
        "--rw=read",
        "--size=1m",
        "--ss=iops:6%",
        "--ss_dur=2",
    ]);
    let p = profile("null_blk", &[]);
    let e = blksim_sim::setup::run(&j, &p, &Default::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("consistent within reporting groups"), "{e}");
}

/// The JSON object is fio's (stat.c `show_thread_status_json`): its keys in fio's order, the
/// limit and criterion as `%f` of a float, and the window's means.
#[test]
fn the_json_object_is_fios() {
    let j = json(
        &steady(&["--ss=iops:5%", "--ss_dur=3"]),
        SETS,
        &Default::default(),
    );
    // Key order, from the text (serde_json's map sorts keys); the object is the job's last.
    let text = &j[j.find("\"steadystate\" : {").expect("a steadystate object")..];
    let at = |k: &str| {
        text.find(&format!("\"{k}\" :"))
            .unwrap_or_else(|| panic!("no {k}"))
    };
    let order = [
        "ss",
        "duration",
        "attained",
        "criterion",
        "max_deviation",
        "slope",
        "data",
        "bw_mean",
        "iops_mean",
        "iops",
        "bw",
    ];
    for w in order.windows(2) {
        assert!(at(w[0]) < at(w[1]), "{} before {}", w[0], w[1]);
    }
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let ss = &v["jobs"][0]["steadystate"];
    assert_eq!(ss["ss"], "iops:5.000000%");
    assert_eq!(ss["duration"], 3);
    assert_eq!(ss["attained"], 1);
    let iops: Vec<u64> = ss["data"]["iops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(ss["data"]["iops_mean"], iops.iter().sum::<u64>() / 3);
}

/// A window under a second rounds to 0 s (fio divides the µs by 10^6): no check and no
/// report, and jobs without a duration may differ in criterion within a group (fio compares
/// only what a duration set up); one job with the check and one without may not.
#[test]
fn a_window_under_a_second_is_no_check() {
    let out = run_ss(&["--ss=iops:5%", "--ss_dur=500ms", "--runtime=2"]);
    assert!(out.tasks[0].steadystate.is_none());
    let ran = ran_ns(&out, 0);
    assert!((2 * S..2 * S + 2 * MS).contains(&ran), "ran {ran} ns");
    let p = profile("null_blk", &[]);
    let two = |b: &[&'static str]| {
        let mut a = vec!["--name=a", "--rw=read", "--size=64k", "--ss=iops:5%"];
        a.extend_from_slice(&["--name=b", "--rw=read", "--size=64k"]);
        a.extend_from_slice(b);
        blksim_sim::setup::run(&jobs(&a), &p, &Default::default()).map(|_| ())
    };
    assert!(two(&["--ss=bw:1%"]).is_ok());
    assert!(two(&["--ss=bw:1%", "--ss_dur=2"]).is_err());
}

/// A window with no I/O gives 0/0, which fio 3.33 (built with `-ffast-math`) takes as under
/// any limit: attained. The job is asleep in a 5 s thinktime then, and notices at the end of
/// its sleep's slice (`usec_sleep`: about 2 s, 2 s and 1 s), as fio 3.33 does (4000 ms).
#[test]
fn an_empty_window_attains_and_a_sleeper_notices_at_its_slice() {
    let out = run_ss(&[
        "--ss=iops:5%",
        "--ss_dur=2",
        "--thinktime=5s",
        "--runtime=6",
    ]);
    let ss = out.tasks[0].steadystate.as_ref().unwrap();
    assert!(ss.attained, "{ss:?}");
    assert!(ss.criterion.is_nan());
    assert_eq!(ss.iops_data, [0, 0]);
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 1);
    // The I/O ends at 1 ms and the sleep starts there: slices end at 2.001 s and 4.001 s.
    let ran = ran_ns(&out, 0);
    assert_eq!(ran, 4001 * MS, "ran {ran} ns");
}

/// A check on the instant the runtime ends comes first (fio's come just before each second):
/// a 2-sample window at runtime=2 is judged, and attained.
#[test]
fn a_check_at_the_runtimes_end_comes_first() {
    let out = run_ss(&["--ss=iops:5%", "--ss_dur=2", "--runtime=2"]);
    let ss = out.tasks[0].steadystate.as_ref().unwrap();
    assert!(ss.attained, "{ss:?}");
    assert!(
        ss.iops_data.iter().all(|&x| (999..=1000).contains(&x)),
        "{:?}",
        ss.iops_data
    );
}

/// A group that settles ends its members that have not started yet: they start to fio's
/// `terminate` and issue nothing.
#[test]
fn a_settled_group_ends_its_members_still_waiting() {
    let ss = [
        "--runtime=8",
        "--ss=iops:5%",
        "--ss_dur=2",
        "--group_reporting",
    ];
    let mut args = Vec::new();
    job(
        &mut args,
        "--name=late",
        &[&ss[..], &["--startdelay=4"]].concat(),
    );
    job(&mut args, "--name=early", &ss);
    let out = run(&args, SETS);
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 0, "the late job ran");
    assert!(
        ran_ns(&out, 1) < 2 * S + 2 * MS,
        "the early job ran {} ns",
        ran_ns(&out, 1)
    );
}

/// The check's timer stops once no job needs it, so it does not move the run's end: here a
/// ramp's end (which restarts fio's helper timers) comes after the only steady-state job
/// ended, and the run still ends with the last job's I/O at 2.5 s.
#[test]
fn the_check_does_not_outlive_its_jobs() {
    let mut args = Vec::new();
    job(
        &mut args,
        "--name=a",
        &["--runtime=1", "--ss=iops:1%", "--ss_dur=5"],
    );
    job(
        &mut args,
        "--name=b",
        &["--new_group", "--ramp_time=2", "--runtime=500ms"],
    );
    let out = run(&args, SETS);
    assert!(
        out.end_ns <= 2500 * MS + 2 * MS,
        "run ended at {} ns",
        out.end_ns
    );
}
