//! The request queue: its state, shared by the files that follow the kernel's split:
//! `submit` (`blk-mq.c` submission: `blk_mq_submit_bio`, plugging, merging, inserts, direct
//! issue), `dispatch` (`blk-mq-sched.c` and `blk_mq_dispatch_rq_list`: queue runs and
//! dispatch), `tag` (`blk-mq-tag.c`: driver tags and tag waiters), `complete`
//! (completion and requeue) and `flush` (`blk-flush.c`).
//!
//! The event loop owns one [`RequestQueue`], one [`Driver`] and the CPU/lock model
//! ([`crate::cpu::CpuModel`]), which it lends to the queue's entry points that run on a CPU
//! (the queue holds no CPU state of its own). Every entry point takes the
//! current virtual time and a [`BlkOut`] in which the queue leaves what must happen later
//! (asynchronous queue runs on kblockd, bio completions for the submitters, tasks woken from a
//! tag wait, the driver's own requests). The queue never calls back into the workload.

mod complete;
mod dispatch;
mod flush;
mod submit;
mod tag;

pub use flush::FlushQueue;

use crate::cpu::ElvHook;
use crate::driver::{BlkStatus, CallCtx, Driver, DriverOut};
use crate::elevator::{BioInfo, Elevator, ElvMerge};
use crate::limits::QueueLimits;
use crate::merge::{bio_merge_kind, requests_mergeable};
use crate::plug::Plug;
use crate::request::{Bio, BioId, Op, RqId, RqPool, RqState, NO_BIO};
use crate::tags::Sbitmap;
use blksim_core::{Ns, Rng, NSEC_PER_MSEC};
use std::collections::VecDeque;

/// `BLK_MQ_RESOURCE_DELAY`: 3 ms re-run after BLK_STS_RESOURCE with restart pending.
/// Departure: the kernel passes both delays through `msecs_to_jiffies` (4 ms at HZ=250);
/// they are kept in ns here.
pub const BLK_MQ_RESOURCE_DELAY: Ns = 3 * NSEC_PER_MSEC;
/// `BLK_MQ_BUDGET_DELAY`: 3 ms re-run when the elevator had work but returned nothing.
pub const BLK_MQ_BUDGET_DELAY: Ns = 3 * NSEC_PER_MSEC;
/// `SBQ_WAIT_QUEUES` and `SBQ_WAKE_BATCH` (`include/linux/sbitmap.h`).
const SBQ_WAIT_QUEUES: u32 = 8;
const SBQ_WAKE_BATCH: u32 = 8;

/// `sbq_calc_wake_batch`: waiters are woken `wake_batch` at a time, `wake_batch` small enough
/// that the tags a shallow allocation may hold (`min_shallow_depth`, over the whole map as
/// `sbitmap_get_shallow` counts it) can wake every wait queue. None: no shallow users.
pub fn sbq_calc_wake_batch(depth: u32, min_shallow_depth: Option<u32>) -> u32 {
    let d = depth.min(min_shallow_depth.unwrap_or(u32::MAX));
    (d / SBQ_WAIT_QUEUES).clamp(1, SBQ_WAKE_BATCH)
}

/// blktrace-like record of a block-layer event, for the trace writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkTraceRec {
    pub time: Ns,
    /// blktrace action letter: Q G I D C M F P U R.
    pub action: u8,
    pub op: Op,
    pub flags: u32,
    pub sector: u64,
    pub nr_sectors: u32,
    pub task: u32,
    pub cpu: u16,
    /// Extra word: plug depth for U, error for C.
    pub extra: u32,
}

/// What the queue leaves for the event loop.
#[derive(Default, Debug)]
pub struct BlkOut {
    /// Asynchronous runs of a hardware queue (`blk_mq_delay_run_hw_queue`): (hctx, delay).
    pub hw_runs: Vec<(u16, Ns)>,
    /// Bios completed: (submitter token, status).
    pub bio_done: Vec<(u64, BlkStatus)>,
    /// Tasks that were sleeping for a tag and now have one (their submission went on).
    pub task_unblocked: Vec<u32>,
    /// Driver requests (timers, completions to process, wake-ups).
    pub drv: DriverOut,
    /// blktrace records, when `tracing` is on.
    pub trace: Vec<BlkTraceRec>,
    pub tracing: bool,
    /// With the CPU model on: the local time of each `bio_done` entry (same index).
    pub bio_done_at: Vec<Ns>,
    /// Tasks whose syscall was waiting for a dispatch run that has now ended: (task, time).
    pub task_resume: Vec<(u32, Ns)>,
    /// With `explain` on: the path of the request each `bio_done` entry came with (same
    /// index).
    pub bio_trail: Vec<RqTrail>,
    /// Record [`Self::bio_trail`] (`blksim run --explain`).
    pub explain: bool,
    /// Time requests spent in the block layer and at the driver, and the driver's busy
    /// intervals, when asked (queue depth over time).
    pub spans: crate::stage::Spans,
}

