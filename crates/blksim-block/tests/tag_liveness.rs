//! Liveness of tag waits and hardware-queue restarts: every submitted bio completes, whatever
//! the depths. Each case is a small scripted run on a fake driver and a FIFO elevator shared
//! by the hardware queues (as mq-deadline and bfq are), checking the kernel mechanism that
//! keeps it from hanging.

use blksim_block::queue::sbq_calc_wake_batch;
use blksim_block::testing::{Bench, Ev, FakeDrv, Fifo};
use blksim_block::{Op, QueueLimits, RequestQueue};
use blksim_core::Ns;

const US: Ns = 1_000;

/// A driver with `nr_hw` queues of `depth` tags (or `depth` over all of them, `shared`);
/// reads take `read_lat`, the rest `write_lat`.
fn fake(nr_hw: u16, depth: u32, shared: bool, read_lat: Ns, write_lat: Ns) -> FakeDrv {
    let mut d = FakeDrv::new(nr_hw, depth, move |r| {
        if r.op == Op::Read {
            read_lat
        } else {
            write_lat
        }
    });
    d.shared = shared;
    d
}

/// A bio the script submits: (time, task, cpu, op, sector).
type Plan = [(Ns, u32, u16, Op, u64)];

/// Run `plan` under a FIFO elevator whose async writes may take `async_depth` tags; returns
/// each bio's completion time (panics if one never completes, or if the driver ever holds
/// more requests than it has tags).
fn run(drv: &mut FakeDrv, async_depth: Option<u32>, plan: &Plan) -> Vec<Ns> {
    let mut tag_rng = blksim_core::Rng::from_seed(1);
    let elv = Box::new(Fifo::with_async_depth(async_depth));
    let q = RequestQueue::with_tag_set(
        QueueLimits::default(),
        Some(elv),
        drv.nr_hw,
        drv.depth,
        drv.shared,
        drv.nr_hw as usize,
        &mut tag_rng,
    );
    let mut b = Bench::new(q, plan.len());
    for (i, p) in plan.iter().enumerate() {
        b.evq.push(p.0, Ev::Script(i));
    }
    while let Some((now, i)) = b.next_script(drv) {
        let (_, task, cpu, op, sector) = plan[i];
        // Writes without REQ_SYNC: async, throttled by `async_depth`.
        let mut bio = Bench::bio(i as u64, op, 0, sector, 8, now);
        bio.task = task;
        bio.cpu = cpu;
        let _ = b.submit(drv, bio, now);
    }
    b.check_end();
    let tags = drv.depth * if drv.shared { 1 } else { drv.nr_hw as u32 };
    assert!(
        b.peak <= tags,
        "{} requests at the driver, {tags} tags",
        b.peak
    );
    b.done
}

/// `sbq_calc_wake_batch`: the batch follows the smallest shallow depth, so that the tags a
/// shallow allocation may hold can always wake a waiter.
#[test]
fn wake_batch_follows_the_min_shallow_depth() {
    assert_eq!(sbq_calc_wake_batch(256, None), 8);
    assert_eq!(sbq_calc_wake_batch(32, None), 4);
    assert_eq!(sbq_calc_wake_batch(2, None), 1);
    assert_eq!(sbq_calc_wake_batch(256, Some(256)), 8);
    assert_eq!(sbq_calc_wake_batch(256, Some(40)), 5);
    assert_eq!(sbq_calc_wake_batch(256, Some(1)), 1);
    assert_eq!(sbq_calc_wake_batch(16, Some(1000)), 2);
}

/// mq-deadline with `async_depth=1`: one async write holds the only tag async writes may
/// take, the others sleep. Each completion is one free; with the full-depth wake batch (8
/// frees per wake-up) the sleepers were never woken.
#[test]
fn async_writers_throttled_to_one_tag_are_woken() {
    let mut drv = fake(1, 64, false, 10 * US, 100 * US);
    let plan: Vec<_> = (0..4).map(|t| (0, t, 0, Op::Write, 8 * t as u64)).collect();
    let done = run(&mut drv, Some(1), &plan);
    // One at a time: each write waits for the one before it.
    let mut d = done.clone();
    d.sort();
    for w in d.windows(2) {
        assert!(w[1] >= w[0] + 100 * US, "{done:?}");
    }
}

/// Two hardware queues of one driver tag each under a shared elevator: hctx 0's run pulls a
/// request of hctx 1 while hctx 1's only tag is busy. The request must wait on hctx 1's
/// dispatch list with hctx 1 marked for restart, so that the completion freeing hctx 1's
/// tag runs it; parked on hctx 0 (whose request completes first and which then idles), it
/// was never dispatched.
#[test]
fn a_request_of_another_hctx_restarts_with_its_own_hctx() {
    let mut drv = fake(2, 1, false, 10 * US, 100 * US);
    let plan = [
        // B1 takes hctx 1's tag until 100 us.
        (0, 1, 1, Op::Write, 0),
        // A1 (hctx 0) is queued before B2 (hctx 1): hctx 0's run pulls both.
        (US, 0, 0, Op::Read, 64),
        (US, 1, 1, Op::Write, 128),
    ];
    let done = run(&mut drv, None, &plan);
    assert_eq!(done[0], 100 * US);
    assert_eq!(done[1], 11 * US);
    assert_eq!(done[2], 200 * US);
}

/// Two hardware queues sharing one driver tag (`BLK_MQ_F_TAG_HCTX_SHARED`): hctx 0's run
/// finds the tag held by hctx 1's write. Marking hctx 0 for a restart would hang (nothing
/// of hctx 0 is in flight to complete), so it waits on the tags' wait queue
/// (`blk_mq_mark_tag_wait`) and the free on hctx 1 runs it (`blk_mq_dispatch_wake`).
#[test]
fn a_shared_tag_freed_on_another_hctx_runs_the_waiting_one() {
    let mut drv = fake(2, 1, true, 10 * US, 100 * US);
    let plan = [(0, 1, 1, Op::Write, 0), (US, 0, 0, Op::Read, 64)];
    let done = run(&mut drv, None, &plan);
    assert_eq!(done, [100 * US, 110 * US]);
}

/// Four hardware queues sharing 4 tags, 24 requests from 4 CPUs at once: never more than
/// 4 at the driver (checked by `run`), so they finish in 6 rounds of the 100 us write.
#[test]
fn shared_tags_bound_the_whole_queue() {
    let mut drv = fake(4, 4, true, 100 * US, 100 * US);
    let plan: Vec<_> = (0..24u64)
        .map(|i| (0, i as u32, (i % 4) as u16, Op::Read, 64 * i))
        .collect();
    let done = run(&mut drv, None, &plan);
    assert_eq!(done.iter().max(), Some(&(600 * US)), "{done:?}");
    drv.shared = false;
    let done = run(&mut drv, None, &plan);
    assert_eq!(done.iter().max(), Some(&(200 * US)), "{done:?}");
}
