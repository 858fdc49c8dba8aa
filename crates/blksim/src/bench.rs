//! `blksim bench`: how fast the simulator runs the paths people sweep. Each workload is a fixed
//! fio job on a bundled profile, run `--runs` times in this process; the best run is reported
//! (wall time and the simulating thread's CPU time, which stays meaningful when other work
//! shares the machine), with events per I/O, simulated time per wall time and peak RSS.
//!
//! Workloads:
//! * `null`: 4 KiB randread, libaio iodepth 32, one job, `none`, null_blk irqmode=2 (the ideal
//!   path: block layer and fio's loop only);
//! * `emmc`: the same job on `emmc-hbg4a2` with the host software queue and mq-deadline (every
//!   layer: elevator, MMC driver, card model);
//! * `server`: `repro/section3/section3.fio` (16 io_uring jobs of 4 KiB random writes, batches
//!   of 8) on `null_blk-server`, mq-deadline, for `--runtime` simulated seconds (the CPU/lock
//!   model on 128 CPUs);
//! * `write`: 4 KiB random writes, libaio iodepth 32, null_blk, no random map (the integrity
//!   oracle's worst case: every write adds an extent).

use blksim_sim::profile::Profile;
use blksim_sim::setup::{self, RunOptions};

/// A bench workload: the fio job, the profile and its overrides.
struct Workload {
    name: &'static str,
    what: &'static str,
    device: &'static str,
    set: &'static [&'static str],
    /// Counted I/Os (`--ios`) or simulated seconds (`--runtime`).
    timed: bool,
    default_ios: u64,
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "null",
        what: "4k randread, libaio iodepth=32, 1 job, none, null_blk irqmode=2",
        device: "null_blk",
        set: &["irqmode=2", "queue.scheduler=none"],
        timed: false,
        default_ios: 5_000_000,
    },
    Workload {
        name: "emmc",
        what: "4k randread, libaio iodepth=32, 1 job, mq-deadline, emmc-hbg4a2, host.queue=hsq",
        device: "emmc-hbg4a2",
        set: &["host.queue=hsq", "queue.scheduler=mq-deadline"],
        timed: false,
        default_ios: 1_048_576,
    },
    Workload {
        name: "server",
        what: "repro/section3/section3.fio (16 io_uring jobs, 4k randwrite, iodepth 32, batches of 8), \
               mq-deadline, null_blk-server",
        device: "null_blk-server",
        set: &["queue.scheduler=mq-deadline"],
        timed: true,
        default_ios: 0,
    },
    Workload {
        name: "write",
        what: "4k randwrite, libaio iodepth=32, 1 job, norandommap, none, null_blk irqmode=2 \
               (integrity oracle on every write)",
        device: "null_blk",
        set: &["irqmode=2", "queue.scheduler=none"],
        timed: false,
        default_ios: 5_000_000,
    },
];

fn job_args(w: &Workload, ios: u64, runtime_s: u64) -> Vec<String> {
    let v: Vec<String> = match w.name {
        // The section3 job exactly (repro/section3/section3.fio), with its runtime.
        "server" => vec![
            "--name=test".into(),
            "--filename=/dev/nullb0".into(),
            "--rw=randwrite".into(),
            "--bs=4k".into(),
            "--iodepth=32".into(),
            "--numjobs=16".into(),
            "--iodepth_batch_submit=8".into(),
            "--iodepth_batch_complete=8".into(),
            "--direct=1".into(),
            "--ioengine=io_uring".into(),
            "--group_reporting".into(),
            "--time_based".into(),
            format!("--runtime={runtime_s}"),
        ],
        _ => vec![
            "--name=bench".into(),
            format!(
                "--rw={}",
                if w.name == "write" {
                    "randwrite"
                } else {
                    "randread"
                }
            ),
            "--bs=4k".into(),
            "--ioengine=libaio".into(),
            "--iodepth=32".into(),
            "--direct=1".into(),
            "--norandommap".into(),
            format!("--number_ios={ios}"),
            // io_size beyond the device wraps, as in fio, so the count is not capped by
            // capacity.
            format!("--io_size={}", ios * 4096),
        ],
    };
    v
}

