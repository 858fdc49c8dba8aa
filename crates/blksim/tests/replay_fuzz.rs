//! Mutated traces replayed through the whole simulation never panic or hang `blksim
//! replay`. The readers alone are fuzzed in `crates/blksim-workload/tests/trace_fuzz.rs`;
//! this runs what they read, end to end: null_blk sized to the trace, offsets and lengths
//! past the device, an eMMC device, the replay options. Every format is given (fio iologs,
//! a blktrace binary file, blkparse text, MQSim/DiskSim ASCII, MSR Cambridge, Alibaba and
//! Tencent CSV), changed by the parsers' mutator (`blksim_core::mutate`): fields replaced
//! by numbers at the ends of their range, bytes changed, runs of bytes deleted or repeated
//! elsewhere, the end cut off, and in the binary trace words overwritten. A run either
//! replays or stops with an error (exit status 1) that names what was wrong; a panic, a
//! signal, a run that does not end, an internal error, a report with a lost bio or an
//! integrity mismatch, or a second run whose report differs fails the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use blksim_core::mutate::{Mutator, CSV, FIELDS};
use blksim_core::Rng;

mod common;

/// Numbers at the edges: zero, the ends of i64, u32 and u64, past u64, not integers.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "511",
    "4095",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e30",
    "NaN",
    "0.5",
    "+5",
    "0x10",
    "",
];

fn pick<'a, T>(m: &mut Mutator, v: &'a [T]) -> &'a T {
    &v[m.below(v.len())]
}

/// What a run of `blksim replay` left: its exit status (None if it did not end within a
/// minute, then killed), its stderr and its JSON report (None if it wrote none).
struct Run {
    code: Option<i32>,
    err: String,
    report: Option<String>,
}

/// `blksim replay` of `trace` with `extra`, the JSON report written to `out`.
fn replay(trace: &Path, extra: &[&str], out: &Path) -> Run {
    let _ = std::fs::remove_file(out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .arg("replay")
        .arg(trace)
        .arg("--output-format=json")
        .arg(format!("--output={}", out.display()))
        .args(extra)
        // The report's wall-clock stamps, pinned so that two runs compare byte for byte.
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if t0.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            child.wait().ok();
            return Run {
                code: None,
                err: String::new(),
                report: None,
            };
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let report = std::fs::read_to_string(out).ok().filter(|r| !r.is_empty());
    Run { code, err, report }
}

/// The report's own checks: every bio completed, no integrity mismatch or violation.
fn check_report(report: &str) -> Result<(), String> {
    let v: serde_json::Value =
        serde_json::from_str(report).map_err(|e| format!("the report does not parse: {e}"))?;
    let b = &v["blksim"];
    let (sub, done) = (&b["bios"]["submitted"], &b["bios"]["completed"]);
    if !sub.is_u64() || sub != done {
        return Err(format!("bios submitted {sub}, completed {done}"));
    }
    for k in ["mismatches", "violations"] {
        let n = &b["integrity"][k];
        if !(n.is_null() || n == 0) {
            return Err(format!("integrity {k} {n}"));
        }
    }
    Ok(())
}

/// One trace of each format, from the test data and written here.
fn seeds(dir: &Path) -> Vec<(PathBuf, bool)> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let head = |p: PathBuf, n: usize| -> String {
        let t = std::fs::read_to_string(p).unwrap();
        t.lines().take(n).collect::<Vec<_>>().join("\n") + "\n"
    };
    let mut rng = Rng::from_seed(0x7ace);
    let (mut msr, mut ali, mut ten) = (
        String::from("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"),
        String::new(),
        String::new(),
    );
    let (mut t_msr, mut t_ali, mut t_ten) = (
        128_166_372_003_061_629u64,
        1_577_808_000_000_626u64,
        1_538_323_200u64,
    );
    for _ in 0..60 {
        t_msr += rng.below(20_000);
        t_ali += rng.below(500);
        t_ten += rng.below(2);
        let w = rng.below(2) == 0;
        msr += &format!(
            "{t_msr},wdev,{},{},{},{},{}\n",
            rng.below(3),
            if w { "Write" } else { "Read" },
            rng.below(1 << 21) * 512,
            [512, 4096, 65536][rng.below(3) as usize],
            rng.range_inclusive(10, 5000)
        );
        ali += &format!(
            "{},{},{},{},{t_ali}\n",
            rng.below(4),
            if w { "W" } else { "R" },
            rng.below(1 << 22) * 4096,
            [4096, 8192, 131072][rng.below(3) as usize]
        );
        ten += &format!(
            "{t_ten},{},{},{},{}\n",
            rng.below(1 << 24),
            [8, 16, 256][rng.below(3) as usize],
            w as u8,
            rng.range_inclusive(1, 2000)
        );
    }
    let text = [
        ("v3.iolog", head(data.join("fio_v3.iolog"), 100)),
        (
            "v2.iolog",
            "fio version 2 iolog\n/dev/nullb0 add\n/dev/nullb0 open\n/dev/nullb0 read 0 4096\n\
             /dev/nullb0 wait 100 0\n/dev/nullb0 write 8192 4096\n/dev/nullb0 sync 0 0\n\
             /dev/nullb0 trim 65536 65536\n/dev/nullb0 close\n"
                .to_string(),
        ),
        (
            "trace.blkparse",
            head(data.join("blktrace/loop0.blkparse.txt"), 120),
        ),
        ("tpcc.ascii", head(data.join("mqsim/tpcc-1000.trace"), 120)),
        ("msr.csv", msr),
        ("alibaba.csv", ali),
        ("tencent.csv", ten),
    ];
    let mut out = Vec::new();
    for (name, body) in text {
        let p = dir.join(format!("seed-{name}"));
        std::fs::write(&p, body).unwrap();
        out.push((p, false));
    }
    out.push((data.join("blktrace/loop0.blktrace.0"), true));
    out
}

