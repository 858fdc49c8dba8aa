//! fio's option semantics as fio 3.33 (Debian's) gives them: each case states what fio does,
//! from its source, and was run against that fio (the null engine or libaio on a file).

mod common;
use common::*;

/// 4 KiB random reads through libaio, with `extra` options.
fn reads<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["--name=t", "--rw=randread", "--bs=4k", "--ioengine=libaio"];
    a.extend_from_slice(extra);
    a
}

/// `ramp_time`: when the ramp ends fio's `reset_io_stats` clears the I/O depth, submit and
/// complete histograms with the I/O counts, so "IO depths" sums to the I/Os counted after
/// the ramp (fio 3.33, libaio QD8, 1 s ramp and 1 s run: 8=100.0%).
#[test]
fn ramp_time_clears_the_depth_histograms() {
    let out = run(
        &reads(&[
            "--iodepth=8",
            "--ramp_time=100ms",
            "--runtime=100ms",
            "--time_based",
        ]),
        &["irqmode=2"],
    );
    let s = &out.tasks[0].stats;
    let counted = s.dir[0].total_ios;
    let depth_marks: u64 = s.io_u_map.iter().sum();
    assert!(counted > 10_000, "{counted}");
    // The marks are made at submission, the counts at completion: they differ by the I/Os
    // in flight at either end of the counted span.
    assert!(
        depth_marks.abs_diff(counted) <= 16,
        "{depth_marks} depth marks for {counted} I/Os counted"
    );
    let completes: u64 = s.io_u_complete.iter().sum();
    assert_eq!(completes, s.total_complete);
    assert!(
        s.total_complete <= counted + 8,
        "{} reaps",
        s.total_complete
    );
}

/// `iodepth_low=0` is `iodepth` (`fixup_options`: "if (o->iodepth_low > o->iodepth ||
/// !o->iodepth_low) o->iodepth_low = o->iodepth"): fio refills as soon as one I/O is reaped
/// and keeps QD8 full (fio 3.33: 8=99.7%), where draining to 0 would spread the depths.
#[test]
fn iodepth_low_zero_is_iodepth() {
    let depths = |low: &str| {
        let out = run(
            &reads(&["--iodepth=8", low, "--number_ios=4000"]),
            &["irqmode=2"],
        );
        out.tasks[0].stats.io_u_map
    };
    let unset = depths("--iodepth_low=8");
    assert_eq!(depths("--iodepth_low=0"), unset);
    let total: u64 = unset.iter().sum();
    assert!(unset[3] * 100 >= total * 99, "{unset:?}");
}

/// `time_based` without a runtime: fio's `fixup_options` says "fio: time_based requires a
/// runtime/timeout setting", turns it off and runs the job by its size (fio 3.33: 1024 I/Os
/// for 4 MiB of 4 KiB reads). A runtime given later still makes it time-based.
#[test]
fn time_based_without_runtime_runs_by_size() {
    let args = reads(&["--iodepth=8", "--size=4m", "--time_based"]);
    let j = jobs(&args);
    assert!(!j.jobs[0].time_based);
    assert!(
        j.jobs[0]
            .notes
            .iter()
            .any(|n| n.contains("time_based requires a runtime")),
        "{:?}",
        j.jobs[0].notes
    );
    let out = run(&args, &["irqmode=2"]);
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 1024);
    let mut timed = args.to_vec();
    timed.push("--runtime=50ms");
    let j = jobs(&timed);
    assert!(j.jobs[0].time_based && j.jobs[0].notes.is_empty());
    let out = run(&timed, &["irqmode=2"]);
    assert!(out.tasks[0].stats.dir[0].total_ios > 1024);
}

/// A job that replays a log and writes one: fio's `fixup_options` says "fio: read iolog
/// overrides write_iolog" and writes no file; blksim writes it (the replay's simulated
/// times) and says how it differs from fio.
#[test]
fn read_iolog_with_write_iolog_is_noted() {
    let j = jobs(&["--name=r", "--read_iolog=a.log", "--write_iolog=b.log"]);
    assert_eq!(j.jobs[0].write_iolog.as_deref(), Some("b.log"));
    assert!(
        j.jobs[0]
            .notes
            .iter()
            .any(|n| n == blksim_job::options::READ_IOLOG_WRITE_NOTE),
        "{:?}",
        j.jobs[0].notes
    );
    let j = jobs(&["--name=w", "--write_iolog=b.log"]);
    assert_eq!(j.jobs[0].write_iolog.as_deref(), Some("b.log"));
}