pub fn bench(args: &[String]) -> Result<(), String> {
    let mut workload = "null".to_string();
    let mut ios: Option<u64> = None;
    let mut runtime_s: u64 = 1;
    let mut runs = 3;
    let names = || {
        WORKLOADS
            .iter()
            .map(|w| w.name)
            .collect::<Vec<_>>()
            .join("|")
    };
    for a in args {
        if let Some(v) = a.strip_prefix("--ios=") {
            let n = crate::parse_u64(v).ok_or("bench: --ios: expected a number")?;
            if n == 0 || n > 1 << 40 {
                return Err(format!("bench: --ios={n}: expected 1..=2^40"));
            }
            ios = Some(n);
        } else if let Some(v) = a.strip_prefix("--runs=") {
            let n = crate::parse_u64(v).ok_or("bench: --runs: expected a number")?;
            if !(1..=100).contains(&n) {
                return Err(format!("bench: --runs={n}: expected 1..=100"));
            }
            runs = n as usize;
        } else if let Some(v) = a.strip_prefix("--runtime=") {
            let n = crate::parse_u64(v).ok_or("bench: --runtime: expected whole seconds")?;
            if !(1..=3600).contains(&n) {
                return Err(format!("bench: --runtime={n}: expected 1..=3600 s"));
            }
            runtime_s = n;
        } else if let Some(v) = a.strip_prefix("--workload=") {
            workload = v.to_string();
        } else {
            return Err(format!(
                "bench: unknown argument '{a}' (expected --workload={}, --ios=N, --runs=N, --runtime=S)",
                names()
            ));
        }
    }
    let w = WORKLOADS
        .iter()
        .find(|w| w.name == workload)
        .ok_or_else(|| {
            format!(
                "bench: unknown workload '{workload}' (expected {})",
                names()
            )
        })?;
    if w.timed && ios.is_some() {
        return Err(format!(
            "bench: --ios does not apply to the time-based workload '{}' (use --runtime=S)",
            w.name
        ));
    }
    let ios = ios.unwrap_or(w.default_ios);
    let jobs =
        blksim_job::cli::parse_cli(&job_args(w, ios, runtime_s)).map_err(|e| e.to_string())?;
    let mut profile = Profile::load(w.device)?;
    for s in w.set {
        profile.set(s)?;
    }
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    let mut done = 0;
    let mut events = 0;
    let mut sim_ns = 0;
    for _ in 0..runs {
        let t0 = std::time::Instant::now();
        let c0 = thread_cpu_ns();
        let out = setup::run(&jobs, &profile, &RunOptions::default())?;
        let dt = t0.elapsed().as_secs_f64();
        best_cpu = best_cpu.min((thread_cpu_ns().saturating_sub(c0)) as f64 / 1e9);
        best = best.min(dt);
        // One bio per fio I/O here (4 KiB, no splits, no syncs).
        done = out.bios_completed;
        events = out.events;
        sim_ns = out.end_ns;
        if !w.timed && done != ios {
            return Err(format!("bench: expected {ios} I/Os, simulated {done}"));
        }
    }
    let rss = peak_rss_kib();
    println!("workload: {} ({})", w.name, w.what);
    println!(
        "simulated I/Os: {done} ({events} events, {:.2} per I/O)",
        events as f64 / done.max(1) as f64
    );
    println!("simulated time: {:.6} s", sim_ns as f64 / 1e9);
    println!("best wall time of {runs}: {best:.3} s");
    println!("simulated I/Os per second: {:.0}", done as f64 / best);
    println!(
        "simulated time per wall time: {:.2}x real time",
        sim_ns as f64 / 1e9 / best
    );
    if best_cpu > 0.0 {
        println!(
            "best CPU time of {runs}: {best_cpu:.3} s ({:.0} simulated I/Os per CPU-second)",
            done as f64 / best_cpu
        );
    }
    println!("peak RSS: {rss} KiB");
    Ok(())
}

/// CPU time of this thread in ns (`/proc/thread-self/schedstat`, first field), 0 if unknown.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
