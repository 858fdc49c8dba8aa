#![allow(dead_code)]
use blksim_job::JobSet;
use blksim_sim::engine::SimOutput;
use blksim_sim::profile::Profile;
use blksim_sim::setup::{self, RunOptions, WallClock};

pub fn jobs(args: &[&str]) -> JobSet {
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    blksim_job::cli::parse_cli(&a).expect("job options parse")
}

pub fn profile(device: &str, sets: &[&str]) -> Profile {
    let mut p = Profile::load(device).expect("profile");
    for s in sets {
        p.set(s).expect("set");
    }
    p
}

pub fn run(args: &[&str], sets: &[&str]) -> SimOutput {
    run_on("null_blk", args, sets, &RunOptions::default())
}

pub fn run_on(device: &str, args: &[&str], sets: &[&str], opts: &RunOptions) -> SimOutput {
    let j = jobs(args);
    let p = profile(device, sets);
    setup::run(&j, &p, opts).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// The JSON report for a run, with fixed wall-clock stamps.
pub fn json(args: &[&str], sets: &[&str], opts: &RunOptions) -> String {
    let j = jobs(args);
    let p = profile("null_blk", sets);
    let out = setup::run(&j, &p, opts).unwrap();
    let wall = WallClock {
        timestamp: 1,
        timestamp_ms: 1000,
        ctime: "Thu Jan  1 00:00:01 1970".into(),
    };
    let r = setup::build_report(&j, &p, opts, &out, &wall);
    let mut buf = Vec::new();
    blksim_report::json::write_json(&r, false, &mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

pub fn iops(out: &SimOutput, task: usize, ddir: usize) -> f64 {
    out.tasks[task].stats.dir[ddir].iops_f64()
}
