//! mq-deadline: dispatch orders derived step by step from `dd_dispatch_request`.

use crate::common::MSEC;
use crate::mq_deadline::MqDeadline;
use crate::tests_util::*;
use blksim_block::elevator::{BioInfo, Elevator};
use blksim_block::request::{IoPrioClass, Op, RqId, RqPool};
use blksim_block::ElvMerge;
use blksim_core::Ns;

fn sectors(pool: &RqPool, v: &[RqId]) -> Vec<u64> {
    v.iter().map(|&r| pool.get(r).sector).collect()
}

fn drain(dd: &mut MqDeadline, pool: &mut RqPool, now: Ns) -> Vec<RqId> {
    let mut out = vec![];
    while let Some(r) = dd.dispatch_request(pool, now) {
        out.push(r);
    }
    out
}

fn ins(dd: &mut MqDeadline, pool: &mut RqPool, r: Rq, now: Ns) -> RqId {
    let id = mk(pool, r, now);
    dd.insert_requests(pool, &[id], false, now);
    id
}

#[test]
fn sorted_within_batch() {
    let mut pool = RqPool::new();
    let mut dd = MqDeadline::new(&params(false));
    for s in [100, 50, 200, 10] {
        ins(&mut dd, &mut pool, Rq::read(s), 0);
    }
    let got = drain(&mut dd, &mut pool, 0);
    // No write batch to continue; READ chosen; ascending sweep from latest_pos = 0.
    assert_eq!(sectors(&pool, &got), vec![10, 50, 100, 200]);
}

#[test]
fn fifo_batch_and_writes_starved() {
    let mut pool = RqPool::new();
    let mut dd = MqDeadline::new(&params(false));
    dd.set_tunable("fifo_batch", "2").unwrap();
    for s in [10, 20, 30, 40, 50, 60] {
        ins(&mut dd, &mut pool, Rq::read(s), 0);
    }
    for s in [1000, 1010, 1020] {
        ins(&mut dd, &mut pool, Rq::write(s), 0);
    }
    let got = drain(&mut dd, &mut pool, 0);
    // last_dir starts as WRITE with batching 0, so the first call continues a "write
    // batch" (W1000, W1010); then READ twice (starved 0 → 1 → 2, two batches of 2), then the
    // third decision sees starved(2) >= writes_starved(2) → W1020; then the rest of reads.
    assert_eq!(
        sectors(&pool, &got),
        vec![1000, 1010, 10, 20, 30, 40, 1020, 50, 60]
    );
}

#[test]
fn expired_read_jumps_ahead() {
    // Without expiry: R100, R200, R500 (sweep). With R500 expired at the second batch start,
    // it is taken from the fifo head, then the sweep resumes from 500 (nothing above) →
    // fifo head R200.
    for (t2, want) in [
        (100 * MSEC, vec![100, 200, 500]),
        (600 * MSEC, vec![100, 500, 200]),
    ] {
        let mut pool = RqPool::new();
        let mut dd = MqDeadline::new(&params(false));
        dd.set_tunable("fifo_batch", "1").unwrap();
        ins(&mut dd, &mut pool, Rq::read(500), 0);
        ins(&mut dd, &mut pool, Rq::read(100), 100 * MSEC);
        ins(&mut dd, &mut pool, Rq::read(200), 100 * MSEC);
        let mut got = vec![dd.dispatch_request(&mut pool, 100 * MSEC).unwrap()];
        got.extend(drain(&mut dd, &mut pool, t2));
        assert_eq!(sectors(&pool, &got), want, "t2 = {t2}");
    }
}

#[test]
fn read_expire_is_jiffies_granular() {
    // read_expire 500 ms = 125 jiffies at HZ=250. Inserted at 3.9 ms (jiffy 0) → deadline
    // jiffy 125 = 500 ms; at 499.9 ms (jiffy 124) not expired, at 500 ms expired.
    for (t2, want) in [
        (499_900_000, vec![100, 200, 500]),
        (500 * MSEC, vec![100, 500, 200]),
    ] {
        let mut pool = RqPool::new();
        let mut dd = MqDeadline::new(&params(false));
        dd.set_tunable("fifo_batch", "1").unwrap();
        ins(&mut dd, &mut pool, Rq::read(500), 3_900_000);
        ins(&mut dd, &mut pool, Rq::read(100), 4 * MSEC);
        ins(&mut dd, &mut pool, Rq::read(200), 4 * MSEC);
        let mut got = vec![dd.dispatch_request(&mut pool, 4 * MSEC).unwrap()];
        got.extend(drain(&mut dd, &mut pool, t2));
        assert_eq!(sectors(&pool, &got), want);
    }
}

