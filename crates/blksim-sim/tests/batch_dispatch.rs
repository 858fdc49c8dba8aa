//! CPUs, locks and batch dispatch (blk-mq-sched.c `__blk_mq_do_dispatch_sched`;
//! repro/measurements.md §3).
//!
//! The `null_blk-server` platform's CPU costs are fitted on the MAINLINE row of
//! measurements §3 only (`elv_handoff_ns` on mq-deadline 263k, `elv_cold_line_ns` on bfq
//! 124k IOPS); the batch row is what the mechanism (one elevator-lock hold per 8 dispatched
//! requests, so one cold elevator footprint per 8 dispatches) predicts.

mod common;
use blksim_sim::engine::SimOutput;
use blksim_sim::setup::RunOptions;
use common::run_on;

/// The §3 fio job (repro/section3/section3.fio) with a short runtime: the figures are
/// steady-state rates, reached within a few milliseconds of simulated time.
fn section3(sched: &str, batch: u32, runtime: &str) -> SimOutput {
    let rt = format!("--runtime={runtime}");
    let s = format!("queue.scheduler={sched}");
    let b = format!("queue.sched_batch_dispatch={batch}");
    run_on(
        "null_blk-server",
        &[
            "--name=test",
            "--filename=/dev/nullb0",
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=32",
            "--numjobs=16",
            "--iodepth_batch_submit=8",
            "--iodepth_batch_complete=8",
            "--direct=1",
            "--ioengine=io_uring",
            "--group_reporting",
            "--time_based",
            &rt,
        ],
        &[&s, &b],
        &RunOptions::default(),
    )
}

fn total_iops(out: &SimOutput) -> f64 {
    (0..out.tasks.len()).map(|t| common::iops(out, t, 1)).sum()
}

#[test]
fn zero_cost_platform_batch_and_mainline_give_the_same_iops() {
    for sched in ["mq-deadline", "bfq"] {
        let run = |batch: &str| {
            let s = format!("queue.scheduler={sched}");
            let b = format!("queue.sched_batch_dispatch={batch}");
            run_on(
                "null_blk",
                &[
                    "--name=r",
                    "--rw=randread",
                    "--bs=4k",
                    "--ioengine=libaio",
                    "--direct=1",
                    "--iodepth=32",
                    "--numjobs=2",
                    "--iodepth_batch_submit=8",
                    "--runtime=0.05",
                    "--time_based",
                ],
                &["irqmode=2", "completion_nsec=10000", &s, &b],
                &RunOptions::default(),
            )
        };
        let (m, b) = (run("0"), run("8"));
        let (im, ib) = (common::iops(&m, 0, 0), common::iops(&b, 0, 0));
        assert!(im > 0.0);
        assert_eq!(im, ib, "{sched}: zero-cost platform, mainline vs batch");
        assert_eq!(m.blk.ios, b.blk.ios, "{sched}");
    }
}

#[test]
fn concurrent_one_at_a_time_dispatch_reorders_and_batch_does_not() {
    for sched in ["mq-deadline", "bfq"] {
        let m = section3(sched, 0, "0.005");
        let b = section3(sched, 8, "0.005");
        let n = m.blk.ios[1];
        println!(
            "{sched}: dispatch inversions mainline {} of {n} requests, batch {} of {}",
            m.blk.dispatch_inversions, b.blk.dispatch_inversions, b.blk.ios[1]
        );
        assert!(
            m.blk.dispatch_inversions * 50 > n,
            "{sched}: several CPUs pulling one request per lock hold must reorder (got {} of {n})",
            m.blk.dispatch_inversions
        );
        assert_eq!(
            b.blk.dispatch_inversions, 0,
            "{sched}: batch dispatch keeps order"
        );
    }
}

/// Published (measurements §3, v1 of the series) vs simulated.
fn check_section3(sched: &str, pub_main: f64, pub_batch: f64, check_batch: bool) {
    let m = total_iops(&section3(sched, 0, "0.02"));
    let b = total_iops(&section3(sched, 8, "0.02"));
    let (pr, sr) = (pub_batch / pub_main, b / m);
    println!(
        "| {sched:<11} | mainline | {:>5.0}k | {:>5.0}k | {:+.0}% |",
        pub_main / 1e3,
        m / 1e3,
        (m / pub_main - 1.0) * 100.0
    );
    println!(
        "| {sched:<11} | batch=8  | {:>5.0}k | {:>5.0}k | {:+.0}% |",
        pub_batch / 1e3,
        b / 1e3,
        (b / pub_batch - 1.0) * 100.0
    );
    println!(
        "| {sched:<11} | ratio    | {pr:>6.2} | {sr:>6.2} | {:+.0}% |",
        (sr / pr - 1.0) * 100.0
    );
    // Fitted row.
    assert!(
        (m / pub_main - 1.0).abs() <= 0.25,
        "{sched} mainline {m:.0} vs {pub_main}"
    );
    if check_batch {
        // Predicted row: ratio within ±15%, absolute within ±25%.
        assert!(
            (sr / pr - 1.0).abs() <= 0.15,
            "{sched} ratio {sr:.2} vs {pr:.2}"
        );
        assert!(
            (b / pub_batch - 1.0).abs() <= 0.25,
            "{sched} batch {b:.0} vs {pub_batch}"
        );
    }
}

#[test]
fn section3_mq_deadline_batch_dispatch() {
    check_section3("mq-deadline", 263e3, 475e3, true);
}

/// bfq gains more than mq-deadline because its `dispatch_request` touches far more elevator
/// state (bfqd, the in-service queue, the B-WF2Q+ entities and service trees) than its
/// per-bio merge lookup: mainline pays that cold footprint on almost every dispatch (the lock
/// comes from another CPU), batch once per 8 (`platform.elv_cold_lines_*`).
#[test]
fn section3_bfq_batch_dispatch() {
    check_section3("bfq", 124e3, 292e3, true);
}

/// The bfq mainline row is fitted and must hold.
#[test]
fn section3_bfq_mainline_fit() {
    check_section3("bfq", 124e3, 292e3, false);
}