/// The block layer's part of an I/O's path (`blksim run --explain`): when its request was
/// made (`blk_mq_get_request`, or the request it merged into), put into the elevator,
/// issued to the driver (`queue_rq` accepted it) and ended (`blk_mq_end_request`), with the
/// request's place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqTrail {
    pub alloc: Ns,
    pub insert: Ns,
    pub issue: Ns,
    pub complete: Ns,
    /// It went through an elevator (had a scheduler tag), and reached the driver.
    pub elv: bool,
    pub started: bool,
    /// Driver tag (-1: none), hardware queue, first sector and length of the request.
    pub tag: i32,
    pub hctx: u16,
    pub sector: u64,
    pub nr_sectors: u32,
    /// The driver's part, from drivers that report one.
    pub drv: Option<crate::driver::DriverTrail>,
}

/// Result of submitting a bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// The bio was merged, plugged, queued or issued; the task may go on.
    Done,
    /// The task sleeps waiting for a tag (`blk_mq_get_tag` → `io_schedule`); it will be
    /// listed in [`BlkOut::task_unblocked`] when its bio got a request.
    WaitTag,
}

/// Block-layer statistics for the JSON `blksim` key and fio's disk stats.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlkStats {
    /// Requests issued to the driver and completed, per direction (read, write).
    pub ios: [u64; 2],
    /// Bios merged into an existing request, per direction (fio's disk "merges").
    pub merges: [u64; 2],
    /// Sum of request times per direction, ns (diskstats "ticks", `nsecs[STAT_READ/WRITE]`):
    /// from the request's making (`rq->start_time_ns`) to its completion.
    pub ticks_ns: [u64; 2],
    /// Time with at least one request in flight at the driver, ns (`io_ticks`, fio's
    /// "util" numerator). The kernel's `update_io_ticks` counts from `blk_account_io_start`
    /// (the request's making), so its busy time also covers requests waiting in the
    /// elevator; here it starts at dispatch, and util can read lower than the kernel's when
    /// requests queue in the scheduler while the driver is idle.
    pub busy_ns: u64,
    pub sectors: [u64; 2],
    pub plug_merges: u64,
    pub elv_merges: u64,
    pub rq_merges: u64,
    pub queue_rq_calls: u64,
    pub queue_rq_resource: u64,
    pub hw_runs: u64,
    pub tag_waits: u64,
    /// Time requests spent between allocation and issue (block-layer wait), ns.
    pub blk_wait_ns: u64,
    /// Times the device saw requests in an order other than the elevator's.
    pub dispatch_inversions: u64,
    pub max_in_flight: u32,
    /// diskstats' discard and flush fields (`STAT_DISCARD`, `STAT_FLUSH`): discards are not
    /// writes there, and flushes count the flush requests the flush machinery issued
    /// (`blk_account_io_flush`), ticks in ns.
    pub discard_ios: u64,
    pub discard_sectors: u64,
    pub discard_ticks_ns: u64,
    pub flush_ios: u64,
    pub flush_ticks_ns: u64,
    /// Flush requests issued, flush steps served by a flush another request started
    /// (merged), and empty flushes ended at once because the device has no write cache.
    pub flush_rqs_issued: u64,
    pub flushes_merged: u64,
    pub flushes_elided: u64,
    /// Requests waiting for a flush when the device lost power (failed).
    pub flush_waiters_failed: u64,
    /// Requests the driver gave back for another try (`blk_mq_requeue_request`).
    pub requeues: u64,
}