#[test]
fn priority_levels_strict() {
    let mut pool = RqPool::new();
    let mut dd = MqDeadline::new(&params(false));
    ins(&mut dd, &mut pool, Rq::read(10), 0);
    ins(&mut dd, &mut pool, Rq::read(20), 0);
    let rt = ins(&mut dd, &mut pool, Rq::read(1000).prio(IoPrioClass::Rt), 0);
    ins(&mut dd, &mut pool, Rq::read(5).prio(IoPrioClass::Idle), 0);
    assert_eq!(dd.dispatch_request(&mut pool, 0), Some(rt));
    // RT still "queued" (inserted − completed) while in the driver: lower levels wait.
    assert_eq!(dd.dispatch_request(&mut pool, 0), None);
    assert!(dd.has_work());
    dd.finish_request(&pool, rt, 0);
    let be = drain(&mut dd, &mut pool, 0);
    assert_eq!(sectors(&pool, &be), vec![10, 20]);
    for &r in &be {
        dd.finish_request(&pool, r, 0);
    }
    let idle = drain(&mut dd, &mut pool, 0);
    assert_eq!(sectors(&pool, &idle), vec![5]);
}

#[test]
fn prio_aging_promotes_starved_request() {
    let mut pool = RqPool::new();
    let mut dd = MqDeadline::new(&params(false));
    let idle = ins(&mut dd, &mut pool, Rq::read(5).prio(IoPrioClass::Idle), 0);
    let rt1 = ins(&mut dd, &mut pool, Rq::read(100).prio(IoPrioClass::Rt), 0);
    assert_eq!(dd.dispatch_request(&mut pool, 0), Some(rt1));
    // 9.9 s later another RT request: the IDLE one is not old enough (10 s).
    let rt2 = ins(
        &mut dd,
        &mut pool,
        Rq::read(200).prio(IoPrioClass::Rt),
        9_900 * MSEC,
    );
    assert_eq!(dd.dispatch_request(&mut pool, 9_900 * MSEC), Some(rt2));
    // At 11 s: two levels queued, IDLE request inserted > prio_aging_expire ago → aged.
    let rt3 = ins(
        &mut dd,
        &mut pool,
        Rq::read(300).prio(IoPrioClass::Rt),
        11_000 * MSEC,
    );
    assert_eq!(dd.dispatch_request(&mut pool, 11_000 * MSEC), Some(idle));
    assert_eq!(dd.dispatch_request(&mut pool, 11_000 * MSEC), Some(rt3));
}

fn bio(op: Op, sector: u64, n: u32) -> BioInfo {
    BioInfo {
        op,
        flags: 0,
        sector,
        nr_sectors: n,
        nr_segments: 1,
        cpu: 0,
        task: 0,
        // The test requests' priority (`Rq`'s best effort).
        ioprio: blksim_block::request::IoPrio::of_class(blksim_block::request::IoPrioClass::Be),
    }
}