fn total_ios(args: &[&str]) -> u64 {
    let out = run(args, &["irqmode=2"]);
    out.tasks[0].stats.dir[0].total_ios
}

/// fio rates bytes (`__setup_rate`: `rate_iops` × the smallest block size), and due times
/// follow the bytes issued since the rate clock started (`usec_for_io`), so a job that fell
/// behind catches up. fio 3.33, 4 KiB reads at `rate_iops=100`: 200 I/Os in 2 s; with
/// `bssplit=4k/50:64k/50` 24, as 400 KiB/s buys; with a 50 ms think time every 10 blocks
/// 400 in 4 s (the think time is caught up); with a 1 s ramp 200 in the 2 s after it (the
/// ramp's end restarts the rate clock).
#[test]
fn rate_iops_rates_bytes_and_catches_up() {
    let job = |extra: &[&str], runtime: &str| {
        let mut a = vec![
            "--name=t",
            "--rw=randread",
            "--ioengine=libaio",
            "--rate_iops=100",
            "--time_based",
            runtime,
        ];
        a.extend_from_slice(extra);
        total_ios(&a)
    };
    assert_eq!(job(&["--bs=4k"], "--runtime=2"), 200);
    let mixed = job(&["--bssplit=4k/50:64k/50"], "--runtime=2");
    assert!((20..=28).contains(&mixed), "{mixed}");
    let think = ["--bs=4k", "--thinktime=50ms", "--thinktime_blocks=10"];
    assert_eq!(job(&think, "--runtime=4"), 400);
    assert_eq!(job(&["--bs=4k", "--ramp_time=1"], "--runtime=2"), 200);
}

/// `thinktime_blocks_type` (`handle_thinktime`): fio 3.33 counts completed I/Os by default
/// and issued ones with `issue`, and notes the count before it waits for the I/Os in flight
/// (`io_u_quiesce`), whose completions then count toward the next think time. QD8, a 10 ms
/// think time every 4 blocks, 1 s (fio 3.33 on this machine, whose sleeps overshoot by
/// about 4 %: 529 and 384): `issue` is 4 I/Os per think time, 400; `complete` about 550.
/// The ramp's end zeroes the counter but not the count noted (`reset_all_stats`), so after
/// a 1 s ramp of one 10 ms think time per I/O the next 100 I/Os go without thinking: 200
/// in the second after the ramp (fio: 195).
#[test]
fn thinktime_blocks_count_completions_by_default() {
    let job = |extra: &[&str]| {
        let mut a = reads(&["--thinktime=10ms", "--runtime=1", "--time_based"]);
        a.extend_from_slice(extra);
        total_ios(&a)
    };
    let qd8 = ["--iodepth=8", "--thinktime_blocks=4"];
    let issue = job(&[&qd8[..], &["--thinktime_blocks_type=issue"]].concat());
    assert_eq!(issue, 400);
    let complete = job(&qd8);
    assert!((520..=560).contains(&complete), "{complete}");
    let ramped = job(&["--iodepth=1", "--ramp_time=1"]);
    assert!((199..=201).contains(&ramped), "{ramped}");
    assert_eq!(job(&["--iodepth=1"]), 100);
}

/// `number_ios` counts from the ramp's end: `exceeds_number_ios` reads `io_blocks`, which
/// `reset_all_stats` zeroes then. fio 3.33, `number_ios=1500 rate_iops=1000 ramp_time=1`:
/// 1500 I/Os reported (1000 more ran in the ramp).
#[test]
fn number_ios_counts_from_the_ramps_end() {
    let args = reads(&["--number_ios=1500", "--rate_iops=1000"]);
    assert_eq!(total_ios(&args), 1500);
    assert_eq!(total_ios(&[&args[..], &["--ramp_time=1"]].concat()), 1500);
    // I/Os in flight when the ramp ends complete into the report and count toward
    // `number_ios`, never past it (found by the fuzzer: 18 reported for 17). 1 ms I/Os, so
    // that the job outlasts its 1 ms ramp.
    for depth in ["--iodepth=1", "--iodepth=8"] {
        let short = reads(&[depth, "--ramp_time=1ms", "--number_ios=17"]);
        let out = run(&short, &["irqmode=2", "completion_nsec=1000000"]);
        assert_eq!(out.tasks[0].stats.dir[0].total_ios, 17, "{depth}");
    }
    // With the CPU model the I/O loop sees the ramp's end a little after the completions
    // at that time: what the report counts must still be what number_ios counts.
    let args = reads(&["--iodepth=64", "--ramp_time=100us", "--number_ios=20000"]);
    let out = run_on("null_blk-server", &args, &[], &Default::default());
    assert_eq!(out.tasks[0].stats.dir[0].total_ios, 20000);
}

