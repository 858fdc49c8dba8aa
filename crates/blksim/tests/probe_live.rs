//! `blksim probe` and `blksim calibrate` on a real device. `scripts/probe-live.sh` probed a
//! 1 GiB file on this project's machine (a 2-CPU VM, virtio disk `vda`; reads only) and ran
//! six other fio jobs (`tests/data/probe-vda/jobs/`) with the real fio on the same file.
//! This test calibrates a profile on the probe's results and compares what the profile
//! predicts for the six jobs with what fio measured. With the `live-probe` feature
//! (`cargo test -p blksim --features live-probe --test probe_live -- --nocapture`, Debian's
//! fio installed) the same runs on a fresh measurement of the machine the test runs on.
//!
//! blksim has no model of a virtio or NVMe disk yet; null_blk (a fixed completion time,
//! `hw_queue_depth` commands at once, a bandwidth cap) is the nearest shape, and its fit has
//! no per-byte latency, so the stated tolerances are those of that crude model: the
//! calibrated profile must beat the uncalibrated one by a factor of four and stay within a
//! mean error of 45 % on jobs it never saw. The probe's own measuring is checked tighter:
//! its 4 KiB random read at depth one must agree with fio's on the same file within 25 %
//! (fio adds its own per-I/O work, about 8 µs here).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/probe-vda")
}

fn tmpdir(name: &str) -> PathBuf {
    common::fresh_dir("probe-live", name, false)
}

fn blksim(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .env("PROBE_FILE", "/dev/null")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "blksim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn json(text: &str) -> Value {
    let at = text.find('{').expect("a JSON document");
    serde_json::Deserializer::from_str(&text[at..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap()
}

/// (IOPS, mean clat µs, p99 clat µs) of a report's first job's reads.
fn figures(v: &Value) -> [f64; 3] {
    let r = &v["jobs"][0]["read"];
    [
        r["iops"].as_f64().unwrap(),
        r["clat_ns"]["mean"].as_f64().unwrap() / 1e3,
        r["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap() / 1e3,
    ]
}

const METRICS: [&str; 3] = ["IOPS", "clat mean us", "clat p99 us"];

/// The null_blk shape fitted on the probe: completion time, commands at once, bandwidth.
const FIT: &str = "--fit=completion_nsec=5us..500us,hw_queue_depth=1..64";

fn check(probe: &Path, fio: &Path) {
    let out = tmpdir("cal");
    let profile = out.join("vda.toml");
    let text = blksim(&[
        "calibrate",
        probe.to_str().unwrap(),
        "--device=null_blk",
        FIT,
        "--runtime=0.05",
        "--max-iters=40",
        "--no-loo",
        &format!("--out={}", profile.display()),
    ]);
    println!("{text}");
    // The probe's measuring against fio's on the same configuration.
    let p = figures(&json(
        &std::fs::read_to_string(probe.join("randread-4k-qd1.json")).unwrap(),
    ));
    let f = figures(&json(
        &std::fs::read_to_string(fio.join("rr4k-qd1.json")).unwrap(),
    ));
    let cross = p[0] / f[0] - 1.0;
    println!(
        "probe randread-4k-qd1 {:.0} IOPS, fio rr4k-qd1 {:.0} IOPS: {:+.1}%",
        p[0],
        f[0],
        100.0 * cross
    );
    assert!(
        cross.abs() <= 0.25,
        "probe vs fio at 4k QD1: {:+.1}%",
        100.0 * cross
    );
    println!(
        "| {:<12} | {:<12} | {:>10} | {:>10} | {:>7} | {:>10} | {:>7} |",
        "job", "metric", "fio", "null_blk", "error", "calibrated", "error"
    );
    let (mut base_err, mut cal_err, mut n) = (0.0, 0.0, 0.0);
    let mut jobs: Vec<PathBuf> = std::fs::read_dir(data().join("jobs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    jobs.sort();
    for job in jobs {
        let name = job.file_stem().unwrap().to_str().unwrap().to_string();
        let measured = figures(&json(
            &std::fs::read_to_string(fio.join(format!("{name}.json"))).unwrap(),
        ));
        let sim = |dev: &str| {
            figures(&json(&blksim(&[
                "run",
                job.to_str().unwrap(),
                &format!("--device={dev}"),
                "--runtime=0.5",
                "--output-format=json",
            ])))
        };
        let base = sim("null_blk");
        let cal = sim(profile.to_str().unwrap());
        for k in 0..3 {
            let eb = base[k] / measured[k] - 1.0;
            let ec = cal[k] / measured[k] - 1.0;
            println!(
                "| {name:<12} | {:<12} | {:>10.1} | {:>10.1} | {:>+6.1}% | {:>10.1} | {:>+6.1}% |",
                METRICS[k],
                measured[k],
                base[k],
                100.0 * eb,
                cal[k],
                100.0 * ec
            );
            base_err += eb.abs();
            cal_err += ec.abs();
            n += 1.0;
        }
    }
    let (base_err, cal_err) = (base_err / n, cal_err / n);
    println!(
        "mean |error| on the six jobs: uncalibrated null_blk {:.1}%, calibrated {:.1}%",
        100.0 * base_err,
        100.0 * cal_err
    );
    assert!(
        cal_err <= 0.45,
        "calibrated mean error {:.1}%",
        100.0 * cal_err
    );
    assert!(
        cal_err * 4.0 <= base_err,
        "calibration gained too little: {:.1}% vs {:.1}%",
        100.0 * cal_err,
        100.0 * base_err
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn recorded_probe_predicts_other_fio_jobs() {
    check(&data().join("probe"), &data().join("fio"));
}

#[cfg(feature = "live-probe")]
#[test]
fn live_probe_predicts_other_fio_jobs_on_this_machine() {
    let dir = tmpdir("live");
    let file = std::env::var("PROBE_FILE_LIVE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("/var/tmp/blksim-probe-live.dat"));
    let _ = std::fs::remove_file(&file);
    let probe = dir.join("probe");
    blksim(&[
        "probe",
        file.to_str().unwrap(),
        "--size=1g",
        "--time=30",
        &format!("--results={}", probe.display()),
        "--no-calibrate",
    ]);
    let fio = dir.join("fio");
    std::fs::create_dir_all(&fio).unwrap();
    for e in std::fs::read_dir(data().join("jobs")).unwrap() {
        let job = e.unwrap().path();
        let o = Command::new("fio")
            .arg("--output-format=json")
            .arg(&job)
            .env("PROBE_FILE", &file)
            .output()
            .expect("the real fio (scripts/test.sh installs Debian's fio)");
        assert!(
            o.status.success(),
            "fio {}: {}",
            job.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let name = job.file_stem().unwrap().to_str().unwrap().to_string();
        std::fs::write(fio.join(format!("{name}.json")), o.stdout).unwrap();
    }
    let _ = std::fs::remove_file(&file);
    check(&probe, &fio);
    let _ = std::fs::remove_dir_all(&dir);
}
