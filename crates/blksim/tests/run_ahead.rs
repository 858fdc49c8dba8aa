//! A context's clock may run ahead of its event: the CPU model runs a context to its end when
//! its event comes up, charging its costs as it goes. A syscall longer than a transfer (a
//! heavy file system read path on a slow SoC, `--set=platform.syscall_ns`) puts the
//! submitter's insertion later than the completion that runs the queue next. Time must still
//! run forwards for every request and every CPU: no request reaches the driver before it was
//! queued, and the blktrace files are time ordered per CPU as the kernel's relay buffers are.
//! And the syscall's time falls where fio measures it: in a sync engine's clat, in an async
//! engine's slat.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use blksim_trace::{read_trace_checked, Action};

mod common;

/// 8 psync jobs of 4 KiB random reads on the Allwinner eMMC (the §5 job) with a 400 µs
/// syscall: three times a transfer, so every submission overlaps other completions.
fn run(dir: &Path) -> serde_json::Value {
    let bt = format!("--blktrace={}", dir.display());
    common::blksim_json(
        None,
        &[
            "run",
            "--name=r",
            "--rw=randread",
            "--bs=4k",
            "--size=1G",
            "--io_size=512k",
            "--numjobs=8",
            "--thread",
            "--group_reporting",
            "--device=emmc-allwinner",
            "--set=platform.syscall_ns=400us",
            &bt,
        ],
    )
}

#[test]
fn long_syscalls_keep_each_request_and_cpu_in_time_order() {
    let dir = common::fresh_dir("runahead", "order", false);
    let report = run(&dir);
    let read = &report["jobs"][0]["read"];
    assert_eq!(read["total_ios"], 8 * 128);
    // A read is done no sooner than its page is sensed (`card.t_r_ns`, 45 µs on this
    // profile) and its 4 KiB cross the 8-bit HS200 bus (200 MB/s: 20.5 µs).
    let clat_min = read["clat_ns"]["min"].as_u64().unwrap();
    assert!(clat_min >= 45_000 + 20_480, "clat min {clat_min} ns");

    assert_eq!(requests_in_order(&dir, "mmcblk0", 8), 8 * 128);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The loop driver's worker goes on with its list when a command completes; a command
/// queued by a dispatch context whose clock ran ahead of that completion waits until it was
/// queued (case found by `blksim fuzz`: completed before its issue).
#[test]
fn the_loop_worker_takes_a_command_no_earlier_than_it_was_queued() {
    let dir = common::fresh_dir("runahead", "loop", false);
    let bt = format!("--blktrace={}", dir.display());
    let report = common::blksim_json(
        None,
        &[
            "run",
            "--name=l",
            "--rw=randread",
            "--bs=4k",
            "--size=1m",
            "--ioengine=libaio",
            "--iodepth=3",
            "--device=loop-2cpu",
            "--set=queue.scheduler=none",
            &bt,
        ],
    );
    assert_eq!(report["jobs"][0]["read"]["total_ios"], 256);
    assert_eq!(requests_in_order(&dir, "loop0", 1), 256);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Checks the trace in `dir` (events on at least `cpus` CPUs): each CPU's file in time order
/// with data sequence numbers 1, 2, ...; each request queued, then issued, then completed.
/// Returns the number of requests completed.
fn requests_in_order(dir: &Path, dev: &str, cpus: usize) -> u64 {
    // Each CPU's file: times never go back, data sequence numbers count up from 1.
    let mut events = read_trace_checked(dir, dev).unwrap();
    let last_cpu = events.iter().map(|e| e.cpu).max().unwrap_or(0);
    assert!(last_cpu as usize + 1 >= cpus, "events on each CPU used");
    // Each request: queued, then issued to the driver, then completed. Sectors may repeat
    // over the run, so each one's events are paired in time order (at one time: queued,
    // issued, completed, whatever CPUs they are on).
    let rank = |a: Action| match a {
        Action::Queue => 0,
        Action::BackMerge | Action::FrontMerge => 1,
        Action::Issue => 2,
        _ => 3,
    };
    events.sort_by_key(|e| (e.time_ns, rank(e.action)));
    let mut open: BTreeMap<u64, (u64, Option<u64>)> = BTreeMap::new();
    let mut completed = 0;
    for e in &events {
        match e.action {
            Action::Queue => {
                assert!(open.insert(e.sector, (e.time_ns, None)).is_none());
            }
            // A bio merged at the back of a request is not a request of its own; one merged
            // at the front starts the request, which then is issued at the bio's sector.
            Action::BackMerge => {
                open.remove(&e.sector);
            }
            Action::FrontMerge => {
                open.remove(&(e.sector + (e.bytes as u64 >> 9)));
            }
            Action::Issue => {
                let q = open.get_mut(&e.sector).expect("issued but not queued");
                assert!(q.1.is_none());
                q.1 = Some(e.time_ns);
            }
            Action::Complete => {
                let (q, d) = open.remove(&e.sector).expect("completed but not queued");
                let d = d.expect("completed but not issued");
                assert!(
                    q <= d && d <= e.time_ns,
                    "sector {}: Q {q} D {d} C {}",
                    e.sector,
                    e.time_ns
                );
                completed += 1;
            }
            _ => {}
        }
    }
    assert!(open.is_empty());
    completed
}

/// null_blk completing on a timer after `completion_nsec` = 10 µs, a 3 µs syscall, no other
/// cost, one I/O at a time. fio stamps `issue_time` before a sync engine's queue hook makes
/// its syscall (`td_io_queue`, FIO_SYNCIO) and after an async engine's submit returns
/// (`fio_libaio_queued`): psync's clat is the whole call, 13 µs; libaio's slat is the syscall,
/// 3 µs, and its clat the device's 10 µs.
#[test]
fn syscall_time_is_in_sync_clat_and_async_slat() {
    for (engine, slat, clat) in [("psync", 0, 13_000), ("libaio", 3_000, 10_000)] {
        let report = common::blksim_json(
            None,
            &[
                "run",
                "--name=s",
                "--rw=randread",
                "--bs=4k",
                "--size=16M",
                "--number_ios=100",
                &format!("--ioengine={engine}"),
                "--device=null_blk",
                "--set=irqmode=2",
                "--set=completion_nsec=10us",
                "--set=platform.syscall_ns=3us",
            ],
        );
        let read = &report["jobs"][0]["read"];
        for (key, want) in [("slat_ns", slat), ("clat_ns", clat), ("lat_ns", 13_000)] {
            for m in ["min", "max"] {
                assert_eq!(read[key][m], want, "{engine} {key} {m}");
            }
        }
    }
}

/// Replay the version 3 iolog `log` with `args` (a job named `r` on null_blk, writing its own
/// iolog); returns the case's directory and the reads' start times (µs) by offset.
fn replay(name: &str, log: &str, args: &[&str]) -> (PathBuf, BTreeMap<u64, u64>) {
    let dir = common::fresh_dir("runahead", name, false);
    std::fs::write(dir.join("in.iolog"), log).unwrap();
    let mut a = vec![
        "run",
        "--name=r",
        "--device=null_blk",
        "--read_iolog=in.iolog",
        "--write_iolog=out.iolog",
    ];
    a.extend_from_slice(args);
    common::blksim_json(Some(&dir), &a);
    let starts = std::fs::read_to_string(dir.join("out.iolog"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(" read "))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[3].parse().unwrap(), f[0].parse().unwrap())
        })
        .collect();
    (dir, starts)
}

