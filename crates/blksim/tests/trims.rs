//! fio's trims are synchronous in every engine: a sync engine's queue hook calls
//! `do_io_u_trim` (a BLKDISCARD ioctl on a block device), and libaio, io_uring and posixaio
//! do the same (FIO_ASYNCIO_SYNC_TRIM), answering FIO_Q_BUSY while io_us are queued so that
//! those are committed first. A trim job at any iodepth therefore keeps one trim in flight,
//! and a trimwrite job's writes pile up behind its trims.
//!
//! The depth histograms below are real fio 3.33's, measured on this project's machines on a
//! loop device over a 64 MiB file (`losetup -f --show lo.img`), with
//! `fio --name=a --filename=/dev/loopN --rw=RW --bs=4k --size=1m --ioengine=ENGINE
//! --iodepth=8 --output-format=json`: they do not depend on the device's speed.

use serde_json::Value;

mod common;

fn run(rw: &str, engine: &str) -> Value {
    run_with(rw, engine, &[])
}

fn run_with(rw: &str, engine: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "run".to_string(),
        "--device=null_blk".into(),
        "--name=a".into(),
        format!("--rw={rw}"),
        "--bs=4k".into(),
        "--size=1m".into(),
        format!("--ioengine={engine}"),
        "--iodepth=8".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = common::blksim_json(None, &args);
    v["jobs"][0].clone()
}

fn levels(j: &Value) -> Vec<f64> {
    ["1", "2", "4", "8", "16", "32", ">=64"]
        .iter()
        .map(|k| j["iodepth_level"][k].as_f64().unwrap())
        .collect()
}

#[test]
fn trims_keep_one_in_flight_on_async_engines() {
    for engine in ["libaio", "io_uring", "posixaio"] {
        let j = run("randtrim", engine);
        assert_eq!(j["trim"]["total_ios"], 256, "{engine}");
        // fio: IO depths 1=100.0%.
        assert_eq!(
            levels(&j),
            [100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "{engine}"
        );
        // null_blk completes each 10 µs after its issue: one at a time, at most 100k/s.
        let iops = j["trim"]["iops"].as_f64().unwrap();
        assert!(iops <= 100_000.0, "{engine}: {iops}");
    }
}

#[test]
fn trimwrite_writes_fill_the_queue_behind_the_trims() {
    for engine in ["libaio", "io_uring"] {
        let j = run("trimwrite", engine);
        assert_eq!(j["trim"]["total_ios"], 256, "{engine}");
        assert_eq!(j["write"]["total_ios"], 256, "{engine}");
        // fio: 1=0.390625 2=0.78125 4=1.5625 8=97.265625 (512 io_us: the first trim, the
        // first write, the writes climbing to the depth, then one reaped per io_u queued).
        assert_eq!(
            levels(&j),
            [0.390625, 0.78125, 1.5625, 97.265625, 0.0, 0.0, 0.0],
            "{engine}"
        );
    }
}

/// FIO_Q_BUSY sends fio to reap before it tries the trim again (`do_io`: `full` when busy
/// with io_us in flight), so the writes do not pile up: with `iodepth_batch=4` fio reports
/// 1=99.8 % (blksim 100 %). posixaio is busy while any io_u is unreaped (`pd->queued`): fio
/// and blksim report 1=100 % even with the default batch.
#[test]
fn a_busy_trim_waits_for_completions_first() {
    let j = run_with("trimwrite", "libaio", &["--iodepth_batch=4"]);
    assert!(levels(&j)[0] >= 99.0, "{:?}", levels(&j));
    let j = run("trimwrite", "posixaio");
    assert_eq!(levels(&j), [100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}