/// A mixed job with a rate per direction: `rate_ddir` lets the direction that is due go
/// when the rwmix choice is ahead of its rate, so each direction gets its own rate. fio
/// 3.33, `rw=randrw rate_iops=100,500`, 2 s: 200 reads and 1000 writes (it was 200 and
/// about 210 before the switch was modelled).
#[test]
fn each_direction_of_a_mixed_job_gets_its_rate() {
    let out = run(
        &[
            "--name=t",
            "--rw=randrw",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--rate_iops=100,500",
            "--runtime=2",
            "--time_based",
        ],
        &["irqmode=2"],
    );
    let s = &out.tasks[0].stats;
    assert_eq!((s.dir[0].total_ios, s.dir[1].total_ios), (200, 1000));
}

/// Ahead of its rate, fio works out how long to sleep, waits for every I/O in flight, then
/// sleeps all of it (`rate_ddir`: `usec`, then `io_u_quiesce`, then `usec_sleep`), in the
/// default `io_submit_mode=inline`. 1000 IOPS on a 3 ms device at QD8: I/O 0 at 0; I/O 1 is
/// due at 1 ms, so fio drains until 3 ms and sleeps 1 ms; at 4 ms I/Os 1 to 4 are due and go
/// together; and so on every 4 ms. The depths are 1, 2, 3, 4 (25 %, 50 % at 2-3, 25 % at 4)
/// and the rate holds. With `offload` the rate is kept without waiting: one I/O a
/// millisecond, and the queue never drains again after the first.
#[test]
fn a_rate_sleep_waits_for_the_io_in_flight() {
    let job = |mode: &str| {
        let out = run(
            &reads(&[
                "--iodepth=8",
                "--rate_iops=1000",
                "--runtime=1",
                "--time_based",
                mode,
            ]),
            &["irqmode=2", "completion_nsec=3000000"],
        );
        let s = &out.tasks[0].stats;
        (s.io_u_map, s.dir[0].total_ios)
    };
    let (m, n) = job("--io_submit_mode=inline");
    let total: u64 = m.iter().sum();
    assert!(m[3..].iter().all(|&x| x == 0), "{m:?}");
    assert!(
        m[0].abs_diff(total / 4) <= 2 && m[2].abs_diff(total / 4) <= 2,
        "{m:?}"
    );
    assert!((995..=1001).contains(&n), "{n}");
    let (m, n) = job("--io_submit_mode=offload");
    assert_eq!(m[0], 1, "{m:?}");
    assert!((995..=1001).contains(&n), "{n}");
}

/// Each `loops` pass is one `do_io` in fio: it drains its I/O (and runs `end_fsync`) before
/// the next pass starts, so the depth climbs again each pass. fio 3.33, `rw=read size=64k
/// bs=4k loops=4 iodepth=8`: 1=6.2%, 2=12.5%, 4=25.0%, 8=56.2% (4, 8 and 16 of 64 I/Os in
/// the first three buckets, the rest at 8); three passes of writes with `end_fsync` give
/// three fsyncs.
#[test]
fn each_loops_pass_drains_and_syncs() {
    let out = run(
        &[
            "--name=t",
            "--rw=read",
            "--bs=4k",
            "--size=64k",
            "--loops=4",
            "--iodepth=8",
            "--ioengine=libaio",
        ],
        &["irqmode=2"],
    );
    assert_eq!(out.tasks[0].stats.io_u_map, [4, 8, 16, 36, 0, 0, 0]);
    let out = run(
        &[
            "--name=t",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--loops=3",
            "--iodepth=8",
            "--ioengine=libaio",
            "--end_fsync=1",
        ],
        &["irqmode=2"],
    );
    assert_eq!(out.blk.flushes_elided, 3);
    // One pass: one `end_fsync`, also when the file runs out in the middle of a batch.
    let out = run(
        &[
            "--name=t",
            "--rw=randwrite",
            "--bs=4k",
            "--size=66k",
            "--iodepth=8",
            "--ioengine=libaio",
            "--end_fsync=1",
        ],
        &["irqmode=2"],
    );
    assert_eq!(out.blk.flushes_elided, 1);
}

