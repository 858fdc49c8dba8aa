//! End-to-end tests of the real binary: job files in, fio's reports out, blktrace for the
//! real blkparse/btt, and located errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blksim"));
    // Pin the wall-clock stamps so whole outputs can be compared byte for byte.
    c.env("BLKSIM_FAKE_TIME", "1795310737");
    // Log files the corpus asks for (`write_bw_log`, ...) go to a scratch directory.
    c.current_dir(scratch());
    c
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("blksim-test-{}-cwd", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The repository's job-file corpus (tests/jobs/README.md).
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/jobs")
}

fn fio_files(sub: &str) -> Vec<PathBuf> {
    let dir = corpus().join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    files
}

/// Files in `tests/jobs/refused/`, with the line and the option blksim refuses there.
const REFUSED: &[(&str, u32, &str)] = &[
    ("bssplit-over-100.fio", 6, "bssplit"),
    ("ioengine-mtd.fio", 6, "ioengine"),
    ("random-distribution-sequence.fio", 8, "random_distribution"),
    ("rwmixcycle-deprecated.fio", 5, "rwmixcycle"),
    ("zonemode-zbd.fio", 5, "zonemode"),
];

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
    common::fresh_dir("test", name, false)
}

/// Every corpus job file runs on null_blk to a report with one entry per job (or group), and
/// every refused file fails with an error naming the file, the line and the option.
#[test]
fn every_corpus_job_file_runs_or_fails_located() {
    let mut files = fio_files("");
    files.extend(fio_files("blksim-only"));
    assert!(files.len() >= 25, "only {} corpus files", files.len());
    for f in &files {
        // The files are short by themselves: no runtime override.
        let o = bin()
            .env("CORPUS_BS", "8k")
            .env("CORPUS_DIR", corpus())
            .args([
                "run",
                f.to_str().unwrap(),
                "--device=null_blk",
                "--output-format=normal,json",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", f.display(), stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains("Run status group 0"),
            "{}: no report",
            f.display()
        );
        // fio's order: header lines, the JSON document, then the normal report.
        let v: serde_json::Value =
            serde_json::Deserializer::from_str(&out[out.find("\n{").unwrap()..])
                .into_iter()
                .next()
                .unwrap()
                .unwrap_or_else(|e| panic!("{}: JSON: {e}", f.display()));
        let jobs = v["jobs"].as_array().unwrap();
        assert!(!jobs.is_empty(), "{}", f.display());
        let ios: u64 = jobs
            .iter()
            .flat_map(|j| ["read", "write", "trim"].map(|d| j[d]["total_ios"].as_u64().unwrap()))
            .sum();
        assert!(ios > 0, "{}: no I/O", f.display());
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    let refused = fio_files("refused");
    assert_eq!(
        refused.len(),
        REFUSED.len(),
        "tests/jobs/refused/ and REFUSED disagree"
    );
    for f in &refused {
        let name = f.file_name().unwrap().to_str().unwrap();
        let (_, line, opt) = REFUSED
            .iter()
            .find(|r| r.0 == name)
            .unwrap_or_else(|| panic!("{name} is not listed in REFUSED"));
        let o = run(&["run", f.to_str().unwrap(), "--device=null_blk"]);
        assert_located_error(&o, name, *line, &format!("option '{opt}'"));
        assert!(
            stderr(&o).contains(&format!("{}:{line}: option '{opt}'", f.display())),
            "{}",
            stderr(&o)
        );
    }
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