#[derive(Debug)]
struct Hctx {
    /// `hctx->dispatch`: leftovers and bypass inserts.
    dispatch: VecDeque<RqId>,
    /// `BLK_MQ_S_SCHED_RESTART`.
    sched_restart: bool,
    /// `hctx->dispatch_busy` EWMA.
    dispatch_busy: u32,
    /// `BLK_MQ_S_STOPPED`.
    stopped: bool,
    /// Earliest pending asynchronous run, if any (kblockd delayed work, one per hctx).
    run_at: Option<Ns>,
    /// Requests issued to the driver and not yet completed.
    in_flight: u32,
    /// Round-robin position over software queues (`hctx->dispatch_from`).
    dispatch_from: usize,
    /// CPU the pending kblockd run will execute on.
    run_cpu: u16,
    /// `hctx->next_cpu` / `hctx->next_cpu_batch` (`blk_mq_hctx_next_cpu`).
    next_cpu: u16,
    next_cpu_batch: u32,
    /// `hctx->fq`: the flush machinery's state (`blk-flush.c`).
    fq: FlushQueue,
    /// `hctx->dispatch_wait` is on the shared driver tags' wait queue
    /// (`blk_mq_mark_tag_wait`, shared tags only).
    dispatch_wait: bool,
}

/// A submitter sleeping on a tag wait queue.
#[derive(Debug)]
struct TagWaiter {
    task: u32,
}

/// Wait queue state of one sbitmap (`struct sbitmap_queue` wake batching).
#[derive(Debug, Default)]
struct WaitQ {
    waiters: VecDeque<TagWaiter>,
    /// Hardware queues whose `dispatch_wait` entry is queued here, in the order they were
    /// added (shared tags only).
    dispatch: Vec<u16>,
    wait_cnt: u32,
}

impl WaitQ {
    /// `sbq->ws_active`: someone waits.
    fn active(&self) -> bool {
        !self.waiters.is_empty() || !self.dispatch.is_empty()
    }

    /// A first waiter arrives: the next wake-up comes after `batch` frees. Departure: the
    /// kernel counts frees only while someone waits, but keeps what it counted
    /// (`sbitmap_queue_wake_up`: `completion_cnt` against `wakeup_cnt`), so its first
    /// wake-up after an idle spell may come sooner.
    fn arm(&mut self, batch: u32) {
        if !self.active() {
            self.wait_cnt = batch;
        }
    }
}

/// A dispatch run blocked inside a BLOCKING driver's `queue_rq`.
#[derive(Debug)]
struct BlockedRun {
    hctx: u16,
    cpu: u16,
    rest: Vec<RqId>,
    /// Yielded in the elevator pull loop (CPU model) rather than blocked in `queue_rq`:
    /// `rest` is the list pulled so far.
    pulling: bool,
    /// The elevator-lock hold reserved before yielding, ending at this time.
    granted: Option<Ns>,
    /// Task whose syscall runs this dispatch (it waits until the dispatch ends).
    owner: Option<u32>,
}

pub struct RequestQueue {
    pub lim: QueueLimits,
    pub pool: RqPool,
    elevator: Option<Box<dyn Elevator>>,
    hctxs: Vec<Hctx>,
    nr_cpus: usize,
    /// Scheduler tags per hctx (elevator only), and driver tags per hctx; with
    /// `shared_tags` one of each, for all hctxs ([`Self::tags_of`]).
    sched_tags: Vec<Sbitmap>,
    driver_tags: Vec<Sbitmap>,
    shared_tags: bool,
    sched_waitq: Vec<WaitQ>,
    driver_waitq: Vec<WaitQ>,
    wake_batch_sched: u32,
    wake_batch_driver: u32,
    /// Software queues (`blk_mq_ctx` request lists), one per CPU, used without an elevator.
    sw_queues: Vec<VecDeque<RqId>>,
    plugs: Vec<Plug>,
    blocked: Vec<Option<BlockedRun>>,
    /// Free slots of `blocked`, lowest first (ids are reused lowest first).
    free_runs: blksim_core::idset::IdSet,
    /// Bio a task slept on while waiting for a tag, by task.
    task_wait_bio: Vec<Option<BioId>>,
    scratch: Vec<RqId>,
    /// Elevator dispatch sequence number stamped in `elv_priv`-free field for inversion counting.
    dispatch_seq: u64,
    last_issued_seq: u64,
    pub stats: BlkStats,
    /// CPU of the context currently running block-layer code (the requester of a kblockd run).
    ctx_cpu: u16,
    /// CPU taking the driver's hardware interrupt (None: completions raised on the
    /// submitting CPU) and CPUs per last-level-cache domain (0 = one domain).
    irq_cpu: Option<u16>,
    llc_cpus: u16,
    /// Data-integrity oracle (`crate::integrity`), fed at submission and completion.
    pub integrity: crate::integrity::Integrity,
    last_busy_change: Ns,
    /// Since when at least one request has been at the driver (busy spans).
    busy_since: Ns,
    total_in_flight: u32,
    /// How the elevator takes its lock ([`crate::CpuFootprint`]): once per request on insert
    /// (bfq's `bfq_insert_request`) or once per list (`dd_insert_requests`), and whether
    /// its completion hook is locked (`bfq_finish_requeue_request`) or not
    /// (`dd_finish_request`).
    elv_lock_per_insert: bool,
    elv_locked_finish: bool,
    /// Scratch of [`Self::dispatch_rq_list`]: per-hctx groups, hctx → group slot, leftovers.
    list_groups: Vec<ListGroup>,
    hctx_group: Vec<u32>,
    list_left: Vec<RqId>,
}

