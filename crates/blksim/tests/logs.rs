//! fio's log files (`write_bw_log`, `write_lat_log`, `write_iops_log`, `write_hist_log`):
//! named, laid out and sampled as fio 3.33 does (stat.c, iolog.c), read by fio's own
//! `fiologparser_hist.py`, and compared with what the real fio writes for the same job on its
//! null engine. Debian's fio, and numpy and pandas for the parser, come from
//! `scripts/test.sh`; without them these tests fail, they are never skipped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use blksim_report::{plat_idx_to_val, plat_val_to_idx};
use serde_json::Value;

const INSTALL: &str = "scripts/test.sh installs it (Debian packages fio, python3-numpy, \
                       python3-pandas)";

fn tmpdir(name: &str) -> PathBuf {
    common::fresh_dir("logs", name, false)
}

/// `blksim run ARGS --output-format=json` in `dir` (where the logs land).
mod common;

fn run_in(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    common::blksim_json(Some(dir), &a)
}

/// The lines of a log as rows of integers (hex priorities parsed too).
fn rows(path: &Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|x| match x.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => x.parse().unwrap_or_else(|_| panic!("{l}")),
                })
                .collect()
        })
        .collect()
}

fn log_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log") || n.ends_with(".part"))
        .collect()
}

/// Without `log_avg_msec` every I/O is a line: the latency in ns, bw as fio's
/// `add_bw_sample` computes it (bytes × 10^6 / clat ns: 409600 for 4 KiB in null_blk's 10
/// µs), 1 in the IOPS log, and fio's report then samples bw and IOPS per I/O too (IOPS mean
/// 1, as the real fio reports with such a log).
#[test]
fn per_io_logs_have_a_line_per_io_with_fios_values() {
    let d = tmpdir("unit");
    let v = run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=j",
            "--rw=randrw",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--size=64m",
            "--number_ios=1000",
            "--write_bw_log=b",
            "--write_lat_log=l",
            "--write_iops_log=i",
            "--log_offset=1",
        ],
    );
    assert_eq!(
        log_names(&d),
        [
            "b_bw.1.log",
            "i_iops.1.log",
            "l_clat.1.log",
            "l_lat.1.log",
            "l_slat.1.log"
        ]
        .map(String::from)
        .into(),
    );
    let j = &v["jobs"][0];
    let n = |dd: &str| j[dd]["total_ios"].as_u64().unwrap();
    let (reads, writes) = (n("read"), n("write"));
    assert_eq!(reads + writes, 1000);
    for (file, want) in [
        ("b_bw.1.log", 409_600),
        ("i_iops.1.log", 1),
        ("l_lat.1.log", 10_000),
        ("l_clat.1.log", 10_000),
        ("l_slat.1.log", 0),
    ] {
        let r = rows(&d.join(file));
        assert_eq!(r.len(), 1000, "{file}");
        for row in &r {
            // time, value, ddir, bs, offset, prio
            assert_eq!(row.len(), 6, "{file}: {row:?}");
            assert_eq!(row[1], want, "{file}: {row:?}");
            assert!(row[2] <= 1 && row[3] == 4096 && row[4] % 4096 == 0 && row[4] < 64 << 20);
        }
        assert_eq!(
            r.iter().filter(|x| x[2] == 0).count() as u64,
            reads,
            "{file}"
        );
    }
    for dd in ["read", "write"] {
        assert_eq!(j[dd]["iops_mean"].as_f64(), Some(1.0));
        assert_eq!(j[dd]["iops_samples"].as_u64(), Some(n(dd)));
        assert_eq!(j[dd]["bw_samples"].as_u64(), Some(n(dd)));
        assert_eq!(j[dd]["bw_mean"].as_f64(), Some(409_600.0));
    }
}

/// With `log_avg_msec=100` over a 1 s run, one line per direction and window: the bw and
/// IOPS logs carry the same window rates the report's bw/IOPS statistics are made of, at
/// multiples of the window, with block size 0; the latency logs the window means.
#[test]
fn windowed_logs_have_a_line_per_window() {
    let d = tmpdir("window");
    // Given bare in a job file, each log is named after the job. (On fio's command line a
    // bare `--write_bw_log` takes the next argument as its name, as getopt does.)
    std::fs::write(
        d.join("w.fio"),
        "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nruntime=1\ntime_based\n\
         write_bw_log\nwrite_iops_log\nwrite_lat_log\nlog_avg_msec=100\n",
    )
    .unwrap();
    let v = run_in(&d, &["w.fio", "--device=null_blk"]);
    let r = &v["jobs"][0]["read"];
    for (file, samples) in [
        ("j_bw.1.log", r["bw_samples"].as_u64().unwrap()),
        ("j_iops.1.log", r["iops_samples"].as_u64().unwrap()),
    ] {
        let rows = rows(&d.join(file));
        assert_eq!(
            rows.len() as u64,
            samples,
            "{file}: a line per report sample"
        );
        // runtime / log_avg_msec windows; the one that ends with the job is not logged.
        assert!((9..=10).contains(&rows.len()), "{file}: {}", rows.len());
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(row[0], 100 * (k as u64 + 1), "{file}");
            assert_eq!(row[3], 0, "{file}: windows log block size 0");
        }
        let mean = rows.iter().map(|x| x[1] as f64).sum::<f64>() / rows.len() as f64;
        let key = if file.contains("bw") {
            "bw_mean"
        } else {
            "iops_mean"
        };
        assert!((mean - r[key].as_f64().unwrap()).abs() < 1.0, "{file}");
    }
    let clat = rows(&d.join("j_clat.1.log"));
    assert!((10..=11).contains(&clat.len()), "{}", clat.len());
    assert!(clat.iter().all(|x| x[1] == 10_000 && x[0] % 100 == 0));
}