/// `do_verify` reads back without think time or rate (`handle_thinktime` and `rate_ddir`
/// are `do_io`'s): 16 writes with a 10 ms think time each take 160 ms, and the read-back
/// adds no more (fio 3.33: 161 ms).
#[test]
fn a_verify_read_back_does_not_think() {
    let out = run(
        &[
            "--name=t",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--ioengine=libaio",
            "--thinktime=10ms",
            "--verify=crc32c",
        ],
        &["irqmode=2"],
    );
    let t = &out.tasks[0];
    let ms = (t.end_ns - t.start_ns) / 1_000_000;
    assert!((160..=162).contains(&ms), "{ms} ms");
}

/// A sync is marked in "IO depths" like an I/O (`td_io_queue` → `io_u_mark_depth`), and
/// the percentages divide by the read, write and trim I/Os only: fio 3.33, psync with
/// `fsync=3`, 300 writes: `1=133.0%` (399 marks).
#[test]
fn syncs_count_in_the_depth_histogram() {
    let out = run(
        &[
            "--name=t",
            "--rw=randwrite",
            "--bs=4k",
            "--ioengine=psync",
            "--fsync=3",
            "--number_ios=300",
        ],
        &["irqmode=2"],
    );
    let s = &out.tasks[0].stats;
    assert_eq!(s.dir[1].total_ios, 300);
    // 99 syncs: none after the last write, which has no next I/O to turn into one.
    assert_eq!(s.io_u_map[0], 399, "{:?}", s.io_u_map);
}

/// `trimwrite` trims each block and then writes it, and fio's `do_io` doubles `number_ios`
/// for it: `number_ios=10` is 10 trims and 10 writes (fio 3.33: `total=0,10,10,0`).
#[test]
fn trimwrite_doubles_number_ios() {
    let out = run(
        &[
            "--name=t",
            "--rw=trimwrite",
            "--bs=4k",
            "--ioengine=libaio",
            "--number_ios=10",
        ],
        &["irqmode=2"],
    );
    let s = &out.tasks[0].stats;
    assert_eq!((s.dir[1].total_ios, s.dir[2].total_ios), (10, 10));
}

/// A job that stops inside its `ramp_time` (by `size` here) never reaches `ramp_time_over`,
/// so fio never runs `reset_all_stats`: it reports its I/O, runtime, depths and CPU from its
/// start, and no latency, which fio takes only once the ramp is over (`should_account`).
/// fio 3.33, `ioengine=null size=1m bs=4k ramp_time=5`: "read: IOPS=256k, BW=1000MiB/s
/// (1024KiB/1msec)", no clat lines, "issued rwts: total=256".
#[test]
fn a_job_that_ends_in_its_ramp_reports_it_all() {
    let run_job = |ramp: &str| {
        let a = reads(&["--size=8m", "--iodepth=4", ramp]);
        run_on("null_blk-server", &a, &[], &Default::default())
    };
    let plain = run_job("--ramp_time=0");
    let ramped = run_job("--ramp_time=10s");
    let (a, b) = (&plain.tasks[0].stats, &ramped.tasks[0].stats);
    assert_eq!(b.dir[0].io_bytes, 8 << 20);
    assert_eq!(b.dir[0].total_ios, 2048);
    assert!(a.dir[0].runtime_ms > 0);
    assert_eq!(b.dir[0].runtime_ms, a.dir[0].runtime_ms);
    assert_eq!(b.total_run_time_ms, a.total_run_time_ms);
    assert_eq!(b.io_u_map, a.io_u_map);
    assert_eq!(b.io_u_submit, a.io_u_submit);
    assert_eq!(b.io_u_complete, a.io_u_complete);
    assert!(a.ctx > 0, "the CPU model switches the task in");
    assert_eq!(
        (b.sys_time_ms, b.usr_time_ms, b.ctx),
        (a.sys_time_ms, a.usr_time_ms, a.ctx)
    );
    assert_eq!(a.dir[0].clat.samples, 2048);
    assert_eq!(b.dir[0].clat.samples, 0);
    assert_eq!(b.io_u_lat_u.iter().sum::<u64>(), 0);
    // The same job stopped just after its ramp counts only what completed after it.
    let ms = a.dir[0].runtime_ms;
    let late = run_job(&format!("--ramp_time={}us", ms * 500));
    let c = &late.tasks[0].stats;
    assert!(
        c.dir[0].total_ios > 0 && c.dir[0].total_ios < 2048,
        "{}",
        c.dir[0].total_ios
    );
    assert_eq!(c.dir[0].clat.samples, c.dir[0].total_ios);
}