/// Where a bio's request should go.
impl RequestQueue {
    /// Build a queue for `driver` with `elevator` (None = `none`). `nr_cpus` software queues
    /// map onto the driver's hardware queues round-robin (`blk_mq_map_queues`).
    pub fn new(
        lim: QueueLimits,
        elevator: Option<Box<dyn Elevator>>,
        nr_hw_queues: u16,
        queue_depth: u32,
        nr_cpus: usize,
        tag_rng: &mut Rng,
    ) -> Self {
        Self::with_tag_set(
            lim,
            elevator,
            nr_hw_queues,
            queue_depth,
            false,
            nr_cpus,
            tag_rng,
        )
    }

    /// [`Self::new`], with `shared_tags` (`BLK_MQ_F_TAG_HCTX_SHARED`): the hardware queues
    /// share one sbitmap of `queue_depth` driver tags and one of `nr_requests` scheduler
    /// tags, each with one wait queue.
    pub fn with_tag_set(
        lim: QueueLimits,
        elevator: Option<Box<dyn Elevator>>,
        nr_hw_queues: u16,
        queue_depth: u32,
        shared_tags: bool,
        nr_cpus: usize,
        tag_rng: &mut Rng,
    ) -> Self {
        let nr_hw = nr_hw_queues.max(1) as usize;
        let nr_cpus = nr_cpus.max(1);
        let nr_sets = if shared_tags { 1 } else { nr_hw };
        let hctxs = (0..nr_hw)
            .map(|_| Hctx {
                dispatch: VecDeque::new(),
                sched_restart: false,
                dispatch_busy: 0,
                stopped: false,
                run_at: None,
                in_flight: 0,
                dispatch_from: 0,
                run_cpu: 0,
                next_cpu: 0,
                next_cpu_batch: 1,
                fq: FlushQueue::default(),
                dispatch_wait: false,
            })
            .collect();
        let driver_tags: Vec<Sbitmap> = (0..nr_sets)
            .map(|_| Sbitmap::new(queue_depth, nr_cpus, tag_rng))
            .collect();
        let sched_tags: Vec<Sbitmap> = if elevator.is_some() {
            (0..nr_sets)
                .map(|_| Sbitmap::new(lim.nr_requests.max(1), nr_cpus, tag_rng))
                .collect()
        } else {
            Vec::new()
        };
        let min_shallow = elevator.as_ref().and_then(|e| e.min_shallow_depth());
        RequestQueue {
            wake_batch_sched: sbq_calc_wake_batch(lim.nr_requests.max(1), min_shallow),
            wake_batch_driver: sbq_calc_wake_batch(queue_depth, None),
            lim,
            pool: RqPool::new(),
            elevator,
            hctxs,
            nr_cpus,
            sched_tags,
            driver_tags,
            shared_tags,
            sched_waitq: (0..nr_sets).map(|_| WaitQ::default()).collect(),
            driver_waitq: (0..nr_sets).map(|_| WaitQ::default()).collect(),
            sw_queues: (0..nr_cpus).map(|_| VecDeque::new()).collect(),
            plugs: Vec::new(),
            blocked: Vec::new(),
            task_wait_bio: Vec::new(),
            free_runs: Default::default(),
            scratch: Vec::with_capacity(256),
            dispatch_seq: 0,
            last_issued_seq: 0,
            stats: BlkStats::default(),
            ctx_cpu: 0,
            irq_cpu: None,
            llc_cpus: 0,
            integrity: crate::integrity::Integrity::new(),
            last_busy_change: 0,
            busy_since: 0,
            total_in_flight: 0,
            elv_lock_per_insert: false,
            elv_locked_finish: false,
            list_groups: Vec::new(),
            hctx_group: vec![0; nr_hw],
            list_left: Vec::new(),
        }
    }