#[test]
fn mutated_traces_replay_or_stop_with_an_error() {
    let d = common::fresh_dir("replay_fuzz", "mutated", false);
    let seeds = seeds(&d);
    let out = d.join("report.json");
    // Each seed as it is replays.
    for (p, _) in &seeds {
        let r = replay(p, &["--device=null_blk"], &out);
        assert_eq!(r.code, Some(0), "{}: {}", p.display(), r.err);
        check_report(r.report.as_deref().unwrap_or("")).unwrap();
    }
    // A case mutated traces found: a gap that `replay_time_scale` stretches past the u64
    // range, after the gap of the file lines before it. The run ends at the end of virtual
    // time, with its error.
    let far = d.join("far.iolog");
    std::fs::write(
        &far,
        format!(
            "fio version 3 iolog\n1 f add\n2 f open\n{} f read 0 512\n",
            u64::MAX / 2
        ),
    )
    .unwrap();
    let r = replay(&far, &["--device=null_blk", "--replay_time_scale=3"], &out);
    assert!(
        r.code == Some(1) && r.err.contains("simulated time would pass"),
        "exit {:?}: {}",
        r.code,
        r.err
    );
    let extras: &[&[&str]] = &[
        &["--device=null_blk"],
        &["--device=null_blk", "--iodepth=1"],
        &["--device=null_blk", "--replay_skip_bad=1"],
        &["--device=null_blk", "--replay_no_stall=1"],
        &["--device=null_blk", "--replay_time_scale=3"],
        &["--device=emmc-hbg4a2"],
    ];
    let mut m = Mutator::new(0xf022);
    let (mut errors, mut reported) = (0, 0);
    for case in 0..400 {
        let (seed, binary) = pick(&mut m, &seeds);
        let data = std::fs::read(seed).unwrap();
        let mutated = if *binary {
            m.mutate_bytes(&data, 6)
        } else {
            let csv = seed.extension().is_some_and(|e| e == "csv");
            let text = String::from_utf8_lossy(&data);
            m.mutate(&text, if csv { CSV } else { FIELDS }, EXTREMES, 3)
                .into_bytes()
        };
        let ext = seed.extension().map_or("t".into(), |e| e.to_string_lossy());
        let p = d.join(format!("case-{case}.{ext}"));
        std::fs::write(&p, &mutated).unwrap();
        let extra = pick(&mut m, extras);
        let r = replay(&p, extra, &out);
        let what = format!(
            "case {case} ({} mutated, {extra:?}, trace kept in {})",
            seed.display(),
            p.display()
        );
        assert!(
            matches!(r.code, Some(0 | 1)) && !r.err.contains("panicked"),
            "{what}: exit {:?} (None: still running after a minute)\n{}",
            r.code,
            r.err
        );
        // A refusal names what was wrong, and is not the simulator losing its own work.
        if r.code == Some(1) {
            errors += 1;
            assert!(r.err.contains("blksim:"), "{what}: {}", r.err);
        }
        for bad in ["internal error", "integrity"] {
            assert!(!r.err.contains(bad), "{what}: {}", r.err);
        }
        // A run that reported: its own checks hold, and a second run reports the same.
        if let Some(report) = &r.report {
            check_report(report)
                .map_err(|e| format!("{what}: {e}"))
                .unwrap();
            let again = replay(&p, extra, &out);
            assert_eq!(
                again.report.as_ref(),
                Some(report),
                "{what}: a second run differs"
            );
            reported += 1;
        }
    }
    // The mutations reach both the parsers' error paths and the simulation.
    eprintln!("{reported} replayed, {errors} refused");
    assert!(reported > 40, "{reported} of 400 mutated traces replayed");
    assert!(errors > 20, "{errors} of 400 mutated traces were refused");
}
