//! End-to-end tests of the real binary: job files in, fio's reports out, blktrace for the
//! real blkparse/btt, and located errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blksim"));
    // Pin the wall-clock stamps so whole outputs can be compared byte for byte.
    c.env("BLKSIM_FAKE_TIME", "1795310737");
    c
}

fn reference() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference");
    assert!(p.is_dir(), "reference folder missing at {}", p.display());
    p
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run blksim")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blksim-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every example job file shipped with fio either runs or fails with an error that names
/// the file, the line and the option.
#[test]
fn every_reference_job_file_runs_or_fails_located() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["fio-examples", "fio-samples"] {
        for e in std::fs::read_dir(reference().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().map(|x| x == "fio").unwrap_or(false) {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 25,
        "expected fio's examples, found {}",
        files.len()
    );
    let mut ran = 0;
    for f in &files {
        // The command-line override keeps each run short (blksim's documented convenience).
        let o = run(&[
            "run",
            f.to_str().unwrap(),
            "--runtime=0.02",
            "--device=null_blk",
        ]);
        if o.status.success() {
            assert!(
                stdout(&o).contains("Run status group 0"),
                "{}: no report",
                f.display()
            );
            ran += 1;
        } else {
            let e = stderr(&o);
            let name = f.file_name().unwrap().to_str().unwrap();
            let located = e.lines().any(|l| {
                l.contains(name)
                    && l.split(':')
                        .nth(2)
                        .map(|n| n.trim().parse::<u32>().is_ok())
                        .unwrap_or(false)
                    && l.contains("option '")
            });
            assert!(located, "{}: error is not located: {e}", f.display());
            assert!(!e.contains("panicked"), "{e}");
        }
    }
    assert!(ran >= 20, "only {ran} example files ran");
}

fn keys(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                // Percentile and bin keys are values, not names.
                let k2 = if k.parse::<f64>().is_ok() {
                    "<n>".to_string()
                } else {
                    k.clone()
                };
                let p = format!("{prefix}/{k2}");
                out.push(p.clone());
                keys(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            if let Some(x) = a.first() {
                keys(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The JSON has exactly fio's key names for the same job (plus the one `blksim` key).
#[test]
fn json_keys_match_fio() {
    let job = reference().join("fio-samples/null_randread.fio");
    let o = run(&[
        "run",
        job.to_str().unwrap(),
        "--output-format=json",
        "--device=null_blk",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("valid JSON");
    let fio: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(reference().join("fio-samples/null_randread.json")).unwrap(),
    )
    .unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    keys(&ours, "", &mut a);
    keys(&fio, "", &mut b);
    a.retain(|k| !k.starts_with("/blksim") && !k.starts_with("/disk_util"));
    b.retain(|k| !k.starts_with("/disk_util"));
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    let missing: Vec<_> = b.iter().filter(|k| !a.contains(k)).collect();
    let extra: Vec<_> = a.iter().filter(|k| !b.contains(k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}\nextra {extra:?}"
    );
    assert_eq!(ours["fio version"], "fio-3.33");
    assert!(ours["blksim"]["event_digest"].is_string());
    // json+ adds clat bins that sum to the I/O count.
    let o = run(&[
        "run",
        job.to_str().unwrap(),
        "--output-format=json+",
        "--device=null_blk",
    ]);
    let plus: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let read = &plus["jobs"][0]["read"];
    let bins: u64 = read["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(bins, read["total_ios"].as_u64().unwrap());
}

#[test]
fn same_input_gives_byte_identical_reports() {
    let args = [
        "run",
        "--device=null_blk",
        "--name=a",
        "--rw=randrw",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=8",
        "--size=64m",
        "--number_ios=3000",
        "--output-format=normal,json+",
    ];
    let a = run(&args);
    let b = run(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let mut c_args = args.to_vec();
    c_args.push("--seed=99");
    assert_ne!(run(&c_args).stdout, a.stdout);
}

#[test]
fn normal_report_has_fios_layout() {
    let o = run(&[
        "run",
        "--device=null_blk",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=4",
        "--runtime=1",
        "--time_based",
    ]);
    let s = stdout(&o);
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines[0].starts_with("r: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=libaio, iodepth=4"), "{}", lines[0]);
    assert_eq!(lines[1], "fio-3.33");
    assert_eq!(lines[2], "Starting 1 process");
    for needle in [
        "  read: IOPS=400k, BW=1563MiB/s",
        "    clat percentiles (nsec):",
        "  IO depths    : 1=0.1%, 2=0.1%, 4=100.0%",
        "Run status group 0 (all jobs):",
        "Disk stats (read/write):",
        "  nullb0: ios=400000/0",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in\n{s}");
    }
}

#[test]
fn output_file_and_cmdhelp_and_devices() {
    let d = tmpdir("out");
    let f = d.join("r.json");
    let o = run(&[
        "run",
        "--device=null_blk",
        "--name=r",
        "--rw=read",
        "--size=1m",
        "--output-format=json",
        &format!("--output={}", f.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 1048576);
    let o = run(&["--cmdhelp=iodepth"]);
    assert!(o.status.success() && stdout(&o).contains("iodepth"));
    let o = run(&["devices"]);
    assert!(stdout(&o).contains("null_blk"));
}

fn assert_located_error(o: &Output, file: &str, line: u32, what: &str) {
    assert!(!o.status.success(), "expected failure");
    let e = stderr(o);
    assert!(!e.contains("panicked"), "{e}");
    assert!(
        e.contains(&format!("{file}:{line}")),
        "error does not name {file}:{line}: {e}"
    );
    assert!(e.contains(what), "error does not mention {what:?}: {e}");
}

#[test]
fn bad_input_gives_located_errors() {
    let d = tmpdir("errors");
    let job = d.join("bad.fio");
    std::fs::write(&job, "[global]\nbs=4k\n\n[j]\nrw=randread\niodepht=4\n").unwrap();
    assert_located_error(
        &run(&["run", job.to_str().unwrap(), "--device=null_blk"]),
        "bad.fio",
        6,
        "iodepth",
    );
    std::fs::write(&job, "[j]\nbs=4q\n").unwrap();
    assert_located_error(
        &run(&["run", job.to_str().unwrap(), "--device=null_blk"]),
        "bad.fio",
        2,
        "bs",
    );
    let prof = d.join("dev.toml");
    std::fs::write(
        &prof,
        "name = \"x\"\ndriver = \"null_blk\"\n[device]\nirqmod = 2\n",
    )
    .unwrap();
    let o = run(&[
        "run",
        &format!("--device={}", prof.display()),
        "--name=a",
        "--size=1m",
    ]);
    assert_located_error(&o, "dev.toml", 4, "irqmode");
    std::fs::write(
        &prof,
        "name = \"x\"\ndriver = \"null_blk\"\n[queue]\nnr_requests = \"many\"\n",
    )
    .unwrap();
    let o = run(&[
        "run",
        &format!("--device={}", prof.display()),
        "--name=a",
        "--size=1m",
    ]);
    assert_located_error(&o, "dev.toml", 4, "nr_requests");
    let o = run(&[
        "run",
        "--device=null_blk",
        "--set=queue.nr_request=8",
        "--name=a",
        "--size=1m",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("did you mean 'queue.nr_requests'"),
        "{}",
        stderr(&o)
    );
    let o = run(&["run", "--device=null_blk", "--name=a", "--rw=randred"]);
    assert!(
        !o.status.success() && stderr(&o).contains("<command line>"),
        "{}",
        stderr(&o)
    );
}

/// Arbitrary bytes as a job file or profile never panic the program.
#[test]
fn garbage_input_never_panics() {
    let d = tmpdir("garbage");
    let mut x: u64 = 0x1234_5678;
    for i in 0..40 {
        let mut bytes = Vec::new();
        for _ in 0..(i * 7 + 5) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bytes.push(b"[]=;#\n abrwsk0123456789.-:,%${}glob"[(x % 34) as usize]);
        }
        let f = d.join("g.fio");
        std::fs::write(&f, &bytes).unwrap();
        let o = run(&[
            "run",
            f.to_str().unwrap(),
            "--device=null_blk",
            "--runtime=0.001",
        ]);
        assert!(
            !stderr(&o).contains("panicked"),
            "job file {:?}: {}",
            String::from_utf8_lossy(&bytes),
            stderr(&o)
        );
        let p = d.join("g.toml");
        std::fs::write(&p, &bytes).unwrap();
        let o = run(&[
            "run",
            &format!("--device={}", p.display()),
            "--name=a",
            "--size=1m",
        ]);
        assert!(!stderr(&o).contains("panicked"), "profile: {}", stderr(&o));
    }
}

fn btt_avg(avg: &str, row: &str) -> Option<f64> {
    // btt's "ALL" table: `Q2C               0.000010000   0.000010000   0.000010000     2000`
    avg.lines()
        .find(|l| l.trim_start().starts_with(row))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
}

/// blkparse and btt read the trace, and btt's Q2C and D2C agree with blksim's own figures.
#[test]
fn blktrace_is_read_by_blkparse_and_btt() {
    if Command::new("blkparse").arg("-h").output().is_err() {
        panic!("blkparse is not installed: run `apt-get update && apt-get install -y blktrace` (scripts/test.sh does)");
    }
    let d = tmpdir("trace");
    let o = run(&[
        "run",
        "--device=null_blk",
        "--set=completion_nsec=25000",
        "--name=t",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=4",
        "--number_ios=2000",
        "--size=64m",
        "--output-format=json",
        &format!("--blktrace={}", d.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let clat_mean_s = v["jobs"][0]["read"]["clat_ns"]["mean"].as_f64().unwrap() / 1e9;
    let p = Command::new("blkparse")
        .current_dir(&d)
        .args(["-i", "nullb0", "-d", "nullb0.bin", "-o", "nullb0.txt"])
        .output()
        .unwrap();
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    let txt = std::fs::read_to_string(d.join("nullb0.txt")).unwrap();
    assert!(
        txt.contains(" Q   R "),
        "no queue events in blkparse output"
    );
    assert!(txt.contains("Reads Completed:"), "no summary");
    let b = Command::new("btt")
        .current_dir(&d)
        .args(["-i", "nullb0.bin", "-o", "btt"])
        .output()
        .unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let avg = std::fs::read_to_string(d.join("btt.avg")).unwrap();
    let q2c = btt_avg(&avg, "Q2C").expect("Q2C row");
    let d2c = btt_avg(&avg, "D2C").expect("D2C row");
    assert!(
        (d2c - 25e-6).abs() < 1e-9,
        "D2C {d2c} vs the device's 25 µs"
    );
    assert!(
        (q2c - clat_mean_s).abs() < 1e-8,
        "Q2C {q2c} vs blksim clat mean {clat_mean_s}"
    );
}
