//! A bench for the block layer on its own, for the tests of this crate and of the elevators
//! above it: a scripted driver, a FIFO elevator, and the event loop that carries what the
//! queue asks for (driver events, kblockd runs, woken submitters, the elevator's timer) as
//! `blksim-sim`'s engine does, checking on the way that no bio completes twice or fails.
//! Built with the `testing` feature only.

use crate::cpu::CpuModel;
use crate::driver::{CallCtx, DriverOut};
use crate::queue::{BlkOut, Submit};
use crate::request::{IoPrio, NO_BIO};
use crate::{
    Bio, BlkStatus, CpuFootprint, Driver, Elevator, Op, Request, RequestQueue, RqId, RqPool,
};
use blksim_core::{EventQueue, Ns};
use std::collections::VecDeque;

/// What the driver accepted: (time, op, flags, sectors) per `queue_rq`.
pub type Seen = Vec<(Ns, Op, u32, u32)>;

/// A driver with `nr_hw` hardware queues of `depth` tags (`depth` over all of them when
/// `shared`, `BLK_MQ_F_TAG_HCTX_SHARED`), whose requests take `latency(request)`.
pub struct FakeDrv {
    pub nr_hw: u16,
    pub depth: u32,
    pub shared: bool,
    latency: Box<dyn FnMut(&Request) -> Ns>,
    /// The first `busy` calls of `queue_rq` answer `BLK_STS_RESOURCE`.
    pub busy: u32,
    /// The first `requeue` commands that reach the device come back for another try
    /// (`blk_mq_requeue_request`, as the MMC driver's recovery does).
    pub requeue: u32,
    pub seen: Seen,
}

impl FakeDrv {
    pub fn new(nr_hw: u16, depth: u32, latency: impl FnMut(&Request) -> Ns + 'static) -> Self {
        FakeDrv {
            nr_hw,
            depth,
            shared: false,
            latency: Box::new(latency),
            busy: 0,
            requeue: 0,
            seen: Vec::new(),
        }
    }

    /// Every request takes `lat`.
    pub fn fixed(nr_hw: u16, depth: u32, lat: Ns) -> Self {
        Self::new(nr_hw, depth, move |_| lat)
    }
}

impl Driver for FakeDrv {
    fn name(&self) -> &str {
        "fake"
    }
    fn nr_hw_queues(&self) -> u16 {
        self.nr_hw
    }
    fn queue_depth(&self) -> u32 {
        self.depth
    }
    fn shared_tags(&self) -> bool {
        self.shared
    }
    fn capacity_sectors(&self) -> u64 {
        1 << 24
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
        if self.busy > 0 {
            self.busy -= 1;
            return BlkStatus::Resource;
        }
        let r = pool.get(rq);
        self.seen.push((now, r.op, r.flags, r.nr_sectors));
        out.events.push((now + (self.latency)(r), rq as u64));
        BlkStatus::Ok
    }
    fn on_event(&mut self, payload: u64, _pool: &RqPool, _now: Ns, out: &mut DriverOut) {
        if self.requeue > 0 {
            self.requeue -= 1;
            out.requeues.push(payload as RqId);
            return;
        }
        out.completions.push((payload as RqId, BlkStatus::Ok));
    }
}

/// The elevators live in blksim-sched, above this crate; one FIFO for the whole queue stands
/// in for them (it ignores hardware queues, as mq-deadline and bfq do). Async writes may take
/// at most `async_depth` scheduler tags (`dd_limit_depth`).
#[derive(Default)]
pub struct Fifo {
    q: VecDeque<RqId>,
    async_depth: Option<u32>,
    dispatched: u64,
    /// Claim per-hctx dispatch (kyber's kind) instead of `QUEUE_FLAG_SQ_SCHED`.
    mq_aware: bool,
}

impl Fifo {
    pub fn with_async_depth(async_depth: Option<u32>) -> Self {
        Fifo {
            async_depth,
            ..Fifo::default()
        }
    }

    /// A FIFO that does not set `QUEUE_FLAG_SQ_SCHED`, so every hctx is run for it.
    pub fn mq_aware() -> Self {
        Fifo {
            mq_aware: true,
            ..Fifo::default()
        }
    }
}

impl Elevator for Fifo {
    fn cpu_footprint(&self) -> CpuFootprint {
        CpuFootprint {
            cost_pct: 100,
            cold_lines: [0; 4],
            lock_per_insert: false,
            locked_finish: false,
        }
    }
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn sq_sched(&self) -> bool {
        !self.mq_aware
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
    fn limit_depth(&self, op: Op, sync: bool) -> Option<u32> {
        if sync && !op.is_write() {
            None
        } else {
            self.async_depth
        }
    }
    fn min_shallow_depth(&self) -> Option<u32> {
        self.async_depth
    }
    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![("dispatched", self.dispatched)]
    }
}

/// An event of the bench: one of the test's own (`Script`, with the test's index), or one the
/// queue asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    Script(usize),
    Drv(u64),
    HwRun(u16, Ns),
    Timer(Ns),
}

/// Events past this many mean the queue never settles.
const MAX_EVENTS: u64 = 10_000_000;