/// Inside the ramp `exceeds_number_ios` counts every I/O since the job's start (`io_blocks`
/// is zeroed only when the ramp ends), so a job that reaches `number_ios` in its ramp stops
/// there and, never reset, reports them all. fio 3.33, `ioengine=null number_ios=100
/// ramp_time=5 size=1m`: "issued rwts: total=100".
#[test]
fn number_ios_reached_in_the_ramp_ends_the_job() {
    for depth in ["--iodepth=1", "--iodepth=8"] {
        let args = reads(&[depth, "--number_ios=100", "--ramp_time=10s"]);
        let out = run(&args, &["irqmode=2"]);
        let s = &out.tasks[0].stats;
        assert_eq!(s.dir[0].total_ios, 100, "{depth}");
        assert_eq!(s.dir[0].clat.samples, 0, "{depth}");
        assert!(out.tasks[0].end_ns < 10_000_000_000, "{depth}");
    }
}

/// `exitall_on_error`: a job that ends with an error ends the jobs of its group
/// (`thread_main` → `fio_terminate_threads(td->groupid, exit_what)`), without `exitall`; a
/// job that ends without one ends nothing. Here an unaligned O_DIRECT read fails at once
/// (EINVAL) and a rated job of the same group stops with it.
#[test]
fn exitall_on_error_ends_the_group_of_a_failed_job() {
    let ios = |on_error: &str, bs: &str| {
        let bs = format!("--bs={bs}");
        let out = run(
            &[
                "--name=bad",
                "--rw=read",
                &bs,
                "--direct=1",
                "--ioengine=psync",
                "--number_ios=1",
                on_error,
                "--name=rated",
                "--rw=read",
                "--bs=4k",
                "--rate_iops=1000",
                "--number_ios=100",
            ],
            &["irqmode=2"],
        );
        (out.tasks[0].error, out.tasks[1].stats.dir[0].total_ios)
    };
    // fio 3.33 on a file on ext4: the rated job ends with 0 I/Os (its first had not gone
    // out when the other failed); here both start at 0 and its first goes out first.
    let (err, n) = ios("--exitall_on_error", "1000");
    assert!(err == 22 && n <= 1, "{err} {n}");
    assert_eq!(ios("--exitall_on_error=0", "1000"), (22, 100));
    assert_eq!(ios("--exitall_on_error", "4k"), (0, 100));
}

/// `prioclass`: fio sets the job's I/O priority with ioprio_set(2) and every bio carries
/// it (`bio_set_ioprio`). mq-deadline dispatches a higher class first (`dd_dispatch_request`
/// walks the RT, BE and IDLE queues in order; a lower class goes only when the higher ones
/// are empty, or its requests waited `prio_aging_expire`, 10 s). Two saturating jobs on a
/// slow queue of depth 4: the real-time one takes the device, the best-effort one gets
/// only what went out before the real-time queue filled. `none` has no classes: the
/// best-effort job gets its share of the driver tags.
#[test]
fn prioclass_orders_mq_deadline_dispatch() {
    let run_with = |sched: &str| {
        let s = format!("--ioscheduler={sched}");
        let out = run(
            &[
                "--name=rt",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=libaio",
                "--iodepth=32",
                "--direct=1",
                "--runtime=200ms",
                "--time_based",
                "--prioclass=1",
                &s,
                "--name=be",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=libaio",
                "--iodepth=32",
                "--direct=1",
                "--runtime=200ms",
                "--time_based",
                "--prioclass=2",
                &s,
            ],
            &[
                "irqmode=2",
                "completion_nsec=100000",
                "hw_queue_depth=4",
                "submit_queues=1",
            ],
        );
        (
            out.tasks[0].stats.dir[0].total_ios,
            out.tasks[1].stats.dir[0].total_ios,
        )
    };
    // 4 in flight for 100 µs each: 40k I/O/s over 200 ms.
    let (rt, be) = run_with("mq-deadline");
    assert!(rt + be >= 7_900 && rt + be <= 8_100, "{rt} + {be}");
    assert!(be <= 40, "best effort got {be} next to {rt} real-time I/Os");
    let (a, b) = run_with("none");
    assert!(b * 5 >= a + b, "none: {a} against {b}");
}