    /// Take the elevator's locking rules from its declared footprint
    /// ([`crate::CpuFootprint`]): what the CPU model charges when it is on.
    pub fn apply_elevator_footprint(&mut self) {
        let fp = self.elevator.as_ref().map(|e| e.cpu_footprint());
        self.elv_lock_per_insert = fp.is_some_and(|f| f.lock_per_insert);
        self.elv_locked_finish = fp.is_some_and(|f| f.locked_finish);
    }

    pub fn elevator_name(&self) -> &'static str {
        self.elevator.as_ref().map(|e| e.name()).unwrap_or("none")
    }

    pub fn elevator(&self) -> Option<&dyn Elevator> {
        self.elevator.as_deref()
    }

    pub fn elevator_mut(&mut self) -> Option<&mut (dyn Elevator + 'static)> {
        self.elevator.as_deref_mut()
    }

    pub fn nr_hw_queues(&self) -> u16 {
        self.hctxs.len() as u16
    }

    /// Which tag sbitmap (and wait queue) hctx `h` allocates from.
    #[inline]
    fn tags_of(&self, h: usize) -> usize {
        if self.shared_tags {
            0
        } else {
            h
        }
    }

    /// The CPU of the context that ran block-layer code last (a timer it armed fires there).
    pub fn ctx_cpu(&self) -> u16 {
        self.ctx_cpu
    }

    /// `blk_mq_map_queues`: CPU → hardware queue.
    pub fn cpu_to_hctx(&self, cpu: u16) -> u16 {
        (cpu as usize % self.hctxs.len()) as u16
    }

    pub fn in_flight(&self) -> u32 {
        self.total_in_flight
    }

    fn trace(&self, out: &mut BlkOut, now: &mut Ns, action: u8, rq_or_bio: TraceSrc, extra: u32) {
        if !out.tracing {
            return;
        }
        let rec = match rq_or_bio {
            TraceSrc::Rq(id) => {
                let r = self.pool.get(id);
                BlkTraceRec {
                    time: *now,
                    action,
                    op: r.op,
                    flags: r.flags,
                    sector: r.sector,
                    nr_sectors: r.nr_sectors,
                    task: r.task,
                    cpu: r.cpu,
                    extra,
                }
            }
            TraceSrc::Bio(id) => {
                let b = self.pool.bio(id);
                BlkTraceRec {
                    time: *now,
                    action,
                    op: b.op,
                    flags: b.flags,
                    sector: b.sector,
                    nr_sectors: b.nr_sectors,
                    task: b.task,
                    cpu: b.cpu,
                    extra,
                }
            }
            TraceSrc::Task(task, cpu) => BlkTraceRec {
                time: *now,
                action,
                op: Op::Read,
                flags: 0,
                sector: 0,
                nr_sectors: 0,
                task,
                cpu,
                extra,
            },
        };
        out.trace.push(rec);
    }

    // ------------------------------------------------------------------------------------
    // Submission
    // ------------------------------------------------------------------------------------

    // ------------------------------------------------------------------------------------
    // Running a hardware queue
    // ------------------------------------------------------------------------------------

    // ------------------------------------------------------------------------------------
    // Completion
    // ------------------------------------------------------------------------------------

    /// Leak check: requests and bios still alive, and whether any task or run is parked.
    pub fn quiescent(&self) -> bool {
        self.pool.live() == (0, 0)
            && self.total_in_flight == 0
            && self.hctxs.iter().all(|h| h.fq.idle())
            && self.free_runs.len() == self.blocked.len()
            && self
                .sched_waitq
                .iter()
                .chain(self.driver_waitq.iter())
                .all(|w| w.waiters.is_empty())
    }
}

/// One hardware queue's share of a dispatch list (see [`RequestQueue::dispatch_rq_list`]).
#[derive(Clone, Copy, Debug)]
struct ListGroup {
    hctx: u16,
    /// Index in the list of this hctx's last request.
    last: usize,
    queued: u32,
    last_status: BlkStatus,
    /// Out of driver tags or resources: its remaining requests are leftovers.
    stopped: bool,
    needs_resource: bool,
    /// Stopped for want of a shared driver tag (`no_tag` in `blk_mq_dispatch_rq_list`).
    no_tag: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListResult {
    AllSent,
    NotAll,
    Suspended,
}

#[derive(Clone, Copy)]
enum TraceSrc {
    Rq(RqId),
    Bio(BioId),
    Task(u32, u16),
}
