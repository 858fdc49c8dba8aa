//! `blksim sweep` on the worked example, read back by an independent Parquet reader
//! (pyarrow, in the virtualenv `scripts/test.sh` makes; `BLKSIM_PYTHON` names its python),
//! and the example's plotting script run on the result.

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> String {
    std::env::var("BLKSIM_PYTHON").unwrap_or_else(|_| {
        panic!("BLKSIM_PYTHON is not set: scripts/test.sh makes a virtualenv with pyarrow and matplotlib and sets it")
    })
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const CHECK: &str = r#"
import csv, sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
types = {f.name: str(f.type) for f in t.schema}
assert types["point"] == "int64" and types["numjobs"] == "int64", types
assert types["device"] == "string" and types["host.queue"] == "string", types
assert types["iops"] == "double" and types["total_ios"] == "int64", types
rows = t.to_pylist()
with open(sys.argv[2]) as f:
    text = list(csv.DictReader(f))
assert len(rows) == len(text), (len(rows), len(text))
for p, c in zip(rows, text):
    assert p["point"] == int(c["point"]) and p["device"] == c["device"], (p, c)
    assert p["numjobs"] == int(c["numjobs"]) and p["iops"] == float(c["iops"]), (p, c)
    assert p["clat_p99_us"] == float(c["clat_p99_us"]), (p, c)
assert [r["point"] for r in rows] == list(range(len(rows)))
print(t.num_rows)
"#;

#[test]
fn the_example_sweep_runs_and_pyarrow_reads_exactly_its_rows() {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sweep-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .arg("sweep")
        .arg(root().join("examples/sweep-hsq.toml"))
        .arg("--csv=h.csv")
        .current_dir(&d)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // 2 devices x 5 job counts x 2 host paths x 2 next-tag rules x 2 seeds.
    assert!(
        text.contains(
            "sweep: 80 points (80 run now, 0 from the journal), 80 rows -> sweep-hsq.parquet"
        ),
        "{text}"
    );
    let py = python();
    let o = Command::new(&py)
        .args(["-c", CHECK, "sweep-hsq.parquet", "h.csv"])
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pyarrow check: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "80");
    let o = Command::new(&py)
        .arg(root().join("examples/plot_sweep.py"))
        .args(["sweep-hsq.parquet", "h.png"])
        .current_dir(&d)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "plot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("plot: h.png (6 lines)"), "{out}");
    assert!(std::fs::metadata(d.join("h.png")).unwrap().len() > 10_000);
    let _ = std::fs::remove_dir_all(&d);
}