/// `cmdprio_percentage`: libaio gives that share of its I/Os real-time priority
/// (`fio_cmdprio_set_ioprio`, `IOCB_FLAG_IOPRIO`), and fio keeps each priority's latencies
/// apart. One job at depth 32 on a queue of depth 4 with 100 µs per I/O: under mq-deadline
/// the real-time reads go out ahead of the best-effort ones waiting with them
/// (`dd_dispatch_request`), so they wait for little more than the four in flight, where
/// the others wait for the queue; under `none` both wait alike.
#[test]
fn cmdprio_percentage_gives_its_share_priority() {
    let run_with = |sched: &str| {
        let s = format!("--ioscheduler={sched}");
        let out = run(
            &reads(&[
                "--iodepth=32",
                "--direct=1",
                "--runtime=200ms",
                "--time_based",
                "--cmdprio_percentage=25",
                &s,
            ]),
            &[
                "irqmode=2",
                "completion_nsec=100000",
                "hw_queue_depth=4",
                "submit_queues=1",
            ],
        );
        let d = &out.tasks[0].stats.dir[0];
        assert_eq!(
            d.prios.len(),
            2,
            "{sched}: the job's own and the real-time one"
        );
        let (be, rt) = (&d.prios[0], &d.prios[1]);
        assert_eq!((be.ioprio, rt.ioprio), (0, 1 << 13), "{sched}");
        assert_eq!(be.lat.samples + rt.lat.samples, d.clat.samples, "{sched}");
        let share = rt.lat.samples as f64 / d.clat.samples as f64;
        assert!((0.22..0.28).contains(&share), "{sched}: {share}");
        (be.lat.mean, rt.lat.mean)
    };
    let (be, rt) = run_with("mq-deadline");
    assert!(
        rt * 3.0 < be,
        "mq-deadline: real time {rt} ns, best effort {be} ns"
    );
    let (be, rt) = run_with("none");
    assert!(
        (rt / be - 1.0).abs() < 0.2,
        "none: real time {rt} ns, best effort {be} ns"
    );
}

/// `cmdprio_*` are libaio's and io_uring's options (fio's "Bad option" under another
/// engine), `cmdprio_percentage` and `cmdprio_bssplit` exclude each other, and one block
/// size's percentages may not pass 100 (`fio_cmdprio_init`, `fio_cmdprio_fill_bsprio`).
#[test]
fn cmdprio_options_are_refused_as_fio_refuses_them() {
    for (args, want) in [
        (
            vec!["--ioengine=psync", "--cmdprio_percentage=10"],
            "'cmdprio_percentage' is an option of ioengine=libaio or ioengine=io_uring",
        ),
        (
            vec![
                "--ioengine=libaio",
                "--cmdprio_percentage=10",
                "--cmdprio_bssplit=4k/10",
            ],
            "mutually exclusive",
        ),
        (
            vec![
                "--ioengine=io_uring",
                "--cmdprio_bssplit=4k/60:8k/10:4k/50/1/0",
            ],
            "total percentage for bs: 4096 exceeds 100",
        ),
        (
            vec!["--ioengine=libaio", "--cmdprio_class=4"],
            "out of range",
        ),
        (
            vec!["--ioengine=libaio", "--cmdprio_bssplit=4k/1/2"],
            "invalid cmdprio_bssplit entry",
        ),
    ] {
        let mut a = vec!["--name=t", "--rw=randread", "--bs=4k"];
        a.extend(args.iter().copied());
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        let err = blksim_job::parse_cli(&args)
            .map(|_| ())
            .expect_err(&format!("{a:?} was accepted"));
        assert!(err.to_string().contains(want), "{a:?}: {err}");
    }
}

