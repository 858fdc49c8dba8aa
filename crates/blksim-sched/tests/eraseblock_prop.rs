//! Property test of the `eraseblock` scheduler against the data-integrity oracle.
//!
//! Many seeds; each drives a real [`RequestQueue`] with the elevator over a fake driver that
//! completes requests after random latencies (so completions reorder freely), with random
//! overlapping reads, writes and flushes concentrated on a few small erase blocks (so groups,
//! gap reads, folds and held-back writes happen all the time). Every run must end with zero
//! mismatches, every user bio completed exactly once, and the block layer quiescent. With the
//! newest-data rule deliberately broken (`debug_break_newer_writes=1`) the same test must find
//! lost writes.

use blksim_block::elevator::ElvParams;
use blksim_block::queue::Submit;
use blksim_block::request::flags;
use blksim_block::testing::{Bench, Ev, FakeDrv};
use blksim_block::{Op, QueueLimits, RequestQueue};
use blksim_core::Rng;

struct Outcome {
    mismatches: u64,
    reads_checked: u64,
    stats: Vec<(&'static str, u64)>,
}

/// One randomized run. Panics on a lost or doubled completion or a non-quiescent end.
fn run(seed: u64, broken: bool) -> Outcome {
    let mut rng = Rng::from_seed(seed);
    // A device with a volatile cache and no FUA: flushes and FUA writes go through the
    // flush machinery (PREFLUSH and POSTFLUSH steps) around the elevator.
    let lim = QueueLimits {
        nr_requests: 256,
        write_cache: true,
        fua: false,
        ..QueueLimits::default()
    };
    // Small erase blocks (32 KiB = 64 sectors) over a 4-block region.
    let p = ElvParams {
        nr_requests: 256,
        queue_depth: 4,
        rotational: false,
        erase_block_bytes: Some(32 * 1024),
        seed,
    };
    let mut elv = blksim_sched::make_elevator_with_limits("eraseblock", &p, &lim)
        .unwrap()
        .unwrap();
    // Costs scaled so that grouping pays for most pairs; a short wait so writes gather.
    for (k, v) in [
        ("write_cost_ms", "100"),
        ("block_write_ms", "120"),
        ("read_base_us", "100"),
        ("read_kib_s", "1000000"),
        ("write_wait_ms", "1"),
    ] {
        elv.set_tunable(k, v).unwrap();
    }
    if broken {
        elv.set_tunable("debug_break_newer_writes", "1").unwrap();
    }
    let mut tag_rng = Rng::from_seed(seed ^ 0x55);
    // Four tags; each request takes 1 us to 3 ms, drawn from its own stream.
    let mut lat_rng = Rng::from_seed(seed ^ 0xabc);
    let mut drv = FakeDrv::new(1, 4, move |_| lat_rng.range_inclusive(1_000, 3_000_000));
    let total_ops = 400u64;
    let mut b = Bench::new(
        RequestQueue::new(lim, Some(elv), 1, 4, 1, &mut tag_rng),
        total_ops as usize,
    );
    let mut submitted = 0u64;
    let mut version = 0u64;
    b.evq.push(0, Ev::Script(0));
    while let Some((now, _)) = b.next_script(&mut drv) {
        // A burst of 1..6 bios, then the next burst after a random pause.
        let burst = rng.range_inclusive(1, 6);
        for _ in 0..burst {
            if submitted >= total_ops || submitted - b.completed >= 48 {
                break;
            }
            let r = rng.below(100);
            // fsync is an empty REQ_OP_WRITE | REQ_PREFLUSH bio (blkdev_issue_flush);
            // O_SYNC writes are REQ_FUA.
            let (op, fl, empty) = if r < 45 {
                (Op::Read, 0, false)
            } else if r < 88 {
                (Op::Write, flags::REQ_SYNC, false)
            } else if r < 93 {
                (Op::Write, flags::REQ_SYNC | flags::REQ_FUA, false)
            } else {
                (Op::Write, flags::REQ_SYNC | flags::REQ_PREFLUSH, true)
            };
            let (sector, nr) = if empty {
                (0, 0)
            } else {
                let nr = rng.range_inclusive(1, 16) as u32;
                (rng.below(256 - nr as u64), nr)
            };
            let v = if op == Op::Write && !empty {
                version += 1;
                version
            } else {
                0
            };
            let mut bio = Bench::bio(submitted, op, fl, sector, nr, now);
            bio.nr_segments = bio.nr_segments.max(1);
            bio.version = v;
            submitted += 1;
            let s = b.submit(&mut drv, bio, now);
            assert_eq!(s, Submit::Done, "seed {seed}: no tag waits expected");
        }
        if submitted < total_ops {
            b.evq
                .push(now + rng.range_inclusive(0, 2_000_000), Ev::Script(0));
        }
    }
    assert_eq!(submitted, total_ops);
    b.check_end();
    let q = &b.q;
    let stats = q.elevator().unwrap().stats();
    Outcome {
        mismatches: q.integrity.mismatches,
        reads_checked: q.integrity.reads_checked,
        stats,
    }
}

fn stat(o: &Outcome, k: &str) -> u64 {
    o.stats.iter().find(|s| s.0 == k).map(|s| s.1).unwrap_or(0)
}

#[test]
fn eraseblock_never_loses_or_reorders_data() {
    let mut totals = [0u64; 5];
    for seed in 1..=150u64 {
        let o = run(seed, false);
        assert_eq!(
            o.mismatches, 0,
            "seed {seed}: integrity mismatches {}",
            o.mismatches
        );
        totals[0] += o.reads_checked;
        totals[1] += stat(&o, "eb_combined_writes");
        totals[2] += stat(&o, "eb_folded_writes");
        totals[3] += stat(&o, "eb_blocked_writes");
        totals[4] += stat(&o, "eb_gap_reads");
    }
    eprintln!(
        "reads checked {}, combined writes {}, folded {}, held back {}, gap reads {}",
        totals[0], totals[1], totals[2], totals[3], totals[4]
    );
    // The races the rule is about must actually have happened.
    assert!(totals[0] > 10_000);
    assert!(totals[1] > 500, "too few combined writes: {}", totals[1]);
    assert!(totals[2] > 50, "too few folded writes: {}", totals[2]);
    assert!(totals[3] > 50, "too few held-back writes: {}", totals[3]);
}

#[test]
fn breaking_the_newer_write_rule_is_caught() {
    let bad = (1..=150u64)
        .filter(|&s| run(s, true).mismatches > 0)
        .count();
    eprintln!("seeds with mismatches when the rule is broken: {bad}/150");
    assert!(bad > 0, "the oracle should catch stale gap data");
}
