//! `blksim compare` and `run --seeds`: deltas that are the arithmetic of the inputs, read
//! from blksim's and the real fio's JSON alike, and confidence intervals that tell a change
//! from the noise of one seed: identical configurations give intervals around zero, the old
//! hsq tag scan against FIFO on the Allwinner board (repro §5) a p99.99 interval well away
//! from it.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn blksim(dir: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run blksim");
    assert!(
        o.status.success(),
        "blksim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn tmpdir(name: &str) -> PathBuf {
    common::fresh_dir("cmp", name, false)
}

/// The cells of `metric`'s row (after the label).
fn row<'a>(out: &'a str, metric: &str) -> Vec<&'a str> {
    let l = out
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{metric} ")))
        .unwrap_or_else(|| panic!("no {metric} row:\n{out}"));
    l[2 + metric.len()..].split_whitespace().collect()
}

fn report(iops: f64, bw: u64, clat_mean: f64, p99: u64) -> String {
    format!(
        r#"{{
  "fio version" : "fio-3.33",
  "jobs" : [
    {{
      "jobname" : "j",
      "groupid" : 0,
      "read" : {{
        "io_bytes" : 4096000,
        "bw" : {bw},
        "iops" : {iops},
        "lat_ns" : {{ "mean" : {clat_mean} }},
        "clat_ns" : {{ "mean" : {clat_mean}, "percentile" : {{ "99.000000" : {p99} }} }}
      }},
      "write" : {{ "io_bytes" : 0 }}
    }}
  ]
}}
"#
    )
}

#[test]
fn deltas_are_the_arithmetic_of_the_reports() {
    let d = tmpdir("arith");
    std::fs::write(d.join("a.json"), report(1000.0, 4000, 250_000.0, 900_000)).unwrap();
    // A report after other output (`--output-format=normal,json`) is found too.
    std::fs::write(
        d.join("b.json"),
        format!(
            "j: (g=0): rw=randread\n{}",
            report(1250.0, 5000, 200_000.0, 1_800_000)
        ),
    )
    .unwrap();
    let out = blksim(&d, &["compare", "a.json", "b.json"]);
    assert_eq!(row(&out, "IOPS"), ["1000.0", "1250.0", "+250.0", "+25.00%"]);
    assert_eq!(
        row(&out, "bw KiB/s"),
        ["4000.0", "5000.0", "+1000.0", "+25.00%"]
    );
    assert_eq!(
        row(&out, "clat mean us"),
        ["250.0", "200.0", "-50.000", "-20.00%"]
    );
    assert_eq!(
        row(&out, "clat p99 us"),
        ["900.0", "1800.0", "+900.0", "+100.00%"]
    );
    assert!(
        !out.contains("write"),
        "directions without I/O are left out:\n{out}"
    );
}

/// Seeds: the JSON keeps every seed's figures, identical configurations give an interval
/// of exactly zero, and the scan's p99.99 excess over FIFO is outside the noise.
#[test]
fn seeds_tell_a_change_from_noise() {
    let d = tmpdir("seeds");
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../repro/s5-allwinner/randread.fio");
    let job = job.to_str().unwrap();
    let run = |name: &str, policy: &str| {
        let out = blksim(
            &d,
            &[
                "run",
                job,
                "--io_size=16M",
                "--device=emmc-allwinner",
                "--set=host.queue=hsq",
                &format!("--set=host.hsq_next_tag={policy}"),
                "--seeds=4",
                "--output-format=json",
            ],
        );
        std::fs::write(d.join(name), &out).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let seeds: Vec<u64> = v["blksim"]["seeds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["seed"].as_u64().unwrap())
            .collect();
        assert_eq!(seeds.len(), 4);
        assert!(seeds.windows(2).all(|w| w[1] == w[0] + 1), "{seeds:?}");
    };
    run("fifo.json", "fifo");
    run("scan.json", "scan");
    run("fifo2.json", "fifo");
    let out = blksim(&d, &["compare", "fifo.json", "scan.json", "fifo2.json"]);
    // Cells: A B C, then per other file: delta, delta %, and the interval "[lo, hi]".
    let p = row(&out, "clat p99.99 us");
    let num = |s: &str| -> f64 {
        s.trim_matches(|c| c == '[' || c == ']' || c == ',')
            .parse()
            .unwrap()
    };
    let (scan_lo, scan_hi) = (num(p[5]), num(p[6]));
    assert!(
        scan_lo > 0.0 && scan_hi > scan_lo,
        "scan - FIFO p99.99: {p:?}"
    );
    let (same_lo, same_hi) = (num(p[9]), num(p[10]));
    assert!(same_lo <= 0.0 && same_hi >= 0.0, "FIFO - FIFO: {p:?}");
    assert_eq!(num(p[7]), 0.0);
}

/// The real fio's JSON is read like blksim's (its null engine, no seeds: plain deltas).
#[test]
fn real_fio_reports_compare_too() {
    let d = tmpdir("fio");
    let o = Command::new("fio")
        .current_dir(&d)
        .args([
            "--name=j",
            "--ioengine=null",
            "--rw=randread",
            "--size=16m",
            "--number_ios=1000",
            "--output-format=json",
            "--output=fio.json",
        ])
        .output()
        .unwrap_or_else(|e| panic!("real fio: {e}; scripts/test.sh installs it"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sim = blksim(
        &d,
        &[
            "run",
            "--device=null_blk",
            "--name=j",
            "--rw=randread",
            "--size=16m",
            "--number_ios=1000",
            "--output-format=json",
        ],
    );
    std::fs::write(d.join("sim.json"), sim).unwrap();
    let out = blksim(&d, &["compare", "fio.json", "sim.json"]);
    let r = row(&out, "IOPS");
    assert_eq!(r.len(), 4, "{out}");
    let c = row(&out, "clat mean us");
    assert_eq!(c[1], "10.000", "null_blk's 10 us:\n{out}");
}

/// Whatever the files hold (cut short, garbled, not fio's, the wrong types), compare answers
/// with a report or an error naming the file; it never panics.
#[test]
fn bad_input_is_an_error_naming_the_file() {
    let d = tmpdir("bad");
    let good = report(1000.0, 4000, 250_000.0, 900_000);
    std::fs::write(d.join("good.json"), &good).unwrap();
    let mut cases: Vec<String> = vec![
        String::new(),
        "not json at all\n".into(),
        "{\n".into(),
        "{\n  \"jobs\" : 3\n}\n".into(),
        "{\n  \"jobs\" : [ { \"read\" : { \"io_bytes\" : \"many\", \"iops\" : [] } } ]\n}\n".into(),
        "{\n  \"jobs\" : [], \"blksim\" : { \"seeds\" : [ {}, { \"jobs\" : 7 } ] }\n}\n".into(),
    ];
    // Every prefix of a good report, cut at each of 40 places.
    for k in 1..40 {
        cases.push(good[..good.len() * k / 40].to_string());
    }
    for (i, c) in cases.iter().enumerate() {
        let name = format!("bad{i}.json");
        std::fs::write(d.join(&name), c).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .current_dir(&d)
            .args(["compare", "good.json", &name])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "case {i}: {err}");
        if !o.status.success() {
            assert!(
                err.contains(&name),
                "case {i}: the error names the file: {err}"
            );
        }
    }
}