/// `latency_target`: on a queue of depth 4 with 100 µs per I/O, an I/O's latency is 100 µs
/// per round of four ahead of it, so a 260 µs target holds for every I/O up to depth 8, for
/// half of them at depth 10 and a quarter at 9, and for none from 11 (fio's windows judge
/// the share under the target). fio's search (`lat_target_check`) finds the deepest depth
/// whose windows are good: 8 when 90 % must be under it, 10 when half must; it then runs one
/// more window at that depth, reports only that window, and ends. That window obeys
/// Little's law at the depth found. A target under the device's 100 µs fails at depth 1: the
/// first I/O ends the job with ETIMEDOUT (`lat_fatal`).
#[test]
fn latency_target_finds_the_deepest_queue_under_it() {
    let sets = [
        "irqmode=2",
        "completion_nsec=100000",
        "hw_queue_depth=4",
        "submit_queues=1",
    ];
    // The second case starts 1 s in: its first window starts with it (`lat_target_init`).
    for (pct, depth, delay) in [("90", 8, "0"), ("50", 10, "1")] {
        let p = format!("--latency_percentile={pct}");
        let delay = format!("--startdelay={delay}");
        let out = run(
            &reads(&[
                "--iodepth=32",
                "--direct=1",
                "--time_based",
                "--runtime=2",
                "--latency_target=260us",
                "--latency_window=20ms",
                &p,
                &delay,
            ]),
            &sets,
        );
        let t = &out.tasks[0];
        assert_eq!((t.error, t.latency_depth), (0, Some(depth)), "{pct} %");
        let d = &t.stats.dir[0];
        // Only the final window is reported: 20 ms and what was in flight at its end.
        assert!(
            (20..=21).contains(&d.runtime_ms),
            "{pct} %: {}",
            d.runtime_ms
        );
        // Ten windows of 20 ms each way (1, 2, 4, 8, 16, 12, 10, then 9 and 8 or 11 and 10,
        // and the final one), and the waits for the I/Os in flight after bad ones.
        let ms = (t.end_ns - t.start_ns) as f64 / 1e6;
        assert!((200.0..202.0).contains(&ms), "{pct} %: ran {ms} ms");
        // (The report's IOPS divide by whole ms: the window's own length here.)
        let window = (t.end_ns - t.stats.start_ns) as f64;
        let little = d.total_ios as f64 * d.lat.mean / window;
        assert!(
            (little - depth as f64).abs() < 0.05 * depth as f64,
            "{pct} %: {little} in flight at depth {depth}"
        );
        if pct == "90" {
            assert!(d.lat.max <= 260_000, "{}", d.lat.max);
        }
    }
    let out = run(
        &reads(&[
            "--iodepth=32",
            "--direct=1",
            "--time_based",
            "--runtime=2",
            "--latency_target=50us",
        ]),
        &sets,
    );
    let t = &out.tasks[0];
    assert_eq!((t.error, t.stats.dir[0].total_ios), (110, 1));
    assert_eq!(out.fatal_errors[0].exceeded, Some((100_000, 50_000)));
}

