//! Closed-form checks of the spine: fixed service time, Little's law, tag limits, plug
//! merging, rwmix, determinism. Each can fail: the expected values are derived, not recorded.

mod common;
use blksim_sim::setup::RunOptions;
use common::*;

/// psync on null_blk irqmode=2, completion_nsec=10000: one I/O in flight, each takes exactly
/// 10 µs, so IOPS = 1 / 10 µs = 100,000 per job (within 0.1%).
#[test]
fn psync_fixed_service_time_gives_exact_iops() {
    for numjobs in ["1", "2"] {
        let out = run(
            &[
                "--name=t",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=psync",
                "--iodepth=8",
                "--runtime=1",
                "--time_based",
                &format!("--numjobs={numjobs}"),
            ],
            &["irqmode=2", "completion_nsec=10000"],
        );
        for t in 0..out.tasks.len() {
            let iops = iops(&out, t, 0);
            assert!(
                (iops - 100_000.0).abs() / 100_000.0 < 0.001,
                "numjobs={numjobs} task {t}: {iops}"
            );
        }
    }
}

/// libaio: Little's law, IOPS = iodepth / latency, until the driver's tags (hw_queue_depth)
/// cap the number in flight; past that the cap shows exactly.
#[test]
fn libaio_follows_littles_law_until_hw_queue_depth() {
    let lat_ns = 20_000.0;
    for (depth, hwq) in [
        (1u32, 64u32),
        (4, 64),
        (16, 64),
        (64, 64),
        (128, 64),
        (32, 8),
    ] {
        let out = run(
            &[
                "--name=t",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=libaio",
                "--direct=1",
                &format!("--iodepth={depth}"),
                "--runtime=0.2",
                "--time_based",
            ],
            &[
                "irqmode=2",
                "completion_nsec=20000",
                &format!("hw_queue_depth={hwq}"),
            ],
        );
        let expect = depth.min(hwq) as f64 / (lat_ns / 1e9);
        // In virtual time (fio's report rounds the runtime up to whole ms, as fio does).
        let t = &out.tasks[0];
        let got = t.stats.dir[0].total_ios as f64 / ((t.end_ns - t.start_ns) as f64 / 1e9);
        assert!(
            (got - expect).abs() / expect < 0.001,
            "iodepth={depth} hw_queue_depth={hwq}: {got} vs {expect}"
        );
        let reported = iops(&out, 0, 0);
        assert!(
            (reported - expect).abs() / expect < 0.01,
            "report: {reported} vs {expect}"
        );
        assert_eq!(
            out.blk.max_in_flight,
            depth.min(hwq),
            "in flight never exceeds the tag depth"
        );
        if depth > hwq {
            assert!(out.blk.tag_waits > 0, "the submitter must sleep on tags");
        }
    }
}

/// Four jobs on four CPUs, each on its own hardware queue of `hw_queue_depth` 16 tags: 64 in
/// flight, IOPS = 64 / 100 us. With `shared_tag_bitmap` (`BLK_MQ_F_TAG_HCTX_SHARED`) the
/// four queues share the 16 tags: IOPS = 16 / 100 us, under `none` (submitters sleep on the
/// shared tags) and under mq-deadline (dispatch waits for a driver tag on the shared wait
/// queue).
#[test]
fn shared_tag_bitmap_caps_all_hardware_queues_at_one_depth() {
    let lat_ns = 100_000.0;
    for sched in ["none", "mq-deadline"] {
        for (shared, tags) in [("0", 64u32), ("1", 16)] {
            let sq = format!("queue.scheduler={sched}");
            let sh = format!("shared_tag_bitmap={shared}");
            let out = run(
                &[
                    "--name=t",
                    "--rw=randread",
                    "--bs=4k",
                    "--ioengine=libaio",
                    "--direct=1",
                    "--iodepth=32",
                    "--numjobs=4",
                    "--runtime=0.2",
                    "--time_based",
                ],
                &[
                    "irqmode=2",
                    "completion_nsec=100000",
                    "submit_queues=4",
                    "hw_queue_depth=16",
                    "platform.nr_cpus=4",
                    &sq,
                    &sh,
                ],
            );
            let ios: u64 = out.tasks.iter().map(|t| t.stats.dir[0].total_ios).sum();
            let secs = out
                .tasks
                .iter()
                .map(|t| t.end_ns - t.start_ns)
                .max()
                .unwrap() as f64
                / 1e9;
            let expect = tags as f64 / (lat_ns / 1e9);
            let got = ios as f64 / secs;
            assert!(
                (got - expect).abs() / expect < 0.01,
                "{sched} shared_tag_bitmap={shared}: {got} vs {expect}"
            );
            assert_eq!(out.blk.max_in_flight, tags, "{sched} shared={shared}");
        }
    }
}

