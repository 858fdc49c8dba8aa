//! The flush machinery (`block/blk-flush.c`) step by step: what the driver sees and when each
//! submitter's bio completes, for the orders of decisions the kernel documents at the top of
//! blk-flush.c (C1: one flush in flight; C2: no flush while sequenced DATA is in flight; C3:
//! unless a request has waited FLUSH_PENDING_TIMEOUT) and for each queue feature set.

use blksim_block::driver::{CallCtx, DriverOut};
use blksim_block::queue::{BlkOut, Submit};
use blksim_block::request::{flags, IoPrioClass, NO_BIO};
use blksim_block::stage::Stage;
use blksim_block::{Bio, BlkStatus, Driver, Op, QueueLimits, RequestQueue, RqId, RqPool};
use blksim_core::{EventQueue, Ns, NSEC_PER_MSEC, NSEC_PER_SEC};

/// What the driver saw: (time, op, flags, sectors).
type Seen = Vec<(Ns, Op, u32, u32)>;

struct FakeDrv {
    write_lat: Ns,
    flush_lat: Ns,
    seen: Seen,
}

impl Driver for FakeDrv {
    fn name(&self) -> &str {
        "fake"
    }
    fn nr_hw_queues(&self) -> u16 {
        1
    }
    fn queue_depth(&self) -> u32 {
        8
    }
    fn capacity_sectors(&self) -> u64 {
        1 << 20
    }
    fn queue_rq(
        &mut self,
        pool: &RqPool,
        rq: RqId,
        _hctx: u16,
        _last: bool,
        _ctx: CallCtx,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        let r = pool.get(rq);
        self.seen.push((now, r.op, r.flags, r.nr_sectors));
        let lat = if r.op == Op::Flush {
            self.flush_lat
        } else {
            self.write_lat
        };
        out.events.push((now + lat, rq as u64));
        BlkStatus::Ok
    }
    fn on_event(&mut self, payload: u64, _pool: &RqPool, _now: Ns, out: &mut DriverOut) {
        out.completions.push((payload as RqId, BlkStatus::Ok));
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Submit(usize),
    Drv(u64),
    HwRun(u16, Ns),
}

/// A bio the test submits at a time: (time, flags, sectors) on a write.
type Plan = [(Ns, u32, u32)];

struct Run {
    seen: Seen,
    /// The stage intervals the queue reported (`BlkOut::spans`), and its busy intervals.
    stages: Vec<(Stage, Ns, Ns)>,
    busy: Vec<(Ns, Ns)>,
    /// Completion time of each planned bio.
    done: Vec<Ns>,
    q: RequestQueue,
}

/// Run `plan` on a queue with `lim`, with a FIFO elevator or none.
fn run(lim: QueueLimits, elevator: bool, write_lat: Ns, plan: &Plan) -> Run {
    let mut tag_rng = blksim_core::Rng::from_seed(1);
    let elv: Option<Box<dyn blksim_block::Elevator>> = if elevator {
        Some(Box::new(Fifo::default()))
    } else {
        None
    };
    let mut cpus = blksim_block::cpu::CpuModel::default();
    let mut q = RequestQueue::new(lim, elv, 1, 8, 1, &mut tag_rng);
    let mut drv = FakeDrv {
        write_lat,
        flush_lat: 100_000,
        seen: Vec::new(),
    };
    let mut out = BlkOut::default();
    out.spans.on = true;
    let mut evq: EventQueue<Ev> = EventQueue::new();
    for (i, p) in plan.iter().enumerate() {
        evq.push(p.0, Ev::Submit(i));
    }
    let mut done = vec![Ns::MAX; plan.len()];
    while let Some((now, ev)) = evq.pop() {
        match ev {
            Ev::Submit(i) => {
                let (_, fl, nr) = plan[i];
                let bio = Bio {
                    token: i as u64,
                    op: Op::Write,
                    flags: fl | flags::REQ_SYNC,
                    sector: 8 * i as u64,
                    nr_sectors: nr,
                    nr_segments: nr.div_ceil(8) as u16,
                    task: 0,
                    cpu: 0,
                    ioprio: IoPrioClass::Be,
                    version: i as u64 + 1,
                    queue_time: now,
                    next: NO_BIO,
                };
                assert_eq!(
                    q.submit_bio(&mut cpus, bio, &mut drv, now, &mut out),
                    Submit::Done
                );
            }
            Ev::Drv(p) => {
                drv.on_event(p, &q.pool, now, &mut out.drv);
                q.drain_driver_completions(&mut cpus, &mut drv, now, &mut out);
            }
            Ev::HwRun(h, at) => q.run_work(&mut cpus, h, at, 0, &mut drv, now, &mut out),
        }
        loop {
            let mut progress = false;
            for (at, p) in out.drv.events.drain(..) {
                evq.push(at.max(now), Ev::Drv(p));
                progress = true;
            }
            if !out.drv.completions.is_empty() {
                q.drain_driver_completions(&mut cpus, &mut drv, now, &mut out);
                progress = true;
            }
            for (h, d) in out.hw_runs.drain(..) {
                evq.push(now + d, Ev::HwRun(h, now + d));
                progress = true;
            }
            for (tok, st) in out.bio_done.drain(..) {
                assert_eq!(st, BlkStatus::Ok);
                assert_eq!(done[tok as usize], Ns::MAX, "bio {tok} completed twice");
                done[tok as usize] = now;
                progress = true;
            }
            if !progress {
                break;
            }
        }
    }
    assert!(done.iter().all(|&d| d != Ns::MAX), "a bio never completed");
    assert!(q.quiescent(), "live {:?}", q.pool.live());
    Run {
        seen: drv.seen,
        stages: std::mem::take(&mut out.spans.stages),
        busy: std::mem::take(&mut out.spans.busy),
        done,
        q,
    }
}

/// The elevators live in blksim-sched, above this crate; the flush machinery treats every
/// elevator alike, so a FIFO one stands in.
#[derive(Default)]
struct Fifo {
    q: std::collections::VecDeque<RqId>,
    dispatched: u64,
}

impl blksim_block::Elevator for Fifo {
    fn cpu_footprint(&self) -> blksim_block::CpuFootprint {
        blksim_block::CpuFootprint {
            cost_pct: 100,
            cold_lines: [0; 4],
            lock_per_insert: false,
            locked_finish: false,
        }
    }
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn insert_requests(&mut self, _pool: &mut RqPool, rqs: &[RqId], at_head: bool, _now: Ns) {
        for &r in rqs {
            if at_head {
                self.q.push_front(r);
            } else {
                self.q.push_back(r);
            }
        }
    }
    fn dispatch_request(&mut self, _pool: &mut RqPool, _now: Ns) -> Option<RqId> {
        let r = self.q.pop_front();
        self.dispatched += r.is_some() as u64;
        r
    }
    fn has_work(&self) -> bool {
        !self.q.is_empty()
    }
    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![("dispatched", self.dispatched)]
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
