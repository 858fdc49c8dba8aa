//! Cases the simulation fuzzer found in the block layer, as fio job files run by the real
//! binary: each must finish with every request completed exactly once (the run ends with an
//! internal error otherwise), within its event bound, and without a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blksim-liveness-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write a job file (one option a line) and return its path.
fn job(d: &std::path::Path, name: &str, lines: &[&str]) -> String {
    let p = d.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p.display().to_string()
}

fn blksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .output()
        .expect("run blksim")
}

/// Run and require success; returns the JSON report.
fn run_ok(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let o = blksim(&a);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "blksim run {args:?} failed:\n{err}");
    serde_json::from_slice(&o.stdout).expect("JSON report")
}

/// mq-deadline with `async_depth` 1 (0 is stored as 1): writers sleeping for a scheduler tag
/// must be woken by the frees the one allowed write makes (the wake batch follows the
/// minimum shallow depth, `dd_depth_updated` → `blk_mq_set_min_shallow_depth`).
#[test]
fn mq_deadline_async_depth_one_wakes_writers() {
    let d = dir("async-depth");
    let f = job(
        &d,
        "F3.fio",
        &[
            "[job0]",
            "rw=randwrite",
            "ioengine=libaio",
            "iodepth=2",
            "size=16k",
        ],
    );
    for seed in 1..=20 {
        let s = format!("--seed={seed}");
        for dev in ["emmc-512k-2009", "null_blk"] {
            let dv = format!("--device={dev}");
            run_ok(&[
                "run",
                &f,
                &dv,
                "--set=queue.scheduler=mq-deadline",
                "--set=queue.iosched.async_depth=0",
                &s,
            ]);
        }
    }
}