/// I/Os that take no time (null_blk irqmode=0 on the ideal platform, fio's null engine) never
/// let a time-based job reach its runtime: the run stops with an error naming the cause
/// instead of looping forever at t=0. The same I/Os bounded by a count end normally, at t=0.
#[test]
fn time_that_stands_still_stops_a_time_based_run() {
    let p = profile("null_blk", &["irqmode=0"]);
    for (engine, device) in [("libaio", true), ("null", false)] {
        let e = format!("--ioengine={engine}");
        let j = jobs(&[
            "--name=t",
            "--rw=randwrite",
            "--bs=4k",
            &e,
            "--iodepth=8",
            // fio's null engine needs a size (it has no file or device to measure).
            "--size=1m",
            "--runtime=1",
            "--time_based",
        ]);
        let p = if device {
            p.clone()
        } else {
            profile("null_blk", &[])
        };
        let Err(blksim_sim::RunError::Run(err)) =
            blksim_sim::setup::run(&j, &p, &RunOptions::default())
        else {
            panic!("{engine}: the run ended, or stopped for another cause");
        };
        assert!(
            err.starts_with("simulated time stands still at t=0 ns")
                && err.contains("time-based job would never reach its runtime"),
            "{engine}: {err}"
        );
    }
    let out = run(
        &[
            "--name=t",
            "--rw=randwrite",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=8",
            "--number_ios=1500000",
            "--size=1g",
            "--io_size=6000m",
        ],
        &["irqmode=0"],
    );
    assert_eq!(out.tasks[0].stats.dir[1].total_ios, 1_500_000);
    assert_eq!(out.end_ns, 0);
}

/// UFS MCQ: one queue per CPU, but `host_tagset` shares `mcq_depth - 1` tags over them, so
/// eight jobs of iodepth 32 on eight CPUs have at most 63 commands at the device; in SDB mode
/// the one queue has 31.
#[test]
fn ufs_queues_share_one_tag_space() {
    for (mode, tags) in [("mcq", 63u32), ("sdb", 31)] {
        let m = format!("ufs.mode={mode}");
        let out = run_on(
            "ufs40-samsung-512g",
            &[
                "--name=t",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=libaio",
                "--direct=1",
                "--iodepth=32",
                "--numjobs=8",
                "--runtime=0.05",
                "--time_based",
            ],
            &[&m],
            &RunOptions::default(),
        );
        assert_eq!(out.blk.max_in_flight, tags, "{mode}");
    }
}

/// Sequential 4 KiB writes submitted 32 at a time under a plug merge into one request per
/// batch: requests = I/Os / 32, each 128 KiB.
#[test]
fn plugged_sequential_writes_merge_into_batch_sized_requests() {
    let out = run(
        &[
            "--name=w",
            "--rw=write",
            "--bs=4k",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=32",
            "--iodepth_batch_submit=32",
            "--iodepth_batch_complete_min=32",
            "--size=64m",
        ],
        &["irqmode=2", "completion_nsec=10000"],
    );
    let ios = 64 * 1024 / 4;
    assert_eq!(out.tasks[0].stats.dir[1].total_ios, ios);
    assert_eq!(out.blk.ios[1], ios / 32, "one request per 32-bio batch");
    assert_eq!(out.blk.sectors[1], 64 * 1024 * 2);
    assert_eq!(out.blk.plug_merges, ios - ios / 32);
    // Without plugging (batch of 1) nothing merges on this idle device: each bio is issued
    // directly.
    let out = run(
        &[
            "--name=w",
            "--rw=write",
            "--bs=4k",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=32",
            "--size=4m",
        ],
        &["irqmode=2", "completion_nsec=10000"],
    );
    assert_eq!(out.blk.ios[1], 1024);
}

/// nomerges=2 turns the plug merge off: every bio becomes a request.
#[test]
fn nomerges_two_disables_merging() {
    let out = run(
        &[
            "--name=w",
            "--rw=write",
            "--bs=4k",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=32",
            "--iodepth_batch_submit=32",
            "--size=4m",
        ],
        &["irqmode=2", "queue.nomerges=2"],
    );
    assert_eq!(out.blk.ios[1], 1024);
    assert_eq!(out.blk.plug_merges, 0);
}

#[test]
fn max_sectors_splits_large_ios() {
    // 1 MiB I/Os with max_sectors_kb=256 become 4 requests each.
    let out = run(
        &[
            "--name=r",
            "--rw=read",
            "--bs=1m",
            "--ioengine=psync",
            "--size=16m",
        ],
        &["irqmode=2", "queue.max_sectors_kb=256", "queue.nomerges=2"],
    );
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 16);
    assert_eq!(out.blk.ios[0], 64);
}

#[test]
fn rwmixread_70_gives_70_percent_reads() {
    let out = run(
        &[
            "--name=m",
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--number_ios=20000",
            "--size=1g",
        ],
        &["irqmode=2"],
    );
    let r = out.tasks[0].stats.dir[0].total_ios as f64;
    let w = out.tasks[0].stats.dir[1].total_ios as f64;
    let frac = r / (r + w);
    assert!((frac - 0.70).abs() <= 0.01, "{frac}");
}

