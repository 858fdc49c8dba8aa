//! The flush machinery (`block/blk-flush.c`) step by step: what the driver sees and when each
//! submitter's bio completes, for the orders of decisions the kernel documents at the top of
//! blk-flush.c (C1: one flush in flight; C2: no flush while sequenced DATA is in flight; C3:
//! unless a request has waited FLUSH_PENDING_TIMEOUT) and for each queue feature set.

use blksim_block::queue::Submit;
use blksim_block::request::flags;
use blksim_block::stage::Stage;
use blksim_block::testing::{Bench, Ev, FakeDrv, Fifo, Seen};
use blksim_block::{Op, QueueLimits, RequestQueue};
use blksim_core::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};

/// A bio the test submits at a time: (time, flags, sectors) on a write.
type Plan = [(Ns, u32, u32)];

struct Run {
    /// What the driver saw.
    seen: Seen,
    /// The stage intervals the queue reported (`BlkOut::spans`), and its busy intervals.
    stages: Vec<(Stage, Ns, Ns)>,
    busy: Vec<(Ns, Ns)>,
    /// Completion time of each planned bio.
    done: Vec<Ns>,
    q: RequestQueue,
}

/// Run `plan` on a queue with `lim` and 8 tags, with a FIFO elevator or none. Writes take
/// `write_lat`, flushes 100 us.
fn run(lim: QueueLimits, elevator: bool, write_lat: Ns, plan: &Plan) -> Run {
    let mut tag_rng = blksim_core::Rng::from_seed(1);
    let elv: Option<Box<dyn blksim_block::Elevator>> = if elevator {
        Some(Box::new(Fifo::default()))
    } else {
        None
    };
    let q = RequestQueue::new(lim, elv, 1, 8, 1, &mut tag_rng);
    let mut drv = FakeDrv::new(1, 8, move |r| {
        if r.op == Op::Flush {
            100_000
        } else {
            write_lat
        }
    });
    let mut b = Bench::new(q, plan.len());
    b.out.spans.on = true;
    for (i, p) in plan.iter().enumerate() {
        b.evq.push(p.0, Ev::Script(i));
    }
    while let Some((now, i)) = b.next_script(&mut drv) {
        let (_, fl, nr) = plan[i];
        let bio = Bench::bio(
            i as u64,
            Op::Write,
            fl | flags::REQ_SYNC,
            8 * i as u64,
            nr,
            now,
        );
        assert_eq!(b.submit(&mut drv, bio, now), Submit::Done);
    }
    b.check_end();
    Run {
        seen: drv.seen,
        stages: std::mem::take(&mut b.out.spans.stages),
        busy: std::mem::take(&mut b.out.spans.busy),
        done: b.done,
        q: b.q,
    }
}

fn cache(fua: bool) -> QueueLimits {
    QueueLimits {
        write_cache: true,
        fua,
        ..QueueLimits::default()
    }
}

const PF: u32 = flags::REQ_PREFLUSH;
const FUA: u32 = flags::REQ_FUA;
const US: Ns = 1_000;

fn flushes(seen: &Seen) -> Vec<Ns> {
    seen.iter()
        .filter(|s| s.1 == Op::Flush)
        .map(|s| s.0)
        .collect()
}

/// C1 and merging: a flush is in flight when two more fsyncs arrive; they wait and share the
/// next flush. The empty PREFLUSH writes never reach the driver.
#[test]
fn one_flush_in_flight_and_waiting_flushes_merge() {
    let r = run(
        cache(false),
        false,
        50 * US,
        &[(0, PF, 0), (10 * US, PF, 0), (20 * US, PF, 0)],
    );
    assert_eq!(flushes(&r.seen), vec![0, 100 * US]);
    assert!(r.seen.iter().all(|s| s.1 == Op::Flush), "{:?}", r.seen);
    assert_eq!(r.done, vec![100 * US, 200 * US, 200 * US]);
    let s = &r.q.stats;
    assert_eq!(
        (s.flush_rqs_issued, s.flushes_merged, s.flush_ios),
        (2, 1, 2)
    );
    // The three empty PREFLUSH writes are accounted as writes of no sectors.
    assert_eq!((s.ios[1], s.sectors[1]), (3, 0));
    // The report's stage depths see the two flush requests at the driver, as its busy time
    // does (the flush machinery ends them in `flush_end_io`).
    let at_driver: Ns = r
        .stages
        .iter()
        .filter(|x| x.0 == Stage::Driver)
        .map(|x| x.2 - x.1)
        .sum();
    let busy: Ns = r.busy.iter().map(|x| x.1 - x.0).sum();
    assert_eq!((at_driver, busy), (200 * US, 200 * US), "{:?}", r.stages);
}