#[test]
fn merge_candidates() {
    let mut pool = RqPool::new();
    let mut dd = MqDeadline::new(&params(false));
    let a = ins(&mut dd, &mut pool, Rq::read(100), 0);
    let b = ins(&mut dd, &mut pool, Rq::read(300), 0);
    // Back merge through the hash (last_merge is A, not adjacent).
    assert_eq!(
        dd.find_merge(&pool, &bio(Op::Read, 308, 8)),
        Some((b, ElvMerge::BackMerge))
    );
    // Back merge through the one-hit cache.
    assert_eq!(
        dd.find_merge(&pool, &bio(Op::Read, 108, 8)),
        Some((a, ElvMerge::BackMerge))
    );
    // Front merge through the sort tree.
    assert_eq!(
        dd.find_merge(&pool, &bio(Op::Read, 292, 8)),
        Some((b, ElvMerge::FrontMerge))
    );
    // Different op: no candidate.
    assert_eq!(dd.find_merge(&pool, &bio(Op::Write, 308, 8)), None);
    // front_merges=0 disables the sort-tree lookup (the one-hit cache still front-merges).
    dd.set_tunable("front_merges", "0").unwrap();
    assert_eq!(dd.find_merge(&pool, &bio(Op::Read, 292, 8)), None);
    assert_eq!(
        dd.find_merge(&pool, &bio(Op::Read, 92, 8)),
        Some((a, ElvMerge::FrontMerge))
    );
    // A front merge moves A in the sort tree; former/next follow.
    pool.get_mut(a).sector = 92;
    pool.get_mut(a).nr_sectors = 16;
    dd.request_merged(&mut pool, a, ElvMerge::FrontMerge);
    assert_eq!(dd.next_request(&pool, a), Some(b));
    assert_eq!(dd.former_request(&pool, b), Some(a));
}

#[test]
fn insert_merge_and_earlier_deadline() {
    let mut pool = RqPool::new();
    let mut dd = MqDeadline::new(&params(false));
    dd.set_tunable("fifo_batch", "1").unwrap();
    let a = ins(&mut dd, &mut pool, Rq::read(100), 0);
    // Insert merge: C continues A.
    let c = mk(&mut pool, Rq::read(108), 0);
    assert_eq!(dd.try_insert_merge(&mut pool, c), Some(a));
    free(&mut pool, c);
    assert_eq!(pool.get(a).nr_sectors, 16);
    // requests_merged keeps the earlier deadline: X (sector 900, old) is absorbed by
    // Y (sector 892, young); Y takes X's fifo slot and deadline.
    let x = ins(&mut dd, &mut pool, Rq::read(900), 0);
    let z = ins(&mut dd, &mut pool, Rq::read(500), 100 * MSEC);
    let y = ins(&mut dd, &mut pool, Rq::read(892), 400 * MSEC);
    dd.requests_merged(&mut pool, y, x);
    pool.merge_requests(y, x);
    free(&mut pool, x);
    // At 600 ms (jiffy 150): A (expired fifo head); then the fifo head is Y with X's
    // deadline (jiffy 125, expired) → Y jumps ahead of Z (sector 500, next in the sweep);
    // then nothing above 892 → fifo head Z. Without the inheritance Y would sit behind Z in
    // the fifo and the order would be A, Z, Y.
    let got = drain(&mut dd, &mut pool, 600 * MSEC);
    assert_eq!(got, vec![a, y, z]);
    let st = dd.stats();
    assert!(st.contains(&("insert_merges", 1)));
}

#[test]
fn limit_depth_and_tunables() {
    let mut dd = MqDeadline::new(&params(false));
    assert_eq!(dd.limit_depth(Op::Read, true), None);
    assert_eq!(dd.limit_depth(Op::Write, true), Some(256));
    assert_eq!(dd.min_shallow_depth(), Some(256));
    dd.set_tunable("async_depth", "0").unwrap();
    assert_eq!(dd.limit_depth(Op::Read, false), Some(1));
    // The scheduler tags' wake batch follows async_depth (`blk_mq_set_min_shallow_depth`).
    assert_eq!(dd.min_shallow_depth(), Some(1));
    dd.depth_updated(64);
    assert_eq!(dd.limit_depth(Op::Write, false), Some(64));
    assert_eq!(dd.min_shallow_depth(), Some(64));
    dd.set_tunable("read_expire", "250").unwrap();
    dd.set_tunable("write_expire", "1").unwrap();
    let t = dd.tunables();
    let get = |n: &str| t.iter().find(|x| x.name() == n).unwrap().value.clone();
    assert_eq!(get("read_expire"), "252"); // 63 jiffies (ceil 62.5) × 4 ms
    assert_eq!(get("write_expire"), "4"); // ceil to one jiffy
    assert_eq!(get("prio_aging_expire"), "10000");
    assert!(dd.set_tunable("bogus", "1").is_err());
    assert!(dd.set_tunable("fifo_batch", "x").is_err());
}
