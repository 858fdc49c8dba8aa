//! The `eraseblock` scheduler on the 2009 eMMC of measurements §4, and the data-integrity
//! oracle under every scheduler and MMC host path.

mod common;

use blksim_sim::setup::{self, RunOptions, WallClock};

fn emmc_2009() -> String {
    format!(
        "{}/../../profiles/emmc-512k-2009.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn run_on(device: &str, args: &[&str], sets: &[&str]) -> blksim_sim::SimOutput {
    common::run_on(device, args, sets, &RunOptions::default())
}

fn stat(out: &blksim_sim::SimOutput, k: &str) -> u64 {
    out.elevator_stats
        .iter()
        .find(|s| s.0 == k)
        .map(|s| s.1)
        .unwrap_or(0)
}

/// §4: "reading the gap between two writes in one erase block costs at most ~25 ms and writing
/// the whole erase block ~270 ms, ~300 ms together, while writing the two pieces separately
/// costs ~510 ms". A first job leaves an allocation unit open elsewhere (the card's steady
/// state: every write away from the open unit merges it); the second writes 4 KiB at offsets 0
/// and 256 KiB of one erase block, both in flight at once.
#[test]
fn two_writes_in_one_erase_block_300ms_vs_510ms() {
    let args = [
        "--name=warm",
        "--rw=write",
        "--bs=4k",
        "--ioengine=libaio",
        "--offset=0",
        "--size=4k",
        "--name=two",
        "--stonewall",
        "--rw=write:252k",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=2",
        "--offset=10m",
        "--size=512k",
        "--number_ios=2",
    ];
    let mut ms = Vec::new();
    for s in ["mq-deadline", "eraseblock"] {
        let set = format!("queue.scheduler={s}");
        let out = run_on(&emmc_2009(), &args, &[&set]);
        let t = &out.tasks[1];
        assert_eq!(t.stats.dir[1].total_ios, 2);
        let span = (t.end_ns - t.start_ns) as f64 / 1e6;
        eprintln!("{s}: two writes in {span:.1} ms");
        ms.push((span, out));
    }
    let (dd, eb) = (ms[0].0, ms[1].0);
    assert!(
        (460.0..=560.0).contains(&dd),
        "mq-deadline {dd} ms, §4 ~510"
    );
    assert!((270.0..=330.0).contains(&eb), "eraseblock {eb} ms, §4 ~300");
    assert_eq!(stat(&ms[1].1, "eb_combined_writes"), 1);
    assert_eq!(stat(&ms[1].1, "eb_absorbed_writes"), 2);
}

/// Scattered 4 KiB random writes over 16 erase blocks at queue depth 16: fio's own IOPS and
/// bandwidth must show the gain.
#[test]
fn scattered_small_writes_gain_in_fio_figures() {
    let args = [
        "--name=scat",
        "--rw=randwrite",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=16",
        "--offset=64m",
        "--size=8m",
        "--number_ios=400",
    ];
    let dd = run_on(&emmc_2009(), &args, &["queue.scheduler=mq-deadline"]);
    let eb = run_on(&emmc_2009(), &args, &["queue.scheduler=eraseblock"]);
    let (i0, i1) = (common::iops(&dd, 0, 1), common::iops(&eb, 0, 1));
    let (b0, b1) = (
        dd.tasks[0].stats.dir[1].bw_bytes(),
        eb.tasks[0].stats.dir[1].bw_bytes(),
    );
    eprintln!("mq-deadline {i0:.2} IOPS {b0} B/s; eraseblock {i1:.2} IOPS {b1} B/s");
    // mq-deadline: every write merges an allocation unit (~250 ms, §4).
    assert!((3.5..=4.5).contains(&i0), "{i0}");
    assert!(i1 > 2.0 * i0, "eraseblock {i1} IOPS vs mq-deadline {i0}");
    assert!(b1 > 2 * b0);
    assert!(stat(&eb, "eb_combined_writes") > 50);
}

fn mmc_profile(dir: &std::path::Path, queue: &str) -> String {
    let p = dir.join(format!("mmc-{queue}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"mmc-{queue}\"\ndriver = \"mmc\"\n[host]\nqueue = \"{queue}\"\n[card]\ncapacity_mib = 256\n[platform]\nnr_cpus = 2\n"
        ),
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

/// The oracle checks every read under every scheduler and MMC host path: a verifying random
/// writer (fio's write-then-verify) races a random reader/writer on the same region; nothing
/// may mismatch and the verify phase must have read back the whole region.
#[test]
fn integrity_holds_for_every_scheduler_and_mmc_path() {
    let dir = std::env::temp_dir().join(format!("blksim-integrity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        "--name=w",
        "--rw=randwrite",
        "--bsrange=4k-16k",
        "--ioengine=libaio",
        "--iodepth=8",
        "--size=1m",
        "--verify=crc32c",
        "--name=rw",
        "--rw=randrw",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=4",
        "--size=1m",
        "--number_ios=200",
    ];
    for queue in ["legacy", "hsq", "cqe"] {
        let dev = mmc_profile(&dir, queue);
        for s in blksim_sched::ELEVATOR_NAMES {
            let set = format!("queue.scheduler={s}");
            let j = common::jobs(&args);
            let p = common::profile(&dev, &[&set]);
            let out = setup::run(&j, &p, &RunOptions::default())
                .unwrap_or_else(|e| panic!("{queue}/{s}: {e}"));
            // The verify phase read the 1 MiB region back in 4 KiB..16 KiB blocks.
            assert!(
                out.integrity_reads_checked >= 64,
                "{queue}/{s}: {} reads checked",
                out.integrity_reads_checked
            );
            assert_eq!(out.integrity_mismatches, 0, "{queue}/{s}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `verify=` + `do_verify` drive the read-back phase; `do_verify=0` turns it off; the JSON
/// carries `blksim.integrity`.
#[test]
fn verify_phase_and_json_keys() {
    let base = [
        "--name=v",
        "--rw=write",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=4",
        "--size=256k",
    ];
    let mut on: Vec<&str> = base.to_vec();
    on.push("--verify=md5");
    let out = common::run(&on, &[]);
    assert_eq!(out.integrity_reads_checked, 64);
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 64);
    let mut off = on.clone();
    off.push("--do_verify=0");
    assert_eq!(common::run(&off, &[]).integrity_reads_checked, 0);
    let j = common::jobs(&on);
    let p = common::profile("null_blk", &[]);
    let opts = RunOptions::default();
    let out = setup::run(&j, &p, &opts).unwrap();
    let r = setup::build_report(&j, &p, &opts, &out, &WallClock::default());
    let mut buf = Vec::new();
    blksim_report::json::write_json(&r, false, &mut buf).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
    assert_eq!(v["blksim"]["integrity"]["reads_checked"], 64);
    assert_eq!(v["blksim"]["integrity"]["mismatches"], 0);
}