/// A queue, the CPU model it borrows (off: the ideal platform), and its event loop.
pub struct Bench {
    pub q: RequestQueue,
    pub cpus: CpuModel,
    pub evq: EventQueue<Ev>,
    pub out: BlkOut,
    /// When each bio (by token) completed; `Ns::MAX` while it has not.
    pub done: Vec<Ns>,
    /// How many have.
    pub completed: u64,
    /// The most requests at the driver at once.
    pub peak: u32,
    timer_at: Option<Ns>,
    events: u64,
}

impl Bench {
    /// A bench for `bios` bios, tokens `0 .. bios`.
    pub fn new(q: RequestQueue, bios: usize) -> Self {
        Bench {
            q,
            cpus: CpuModel::default(),
            evq: EventQueue::new(),
            out: BlkOut::default(),
            done: vec![Ns::MAX; bios],
            completed: 0,
            peak: 0,
            timer_at: None,
            events: 0,
        }
    }

    /// A bio of `nr_sectors` at `sector`, token `token` (which also names its data version),
    /// from task 0 on CPU 0.
    pub fn bio(token: u64, op: Op, flags: u32, sector: u64, nr_sectors: u32, now: Ns) -> Bio {
        Bio {
            token,
            op,
            flags,
            sector,
            nr_sectors,
            nr_segments: nr_sectors.div_ceil(8) as u16,
            task: 0,
            cpu: 0,
            ioprio: IoPrio::default(),
            version: token + 1,
            queue_time: now,
            next: NO_BIO,
        }
    }

    /// `submit_bio` at `now`, then carry out what it asked for.
    pub fn submit(&mut self, drv: &mut dyn Driver, bio: Bio, now: Ns) -> Submit {
        let s = self
            .q
            .submit_bio(&mut self.cpus, bio, drv, now, &mut self.out);
        self.settle(drv, now);
        s
    }

    /// Handle the queue's events up to the next of the test's own, which is returned with
    /// its time; None at the end.
    pub fn next_script(&mut self, drv: &mut dyn Driver) -> Option<(Ns, usize)> {
        while let Some((now, ev)) = self.evq.pop() {
            self.events += 1;
            assert!(self.events < MAX_EVENTS, "no end in sight at {now} ns");
            match ev {
                Ev::Script(i) => return Some((now, i)),
                Ev::Drv(p) => {
                    drv.on_event(p, &self.q.pool, now, &mut self.out.drv);
                    self.q
                        .drain_driver_completions(&mut self.cpus, drv, now, &mut self.out);
                }
                Ev::HwRun(h, at) => {
                    self.q
                        .run_work(&mut self.cpus, h, at, 0, drv, now, &mut self.out)
                }
                Ev::Timer(at) => {
                    if self.timer_at == Some(at) {
                        self.timer_at = None;
                        self.q.elevator_timer(now, 0, &mut self.out);
                    }
                }
            }
            self.settle(drv, now);
        }
        None
    }

    /// Run to the end (the test scheduled no events of its own); then every bio must have
    /// completed and the queue be quiescent.
    pub fn finish(&mut self, drv: &mut dyn Driver) {
        if let Some((t, i)) = self.next_script(drv) {
            panic!("a scripted event {i} at {t} ns, and no script to run it");
        }
        self.check_end();
    }

    /// Every bio completed, and nothing is left in the block layer.
    pub fn check_end(&self) {
        if let Some(i) = self.done.iter().position(|&d| d == Ns::MAX) {
            panic!("bio {i} never completed: {:?}", self.done);
        }
        assert!(self.q.quiescent(), "live {:?}", self.q.pool.live());
    }

    /// Move what the queue left in `out` onto the event queue, record completions and retry
    /// woken submitters, until nothing is left; then arm the elevator's timer.
    pub fn settle(&mut self, drv: &mut dyn Driver, now: Ns) {
        loop {
            let mut progress = false;
            for (at, p) in self.out.drv.events.drain(..) {
                self.evq.push(at.max(now), Ev::Drv(p));
                progress = true;
            }
            if !self.out.drv.completions.is_empty() {
                self.q
                    .drain_driver_completions(&mut self.cpus, drv, now, &mut self.out);
                progress = true;
            }
            if !self.out.drv.requeues.is_empty() {
                self.q.drain_driver_requeues(now, &mut self.out);
                progress = true;
            }
            for (h, d) in self.out.hw_runs.drain(..) {
                self.evq.push(now + d, Ev::HwRun(h, now + d));
                progress = true;
            }
            // A woken submitter retries its allocation at once (it may sleep again).
            let woken: Vec<u32> = self.out.task_unblocked.drain(..).collect();
            for task in woken {
                let mut t = now;
                let _: Submit =
                    self.q
                        .resume_tag_waiter(&mut self.cpus, task, drv, &mut t, &mut self.out);
                progress = true;
            }
            self.peak = self.peak.max(self.q.in_flight());
            for (tok, st) in self.out.bio_done.drain(..) {
                assert_eq!(st, BlkStatus::Ok, "bio {tok}");
                let d = &mut self.done[tok as usize];
                assert_eq!(*d, Ns::MAX, "bio {tok} completed twice");
                *d = now;
                self.completed += 1;
                progress = true;
            }
            if !progress {
                break;
            }
        }
        if let Some(t) = self.q.elevator_next_timer() {
            if self.timer_at.is_none_or(|c| t < c) {
                let at = t.max(now);
                self.timer_at = Some(at);
                self.evq.push(at, Ev::Timer(at));
            }
        }
    }
}