#[test]
fn same_seed_is_byte_identical_and_another_seed_is_not() {
    let args = [
        "--name=d",
        "--rw=randrw",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=8",
        "--number_ios=5000",
        "--size=256m",
    ];
    let sets = ["irqmode=2", "queue.scheduler=none"];
    let a = json(
        &args,
        &sets,
        &RunOptions {
            seed: 7,
            ..Default::default()
        },
    );
    let b = json(
        &args,
        &sets,
        &RunOptions {
            seed: 7,
            ..Default::default()
        },
    );
    let c = json(
        &args,
        &sets,
        &RunOptions {
            seed: 8,
            ..Default::default()
        },
    );
    assert_eq!(a, b);
    assert_ne!(a, c);
    let digest = |s: &str| {
        let v: serde_json::Value = serde_json::from_str(s).unwrap();
        v["blksim"]["event_digest"].as_str().unwrap().to_string()
    };
    assert_ne!(digest(&a), digest(&c));
}

#[test]
fn every_request_completes_and_memory_is_recycled() {
    let out = run(
        &[
            "--name=a",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=32",
            "--number_ios=50000",
            "--size=1g",
            "--name=b",
            "--rw=write",
            "--bs=64k",
            "--ioengine=libaio",
            "--iodepth=16",
            "--iodepth_batch_submit=8",
            "--size=64m",
        ],
        &["irqmode=2", "completion_nsec=5000"],
    );
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 50_000);
    assert_eq!(out.tasks[1].stats.dir[1].total_ios, 1024);
    // Slabs grow to the peak in flight, not with the I/O count.
    assert!(out.peak_requests <= 64, "{}", out.peak_requests);
}

#[test]
fn stonewall_runs_jobs_one_after_another_in_new_groups() {
    let out = run(
        &[
            "--name=a",
            "--rw=read",
            "--bs=4k",
            "--ioengine=psync",
            "--size=4m",
            "--name=b",
            "--stonewall",
            "--rw=read",
            "--bs=4k",
            "--ioengine=psync",
            "--size=4m",
        ],
        &["irqmode=2", "completion_nsec=10000"],
    );
    assert_eq!(out.tasks[0].groupid, 0);
    assert_eq!(out.tasks[1].groupid, 1);
    assert_eq!(
        out.tasks[1].start_ns, out.tasks[0].end_ns,
        "b starts when a ends"
    );
    assert_eq!(out.tasks[0].end_ns, 1024 * 10_000);
}

#[test]
fn rate_iops_caps_the_job() {
    let out = run(
        &[
            "--name=r",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=8",
            "--rate_iops=5000",
            "--runtime=1",
            "--time_based",
        ],
        &["irqmode=2"],
    );
    let got = iops(&out, 0, 0);
    assert!((got - 5000.0).abs() / 5000.0 < 0.01, "{got}");
}

#[test]
fn thinktime_adds_to_each_io() {
    // psync, 10 µs service + 40 µs think → one I/O per 50 µs.
    let out = run(
        &[
            "--name=t",
            "--rw=read",
            "--bs=4k",
            "--ioengine=psync",
            "--thinktime=40",
            "--runtime=0.1",
            "--time_based",
        ],
        &["irqmode=2", "completion_nsec=10000"],
    );
    let got = iops(&out, 0, 0);
    assert!((got - 20_000.0).abs() / 20_000.0 < 0.01, "{got}");
}

#[test]
fn irqmode_zero_completes_inline() {
    let out = run(
        &[
            "--name=z",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--number_ios=1000",
            "--size=64m",
        ],
        &["irqmode=0"],
    );
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 1000);
    assert_eq!(
        out.end_ns, 0,
        "a zero-time device on a zero-cost platform takes no virtual time"
    );
}

#[test]
fn mbps_throttle_limits_bandwidth() {
    // 100 MiB/s cap with 64 KiB sequential reads.
    let out = run(
        &[
            "--name=b",
            "--rw=read",
            "--bs=64k",
            "--ioengine=libaio",
            "--iodepth=16",
            "--runtime=1",
            "--time_based",
        ],
        &["irqmode=2", "completion_nsec=1000", "mbps=100"],
    );
    let bw = out.tasks[0].stats.dir[0].bw_bytes() as f64;
    let cap = 100.0 * 1024.0 * 1024.0;
    assert!(bw <= cap * 1.03 && bw >= cap * 0.90, "{bw} vs {cap}");
}

/// `iodepth_low`: once the queue is full fio reaps down to the low-water mark before
/// refilling (`wait_for_completions`), so the depths recorded at submission spread below
/// iodepth; without it fio refills after every reap and records iodepth.
#[test]
fn iodepth_low_drains_before_refilling() {
    let share_at_16 = |extra: &[&str]| {
        let mut args = vec![
            "--name=l",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=16",
            "--number_ios=16000",
            "--size=256m",
        ];
        args.extend_from_slice(extra);
        let out = run(&args, &["irqmode=2", "completion_nsec=10000"]);
        let m = &out.tasks[0].stats.io_u_map;
        m[4] as f64 / m.iter().sum::<u64>() as f64
    };
    let full = share_at_16(&[]);
    let low = share_at_16(&["--iodepth_low=4"]);
    assert!(full > 0.99, "{full}");
    assert!(low < 0.2, "{low}");
}