/// `rate_iops_min`: a job that thinks 2 ms per I/O does 500 a second; `check_min_rate`
/// starts counting 2 s in and fails it at the next `rate_cycle` (1 s): EIO at 3 s. Under
/// `exitall` it ends its group's other jobs then (`fio_terminate_threads` before the
/// `td_verror`).
#[test]
fn rate_iops_min_ends_a_slow_job_and_exitall_its_group() {
    let out = run(
        &[
            "--name=slow",
            "--rw=read",
            "--bs=4k",
            "--thinktime=2ms",
            "--rate_iops_min=1000",
            "--time_based",
            "--runtime=10",
            "--exitall",
            "--name=other",
            "--rw=read",
            "--bs=4k",
            "--rate_iops=100",
            "--time_based",
            "--runtime=10",
        ],
        &[],
    );
    let (slow, other) = (&out.tasks[0], &out.tasks[1]);
    assert_eq!(slow.error, 5);
    // 2 ms and the I/O's own few µs per I/O.
    assert_eq!(slow.rate_failures.len(), 1);
    let got: u64 = slow.rate_failures[0]
        .strip_prefix("slow: rate_iops_min=1000 not met, got ")
        .and_then(|r| r.strip_suffix(" IOPS"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{:?}", slow.rate_failures));
    assert!((490..=500).contains(&got), "{got}");
    let ms = |t: &blksim_sim::engine::TaskResult| (t.end_ns - t.start_ns) / 1_000_000;
    // The check follows the think time after the I/O that passed 3 s, as in `do_io`.
    assert!((3000..=3004).contains(&ms(slow)), "{}", ms(slow));
    assert_eq!(other.error, 0);
    assert!((3000..3020).contains(&ms(other)), "{}", ms(other));
}

/// `wait_for`: a job starts when every clone of the named earlier job has ended
/// (`run_threads` → `waitee_running`), in the same group; the others start at once.
#[test]
fn wait_for_starts_a_job_when_its_waitee_ends() {
    let out = run(
        &[
            "--name=a",
            "--rw=read",
            "--bs=4k",
            "--rate_iops=1000",
            "--number_ios=50",
            "--numjobs=2",
            "--name=b",
            "--wait_for=a",
            "--rw=read",
            "--bs=4k",
            "--number_ios=20",
            "--name=c",
            "--rw=read",
            "--bs=4k",
            "--number_ios=20",
        ],
        &["irqmode=2"],
    );
    let t = &out.tasks;
    let a_end = t[0].end_ns.max(t[1].end_ns);
    assert!(a_end >= 49_000_000, "{a_end}");
    assert_eq!(t[2].start_ns, a_end);
    assert_eq!(t[3].start_ns, 0);
    assert_eq!((t[2].groupid, t[3].groupid), (0, 0));
}

/// `wait_for` that fio's `wait_for_ok` refuses: the job itself, or a name no earlier job has.
#[test]
fn wait_for_refuses_itself_and_unknown_jobs() {
    for (args, want) in [
        (
            &["--name=a", "--wait_for=a"][..],
            "a job cannot wait for itself (wait_for=a)",
        ),
        (
            &["--name=a", "--wait_for=b", "--name=b"][..],
            "waitee job b unknown",
        ),
    ] {
        let j = jobs(args);
        let p = profile("null_blk", &[]);
        let opts = blksim_sim::setup::RunOptions::default();
        let e = match blksim_sim::setup::run(&j, &p, &opts) {
            Ok(_) => panic!("{args:?} ran"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want) && e.contains("wait_for"), "{e}");
    }
}

/// `serialize_overlap`: an io_u that overlaps one in flight waits for completions
/// (`io_u_submit` answers FIO_Q_BUSY before `td_io_queue`). Random 4 KiB writes over
/// 16 KiB at depth 8: never more than the region's 4 blocks in flight (fio's "IO depths"
/// stay at 4 or below), and under the 40k I/O/s that 4 blocks of 100 µs allow, where the
/// same job without it runs at depth 8 and 80k. A read-only job is left alone
/// (`fixup_options` turns the option off for a job that changes no data).
#[test]
fn serialize_overlap_keeps_overlapping_ios_apart() {
    let run_with = |rw: &str, serialize: &str| {
        let rw = format!("--rw={rw}");
        let out = run(
            &[
                "--name=w",
                &rw,
                "--bs=4k",
                "--size=16k",
                "--norandommap",
                "--ioengine=libaio",
                "--iodepth=8",
                "--direct=1",
                "--runtime=50ms",
                "--time_based",
                serialize,
            ],
            &["irqmode=2", "completion_nsec=100000", "hw_queue_depth=64"],
        );
        let s = &out.tasks[0].stats;
        let d = if rw.contains("read") { 0 } else { 1 };
        // io_u_map: depths 1, 2, 4, 8, ...; above 4 is bucket 3 on.
        let over_4: u64 = s.io_u_map[3..].iter().sum();
        (s.dir[d].total_ios as f64 / 0.05, over_4)
    };
    let (serial, over) = run_with("randwrite", "--serialize_overlap=1");
    assert!(
        serial < 40_500.0 && over == 0,
        "{serial} I/O/s, {over} above depth 4"
    );
    let (free, over) = run_with("randwrite", "--serialize_overlap=0");
    assert!(
        (72_000.0..=80_500.0).contains(&free) && over > 0,
        "{free}, {over}"
    );
    let (reads, _) = run_with("randread", "--serialize_overlap=1");
    assert!((72_000.0..=80_500.0).contains(&reads), "{reads}");
}