/// `per_job_logs=0`: the clones of a job share one file without the job number, each
/// clone's lines in one piece.
#[test]
fn shared_logs_hold_every_clone_in_turn() {
    let d = tmpdir("shared");
    run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=j",
            "--rw=randread",
            "--numjobs=3",
            "--number_ios=50",
            "--size=8m",
            "--write_lat_log=s",
            "--per_job_logs=0",
        ],
    );
    assert_eq!(
        log_names(&d),
        ["s_clat.log", "s_lat.log", "s_slat.log"]
            .map(String::from)
            .into()
    );
    let r = rows(&d.join("s_clat.log"));
    assert_eq!(r.len(), 150);
    // Three runs of non-decreasing time: one clone after the other.
    let restarts = r.windows(2).filter(|w| w[1][0] < w[0][0]).count();
    assert!(restarts <= 2, "{restarts}");
}

/// fio's `fiologparser_hist.py` (Debian's fio ships it) reads the clat histogram log and
/// finds the percentiles the report gives, within the report value's histogram bucket.
#[test]
fn fiologparser_hist_reads_the_histogram_log() {
    let d = tmpdir("hist");
    let v = run_in(
        &d,
        &[
            "--device=emmc-hbg4a2",
            "--name=j",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=8",
            "--runtime=2",
            "--time_based",
            "--write_hist_log=h",
            "--log_hist_msec=100",
        ],
    );
    let gz = "/usr/share/doc/fio/fiologparser_hist.py.gz";
    let script = d.join("fiologparser_hist.py");
    let z = Command::new("gzip")
        .args(["-dc", gz])
        .output()
        .unwrap_or_else(|e| panic!("gzip: {e}"));
    assert!(z.status.success(), "{gz} is missing; {INSTALL}");
    std::fs::write(&script, &z.stdout).unwrap();
    // Debian's python3 (with its numpy and pandas), whatever python3 is first on PATH.
    let o = Command::new("/usr/bin/python3")
        .current_dir(&d)
        .arg(&script)
        .args(["-i", "100000", "--noweight", "--percentiles", "50:90:99"])
        .arg("h_clat_hist.1.log")
        .output()
        .unwrap_or_else(|e| panic!("/usr/bin/python3: {e}; {INSTALL}"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "fiologparser_hist.py: {}; {INSTALL}",
        String::from_utf8_lossy(&o.stderr)
    );
    // end-time, samples, min, avg, median, 50%, 90%, 99%, max
    let f: Vec<f64> = out
        .lines()
        .nth(1)
        .expect("one interval")
        .split(", ")
        .map(|x| x.parse().unwrap())
        .collect();
    let r = &v["jobs"][0]["read"];
    assert_eq!(
        f[1] as u64,
        r["total_ios"].as_u64().unwrap(),
        "every I/O logged"
    );
    let p = &r["clat_ns"]["percentile"];
    for (col, key) in [(5, "50.000000"), (6, "90.000000"), (7, "99.000000")] {
        let want = p[key].as_u64().unwrap();
        let i = plat_val_to_idx(want);
        let width = plat_idx_to_val(i + 1) - plat_idx_to_val(i);
        assert!(
            (f[col] - want as f64).abs() <= width as f64,
            "p{key}: parser {} report {want} (bucket width {width})",
            f[col]
        );
    }
}

/// The real fio, on its null engine, writes the same files with the same number of lines and
/// columns for the same per-I/O job (values differ: its I/Os take no time).
#[test]
fn real_fio_writes_the_same_files() {
    let args = [
        "--name=j",
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=4",
        "--size=64m",
        "--number_ios=500",
        "--write_bw_log=b",
        "--write_lat_log=l",
        "--write_iops_log=i",
        "--write_hist_log=h",
        "--log_offset=1",
        "--log_prio=1",
    ];
    let ds = tmpdir("vs-sim");
    run_in(
        &ds,
        &[&["--device=null_blk", "--ioengine=libaio"], &args[..]].concat(),
    );
    let df = tmpdir("vs-fio");
    let o = Command::new("fio")
        .current_dir(&df)
        .args(args)
        .args(["--ioengine=null", "--output-format=json"])
        .output()
        .unwrap_or_else(|e| panic!("real fio: {e}; {INSTALL}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(log_names(&ds), log_names(&df));
    for name in log_names(&df) {
        let (a, b) = (rows(&ds.join(&name)), rows(&df.join(&name)));
        assert_eq!(a.len(), b.len(), "{name}: lines");
        let cols = |r: &Vec<Vec<u64>>| r.iter().map(Vec::len).collect::<BTreeSet<_>>();
        assert_eq!(cols(&a), cols(&b), "{name}: columns");
    }
}

/// `write_iolog` writes the I/O a job issued as a fio version 3 iolog, and the real fio
/// replays it (`read_iolog`, on its null engine): the I/Os fio then does, read from its own
/// per-I/O latency log with offsets, are ours, in order. (fio refuses `write_iolog` together
/// with `read_iolog`, so its latency log is the witness.)
#[test]
fn real_fio_replays_the_iolog() {
    let d = tmpdir("iolog");
    run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=r",
            "--rw=randrw",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--size=64m",
            "--number_ios=500",
            "--fsync=50",
            "--write_iolog=r.iolog",
        ],
    );
    let log = std::fs::read_to_string(d.join("r.iolog")).unwrap();
    let lines: Vec<Vec<&str>> = log.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(log.lines().next(), Some("fio version 3 iolog"));
    assert_eq!(lines[1], ["0", "r.0.0", "add"]);
    assert_eq!(lines[2], ["0", "r.0.0", "open"]);
    assert_eq!(lines.last().unwrap()[1..], ["r.0.0", "close"]);
    let ios: Vec<(u64, u64, u64)> = lines
        .iter()
        .filter(|l| l.len() == 5 && (l[2] == "read" || l[2] == "write"))
        .map(|l| {
            (
                u64::from(l[2] == "write"),
                l[4].parse().unwrap(),
                l[3].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(ios.len(), 500);
    assert!(lines.iter().any(|l| l.len() == 5 && l[2] == "sync"));
    let times: Vec<u64> = lines[1..].iter().map(|l| l[0].parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "times in order");

    let o = Command::new("fio")
        .current_dir(&d)
        .args([
            "--name=r",
            "--ioengine=null",
            "--read_iolog=r.iolog",
            "--replay_no_stall=1",
            "--write_lat_log=f",
            "--log_offset=1",
            "--output-format=json",
        ])
        .output()
        .unwrap_or_else(|e| panic!("real fio: {e}; {INSTALL}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let replayed: Vec<(u64, u64, u64)> = rows(&d.join("f_clat.1.log"))
        .iter()
        .map(|r| (r[2], r[3], r[4]))
        .collect();
    assert_eq!(replayed, ios);
}

/// The I/O lines of a fio v3 iolog: (time µs, direction, offset, length).
/// When fio replays a trace whose records start at time 0 (µs): fio's `delay_since_ttime`
/// keeps "no previous time" as 0, so the gap after the records at time 0 is not waited and
/// every later record comes that much earlier.
fn fio_times(ios: &[(u64, String, u64, u64)]) -> Vec<u64> {
    let shift = ios.iter().map(|x| x.0).find(|&t| t > 0).unwrap_or(0);
    ios.iter().map(|x| x.0.saturating_sub(shift)).collect()
}

fn iolog_ios(path: &Path) -> Vec<(u64, String, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|f| f.len() == 5 && ["read", "write", "trim"].contains(&f[2]))
        .map(|f| {
            (
                f[0].parse().unwrap(),
                f[2].to_string(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}

/// `read_iolog` replays as fio does: a job's `write_iolog` replays to the same I/Os in the
/// same order; timed replay issues each I/O at the recorded time, scaled by
/// `replay_time_scale`, exactly on the ideal null_blk; `replay_no_stall` as fast as the
/// queue allows; and a log the real fio wrote replays too.
#[test]
fn read_iolog_replays_fio_logs() {
    let d = tmpdir("replay");
    // Each direction 1 ms apart (rate_iops), served in 10 µs: the recorded times are the
    // issue times.
    run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=a",
            "--rw=randrw",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--number_ios=400",
            "--rate_iops=1000",
            "--write_iolog=a.iolog",
        ],
    );
    let a = iolog_ios(&d.join("a.iolog"));
    assert_eq!(a.len(), 400);
    // The rate lets a direction that fell behind catch up in a burst (`usec_for_io`), which
    // can fill the recording's 4 slots; the replays get room for a burst, so that a scaled
    // replay does not wait for a completion the recording waited for.
    let replay = |name: &str, extra: &[&str]| -> Vec<(u64, String, u64, u64)> {
        let out = format!("--write_iolog={name}");
        let mut args = vec![
            "--device=null_blk",
            "--name=b",
            "--ioengine=libaio",
            "--iodepth=8",
            "--read_iolog=a.iolog",
            &out,
        ];
        args.extend_from_slice(extra);
        run_in(&d, &args);
        iolog_ios(&d.join(name))
    };
    let same = |x: &[(u64, String, u64, u64)]| -> Vec<(String, u64, u64)> {
        x.iter().map(|(_, d, o, l)| (d.clone(), *o, *l)).collect()
    };
    let timed = replay("b.iolog", &[]);
    assert_eq!(same(&timed), same(&a));
    let ta: Vec<u64> = fio_times(&a);
    let tb: Vec<u64> = timed.iter().map(|x| x.0).collect();
    assert_eq!(tb, ta, "issued at the recorded times, as fio times them");
    let fast = replay("c.iolog", &["--replay_time_scale=200"]);
    for (x, y) in fast.iter().zip(&ta) {
        assert!(x.0.abs_diff(y / 2) <= 1, "{} vs {}/2", x.0, y);
    }
    let nostall = replay("n.iolog", &["--replay_no_stall=1"]);
    assert_eq!(same(&nostall), same(&a));
    // The log's flushes are replayed as flushes (fio's `sync` lines are fsyncs).
    let with_syncs = "fio version 3 iolog\n0 f add\n0 f open\n0 f write 0 4096\n\
                      100 f sync 0 0\n200 f write 4096 4096\n300 f datasync 0 0\n400 f close\n";
    std::fs::write(d.join("s.iolog"), with_syncs).unwrap();
    let v = run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=s",
            "--read_iolog=s.iolog",
            "--write_iolog=s2.iolog",
        ],
    );
    assert_eq!(
        v["jobs"][0]["sync"]["total_ios"].as_u64(),
        Some(1),
        "one fsync"
    );
    let back = std::fs::read_to_string(d.join("s2.iolog")).unwrap();
    let acts: Vec<&str> = back
        .lines()
        .skip(1)
        .map(|l| l.split(' ').nth(2).unwrap())
        .collect();
    assert_eq!(
        acts,
        ["add", "open", "write", "sync", "write", "datasync", "close"]
    );
    assert!(nostall.last().unwrap().0 < a.last().unwrap().0 / 50);

    // A log written by the real fio (its null engine) replays to its I/Os.
    let o = Command::new("fio")
        .current_dir(&d)
        .args([
            "--name=f",
            "--ioengine=null",
            "--rw=randrw",
            "--bs=4k",
            "--size=64m",
            "--number_ios=300",
            "--write_iolog=f.iolog",
        ])
        .output()
        .unwrap_or_else(|e| panic!("real fio: {e}; {INSTALL}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = iolog_ios(&d.join("f.iolog"));
    assert_eq!(f.len(), 300);
    run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=g",
            "--read_iolog=f.iolog",
            "--replay_no_stall=1",
            "--write_iolog=g.iolog",
        ],
    );
    assert_eq!(same(&iolog_ios(&d.join("g.iolog"))), same(&f));

    // Timing as the real fio times it: reads at 0, 50 and 100 ms take 50 ms, not 100, as
    // the gap after the record at time 0 is not waited (delay_since_ttime).
    let img = d.join("q.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let q = format!(
        "fio version 3 iolog\n0 {f} add\n0 {f} open\n0 {f} read 0 4096\n\
         50000 {f} read 4096 4096\n100000 {f} read 8192 4096\n100000 {f} close\n",
        f = img.display()
    );
    std::fs::write(d.join("q.iolog"), q).unwrap();
    let o = Command::new("fio")
        .current_dir(&d)
        .args([
            "--name=q",
            "--ioengine=null",
            "--read_iolog=q.iolog",
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let fio: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let fio_ms = fio["jobs"][0]["job_runtime"].as_u64().unwrap();
    let ours = run_in(
        &d,
        &["--device=null_blk", "--name=q", "--read_iolog=q.iolog"],
    );
    let ours_ms = ours["jobs"][0]["job_runtime"].as_u64().unwrap();
    // fio's runtime is wall time, whose sleeps overshoot by a few milliseconds on a busy
    // machine (53 ms seen with the rest of the suite running alongside); blksim's is virtual
    // and exact. Waiting the first gap would give 100 ms in either.
    assert!((49..=60).contains(&fio_ms), "real fio: {fio_ms} ms");
    assert_eq!(ours_ms, 50, "blksim {ours_ms} ms, fio {fio_ms} ms");
}

/// A log that is not one, or a record that cannot be replayed, stops the run with the file
/// and the line.
#[test]
fn bad_iologs_are_located_errors() {
    let d = tmpdir("badlog");
    for (text, want) in [
        ("not a log\n", "x.iolog:1: not a trace blksim reads"),
        (
            "fio version 3 iolog\n0 f add\n5 f read 4096 x\n",
            "x.iolog:3: length 'x'",
        ),
        (
            "fio version 3 iolog\n0 f read 100 4096\n",
            "x.iolog:2: read of 4096 bytes at 100",
        ),
    ] {
        std::fs::write(d.join("x.iolog"), text).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .current_dir(&d)
            .args([
                "run",
                "--device=null_blk",
                "--name=r",
                "--read_iolog=x.iolog",
            ])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{text}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{text}: {e}");
    }
}

/// A fio iolog replays as fio 3.33's `read_iolog2` and `read_iolog_get` replay it, checked
/// against the real fio on its null engine: trim lines are dropped ("bad ddir: 2") after
/// their time is taken, `replay_skip` is not applied (fio reads it for blktrace files only),
/// and a version 2 `wait` holds the next I/O until that many milliseconds since the run began.
#[test]
fn fio_iologs_replay_as_fio_reads_them() {
    let d = tmpdir("fiolines");
    std::fs::write(
        d.join("v3.iolog"),
        "fio version 3 iolog\n0 f add\n0 f open\n0 f read 0 4096\n100000 f trim 8192 4096\n\
         200000 f write 16384 4096\n300000 f read 4096 4096\n300000 f close\n",
    )
    .unwrap();
    std::fs::write(
        d.join("v2.iolog"),
        "fio version 2 iolog\nf add\nf open\nf read 0 4096\nf trim 8192 4096\n\
         f wait 400 0\nf write 16384 4096\nf sync 0 0\nf close\n",
    )
    .unwrap();
    // (total_ios read, write, trim, sync; job_runtime ms)
    let counts = |v: &Value| -> (Vec<u64>, u64) {
        let j = &v["jobs"][0];
        let n = ["read", "write", "trim", "sync"]
            .iter()
            .map(|k| j[k]["total_ios"].as_u64().unwrap())
            .collect();
        (n, j["job_runtime"].as_u64().unwrap())
    };
    for (log, extra) in [
        ("v3.iolog", None),
        ("v3.iolog", Some("--replay_skip=write,read")),
        ("v2.iolog", None),
    ] {
        let mut args = vec![
            "--name=r",
            "--ioengine=null",
            "--size=1m",
            "--output-format=json",
        ];
        let rl = format!("--read_iolog={log}");
        args.push(&rl);
        args.extend(extra);
        let o = Command::new("fio")
            .current_dir(&d)
            .args(&args)
            .output()
            .unwrap_or_else(|e| panic!("real fio: {e}; {INSTALL}"));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stderr).contains("bad ddir: 2"));
        let (fio_n, fio_ms) = counts(&serde_json::from_slice(&o.stdout).unwrap());
        let mut a = vec!["run"];
        a.extend(&args);
        let bo = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .current_dir(&d)
            .args(&a)
            .output()
            .unwrap();
        assert!(
            bo.status.success(),
            "{}",
            String::from_utf8_lossy(&bo.stderr)
        );
        let (n, ms) = counts(&serde_json::from_slice(&bo.stdout).unwrap());
        assert_eq!(n, fio_n, "{log} {extra:?}");
        let e = String::from_utf8_lossy(&bo.stderr);
        assert!(
            e.contains(&format!("{log}:5: 1 trim line(s) not replayed")),
            "{e}"
        );
        assert_eq!(
            e.contains("replay_skip is not applied"),
            extra.is_some(),
            "{e}"
        );
        if log == "v3.iolog" {
            // The trim's 100 ms are not waited: 200 ms in all, not 300.
            assert_eq!((n, ms), (vec![2, 1, 0, 0], 200), "{log} {extra:?}");
            assert!((195..=260).contains(&fio_ms), "fio: {fio_ms} ms");
        } else {
            // fio's genesis comes a little before its job starts; the simulated job
            // starts with the run.
            assert_eq!((n, ms), (vec![1, 1, 0, 1], 400));
            assert!((250..=400).contains(&fio_ms), "fio: {fio_ms} ms");
        }
    }
}

/// A replay ends at the log's end, not at `number_ios`, and an I/O fetched before the
/// runtime's end is issued when its time comes, after it: fio's `do_io` loops while the log
/// has entries and checks the runtime before `get_io_u`, which sleeps in `iolog_delay`.
/// Checked against the real fio on its null engine.
#[test]
fn replay_runs_past_number_ios_and_waits_past_the_runtime_as_fio() {
    let d = tmpdir("replayend");
    std::fs::write(
        d.join("t.iolog"),
        "fio version 3 iolog\n0 f add\n0 f open\n1000 f read 0 4096\n\
         301000 f write 4096 4096\n601000 f read 8192 4096\n601000 f close\n",
    )
    .unwrap();
    // The first record at a time above 0 starts the clock (fio's `delay_since_ttime`): the
    // write is due at 300 ms, after the 10 ms runtime, and the read after it never fetched.
    for (extra, want, (lo, hi)) in [
        ("--number_ios=1", [2, 1], (600, 640)),
        ("--runtime=10ms", [1, 1], (300, 340)),
    ] {
        let args = [
            "--name=r",
            "--ioengine=null",
            "--size=1m",
            "--read_iolog=t.iolog",
            "--output-format=json",
            extra,
        ];
        let o = Command::new("fio")
            .current_dir(&d)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("real fio: {e}; {INSTALL}"));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut a = vec!["run"];
        a.extend(args);
        let ours = common::blksim_json(Some(&d), &a);
        let fio: Value = serde_json::from_slice(&o.stdout).unwrap();
        for (who, v) in [("fio", &fio), ("blksim", &ours)] {
            let j = &v["jobs"][0];
            let n = [
                j["read"]["total_ios"].as_u64(),
                j["write"]["total_ios"].as_u64(),
            ];
            assert_eq!(n, want.map(Some), "{who} {extra}");
            let ms = j["job_runtime"].as_u64().unwrap();
            assert!((lo..=hi).contains(&ms), "{who} {extra}: {ms} ms");
        }
    }
}

/// `blksim replay TRACE`: a summary of the trace on stderr (counts, bytes, sizes, span,
/// footprint, recorded rate), then the trace replayed as one job at its recorded pace.
#[test]
fn blksim_replay_summarises_then_replays() {
    let d = tmpdir("replaycmd");
    run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=a",
            "--rw=randrw",
            "--bs=16k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--number_ios=1000",
            "--rate_iops=500",
            "--size=64m",
            "--write_iolog=t.iolog",
        ],
    );
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .current_dir(&d)
        .args([
            "replay",
            "t.iolog",
            "--device=null_blk",
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = String::from_utf8_lossy(&o.stderr);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["jobname"], "replay");
    let (r, w) = (
        j["read"]["total_ios"].as_u64().unwrap(),
        j["write"]["total_ios"].as_u64().unwrap(),
    );
    assert_eq!(r + w, 1000);
    assert!(
        summary.contains(&format!("I/Os: 1000 (read {r}, write {w}, trim 0)")),
        "{summary}"
    );
    assert!(summary.contains("16 KiB..32 KiB: 1000;"), "{summary}");
    // 1000 distinct 16 KiB blocks at most: the estimate is within a few percent of the bytes.
    let fp = summary
        .split("footprint about ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap();
    assert!((10.0..=17.0).contains(&fp), "{fp} MiB: {summary}");
    // Paced as recorded: the runtime is the recorded duration (to the ms).
    let dur: f64 = summary
        .split("recorded duration ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    let runtime = j["job_runtime"].as_f64().unwrap() / 1000.0;
    assert!((runtime - dur).abs() < 0.002, "{runtime} s vs {dur} s");
}

/// Recorded traces kept in the repository replay: a fio v3 iolog captured with Debian's fio
/// 3.33 on this project's machine, and an excerpt of MQSim's TPC-C trace in the ASCII format
/// MQSim and DiskSim read (tests/data/mqsim, MIT licence), recognised from its content, at
/// its recorded pace.
#[test]
fn recorded_traces_replay() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let d = tmpdir("traces");
    let count = |path: &Path, read: &str| -> (u64, u64) {
        let t = std::fs::read_to_string(path).unwrap();
        let mut rw = (0, 0);
        for l in t.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            let is_read = if read == "ascii" {
                f.len() == 5 && f[4] == "1"
            } else {
                f.len() == 5 && f[2] == "read"
            };
            let is_write = if read == "ascii" {
                f.len() == 5 && f[4] == "0"
            } else {
                f.len() == 5 && f[2] == "write"
            };
            rw.0 += u64::from(is_read);
            rw.1 += u64::from(is_write);
        }
        rw
    };
    for (file, kind, extra, dur_ms) in [
        ("fio_v3.iolog", "fio", vec![], None),
        (
            "mqsim/tpcc-1000.trace",
            "ascii",
            vec!["--set=size=262144"],
            Some(23.0),
        ),
    ] {
        let path = data.join(file);
        let mut args = vec!["replay", path.to_str().unwrap(), "--device=null_blk"];
        args.extend(extra);
        args.push("--output-format=json");
        let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .current_dir(&d)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let j = &v["jobs"][0];
        let got = (
            j["read"]["total_ios"].as_u64().unwrap(),
            j["write"]["total_ios"].as_u64().unwrap(),
        );
        assert_eq!(got, count(&path, kind), "{file}");
        if let Some(ms) = dur_ms {
            let rt = j["job_runtime"].as_f64().unwrap();
            assert!(
                (rt - ms).abs() <= 1.0,
                "{file}: runtime {rt} ms, recorded {ms} ms"
            );
        }
    }
}

/// blkparse's text output replays: a job traced with `--blktrace`, turned into text by the
/// real blkparse, replays to the same reads, writes and flushes, each issued at its `Q`
/// time on the ideal null_blk (the job's own `write_iolog` is the record of both runs).
#[test]
fn blkparse_text_replays_to_the_traced_ios() {
    let d = tmpdir("blkparse");
    traced_job(&d);
    let p = Command::new("blkparse")
        .current_dir(&d)
        .args(["-i", "nullb0", "-o", "nullb0.txt"])
        .output()
        .unwrap_or_else(|e| panic!("blkparse: {e}; scripts/test.sh installs it (blktrace)"));
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    replays_to_the_traced_ios(&d, "nullb0.txt");
}

/// A job of reads, writes and fsyncs 0.5 ms apart, traced with `--blktrace` and logged
/// with `write_iolog=a.iolog`, in `d`.
fn traced_job(d: &Path) {
    run_in(
        d,
        &[
            "--device=null_blk",
            "--name=a",
            "--rw=randrw",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--number_ios=300",
            "--rate_iops=2000",
            "--fsync=16",
            "--write_iolog=a.iolog",
            "--blktrace=.",
        ],
    );
}

/// Replaying `source` (a trace of [`traced_job`]) issues the job's reads, writes and
/// flushes in its order, each at its time as fio times them (the trace's ns and the iolog's
/// µs round apart by at most 1 µs).
fn replays_to_the_traced_ios(d: &Path, source: &str) {
    let v = run_in(
        d,
        &[
            "--device=null_blk",
            "--name=b",
            "--ioengine=libaio",
            "--iodepth=4",
            &format!("--read_iolog={source}"),
            "--write_iolog=b.iolog",
        ],
    );
    let a = iolog_ios(&d.join("a.iolog"));
    let b = iolog_ios(&d.join("b.iolog"));
    let same = |x: &[(u64, String, u64, u64)]| -> Vec<(String, u64, u64)> {
        x.iter().map(|(_, d, o, l)| (d.clone(), *o, *l)).collect()
    };
    assert_eq!(a.len(), 300);
    assert_eq!(same(&b), same(&a), "{source}");
    for (x, y) in fio_times(&a).iter().zip(&b) {
        assert!(x.abs_diff(y.0) <= 1, "{source}: {x:?} vs {y:?}");
    }
    let syncs = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            // `<time> <file> sync <offset> 0`: fio logs the offset its io_u last had.
            .filter(|l| l.split_whitespace().nth(2) == Some("sync"))
            .count()
    };
    assert!(syncs(&d.join("a.iolog")) > 0);
    assert_eq!(
        syncs(&d.join("b.iolog")),
        syncs(&d.join("a.iolog")),
        "{source}"
    );
    assert_eq!(
        v["jobs"][0]["sync"]["total_ios"].as_u64(),
        Some(syncs(&d.join("a.iolog")) as u64)
    );
}

/// The `issued rwts` line of a fio report: reads, writes, trims, syncs.
fn issued(report: &str) -> Vec<u64> {
    let l = report
        .lines()
        .find(|l| l.contains("issued rwts: total="))
        .unwrap_or_else(|| panic!("no issued line in\n{report}"));
    l.split("total=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect()
}

/// blktrace binary files replay as fio's blktrace.c replays them: a traced job's per-CPU set
/// replays to its own I/Os, flushes and times; the real blkparse's merged file replays to
/// what the real fio issues from it; and a real capture (tests/data/blktrace) replays, as
/// the merged dump, the per-CPU set and blkparse's text, to the 103 reads, 113 writes and 3
/// flushes fio 3.33 issued from it, at the depth fio probes from the trace.
#[test]
fn blktrace_binary_replays_as_fio_does() {
    let d = tmpdir("blktrace");
    traced_job(&d);
    // The per-CPU set, named by its device as blkparse -i takes it.
    replays_to_the_traced_ios(&d, "nullb0");
    // The real blkparse merges it; the real fio replays the merged file.
    let p = Command::new("blkparse")
        .current_dir(&d)
        .args(["-i", "nullb0", "-d", "merged.bin", "-o", "/dev/null"])
        .output()
        .unwrap_or_else(|e| panic!("blkparse: {e}; scripts/test.sh installs it (blktrace)"));
    assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
    let img = d.join("target.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let f = Command::new("fio")
        .current_dir(&d)
        .args([
            "--name=f",
            "--ioengine=null",
            "--read_iolog=merged.bin",
            &format!("--replay_redirect={}", img.display()),
            "--replay_no_stall=1",
        ])
        .output()
        .unwrap_or_else(|e| panic!("real fio: {e}; {INSTALL}"));
    assert!(f.status.success(), "{}", String::from_utf8_lossy(&f.stderr));
    let ours = run_in(
        &d,
        &[
            "--device=null_blk",
            "--name=g",
            "--ioengine=libaio",
            "--read_iolog=merged.bin",
            "--replay_no_stall=1",
        ],
    );
    let fio_issued = issued(&String::from_utf8_lossy(&f.stdout));
    let ours_issued: Vec<u64> = ["read", "write", "trim"]
        .iter()
        .map(|d| ours["jobs"][0][d]["total_ios"].as_u64().unwrap())
        .chain([ours["jobs"][0]["sync"]["total_ios"].as_u64().unwrap()])
        .collect();
    assert_eq!(ours_issued, fio_issued);
    assert!(fio_issued[3] > 0, "the trace's flushes: {fio_issued:?}");

    // The real capture, three ways. Its own response times are btt's Q2C figures.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/blktrace");
    let want = issued(&std::fs::read_to_string(data.join("replay_blktrace.normal.txt")).unwrap());
    assert_eq!(want, [103, 113, 0, 3]);
    let b = Command::new("btt")
        .current_dir(&d)
        .args([
            "-i",
            data.join("loop0.bin.dump").to_str().unwrap(),
            "-o",
            "btt",
        ])
        .output()
        .unwrap_or_else(|e| panic!("btt: {e}; scripts/test.sh installs it (blktrace)"));
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let avg = std::fs::read_to_string(d.join("btt.avg")).unwrap();
    let q2c: Vec<f64> = avg
        .lines()
        .find(|l| l.starts_with("Q2C"))
        .expect("btt's Q2C row")
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let (q2c_min, q2c_avg, q2c_max, q2c_n) = (q2c[0], q2c[1], q2c[2], q2c[3]);
    for src in ["loop0.bin.dump", "loop0", "loop0.blkparse.txt"] {
        let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .current_dir(&data)
            .args([
                "run",
                "--device=null_blk",
                "--name=r",
                "--ioengine=libaio",
                &format!("--read_iolog={src}"),
                "--replay_no_stall=1",
                "--output-format=normal,json",
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{src}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(issued(&text), want, "{src}");
        // fio's order: the JSON report, then the normal one.
        let json: Value = serde_json::Deserializer::from_str(&text[text.find('{').unwrap()..])
            .into_iter()
            .next()
            .unwrap()
            .unwrap();
        // Every request paired with its completion, as btt pairs them.
        let rec = |d: &str, k: &str| json["jobs"][0][d]["recorded_lat_ns"][k].as_f64().unwrap();
        let n = rec("read", "N") + rec("write", "N");
        assert_eq!(n, q2c_n, "{src}");
        assert_eq!(
            rec("read", "min").min(rec("write", "min")),
            (q2c_min * 1e9).round()
        );
        assert_eq!(
            rec("read", "max").max(rec("write", "max")),
            (q2c_max * 1e9).round()
        );
        let mean =
            (rec("read", "N") * rec("read", "mean") + rec("write", "N") * rec("write", "mean")) / n;
        assert!(
            (mean - q2c_avg * 1e9).abs() < 1.0,
            "{src}: {mean} ns vs btt {q2c_avg} s"
        );
        assert!(text.contains("    recorded lat (usec): "), "{src}");
        if src != "loop0.blkparse.txt" {
            // fio probes iodepth 4 from the binary trace (its report: "4=100.0%"), and
            // prints the header before it does.
            let levels = &json["jobs"][0]["iodepth_level"];
            assert!(levels["4"].as_f64().unwrap() > 90.0, "{src}: {levels}");
            assert!(text.contains("ioengine=libaio, iodepth=1\n"), "{src}");
        }
    }
}

/// A malformed trace line stops the run, naming the file and line; with `replay_skip_bad`
/// the run goes on with the good lines and says how many it passed over.
#[test]
fn malformed_trace_lines_stop_the_run_or_are_passed_over() {
    let d = tmpdir("skipbad");
    std::fs::write(
        d.join("bad.iolog"),
        "fio version 3 iolog\n0 f add\n0 f open\n0 f read 0 4096\n10 f fly 0 512\n\
         20 f read 4096\n30 f write 8192 4096\n40 f close\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_blksim"))
            .current_dir(&d)
            .args([
                "run",
                "--device=null_blk",
                "--name=s",
                "--read_iolog=bad.iolog",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.iolog:5: unknown action 'fly'"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&["--replay_skip_bad=1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(issued(&String::from_utf8_lossy(&o.stdout)), [1, 1, 0, 0]);
    assert!(String::from_utf8_lossy(&o.stderr).contains(
        "2 malformed trace lines passed over (the first: bad.iolog:5: unknown action 'fly')"
    ));
}

/// `blksim replay` sizes null_blk to the trace's highest I/O unless the size is given; an
/// I/O beyond a given size stops the run naming the trace's line.
#[test]
fn replay_sizes_null_blk_to_the_trace() {
    let d = tmpdir("replaysize");
    // A read 600 GB in, past null_blk's default 250 GiB.
    std::fs::write(d.join("far.trace"), "1000 0 1200000000 8 1\n2000 0 8 8 0\n").unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_blksim"))
            .current_dir(&d)
            .args(["replay", "far.trace", "--device=null_blk"])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(issued(&String::from_utf8_lossy(&o.stdout)), [1, 1, 0, 0]);
    let o = run(&["--set=size=1000"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains(
        "far.trace:1: read of 4096 bytes at 614400000000 is beyond the end of the device"
    ));
}
