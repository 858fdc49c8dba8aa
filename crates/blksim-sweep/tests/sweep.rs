//! Sweeps end to end: the Parquet has exactly the grid's rows in point order, the same bytes
//! on one thread or all, after a resume, and shards partition the grid.

use blksim_sweep::{journal_path, spec, sweep, Options};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use std::path::{Path, PathBuf};

const SWEEP: &str = r#"
[base]
job_text = "[j]\nrw=randread\nsize=64m\nruntime=5ms\nioengine=libaio\ngroup_reporting=1\n"
device = "null_blk"
repeats = 2
seed = 5
[axes.job]
numjobs = [1, 2]
iodepth = { from = 1, to = 4, times = 2 }
[axes.set]
"completion_nsec" = ["5us", "20us"]
"#;

fn dir(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(out: &Path, shard: Option<(u64, u64)>, threads: usize) -> blksim_sweep::Summary {
    let s = spec::parse(SWEEP, "t.toml", Path::new(".")).unwrap();
    let o = Options {
        out: out.to_path_buf(),
        csv: None,
        shard,
        threads: Some(threads),
    };
    sweep(&s, &o, &blksim::api::SweepRunner, &|_, _| {}).unwrap()
}

/// (point, numjobs, iodepth, completion_nsec, iops) of every row.
fn rows(p: &Path) -> Vec<(i64, i64, i64, String, f64)> {
    let r = SerializedFileReader::new(std::fs::File::open(p).unwrap()).unwrap();
    r.get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            let mut point = 0;
            let (mut nj, mut qd, mut cn, mut iops) = (0, 0, String::new(), 0.0);
            for (name, f) in row.get_column_iter() {
                match (name.as_str(), f) {
                    ("point", Field::Long(v)) => point = *v,
                    ("numjobs", Field::Long(v)) => nj = *v,
                    ("iodepth", Field::Long(v)) => qd = *v,
                    ("completion_nsec", Field::Str(v)) => cn = v.clone(),
                    ("iops", Field::Double(v)) => iops = *v,
                    _ => {}
                }
            }
            (point, nj, qd, cn, iops)
        })
        .collect()
}

#[test]
fn the_parquet_has_the_grid_in_point_order_and_is_the_same_on_any_thread_count() {
    let d = dir("grid");
    let one = d.join("one.parquet");
    let s = run(&one, None, 1);
    // 2 numjobs x 3 iodepths x 2 completion times x 2 seeds; group_reporting: one row each.
    assert_eq!((s.points, s.ran, s.rows), (24, 24, 24));
    let r = rows(&one);
    assert_eq!(
        r.iter().map(|x| x.0).collect::<Vec<_>>(),
        (0..24).collect::<Vec<i64>>()
    );
    assert_eq!((r[0].1, r[0].2, r[0].3.as_str()), (1, 1, "5us"));
    assert_eq!((r[23].1, r[23].2, r[23].3.as_str()), (2, 4, "20us"));
    // A deeper queue on a device with a fixed completion time runs more I/Os per second.
    assert!(r[4].4 > 1.5 * r[0].4, "{:?} {:?}", r[4], r[0]);
    let two = d.join("two.parquet");
    run(&two, None, 2);
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_resumed_sweep_runs_only_the_missing_points() {
    let d = dir("resume");
    let full = d.join("full.parquet");
    run(&full, None, 2);
    // An interrupted sweep: the journal holds the header, 7 points and a torn eighth.
    let part = d.join("part.parquet");
    let j = std::fs::read_to_string(journal_path(&full)).unwrap();
    let lines: Vec<&str> = j.split_inclusive('\n').collect();
    let mut torn: String = lines[..8].concat();
    torn.push_str(&lines[8][..lines[8].len() / 2]);
    std::fs::write(journal_path(&part), torn).unwrap();
    let s = run(&part, None, 2);
    assert_eq!((s.skipped, s.ran), (7, 17));
    assert_eq!(rows(&part), rows(&full));
    // Nothing left: a third run runs nothing.
    let s = run(&part, None, 2);
    assert_eq!((s.skipped, s.ran), (24, 0));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn shards_partition_the_grid() {
    let d = dir("shard");
    let full = d.join("full.parquet");
    run(&full, None, 2);
    let mut all = Vec::new();
    for k in 0..3 {
        let p = d.join(format!("s{k}.parquet"));
        run(&p, Some((k, 3)), 1);
        let r = rows(&p);
        assert!(r.iter().all(|x| x.0 as u64 % 3 == k));
        all.extend(r);
    }
    all.sort_by_key(|x| x.0);
    assert_eq!(all, rows(&full));
    // A shard's journal is not another shard's.
    std::fs::copy(
        journal_path(&d.join("s0.parquet")),
        journal_path(&d.join("s1.parquet")),
    )
    .unwrap();
    let s = spec::parse(SWEEP, "t.toml", Path::new(".")).unwrap();
    let o = Options {
        out: d.join("s1.parquet"),
        csv: None,
        shard: Some((1, 3)),
        threads: Some(1),
    };
    let e = sweep(&s, &o, &blksim::api::SweepRunner, &|_, _| {}).unwrap_err();
    assert!(e.contains("another sweep or shard"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