/// FUA on a device without FUA: the data goes down without REQ_FUA, then a POSTFLUSH; the
/// submitter hears of it only after the flush. With FUA support the driver gets REQ_FUA and
/// there is no flush. Without a write cache, FUA is dropped and an fsync is nothing.
#[test]
fn policy_follows_the_queue_features() {
    let r = run(cache(false), false, 50 * US, &[(0, FUA, 8)]);
    assert_eq!(r.seen.len(), 2);
    assert_eq!((r.seen[0].1, r.seen[0].2 & FUA), (Op::Write, 0));
    assert_eq!(flushes(&r.seen), vec![50 * US]);
    assert_eq!(r.done, vec![150 * US]);

    let r = run(cache(true), false, 50 * US, &[(0, FUA, 8)]);
    assert_eq!(r.seen.len(), 1);
    assert_eq!(r.seen[0].2 & FUA, FUA, "FUA reaches the driver");
    assert_eq!(r.done, vec![50 * US]);

    let r = run(
        QueueLimits::default(),
        false,
        50 * US,
        &[(0, FUA, 8), (0, PF, 0)],
    );
    assert_eq!(r.seen.len(), 1, "{:?}", r.seen);
    assert_eq!(r.seen[0].2 & FUA, 0, "no cache: FUA is dropped");
    assert_eq!(r.done, vec![50 * US, 0]);
    assert_eq!(r.q.stats.flushes_elided, 1);
}

/// C2: while a sequenced FUA write's DATA is in flight no flush is issued, so its POSTFLUSH
/// and an fsync arriving meanwhile share one flush.
#[test]
fn flush_waits_for_sequenced_data_in_flight() {
    let r = run(
        cache(false),
        false,
        50 * US,
        &[(0, FUA, 8), (10 * US, PF, 0)],
    );
    assert_eq!(flushes(&r.seen), vec![50 * US]);
    assert_eq!(r.done, vec![150 * US, 150 * US]);
    assert_eq!(r.q.stats.flushes_merged, 1);
}

/// C3: a request that has waited FLUSH_PENDING_TIMEOUT (5 s) gets its flush even with
/// sequenced DATA still in flight (checked when the flush machinery is next kicked).
#[test]
fn pending_timeout_overrides_data_in_flight() {
    let slow = 7 * NSEC_PER_SEC;
    let t1 = NSEC_PER_MSEC;
    let t2 = t1 + 5 * NSEC_PER_SEC + 1;
    let r = run(
        cache(false),
        false,
        slow,
        &[(0, FUA, 8), (t1, PF, 0), (t2, PF, 0)],
    );
    // The first flush goes out at t2 (the fsync at t1 has waited 5 s), covering both fsyncs;
    // the FUA write's POSTFLUSH gets its own flush after its data.
    assert_eq!(flushes(&r.seen), vec![t2, slow]);
    assert_eq!(r.done, vec![slow + 100 * US, t2 + 100 * US, t2 + 100 * US]);
}

/// With an elevator, sequenced writes go through it but the flush request bypasses it (it
/// goes to the head of the dispatch list with a tag of its own at dispatch).
#[test]
fn flush_request_bypasses_the_elevator() {
    let r = run(
        cache(false),
        true,
        50 * US,
        &[(0, 0, 8), (0, FUA, 8), (5 * US, PF, 0)],
    );
    let dispatched = r.q.elevator().unwrap().stats()[0].1;
    assert_eq!(dispatched, 2, "both writes went through the elevator");
    assert_eq!(
        flushes(&r.seen).len(),
        1,
        "one flush for the POSTFLUSH and the fsync"
    );
    assert_eq!(r.q.stats.flushes_merged, 1);
}
