//! MMC faults and the kernel's recovery: seeded CRC errors, timeouts and command errors on the
//! card and bus, card removal; retries, resets and single-sector re-reads as
//! `mmc_blk_mq_rw_recovery` and the hsq/CQE recovery work do them; failed I/O as fio reports
//! it (err=5, continue_on_error, exit status).

use std::process::{Command, Output};

mod common;

fn blksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .output()
        .expect("run blksim")
}

fn json(args: &[&str]) -> (serde_json::Value, Output) {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let o = blksim(&a);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
    (v, o)
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const FAULTS: [&str; 3] = [
    "--set=card.fault_crc_ppm=1000",
    "--set=card.fault_timeout_ppm=1000",
    "--set=card.fault_cmd_ppm=1000",
];

/// Faults at 1000 ppm of each kind on every eMMC profile and host path: every run completes,
/// every fault is recovered by a retry, no data is lost (random reads and writes, read back
/// and checked), and recovery shows in the read tail (random reads, p99.9).
#[test]
fn faults_are_recovered_on_every_profile_and_path() {
    for dev in [
        "emmc-hbg4a2",
        "emmc-ux500",
        "emmc-512k-2009",
        "emmc-allwinner",
    ] {
        for path in ["legacy", "hsq", "cqe"] {
            let d = format!("--device={dev}");
            let q = format!("--set=host.queue={path}");
            let run = |rw: &[&str], faults: bool| {
                let mut a = vec!["run", &d, &q, "--name=f", "--bs=4k", "--ioengine=libaio"];
                a.extend_from_slice(&["--iodepth=8", "--size=64m"]);
                a.extend_from_slice(rw);
                if faults {
                    a.extend(FAULTS);
                }
                let (v, o) = json(&a);
                assert!(
                    o.status.success(),
                    "{dev} {path}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                v
            };
            // Data: random reads and writes, read back.
            let mixed = ["--rw=randrw", "--number_ios=3000", "--verify=crc32c"];
            let clean = run(&mixed, false);
            let v = run(&mixed, true);
            let f = &v["blksim"]["faults"];
            let i = &v["blksim"]["integrity"];
            assert!(u(&f["injected"]) > 0, "{dev} {path}: no fault drawn");
            assert!(u(&f["retried"]) > 0, "{dev} {path}: {f}");
            assert_eq!(u(&f["failed_ios"]), 0, "{dev} {path}: {f}");
            assert_eq!(u(&i["mismatches"]), 0, "{dev} {path}");
            assert!(u(&i["reads_checked"]) > 0);
            assert_eq!(v["jobs"][0]["error"], 0);
            let ios = |v: &serde_json::Value, d: &str| u(&v["jobs"][0][d]["total_ios"]);
            assert_eq!(ios(&v, "read"), ios(&clean, "read"), "{dev} {path}");
            assert_eq!(ios(&v, "write"), ios(&clean, "write"), "{dev} {path}");
            // The tail: p99.9 of 12000 random reads, about 36 of them faulty.
            let reads = ["--rw=randread", "--number_ios=12000"];
            let p999 = |v: &serde_json::Value| {
                u(&v["jobs"][0]["read"]["clat_ns"]["percentile"]["99.900000"])
            };
            let (c, f) = (p999(&run(&reads, false)), p999(&run(&reads, true)));
            assert!(f > c, "{dev} {path}: p99.9 {f} with faults vs {c} without");
        }
    }
}

/// A write whose data transfer failed may still be programming when the legacy path's
/// recovery starts (without host busy detection its IRQ comes at the end of the data):
/// `mmc_blk_fix_state` polls CMD13 until the card is no longer busy before the request is
/// retried, so the retry never finds the card busy.
#[test]
fn legacy_recovery_waits_for_a_failed_write_to_finish_programming() {
    for seed in ["1", "2", "3"] {
        let s = format!("--seed={seed}");
        let (v, o) = json(&[
            "run",
            "--device=emmc-ux500",
            "--set=host.hw_busy_detect=false",
            "--set=card.fault_crc_ppm=100000",
            &s,
            "--name=f",
            "--rw=readwrite",
            "--size=1m",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let f = &v["blksim"]["faults"];
        assert!(u(&f["retried"]) > 0, "seed {seed}: {f}");
        assert_eq!(u(&f["failed_ios"]), 0, "seed {seed}: {f}");
    }
    // The case that found it.
    let (_, o) = json(&[
        "run",
        "--device=emmc-ux500",
        "--set=card.fault_crc_ppm=13360",
        "--set=host.hw_busy_detect=false",
        "--seed=3086897942021129109",
        "--name=job0",
        "--rw=readwrite",
        "--size=64k",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A fault that never goes away, on one request, gives the kernel's exact sequence.
#[test]
fn persistent_faults_follow_the_kernels_recovery_sequence() {
    let one = |path: &str, rw: &str, fault: &str| {
        let q = format!("--set=host.queue={path}");
        let (v, o) = json(&[
            "run",
            "--device=emmc-hbg4a2",
            &q,
            fault,
            "--name=f",
            rw,
            "--bs=4k",
            "--size=1m",
            "--number_ios=1",
        ]);
        assert_eq!(o.status.code(), Some(1), "{path} {rw}: one job failed");
        assert_eq!(v["jobs"][0]["error"], 5);
        let f = &v["blksim"]["faults"];
        [
            u(&f["injected"]),
            u(&f["retried"]),
            u(&f["resets"]),
            u(&f["single_block_fallbacks"]),
            u(&f["failed_ios"]),
        ]
    };
    let crc = "--set=card.fault_crc_ppm=1000000";
    let cmd = "--set=card.fault_cmd_ppm=1000000";
    for path in ["legacy", "hsq"] {
        // A write with data errors: three attempts (MMC_DATA_RETRIES), a reset before the
        // last, then EIO.
        assert_eq!(one(path, "--rw=write", crc), [3, 2, 1, 0, 1], "{path}");
        // A read: two attempts, the reset, then eight single-sector reads of three tries each.
        assert_eq!(
            one(path, "--rw=read", crc),
            [2 + 8 * 3, 1, 1, 1, 1],
            "{path}"
        );
        // Command errors fail fast: six attempts (MMC_MAX_RETRIES retries), one reset.
        assert_eq!(one(path, "--rw=write", cmd), [6, 5, 1, 0, 1], "{path}");
    }
    // CQE: the recovery discards the task, requeued while retries < MMC_CQE_RETRIES.
    assert_eq!(one("cqe", "--rw=write", crc), [3, 2, 0, 0, 1]);
}

/// 4000 random reads and writes on a card removed after 20 ms.
const REMOVED: [&str; 10] = [
    "run",
    "--device=emmc-hbg4a2",
    "--set=card.fault_removed_ns=20ms",
    "--name=f",
    "--rw=randrw",
    "--bs=4k",
    "--size=32m",
    "--ioengine=libaio",
    "--iodepth=8",
    "--number_ios=4000",
];

/// Card removal: what is in flight fails, later requests fail at once. fio stops the job at
/// its first error (err=5, the io_u error message, exit status 1), or with continue_on_error
/// counts them and goes on. Every request completes exactly once either way (the simulator
/// checks that at the end of every run).
#[test]
fn card_removal_and_continue_on_error() {
    let base = REMOVED;
    let o = blksim(&base);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("err= 5 (file:io_u.c:1876, func=io_u error, error=Input/output error)"),
        "{out}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("fio: io_u error on file /dev/mmcblk0: Input/output error: "),
        "{err}"
    );
    let mut go_on = base.to_vec();
    go_on.push("--continue_on_error=io");
    let (v, o) = json(&go_on);
    assert!(o.status.success());
    let j = &v["jobs"][0];
    assert_eq!((u(&j["error"]), u(&j["first_error"])), (5, 5));
    // fio counts every io_u it queued in total_ios (`td_io_queue`), failed or not, and a
    // failed one in total_err too, with no bytes (real fio 3.33 reading a loop device with
    // unaligned O_DIRECT and `ignore_error=EINVAL`: total_ios 100, total_err 100,
    // io_bytes 0).
    let total = u(&j["total_err"]);
    let queued = u(&j["read"]["total_ios"]) + u(&j["write"]["total_ios"]);
    assert_eq!(queued, 4000, "every I/O queued is counted");
    let bytes = u(&j["read"]["io_bytes"]) + u(&j["write"]["io_bytes"]);
    assert_eq!(
        bytes,
        (4000 - total) * 4096,
        "the failed I/Os bring no bytes"
    );
    // fio counts io_u errors; the driver counts failed requests, and a request may carry
    // several merged bios.
    assert_eq!(u(&v["blksim"]["io_errors"]), total);
    let failed = u(&v["blksim"]["faults"]["failed_ios"]);
    let merges =
        u(&v["blksim"]["block"]["elevator_merges"]) + u(&v["blksim"]["block"]["plug_merges"]);
    assert!(
        failed <= total && failed + merges >= total,
        "{failed} {merges} {total}"
    );
    // fsyncs too: every one queued is in sync.total_ios, failed or not (64 writes of 4 KiB,
    // an fsync after each but the last).
    let mut syncs = base[..2].to_vec();
    syncs.extend([
        "--name=s",
        "--rw=write",
        "--size=256k",
        "--fsync=1",
        "--continue_on_error=all",
        "--set=card.fault_removed_ns=1ms",
    ]);
    let (v, _) = json(&syncs);
    let j = &v["jobs"][0];
    assert_eq!(
        (u(&j["write"]["total_ios"]), u(&j["sync"]["total_ios"])),
        (64, 63)
    );
    assert!(
        u(&j["total_err"]) > 64,
        "writes and syncs failed: {}",
        j["total_err"]
    );
    // Only read errors tolerated: the first write error stops the job.
    let mut reads = base.to_vec();
    reads.push("--continue_on_error=read");
    let o = blksim(&reads);
    assert_eq!(o.status.code(), Some(1));
}

/// A failed request is in blktrace as a completion carrying its errno, as
/// `blk_add_trace_rq_complete` records `blk_status_to_errno(status)`: after the card is
/// removed every request fails with -EIO (blkparse prints the u16, `[65531]`), whether the
/// driver refused it before issuing it (`mmc_mq_queue_rq` on a removed card) or it failed on
/// the card. One such completion per request the driver failed, and error 0 for the others.
#[test]
fn failed_requests_complete_with_eio_in_blktrace() {
    let dir = common::fresh_dir("faults", "eio", false);
    let bt = format!("--blktrace={}", dir.display());
    let mut args = REMOVED.to_vec();
    args.extend_from_slice(&["--continue_on_error=io", &bt]);
    let (v, o) = json(&args);
    assert!(o.status.success());
    let failed = u(&v["blksim"]["faults"]["failed_ios"]);
    assert!(
        failed > 1000,
        "most of the run is after the removal: {failed}"
    );
    let events = blksim_trace::read_trace(&dir, "mmcblk0").unwrap();
    let completions = |err: i16| {
        events
            .iter()
            .filter(|e| e.action == blksim_trace::Action::Complete && e.error == err)
            .count() as u64
    };
    assert_eq!(completions(-5), failed);
    // The disk's I/O counts (`blk_account_io_done`) take every request that ended, failed
    // or not.
    let disk = &v["disk_util"][0];
    assert_eq!(
        completions(0) + completions(-5),
        u(&disk["read_ios"]) + u(&disk["write_ios"])
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Failing syncs end: on a removed card every fdatasync fails, and fio's `io_completed` still
/// sets `last_was_sync` for a failed sync, so the next io_u is a write, not another sync (a
/// job asking for a failed sync over and over never finished).
#[test]
fn failed_syncs_do_not_repeat_forever() {
    let (v, o) = json(&[
        "run",
        "--device=emmc-allwinner",
        "--set=card.fault_removed_ns=1",
        "--name=s",
        "--rw=write",
        "--bs=4k",
        "--size=64k",
        "--fdatasync=1",
        "--continue_on_error=io",
        "--max-events=100000",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = &v["jobs"][0];
    // 16 writes and, between them, 15 fdatasyncs (fio's `get_rw_ddir` turns the io_u after
    // each write into a sync; the last write has none after it): all fail, none repeated.
    assert_eq!(u(&j["total_err"]), 31, "{j}");
    assert_eq!(u(&j["error"]), 5);
}

/// Faults are drawn from their own seeded stream: the same seed gives the same run; a run
/// without faults is unchanged by the fault model.
#[test]
fn faults_are_deterministic() {
    let mut a = vec![
        "run",
        "--device=emmc-hbg4a2",
        "--name=f",
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        "--ioengine=libaio",
        "--iodepth=4",
        "--number_ios=3000",
        "--set=card.fault_crc_ppm=20000",
    ];
    let d1 = json(&a).0["blksim"]["event_digest"].clone();
    let d2 = json(&a).0["blksim"]["event_digest"].clone();
    assert_eq!(d1, d2);
    a.push("--seed=7");
    assert_ne!(json(&a).0["blksim"]["event_digest"], d1);
}