/// A replayed log's gaps count from fio's `last_issue`, which for a sync engine is the
/// `issue_time` taken before the syscall (`td_io_queue`), so a 2 ms syscall does not stretch
/// the replay: the reads a second apart in the log start a second apart (after the first
/// gap, which fio takes as the log's time offset).
#[test]
fn replayed_gaps_count_from_before_a_sync_engines_syscall() {
    let (dir, t) = replay(
        "replay",
        "fio version 3 iolog\n0 f add\n0 f open\n0 f read 0 4096\n1000000 f read 4096 4096\n\
         2000000 f read 8192 4096\n3000000 f read 12288 4096\n4000000 f close\n",
        &["--set=platform.syscall_ns=2ms"],
    );
    assert_eq!(t.len(), 4);
    assert_eq!([t[&8192] - t[&4096], t[&12288] - t[&8192]], [1_000_000; 2]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An async engine's `last_issue` is when its submit call returned (`fio_libaio_queued`
/// copies that time into it). One driver tag (null_blk, `hw_queue_depth=1`, no elevator),
/// batches of two (`iodepth_batch_submit=2`), 1 ms per read: the second read of a batch
/// sleeps on the tag inside `io_submit`, so the call returns a millisecond late, and the
/// next pair, 10 ms later in the log, starts 10 ms after that return: at its submission plus
/// its slat plus the gap.
#[test]
fn replayed_gaps_count_from_an_async_submits_return() {
    let (dir, starts) = replay(
        "replay-async",
        "fio version 3 iolog\n0 f add\n0 f open\n0 f read 0 4096\n0 f read 4096 4096\n\
         10000 f read 8192 4096\n10000 f read 12288 4096\n20000 f read 16384 4096\n\
         20000 f read 20480 4096\n30000 f close\n",
        &[
            "--ioengine=libaio",
            "--iodepth=2",
            "--iodepth_batch_submit=2",
            "--write_lat_log=lat",
            "--log_offset=1",
            "--set=irqmode=2",
            "--set=completion_nsec=1ms",
            "--set=hw_queue_depth=1",
            "--set=queue.scheduler=none",
        ],
    );
    // slat (ns) by offset, from the slat log.
    let slat: BTreeMap<u64, u64> = std::fs::read_to_string(dir.join("lat_slat.1.log"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
            (f[4], f[1])
        })
        .collect();
    assert_eq!(starts.len(), 6);
    let (s4, s5) = (starts[&12288], starts[&16384]);
    assert!(
        slat[&12288] > 0,
        "the second read of the pair slept on the tag"
    );
    assert_eq!(s5, s4 + slat[&12288] / 1000 + 10_000);
    std::fs::remove_dir_all(&dir).unwrap();
}
