//! The request queue: submission, plugging, merging, hardware-queue runs, dispatch and
//! completion. Follows `block/blk-mq.c` and `block/blk-mq-sched.c` (reference §4).
//!
//! The event loop owns one [`RequestQueue`] and one [`Driver`]. Every entry point takes the
//! current virtual time and a [`BlkOut`] in which the queue leaves what must happen later
//! (asynchronous queue runs on kblockd, bio completions for the submitters, tasks woken from a
//! tag wait, the driver's own requests). The queue never calls back into the workload.

mod flush;

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
use std::collections::{BTreeSet, VecDeque};

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
    /// Sum of request service time (issue → completion) per direction, ns ("ticks").
    pub ticks_ns: [u64; 2],
    /// Time with at least one request in flight, ns (fio's "util" numerator).
    pub busy_ns: u64,
    /// Sum over time of requests in flight (`in_queue`), ns·requests.
    pub in_queue_ns: u128,
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
    wait_cnt: u32,
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
    /// Scheduler tags per hctx (elevator only).
    sched_tags: Vec<Sbitmap>,
    driver_tags: Vec<Sbitmap>,
    sched_waitq: Vec<WaitQ>,
    driver_waitq: Vec<WaitQ>,
    wake_batch_sched: u32,
    wake_batch_driver: u32,
    /// Software queues (`blk_mq_ctx` request lists), one per CPU, used without an elevator.
    sw_queues: Vec<VecDeque<RqId>>,
    plugs: Vec<Plug>,
    blocked: Vec<Option<BlockedRun>>,
    /// Free slots of `blocked`, lowest first (ids are reused lowest first).
    free_runs: BTreeSet<u32>,
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
    total_in_flight: u32,
    /// CPUs and locks; off (all costs zero) unless [`Self::set_cpu_costs`].
    pub cpu: crate::cpu::CpuModel,
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
        let nr_hw = nr_hw_queues.max(1) as usize;
        let nr_cpus = nr_cpus.max(1);
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
            })
            .collect();
        let driver_tags: Vec<Sbitmap> = (0..nr_hw)
            .map(|_| Sbitmap::new(queue_depth, nr_cpus, tag_rng))
            .collect();
        let sched_tags: Vec<Sbitmap> = if elevator.is_some() {
            (0..nr_hw)
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
            sched_waitq: (0..nr_hw).map(|_| WaitQ::default()).collect(),
            driver_waitq: (0..nr_hw).map(|_| WaitQ::default()).collect(),
            sw_queues: (0..nr_cpus).map(|_| VecDeque::new()).collect(),
            plugs: Vec::new(),
            blocked: Vec::new(),
            task_wait_bio: Vec::new(),
            free_runs: BTreeSet::new(),
            scratch: Vec::with_capacity(256),
            dispatch_seq: 0,
            last_issued_seq: 0,
            stats: BlkStats::default(),
            ctx_cpu: 0,
            irq_cpu: None,
            llc_cpus: 0,
            integrity: crate::integrity::Integrity::new(),
            last_busy_change: 0,
            total_in_flight: 0,
            cpu: crate::cpu::CpuModel::default(),
            elv_lock_per_insert: false,
            elv_locked_finish: false,
            list_groups: Vec::new(),
            hctx_group: vec![0; nr_hw],
            list_left: Vec::new(),
        }
    }

    /// CPU model figures for the report (empty when the model is off).
    pub fn cpu_stats(&self) -> Vec<(&'static str, u64)> {
        let c = &self.cpu;
        if !c.on {
            return Vec::new();
        }
        let sum = |ls: &[crate::cpu::Lock], f: fn(&crate::cpu::Lock) -> u64| -> u64 {
            ls.iter().map(f).sum()
        };
        let mut v = vec![
            ("elv_lock_acquisitions", c.elv_lock.acquisitions),
            ("elv_lock_handoffs", c.elv_lock.handoffs),
            ("elv_lock_wait_ns", c.elv_lock.wait_ns),
            (
                "drv_lock_acquisitions",
                sum(&c.drv_locks, |l| l.acquisitions),
            ),
            ("drv_lock_handoffs", sum(&c.drv_locks, |l| l.handoffs)),
            ("drv_lock_wait_ns", sum(&c.drv_locks, |l| l.wait_ns)),
            (
                "hctx_lock_acquisitions",
                sum(&c.hctx_locks, |l| l.acquisitions),
            ),
            ("hctx_lock_handoffs", sum(&c.hctx_locks, |l| l.handoffs)),
            ("cpu_busy_ns", c.busy_ns.iter().sum()),
        ];
        // Per elevator hook: lock acquisitions and hand-offs.
        for (hook, acq, handoffs) in [
            (
                ElvHook::Merge,
                "elv_merge_acquisitions",
                "elv_merge_handoffs",
            ),
            (
                ElvHook::Insert,
                "elv_insert_acquisitions",
                "elv_insert_handoffs",
            ),
            (
                ElvHook::Dispatch,
                "elv_dispatch_acquisitions",
                "elv_dispatch_handoffs",
            ),
            (
                ElvHook::Finish,
                "elv_finish_acquisitions",
                "elv_finish_handoffs",
            ),
        ] {
            v.push((acq, c.elv_hook_acq[hook as usize]));
            v.push((handoffs, c.elv_hook_handoffs[hook as usize]));
        }
        v
    }

    /// Turn the CPU model on with these per-step costs (see [`crate::cpu`]).
    pub fn set_cpu_costs(&mut self, costs: crate::cpu::CpuCosts) {
        self.cpu = crate::cpu::CpuModel::new(costs, self.nr_cpus, self.hctxs.len());
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

    fn plug_mut(&mut self, task: u32) -> &mut Plug {
        let t = task as usize;
        if self.plugs.len() <= t {
            self.plugs.resize_with(t + 1, Plug::default);
        }
        &mut self.plugs[t]
    }

    // ------------------------------------------------------------------------------------
    // Submission
    // ------------------------------------------------------------------------------------

    /// `blk_start_plug`.
    pub fn start_plug(&mut self, task: u32) {
        self.plug_mut(task).active = true;
    }

    /// `blk_finish_plug`: flush the plug (not from schedule) and end plugging.
    pub fn finish_plug(&mut self, task: u32, drv: &mut dyn Driver, now: &mut Ns, out: &mut BlkOut) {
        self.flush_plug(task, false, drv, now, out);
        self.plug_mut(task).active = false;
    }

    /// Split a submitter's I/O into bios no larger than `max_sectors` (`bio_split_to_limits`)
    /// and return how many bios it became. The caller then submits each with [`Self::submit_bio`].
    pub fn split_count(&self, nr_sectors: u32) -> u32 {
        let max = self.lim.max_sectors().max(1);
        nr_sectors.div_ceil(max).max(1)
    }

    /// [`Self::submit_bio_at`] for callers without a CPU context (the local clock is `now`).
    pub fn submit_bio(
        &mut self,
        bio: Bio,
        drv: &mut dyn Driver,
        now: Ns,
        out: &mut BlkOut,
    ) -> Submit {
        let mut t = now;
        self.submit_bio_at(bio, drv, &mut t, out)
    }

    /// `blk_mq_submit_bio` for one bio (already within limits), in a context whose local
    /// clock is `now` (advanced by the CPU time the submission costs).
    pub fn submit_bio_at(
        &mut self,
        mut bio: Bio,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> Submit {
        self.ctx_cpu = bio.cpu;
        *now += self.cpu.costs.bio_alloc_ns;
        bio.queue_time = *now;
        bio.next = NO_BIO;
        self.integrity
            .bio_submitted(bio.op, bio.token, bio.sector, bio.nr_sectors, bio.version);
        let bio_id = self.pool.alloc_bio(bio);
        self.trace(out, now, b'Q', TraceSrc::Bio(bio_id), 0);
        // 2. Plug merge, then scheduler (or software queue) merge.
        if self.lim.nomerges < 2 && self.attempt_merges(bio_id, now, out) {
            return Submit::Done;
        }
        self.submit_bio_alloc(bio_id, drv, now, out)
    }

    /// Steps 3–6 of `blk_mq_submit_bio`: allocate a request, then plug, insert or issue.
    fn submit_bio_alloc(
        &mut self,
        bio_id: BioId,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> Submit {
        let (cpu, task, op, flags) = {
            let b = self.pool.bio(bio_id);
            (b.cpu, b.task, b.op, b.flags)
        };
        let hctx = self.cpu_to_hctx(cpu);
        let h = hctx as usize;
        // 3. Allocate a tag: scheduler tag with an elevator, driver tag without.
        let tag = if self.elevator.is_some() {
            let sync = op == Op::Read || flags & crate::request::flags::REQ_SYNC != 0;
            let shallow = self.elevator.as_ref().and_then(|e| e.limit_depth(op, sync));
            let tags = &mut self.sched_tags[h];
            match shallow {
                Some(d) if tags.busy() >= d => None,
                _ => tags.get(cpu as usize),
            }
        } else {
            self.driver_tags[h].get(cpu as usize)
        };
        let Some(tag) = tag else {
            // No tag: the task sleeps (`blk_mq_get_tag` → `io_schedule`), which flushes its
            // plug from the scheduler (async queue runs). Waiters are woken in batches.
            self.stats.tag_waits += 1;
            let wq = if self.elevator.is_some() {
                &mut self.sched_waitq[h]
            } else {
                &mut self.driver_waitq[h]
            };
            if wq.waiters.is_empty() {
                wq.wait_cnt = if self.elevator.is_some() {
                    self.wake_batch_sched
                } else {
                    self.wake_batch_driver
                };
            }
            wq.waiters.push_back(TagWaiter { task });
            let t = task as usize;
            if self.task_wait_bio.len() <= t {
                self.task_wait_bio.resize(t + 1, None);
            }
            // A task asleep in `blk_mq_get_tag` submits nothing until it is woken.
            assert!(
                self.task_wait_bio[t].is_none(),
                "task {task} submitted a bio while asleep on a tag"
            );
            self.task_wait_bio[t] = Some(bio_id);
            self.flush_plug(task, true, drv, now, out);
            // Before sleeping the kernel runs the queue once (`blk_mq_get_tag`).
            self.run_hw_queue(hctx, false, cpu, drv, now, out);
            return Submit::WaitTag;
        };
        let rq = self.pool.alloc_rq_from_bio(bio_id, hctx, *now);
        {
            let r = self.pool.get_mut(rq);
            if self.elevator.is_some() {
                r.sched_tag = tag as i32;
            } else {
                r.tag = tag as i32;
            }
        }
        self.trace(out, now, b'G', TraceSrc::Rq(rq), 0);
        self.after_alloc(rq, task, drv, now, out);
        Submit::Done
    }

    fn after_alloc(
        &mut self,
        rq: RqId,
        task: u32,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let hctx = self.pool.get(rq).hctx;
        let cpu = self.pool.get(rq).cpu;
        // 4. `op_is_flush(bio->bi_opf) && blk_insert_flush(rq)`: PREFLUSH/FUA requests are
        // sequenced by the flush machinery (`flush.rs`), which may take them here.
        if flush::op_is_flush(self.pool.get(rq).flags) && self.insert_flush(rq, drv, now, out) {
            return;
        }
        // 5. Plugged: add to the plug.
        if self
            .plugs
            .get(task as usize)
            .map(|p| p.active)
            .unwrap_or(false)
        {
            let last_bytes = self.plugs[task as usize]
                .last()
                .map(|l| self.pool.get(l).bytes())
                .unwrap_or(0);
            let nomerges = self.lim.nomerges >= 2;
            if self.plugs[task as usize].must_flush_before_add(last_bytes, nomerges) {
                self.flush_plug(task, false, drv, now, out);
            }
            let p = self.plug_mut(task);
            if p.list.is_empty() {
                self.trace(out, now, b'P', TraceSrc::Task(task, cpu), 0);
            }
            self.pool.get_mut(rq).state = RqState::Plugged;
            self.plug_mut(task).list.push(rq);
            *now += self.cpu.costs.plug_ns;
            return;
        }
        // 6. With an elevator, or a busy single-queue device: insert and run asynchronously.
        let h = hctx as usize;
        let is_sync = self.pool.get(rq).op == Op::Read
            || self.pool.get(rq).flags & crate::request::flags::REQ_SYNC != 0;
        if self.elevator.is_some()
            || (self.hctxs[h].dispatch_busy > 0 && (self.hctxs.len() == 1 || !is_sync))
        {
            self.insert_requests_one(rq, now, out);
            self.run_hw_queue(hctx, true, cpu, drv, now, out);
        } else {
            self.try_issue_directly(rq, cpu, drv, now, out);
        }
    }

    /// Plug merge (`blk_attempt_plug_merge`: only the last plugged request) then elevator or
    /// software-queue merge (`blk_mq_sched_bio_merge`). Returns true if the bio was merged.
    fn attempt_merges(&mut self, bio_id: BioId, now: &mut Ns, out: &mut BlkOut) -> bool {
        let info = self.bio_info(bio_id);
        let task = info.task as usize;
        // Plug merge.
        if let Some(last) = self
            .plugs
            .get(task)
            .filter(|p| p.active)
            .and_then(|p| p.last())
        {
            let kind = bio_merge_kind(self.pool.get(last), &info, &self.lim);
            if kind != ElvMerge::NoMerge {
                self.do_bio_merge(last, bio_id, kind, now, out);
                self.stats.plug_merges += 1;
                return true;
            }
        }
        if self.lim.nomerges >= 1 && self.elevator.is_none() {
            return false;
        }
        // Elevator merge: `dd_bio_merge` / `bfq_bio_merge` take the elevator lock for the
        // lookup whether or not a merge is found.
        if self.cpu.on && self.elevator.is_some() {
            let hold = self.cpu.costs.elv(self.cpu.costs.elv_merge_ns);
            let _ = self.cpu.elv_hold(info.cpu, now, hold, ElvHook::Merge);
        }
        if let Some(elv) = self.elevator.as_mut() {
            if let Some((rq, kind)) = elv.find_merge(&self.pool, &info) {
                if bio_merge_kind(self.pool.get(rq), &info, &self.lim) == kind {
                    self.do_bio_merge(rq, bio_id, kind, now, out);
                    self.stats.elv_merges += 1;
                    let elv = self.elevator.as_mut().unwrap();
                    elv.request_merged(&mut self.pool, rq, kind);
                    // Request–request merge with the neighbour (`attempt_back_merge` /
                    // `attempt_front_merge`).
                    let neighbour = match kind {
                        ElvMerge::BackMerge => elv.next_request(&self.pool, rq).map(|n| (rq, n)),
                        ElvMerge::FrontMerge => elv.former_request(&self.pool, rq).map(|p| (p, rq)),
                        ElvMerge::NoMerge => None,
                    };
                    if let Some((a, b)) = neighbour {
                        if requests_mergeable(self.pool.get(a), self.pool.get(b), &self.lim) {
                            self.merge_two_queued(a, b, now, out);
                        }
                    }
                    return true;
                }
            }
            return false;
        }
        // `none`: `blk_bio_list_merge` over the CPU's software queue, newest first, at most
        // 8 requests inspected.
        let cpu = info.cpu as usize % self.nr_cpus;
        let mut found = None;
        for &rq in self.sw_queues[cpu].iter().rev().take(8) {
            let kind = bio_merge_kind(self.pool.get(rq), &info, &self.lim);
            if kind != ElvMerge::NoMerge {
                found = Some((rq, kind));
                break;
            }
        }
        if let Some((rq, kind)) = found {
            self.do_bio_merge(rq, bio_id, kind, now, out);
            self.stats.elv_merges += 1;
            return true;
        }
        false
    }

    /// Merge queued request `b` into `a` (b follows a) and free `b`.
    fn merge_two_queued(&mut self, a: RqId, b: RqId, now: &mut Ns, out: &mut BlkOut) {
        let elv = self
            .elevator
            .as_mut()
            .expect("queued merges need an elevator");
        elv.requests_merged(&mut self.pool, a, b);
        self.pool.merge_requests(a, b);
        self.stats.rq_merges += 1;
        // The absorbed request takes the older deadline (`dd_merged_requests` keeps the
        // earlier fifo_time); the elevator did that in `requests_merged`.
        let freed = self.pool.free_rq_shell(b);
        self.release_tags(&freed, now, out);
    }

    fn do_bio_merge(
        &mut self,
        rq: RqId,
        bio_id: BioId,
        kind: ElvMerge,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let dir = self.pool.bio(bio_id).op.dir();
        self.stats.merges[dir] += 1;
        match kind {
            ElvMerge::BackMerge => {
                self.trace(out, now, b'M', TraceSrc::Bio(bio_id), 0);
                self.pool.back_merge_bio(rq, bio_id);
            }
            ElvMerge::FrontMerge => {
                self.trace(out, now, b'F', TraceSrc::Bio(bio_id), 0);
                self.pool.front_merge_bio(rq, bio_id);
            }
            ElvMerge::NoMerge => unreachable!(),
        }
    }

    fn bio_info(&self, id: BioId) -> BioInfo {
        let b = self.pool.bio(id);
        BioInfo {
            op: b.op,
            flags: b.flags,
            sector: b.sector,
            nr_sectors: b.nr_sectors,
            nr_segments: b.nr_segments,
            cpu: b.cpu,
            task: b.task,
        }
    }

    /// `blk_mq_flush_plug_list`.
    pub fn flush_plug(
        &mut self,
        task: u32,
        from_schedule: bool,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let Some(p) = self.plugs.get_mut(task as usize) else {
            return;
        };
        if p.list.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut p.list);
        let cpu = self.pool.get(list[0]).cpu;
        self.trace(out, now, b'U', TraceSrc::Task(task, cpu), list.len() as u32);
        if self.elevator.is_none() && !from_schedule {
            // Fast path: no elevator, not from schedule → issue directly, in order
            // (`blk_mq_try_issue_list_directly`); on a resource error the rest is inserted.
            let n = list.len();
            for i in 0..n {
                let rq = list[i];
                let hctx = self.pool.get(rq).hctx;
                let h = hctx as usize;
                if self.hctxs[h].stopped || !self.hctxs[h].dispatch.is_empty() {
                    for &r in &list[i..] {
                        self.bypass_insert(r, false);
                    }
                    self.run_hw_queue(hctx, false, cpu, drv, now, out);
                    break;
                }
                let st = self.issue_one(rq, i + 1 == n, cpu, drv, now, out);
                match st {
                    BlkStatus::Ok | BlkStatus::Blocked => {}
                    BlkStatus::Resource | BlkStatus::DevResource => {
                        for &r in &list[i..] {
                            self.bypass_insert(r, false);
                        }
                        drv.commit_rqs(hctx, *now, &mut out.drv);
                        self.run_hw_queue(hctx, false, cpu, drv, now, out);
                        break;
                    }
                    BlkStatus::IoErr => self.end_request(rq, BlkStatus::IoErr, drv, now, out),
                }
            }
        } else {
            // Insert the batch (one elevator lock hold) and run the queue.
            for &rq in &list {
                self.pool.get_mut(rq).state = RqState::Idle;
            }
            // Read the hctx first: an insert merge may free list[0].
            let hctx = self.pool.get(list[0]).hctx;
            self.insert_requests_batch(&list, now, out);
            self.run_hw_queue(hctx, from_schedule, cpu, drv, now, out);
        }
        list.clear();
        // Give the buffer back to the plug so steady state does not allocate.
        let p = &mut self.plugs[task as usize];
        if p.list.is_empty() {
            p.list = list;
        }
    }

    fn insert_requests_one(&mut self, rq: RqId, now: &mut Ns, out: &mut BlkOut) {
        let mut one = std::mem::take(&mut self.scratch);
        one.clear();
        one.push(rq);
        self.insert_requests_batch(&one, now, out);
        one.clear();
        self.scratch = one;
    }

    /// Insert into the elevator (`insert_requests`) or the software queues.
    fn insert_requests_batch(&mut self, list: &[RqId], now: &mut Ns, out: &mut BlkOut) {
        for &rq in list {
            self.pool.get_mut(rq).insert_time = *now;
            self.trace(out, now, b'I', TraceSrc::Rq(rq), 0);
        }
        if self.cpu.on && self.elevator.is_some() && !list.is_empty() {
            let cpu = self.pool.get(list[0]).cpu;
            let one = self.cpu.costs.elv(self.cpu.costs.elv_insert_ns);
            if self.elv_lock_per_insert {
                for _ in 0..list.len() {
                    let _ = self.cpu.elv_hold(cpu, now, one, ElvHook::Insert);
                }
            } else {
                let _ = self
                    .cpu
                    .elv_hold(cpu, now, one * list.len() as Ns, ElvHook::Insert);
            }
        }
        if let Some(elv) = self.elevator.as_mut() {
            // mq-deadline may merge at insert (`blk_mq_sched_try_insert_merge`): the elevator
            // moves the bios into the queued request; the core frees the empty shell.
            let mut merged_away: Vec<RqId> = Vec::new();
            for &rq in list {
                if self.lim.nomerges == 0 && elv.try_insert_merge(&mut self.pool, rq).is_some() {
                    merged_away.push(rq);
                    continue;
                }
                let r = self.pool.get_mut(rq);
                r.state = RqState::Queued;
                r.rq_flags |= crate::request::rqf::ELV;
            }
            if merged_away.is_empty() {
                elv.insert_requests(&mut self.pool, list, false, *now);
            } else {
                let rest: Vec<RqId> = list
                    .iter()
                    .copied()
                    .filter(|r| !merged_away.contains(r))
                    .collect();
                elv.insert_requests(&mut self.pool, &rest, false, *now);
                for rq in merged_away {
                    self.stats.rq_merges += 1;
                    let freed = self.pool.free_rq_shell(rq);
                    self.release_tags(&freed, now, out);
                }
            }
            self.reap_elv_released(now, out);
        } else {
            for &rq in list {
                let cpu = self.pool.get(rq).cpu as usize % self.nr_cpus;
                self.pool.get_mut(rq).state = RqState::Queued;
                self.sw_queues[cpu].push_back(rq);
            }
        }
    }

    /// `blk_mq_request_bypass_insert`: onto `hctx->dispatch`.
    fn bypass_insert(&mut self, rq: RqId, at_head: bool) {
        let h = self.pool.get(rq).hctx as usize;
        self.pool.get_mut(rq).state = RqState::OnDispatchList;
        if at_head {
            self.hctxs[h].dispatch.push_front(rq);
        } else {
            self.hctxs[h].dispatch.push_back(rq);
        }
    }

    /// `blk_mq_try_issue_directly` (no elevator).
    fn try_issue_directly(
        &mut self,
        rq: RqId,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let hctx = self.pool.get(rq).hctx;
        let h = hctx as usize;
        if self.hctxs[h].stopped {
            self.insert_requests_one(rq, now, out);
            self.run_hw_queue(hctx, false, cpu, drv, now, out);
            return;
        }
        let st = self.issue_one(rq, true, cpu, drv, now, out);
        match st {
            BlkStatus::Ok | BlkStatus::Blocked => self.update_dispatch_busy(h, false),
            BlkStatus::Resource | BlkStatus::DevResource => {
                self.update_dispatch_busy(h, true);
                self.bypass_insert(rq, false);
                self.run_hw_queue(hctx, false, cpu, drv, now, out);
            }
            BlkStatus::IoErr => self.end_request(rq, BlkStatus::IoErr, drv, now, out),
        }
    }

    /// Issue one request that already has its driver tag. Blocked direct issues resume
    /// nothing (the submitter itself is the blocked context).
    fn issue_one(
        &mut self,
        rq: RqId,
        last: bool,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> BlkStatus {
        let id = self.new_run_id();
        let st = self.queue_rq(rq, last, CallCtx { id, cpu }, drv, now, out);
        if st == BlkStatus::Blocked {
            let hctx = self.pool.get(rq).hctx;
            self.park_run(id, hctx, cpu, Vec::new());
        }
        st
    }

    /// The id a context gets if it parks: the lowest free slot of `blocked` (a new one if
    /// none is free), taken only when it parks ([`Self::park_slot`]).
    fn new_run_id(&mut self) -> u32 {
        if let Some(&i) = self.free_runs.first() {
            return i;
        }
        let i = self.blocked.len() as u32;
        self.blocked.push(None);
        self.free_runs.insert(i);
        i
    }

    /// Park `run` in slot `id` (from [`Self::new_run_id`]).
    fn park_slot(&mut self, id: u32, run: BlockedRun) {
        self.free_runs.remove(&id);
        self.blocked[id as usize] = Some(run);
    }

    fn park_run(&mut self, id: u32, hctx: u16, cpu: u16, rest: Vec<RqId>) {
        self.park_slot(
            id,
            BlockedRun {
                hctx,
                cpu,
                rest,
                pulling: false,
                granted: None,
                owner: None,
            },
        );
    }

    /// Call the driver's `queue_rq` and account for the outcome.
    fn queue_rq(
        &mut self,
        rq: RqId,
        last: bool,
        ctx: CallCtx,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> BlkStatus {
        let hctx = self.pool.get(rq).hctx;
        if self.cpu.on {
            // The driver's submission path for this hardware queue (`blk_mq_start_request`
            // and the driver's own per-queue lock, e.g. null_blk's `nq`/`cmd` handling,
            // `nvmeq->sq_lock`): it moves between CPUs when several dispatch to one hctx.
            let c = self.cpu.costs.queue_rq_ns;
            self.cpu.drv_hold(hctx, ctx.cpu, now, c);
        }
        {
            let r = self.pool.get_mut(rq);
            debug_assert!(r.tag >= 0, "queue_rq without a driver tag");
            r.state = RqState::InFlight;
            r.issue_time = *now;
            r.rq_flags |= crate::request::rqf::STARTED;
            if r.op == Op::Flush {
                // What this flush will make durable (the integrity oracle's power-cut view).
                r.flush_ack_seq = self.integrity.flush_issued();
            }
        }
        self.stats.queue_rq_calls += 1;
        self.set_in_flight_delta(hctx, 1, now);
        let st = drv.queue_rq(&self.pool, rq, hctx, last, ctx, *now, &mut out.drv);
        match st {
            BlkStatus::Ok | BlkStatus::Blocked => {
                self.trace(out, now, b'D', TraceSrc::Rq(rq), 0);
                let seq = self.pool.get(rq).elv_priv[1];
                if seq != 0 {
                    if seq < self.last_issued_seq {
                        self.stats.dispatch_inversions += 1;
                    }
                    self.last_issued_seq = self.last_issued_seq.max(seq);
                }
                let r = self.pool.get(rq);
                self.stats.blk_wait_ns += now.saturating_sub(r.alloc_time);
            }
            BlkStatus::Resource | BlkStatus::DevResource => {
                self.stats.queue_rq_resource += 1;
                self.set_in_flight_delta(hctx, -1, now);
                let r = self.pool.get_mut(rq);
                r.state = RqState::Idle;
                r.requeues += 1;
            }
            BlkStatus::IoErr => {}
        }
        // Inline completions (null_blk irqmode=0 completes inside queue_rq).
        self.drain_driver_completions_at(drv, now, out);
        st
    }

    /// Process completions the driver reported (inline or from its timers).
    /// Completions the driver reported from an interrupt or timer at event time `now`.
    /// With the CPU model on, each runs as an interrupt context on the submitting CPU
    /// (`blk_mq_complete_request` steers the completion there, `blk_mq_complete_need_ipi`).
    pub fn drain_driver_completions(&mut self, drv: &mut dyn Driver, now: Ns, out: &mut BlkOut) {
        // A driver thread (loop's worker) completes in its own context: no interrupt.
        let from = drv.completing_cpu();
        if !self.cpu.on {
            let mut t = now;
            while let Some((rq, st)) = out.drv.completions.pop() {
                self.ctx_cpu = self.completion_cpu(rq, from);
                self.end_request(rq, st, drv, &mut t, out);
            }
            return;
        }
        while let Some((rq, st)) = out.drv.completions.pop() {
            let cpu = self.completion_cpu(rq, from);
            self.ctx_cpu = cpu;
            let start = self.cpu.begin(cpu, now);
            let irq = if from.is_some() {
                0
            } else {
                self.cpu.costs.irq_ns
            };
            let mut clk = start + irq;
            self.end_request(rq, st, drv, &mut clk, out);
            self.cpu.end(cpu, start, clk);
        }
    }

    /// Requests the driver gave back (`blk_mq_requeue_request(rq, true)`): each leaves the
    /// driver (`__blk_mq_requeue_request`: the driver tag goes back when an elevator owns the
    /// request) and, as the MMC driver marks its requests RQF_DONTPREP, the requeue work puts
    /// it at the tail of `hctx->dispatch` (`blk_mq_request_bypass_insert`) and runs the queue.
    /// Departure: the elevator's requeue hook is not called; its completion hooks run once,
    /// when the request finally completes.
    pub fn drain_driver_requeues(&mut self, now: Ns, out: &mut BlkOut) {
        while let Some(rq) = out.drv.requeues.pop() {
            let mut t = now;
            let now = &mut t;
            let hctx = {
                let r = self.pool.get(rq);
                assert_eq!(
                    r.state,
                    RqState::InFlight,
                    "request {rq} requeued while not in flight"
                );
                r.hctx
            };
            self.trace(out, now, b'R', TraceSrc::Rq(rq), 0);
            self.set_in_flight_delta(hctx, -1, now);
            self.stats.requeues += 1;
            let r = self.pool.get_mut(rq);
            r.state = RqState::Idle;
            r.requeues += 1;
            if self.elevator.is_some() {
                self.put_driver_tag(rq, now, out);
            }
            self.bypass_insert(rq, false);
            self.delay_run_hw_queue(hctx, 0, now, out);
        }
    }

    /// Where the block layer's completion work for `rq` runs (`blk_mq_complete_request` →
    /// `blk_mq_complete_need_ipi`): on the CPU that took the interrupt, unless `rq_affinity`
    /// asks for the submitting CPU (2) or (1, the default) the two CPUs do not share a cache.
    /// Restarts and the driver's queue runs issued from there become kblockd work on that CPU,
    /// and that CPU's sbitmap hint allocates the next driver tags.
    /// `from`: the CPU a driver thread calls `blk_mq_complete_request` on, instead of the
    /// interrupt's.
    fn completion_cpu(&self, rq: RqId, from: Option<u16>) -> u16 {
        let sub = self.pool.get(rq).cpu;
        let Some(irq) = from.or(self.irq_cpu) else {
            return sub;
        };
        let share = self.llc_cpus == 0 || irq / self.llc_cpus == sub / self.llc_cpus;
        match self.lim.rq_affinity {
            0 => irq,
            2 => sub,
            _ if share => irq,
            _ => sub,
        }
    }

    /// The platform's interrupt topology (see [`Self::completion_cpu`]).
    pub fn set_completion_topology(&mut self, irq_cpu: Option<u16>, llc_cpus: u16) {
        self.irq_cpu = irq_cpu;
        self.llc_cpus = llc_cpus;
    }

    /// Completions reported inline (inside `queue_rq`, null_blk `irqmode=0`): they run in
    /// the calling context.
    fn drain_driver_completions_at(
        &mut self,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        while let Some((rq, st)) = out.drv.completions.pop() {
            self.end_request(rq, st, drv, now, out);
        }
    }

    fn set_in_flight_delta(&mut self, hctx: u16, delta: i32, now: &mut Ns) {
        // Accounting for util and in_queue (`part_stat`, fio's disk stats).
        // Contexts on different CPUs may run at slightly different local times: never
        // account backwards.
        let t = (*now).max(self.last_busy_change);
        let span = t - self.last_busy_change;
        if self.total_in_flight > 0 {
            self.stats.busy_ns += span;
            self.stats.in_queue_ns += span as u128 * self.total_in_flight as u128;
        }
        self.last_busy_change = t;
        let h = &mut self.hctxs[hctx as usize];
        if delta > 0 {
            h.in_flight += 1;
            self.total_in_flight += 1;
            self.stats.max_in_flight = self.stats.max_in_flight.max(self.total_in_flight);
        } else {
            h.in_flight -= 1;
            self.total_in_flight -= 1;
        }
    }

    /// Close the util/in_queue accounting at the end of a run.
    pub fn account_until(&mut self, now: Ns) {
        let span = now.saturating_sub(self.last_busy_change);
        if self.total_in_flight > 0 {
            self.stats.busy_ns += span;
            self.stats.in_queue_ns += span as u128 * self.total_in_flight as u128;
        }
        self.last_busy_change = now.max(self.last_busy_change);
    }

    // ------------------------------------------------------------------------------------
    // Running a hardware queue
    // ------------------------------------------------------------------------------------

    fn hctx_has_work(&self, h: usize) -> bool {
        !self.hctxs[h].dispatch.is_empty()
            || match &self.elevator {
                Some(e) => e.has_work(),
                None => self.hctx_cpus(h).any(|c| !self.sw_queues[c].is_empty()),
            }
    }

    /// The CPUs whose software queues map to hardware queue `h` (`blk_mq_map_queues`:
    /// `cpu % nr_hw_queues`), in ascending order: `hctx->ctxs`.
    fn hctx_cpus(&self, h: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        (h..self.nr_cpus).step_by(self.hctxs.len())
    }

    /// `blk_mq_run_hw_queue(hctx, async)`. `cpu` is the CPU of the caller (runs inline when
    /// not async).
    pub fn run_hw_queue(
        &mut self,
        hctx: u16,
        async_run: bool,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        if self.hctxs[h].stopped || !self.hctx_has_work(h) {
            return;
        }
        if async_run {
            self.delay_run_hw_queue(hctx, 0, now, out);
            return;
        }
        self.sched_dispatch_requests(hctx, cpu, drv, now, out);
    }

    /// `blk_mq_delay_run_hw_queue` → `kblockd_mod_delayed_work_on(blk_mq_hctx_next_cpu(hctx),
    /// &hctx->run_work, delay)`: one run work per hctx, and `mod_delayed_work_on` re-arms a
    /// pending one with the new delay and CPU (a later request can postpone an earlier one,
    /// as in the kernel). Where it runs (`blk_mq_hctx_next_cpu`): with a single hardware
    /// queue `WORK_CPU_UNBOUND`, i.e. kblockd (a per-CPU workqueue) on the CPU that asked for
    /// the run; otherwise round-robin over the hctx's CPUs, switching every
    /// `BLK_MQ_CPU_WORK_BATCH` (8) runs. That CPU's sbitmap hint picks the driver tags the
    /// run allocates, which is what orders the MMC host software queue's slots.
    pub fn delay_run_hw_queue(&mut self, hctx: u16, delay: Ns, now: &mut Ns, out: &mut BlkOut) {
        let nr_hw = self.hctxs.len();
        let nr_cpus = self.nr_cpus;
        let requester = self.ctx_cpu;
        let h = &mut self.hctxs[hctx as usize];
        let at = *now + delay;
        h.run_cpu = if nr_hw == 1 {
            requester
        } else {
            h.next_cpu_batch = h.next_cpu_batch.saturating_sub(1);
            if h.next_cpu_batch == 0 {
                // cpumask_next over the CPUs mapped to this hctx (`blk_mq_map_queues`:
                // cpu % nr_hw), wrapping to the first.
                let mut c = h.next_cpu as usize + 1;
                while c < nr_cpus && c % nr_hw != hctx as usize {
                    c += 1;
                }
                if c >= nr_cpus {
                    c = hctx as usize % nr_cpus;
                }
                h.next_cpu = c as u16;
                h.next_cpu_batch = 8;
            }
            h.next_cpu
        };
        if h.run_at != Some(at) {
            h.run_at = Some(at);
            out.hw_runs.push((hctx, delay));
        }
    }

    /// CPU the pending run of `hctx` executes on (see [`Self::delay_run_hw_queue`]).
    pub fn run_cpu(&self, hctx: u16) -> u16 {
        self.hctxs[hctx as usize].run_cpu
    }

    /// The kblockd work for `hctx` fired at `now` (scheduled at `at`). Stale events (the work
    /// was moved) are ignored.
    pub fn run_work(
        &mut self,
        hctx: u16,
        at: Ns,
        cpu: u16,
        drv: &mut dyn Driver,
        now: Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        if self.hctxs[h].run_at != Some(at) {
            return;
        }
        self.hctxs[h].run_at = None;
        self.ctx_cpu = cpu;
        self.stats.hw_runs += 1;
        if self.hctxs[h].stopped || !self.hctx_has_work(h) {
            return;
        }
        // A kblockd work item: its own context on `cpu`.
        let start = self.cpu.begin(cpu, now);
        let mut clk = start;
        self.sched_dispatch_requests(hctx, cpu, drv, &mut clk, out);
        self.end_context(cpu, start, clk, out);
    }

    /// When the pending asynchronous run of `hctx` is due (absolute time), if any.
    pub fn pending_run_at(&self, hctx: u16) -> Option<Ns> {
        self.hctxs[hctx as usize].run_at
    }

    /// The elevator's timer fired (bfq idling, kyber's statistics timer).
    pub fn elevator_timer(&mut self, now: Ns, out: &mut BlkOut) {
        let now = &mut { now };
        let run = match self.elevator.as_mut() {
            Some(e) => e.timer(&mut self.pool, *now),
            None => false,
        };
        self.reap_elv_released(now, out);
        if run {
            for h in 0..self.hctxs.len() {
                self.delay_run_hw_queue(h as u16, 0, now, out);
            }
        }
    }

    /// When the elevator next wants [`Self::elevator_timer`].
    pub fn elevator_next_timer(&self) -> Option<Ns> {
        self.elevator.as_ref().and_then(|e| e.next_timer())
    }

    /// `blk_mq_stop_hw_queues` (null_blk's throttle): no dispatch until restarted.
    pub fn stop_hw_queues(&mut self) {
        for h in &mut self.hctxs {
            h.stopped = true;
        }
    }

    /// `blk_mq_start_stopped_hw_queues(q, true)`: clear STOPPED and run asynchronously.
    pub fn start_stopped_hw_queues(&mut self, now: &mut Ns, out: &mut BlkOut) {
        for i in 0..self.hctxs.len() {
            if self.hctxs[i].stopped {
                self.hctxs[i].stopped = false;
                if self.hctx_has_work(i) {
                    self.delay_run_hw_queue(i as u16, 0, now, out);
                }
            }
        }
    }

    /// `blk_mq_sched_dispatch_requests` → `__blk_mq_sched_dispatch_requests`.
    fn sched_dispatch_requests(
        &mut self,
        hctx: u16,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        if self.hctxs[h].stopped {
            return;
        }
        // Leftovers on hctx->dispatch go first.
        if !self.hctxs[h].dispatch.is_empty() {
            if self.cpu.on {
                // `spin_lock(&hctx->lock); list_splice_init(&hctx->dispatch, ...)`.
                self.cpu.hctx_hold(hctx, cpu, now, 0);
            }
            let mut list = std::mem::take(&mut self.scratch);
            list.clear();
            list.extend(self.hctxs[h].dispatch.drain(..));
            self.hctxs[h].sched_restart = true;
            let r = self.dispatch_rq_list(hctx, &mut list, cpu, drv, now, out);
            list.clear();
            self.scratch = list;
            match r {
                ListResult::AllSent => {}
                ListResult::Suspended | ListResult::NotAll => return,
            }
            if self.elevator.is_some() {
                self.do_dispatch_sched(hctx, cpu, drv, now, out);
            } else {
                self.do_dispatch_ctx(hctx, cpu, drv, now, out);
            }
        } else if self.elevator.is_some() {
            self.do_dispatch_sched(hctx, cpu, drv, now, out);
        } else if self.hctxs[h].dispatch_busy > 0 {
            self.do_dispatch_ctx(hctx, cpu, drv, now, out);
        } else {
            // Flush all software queues of this hctx and dispatch them in one list.
            let mut list = std::mem::take(&mut self.scratch);
            list.clear();
            for c in self.hctx_cpus(h) {
                list.extend(self.sw_queues[c].drain(..));
            }
            for &rq in &list {
                self.pool.get_mut(rq).state = RqState::Idle;
            }
            if !list.is_empty() {
                self.dispatch_rq_list(hctx, &mut list, cpu, drv, now, out);
            }
            list.clear();
            self.scratch = list;
        }
    }

    /// `blk_mq_do_dispatch_sched` → repeated `__blk_mq_do_dispatch_sched`.
    fn do_dispatch_sched(
        &mut self,
        hctx: u16,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let mut list = std::mem::take(&mut self.scratch);
        list.clear();
        self.dispatch_sched_loop(hctx, cpu, list, drv, now, out);
    }

    /// The body of `blk_mq_do_dispatch_sched`, entered with the requests this context has
    /// already pulled (non-empty when it resumes after yielding the CPU model's clock).
    ///
    /// Mainline (`queue.sched_batch_dispatch` = 0): every `dispatch_request` is its own hold
    /// of the elevator lock (`dd->lock` / `bfqd->lock` inside the elevator), and the pulled
    /// requests are issued together after the loop. With several CPUs dispatching at once,
    /// their pulls interleave (the lock moves between them), so each CPU's list holds every
    /// other request of the elevator's order and the driver sees 1, 3, 2, 4.
    ///
    /// Batch (§4.9, Yu Kuai's unmerged series, `BUDGET_TOKEN_BATCH` = 8): the lock is taken
    /// once for up to N `dispatch_request` calls, and each batch is issued before the next is
    /// pulled. Departure: the series collects up to `nr_requests` for drivers without
    /// `get_budget` (null_blk); blksim takes N from the setting for every driver.
    ///
    /// With the CPU model on, a context that wants the elevator lock reserves its hold on
    /// the lock's timeline, then yields until the hold starts (it spins meanwhile) and calls
    /// the elevator then, so critical sections act on the elevator in the order and at the
    /// time they run. As in the kernel, `has_work` is checked locklessly before spinning, so
    /// a context may get the lock only to find the elevator drained by the CPUs ahead of it
    /// (`dispatch_request` returns NULL).
    fn dispatch_sched_loop(
        &mut self,
        hctx: u16,
        cpu: u16,
        mut list: Vec<RqId>,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let l = std::mem::take(&mut list);
        self.dispatch_sched_loop_granted(hctx, cpu, l, None, drv, now, out);
    }

    /// [`Self::dispatch_sched_loop`], resuming with the elevator lock granted until
    /// `granted` (the end of the reserved hold) when Some.
    #[allow(clippy::too_many_arguments)]
    fn dispatch_sched_loop_granted(
        &mut self,
        hctx: u16,
        cpu: u16,
        mut list: Vec<RqId>,
        mut granted: Option<Ns>,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        loop {
            let max_dispatch = if self.hctxs[h].dispatch_busy > 0 {
                1
            } else {
                self.lim.nr_requests.max(1)
            };
            // The series batches only when the hctx is not busy (`!hctx->dispatch_busy`).
            let batch = if self.hctxs[h].dispatch_busy == 0 {
                self.lim.sched_batch_dispatch
            } else {
                0
            };
            let mut run_queue = false;
            let mut busy = false;
            while (list.len() as u32) < max_dispatch {
                let n = if batch > 0 {
                    batch.min(max_dispatch - list.len() as u32)
                } else {
                    1
                };
                let hold_end = match granted.take() {
                    Some(end) => Some(end),
                    None => {
                        if !self.elevator.as_ref().unwrap().has_work() {
                            break;
                        }
                        if !self.hctxs[h].dispatch.is_empty() {
                            busy = true;
                            break;
                        }
                        if self.cpu.on {
                            let hold = n as Ns * self.cpu.costs.elv(self.cpu.costs.elv_dispatch_ns);
                            let mut end = *now;
                            let start = self.cpu.elv_hold(cpu, &mut end, hold, ElvHook::Dispatch);
                            if start > self.cpu.floor() {
                                // Spin until the hold starts; call the elevator then.
                                *now = start;
                                self.park_pull(hctx, cpu, list, Some(end), *now, out);
                                return;
                            }
                            Some(end)
                        } else {
                            None
                        }
                    }
                };
                let mut stop = false;
                for k in 0..n {
                    let elv = self.elevator.as_mut().unwrap();
                    if k > 0 && !elv.has_work() {
                        break;
                    }
                    let picked = elv.dispatch_request(&mut self.pool, *now);
                    self.reap_elv_released(now, out);
                    let Some(rq) = picked else {
                        run_queue = true;
                        stop = true;
                        break;
                    };
                    self.dispatch_seq += 1;
                    {
                        let r = self.pool.get_mut(rq);
                        r.state = RqState::Idle;
                        r.elv_priv[1] = self.dispatch_seq;
                        // Requests an elevator builds itself (eraseblock's gap reads and
                        // combined writes) are its own too.
                        r.rq_flags |= crate::request::rqf::ELV;
                    }
                    list.push(rq);
                    if !self.get_driver_tag(rq, cpu) {
                        stop = true;
                        break;
                    }
                }
                if let Some(end) = hold_end {
                    *now = (*now).max(end);
                }
                if stop || batch > 0 {
                    break;
                }
            }
            let dispatched = if list.is_empty() {
                if run_queue {
                    self.delay_run_hw_queue(hctx, BLK_MQ_BUDGET_DELAY, now, out);
                }
                false
            } else {
                let r = self.dispatch_rq_list(hctx, &mut list, cpu, drv, now, out);
                if r == ListResult::Suspended {
                    list.clear();
                    self.scratch = list;
                    return;
                }
                r == ListResult::AllSent
            };
            list.clear();
            if busy {
                // -EAGAIN: hctx->dispatch got refilled; run again (the kernel retries once
                // inline, then asynchronously).
                self.scratch = list;
                self.delay_run_hw_queue(hctx, 0, now, out);
                return;
            }
            if !dispatched {
                self.scratch = list;
                return;
            }
        }
    }

    /// Park a dispatch context that yields in its pull loop; it resumes through
    /// [`DriverOut::unblock`] at its local time (see [`Self::resume_run`]).
    fn park_pull(
        &mut self,
        hctx: u16,
        cpu: u16,
        list: Vec<RqId>,
        granted: Option<Ns>,
        at: Ns,
        out: &mut BlkOut,
    ) {
        let id = self.new_run_id();
        let owner = self.cpu.cur_task;
        self.park_slot(
            id,
            BlockedRun {
                hctx,
                cpu,
                rest: list,
                pulling: true,
                granted,
                owner,
            },
        );
        if let Some(t) = owner {
            // The task is inside this dispatch (its syscall has not returned).
            self.cpu.task_parked = Some(t);
        }
        out.drv.unblock.push((id, at));
    }

    /// `blk_mq_do_dispatch_ctx`: one request at a time, round-robin over software queues.
    fn do_dispatch_ctx(
        &mut self,
        hctx: u16,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        loop {
            if !self.hctxs[h].dispatch.is_empty() {
                return;
            }
            // The hctx's CPUs in circular order from `dispatch_from`.
            let n = self.nr_cpus;
            let nr_hw = self.hctxs.len();
            let start = self.hctxs[h].dispatch_from % n;
            let first = start + (h + nr_hw - start % nr_hw) % nr_hw;
            let mut picked = None;
            for c in (first..n)
                .step_by(nr_hw)
                .chain(self.hctx_cpus(h).take_while(|&c| c < start))
            {
                if let Some(rq) = self.sw_queues[c].pop_front() {
                    picked = Some(rq);
                    self.hctxs[h].dispatch_from = c + 1;
                    break;
                }
            }
            let Some(rq) = picked else { return };
            self.pool.get_mut(rq).state = RqState::Idle;
            let mut list = vec![rq];
            let r = self.dispatch_rq_list(hctx, &mut list, cpu, drv, now, out);
            if r != ListResult::AllSent {
                return;
            }
        }
    }

    /// `blk_mq_get_driver_tag`.
    fn get_driver_tag(&mut self, rq: RqId, cpu: u16) -> bool {
        if self.pool.get(rq).tag >= 0 {
            return true;
        }
        let h = self.pool.get(rq).hctx as usize;
        match self.driver_tags[h].get(cpu as usize) {
            Some(t) => {
                self.pool.get_mut(rq).tag = t as i32;
                true
            }
            None => false,
        }
    }

    /// `blk_mq_dispatch_rq_list`. Consumes `list`; leftovers go to `hctx->dispatch`.
    ///
    /// A list pulled from an elevator that is shared by the hardware queues (mq-deadline,
    /// bfq, eraseblock, and kyber whose state blksim keeps shared) holds requests of other
    /// hctxs than the one running (`multi_hctxs` in `__blk_mq_do_dispatch_sched`). The
    /// kernel then dispatches each hctx's requests as its own list
    /// (`blk_mq_dispatch_hctx_list` → `blk_mq_dispatch_rq_list(rq->mq_hctx, ...)`): a
    /// request's driver tag, its `SCHED_RESTART` mark, its leftovers on `hctx->dispatch` and
    /// the queue re-run are those of the request's own hctx, since only a completion on that
    /// hctx frees one of its tags and restarts it (`blk_mq_sched_restart`). One hctx running
    /// out of tags or hitting BLK_STS_RESOURCE stops that hctx's requests only.
    /// Departure: the requests are issued in the elevator's order, not grouped by hctx
    /// (`list_sort(sched_rq_cmp)`); `hctx` is the running queue, used for a parked context.
    fn dispatch_rq_list(
        &mut self,
        hctx: u16,
        list: &mut Vec<RqId>,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> ListResult {
        let n = list.len();
        let mut groups = std::mem::take(&mut self.list_groups);
        groups.clear();
        // One group per hctx in the list, in order of first appearance, with the index of
        // its last request (`bd.last` is per hctx list).
        for (i, &rq) in list.iter().enumerate() {
            let g = self.list_group(&mut groups, self.pool.get(rq).hctx);
            groups[g].last = i;
        }
        let mut left = std::mem::take(&mut self.list_left);
        left.clear();
        let mut i = 0;
        while i < n {
            let rq = list[i];
            let rq_hctx = self.pool.get(rq).hctx;
            let g = self.list_group(&mut groups, rq_hctx);
            if groups[g].stopped {
                left.push(rq);
                i += 1;
                continue;
            }
            if !self.get_driver_tag(rq, cpu) {
                // `blk_mq_mark_tag_wait` for unshared tags: mark restart, retry once.
                self.hctxs[rq_hctx as usize].sched_restart = true;
                if !self.get_driver_tag(rq, cpu) {
                    groups[g].stopped = true;
                    left.push(rq);
                    i += 1;
                    continue;
                }
            }
            let id = self.new_run_id();
            let last = groups[g].last == i;
            let st = self.queue_rq(rq, last, CallCtx { id, cpu }, drv, now, out);
            groups[g].last_status = st;
            match st {
                BlkStatus::Ok => groups[g].queued += 1,
                BlkStatus::Blocked => {
                    // The dispatching context sleeps in the driver; it resumes with the rest
                    // of its list when the driver wakes it. Requests of hctxs already
                    // stopped stay behind on their dispatch lists.
                    let mut rest: Vec<RqId> = Vec::new();
                    for &r in &list[i + 1..] {
                        let rg = self.list_group(&mut groups, self.pool.get(r).hctx);
                        if groups[rg].stopped {
                            left.push(r);
                        } else {
                            rest.push(r);
                        }
                    }
                    groups[g].queued += 1;
                    self.finish_rq_list(&groups, &left, true, cpu, drv, now, out);
                    self.park_run(id, hctx, cpu, rest);
                    self.list_groups = groups;
                    self.list_left = left;
                    list.clear();
                    return ListResult::Suspended;
                }
                BlkStatus::Resource | BlkStatus::DevResource => {
                    if st == BlkStatus::Resource {
                        groups[g].needs_resource = true;
                    }
                    // `blk_mq_handle_dev_resource`: release the driver tag when an elevator
                    // owns the request (`__blk_mq_requeue_request` → put driver tag).
                    if self.elevator.is_some() {
                        self.put_driver_tag(rq, now, out);
                    }
                    groups[g].stopped = true;
                    left.push(rq);
                }
                BlkStatus::IoErr => {
                    self.end_request(rq, BlkStatus::IoErr, drv, now, out);
                    groups[g].queued += 1;
                }
            }
            i += 1;
        }
        let all_sent = self.finish_rq_list(&groups, &left, false, cpu, drv, now, out);
        self.list_groups = groups;
        self.list_left = left;
        list.clear();
        if all_sent {
            ListResult::AllSent
        } else {
            ListResult::NotAll
        }
    }

    /// Index of `hctx`'s group in `groups`, added if missing (`hctx_group` maps an hctx to
    /// its slot; a slot is valid only if it names the same hctx).
    fn list_group(&mut self, groups: &mut Vec<ListGroup>, hctx: u16) -> usize {
        let h = hctx as usize;
        let g = self.hctx_group[h] as usize;
        if g < groups.len() && groups[g].hctx == hctx {
            return g;
        }
        self.hctx_group[h] = groups.len() as u32;
        groups.push(ListGroup {
            hctx,
            last: 0,
            queued: 0,
            last_status: BlkStatus::Ok,
            stopped: false,
            needs_resource: false,
        });
        groups.len() - 1
    }

    /// The end of `blk_mq_dispatch_rq_list` for each hctx of the list: `commit_rqs`, the
    /// leftovers spliced onto `hctx->dispatch`, the re-run, the `dispatch_busy` EWMA.
    /// Returns whether some hctx sent its whole list (`dispatched |= ...`). With
    /// `stopped_only` (the context is parking in the driver with the rest of its list), only
    /// the hctxs that have leftovers are finished.
    #[allow(clippy::too_many_arguments)]
    fn finish_rq_list(
        &mut self,
        groups: &[ListGroup],
        left: &[RqId],
        stopped_only: bool,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> bool {
        let mut any_sent = false;
        for g in groups {
            let hctx = g.hctx;
            let h = hctx as usize;
            // A stopped hctx has leftovers: at least the request that stopped it.
            let has_left = g.stopped;
            if stopped_only && !has_left {
                continue;
            }
            if has_left || (g.last_status != BlkStatus::Ok && g.queued > 0) {
                drv.commit_rqs(hctx, *now, &mut out.drv);
            }
            if !has_left {
                self.update_dispatch_busy(h, false);
                any_sent = true;
                continue;
            }
            if self.cpu.on {
                // Leftovers are spliced onto hctx->dispatch under `hctx->lock`.
                self.cpu.hctx_hold(hctx, cpu, now, 0);
            }
            for &rq in left {
                if self.pool.get(rq).hctx == hctx {
                    self.pool.get_mut(rq).state = RqState::OnDispatchList;
                    self.hctxs[h].dispatch.push_back(rq);
                }
            }
            let needs_restart = self.hctxs[h].sched_restart;
            if !needs_restart {
                self.delay_run_hw_queue(hctx, 0, now, out);
            } else if g.needs_resource {
                self.delay_run_hw_queue(hctx, BLK_MQ_RESOURCE_DELAY, now, out);
            }
            self.update_dispatch_busy(h, true);
        }
        any_sent
    }

    /// `blk_mq_update_dispatch_busy`: EWMA with weight 8, factor 4.
    fn update_dispatch_busy(&mut self, h: usize, busy: bool) {
        let e = self.hctxs[h].dispatch_busy;
        if e == 0 && !busy {
            return;
        }
        self.hctxs[h].dispatch_busy = (e * 7 + if busy { 1 << 4 } else { 0 }) / 8;
    }

    /// A blocked dispatch context was woken by the driver: go on with the rest of its list,
    /// then run the queue again from the top (as the kernel's dispatch loop would).
    pub fn resume_run(&mut self, id: u32, drv: &mut dyn Driver, now: Ns, out: &mut BlkOut) {
        let Some(run) = self.blocked.get_mut(id as usize).and_then(|b| b.take()) else {
            panic!("resume of unknown dispatch context {id}");
        };
        self.free_runs.insert(id);
        let start = self.cpu.begin(run.cpu, now);
        self.ctx_cpu = run.cpu;
        self.cpu.cur_task = run.owner;
        let mut clk = start;
        let now = &mut clk;
        if run.pulling {
            self.dispatch_sched_loop_granted(
                run.hctx,
                run.cpu,
                run.rest,
                run.granted,
                drv,
                now,
                out,
            );
        } else {
            let mut rest = run.rest;
            let mut go_on = true;
            if !rest.is_empty() {
                let r = self.dispatch_rq_list(run.hctx, &mut rest, run.cpu, drv, now, out);
                go_on = r == ListResult::AllSent;
            }
            if go_on {
                self.run_hw_queue(run.hctx, false, run.cpu, drv, now, out);
            }
        }
        self.end_context(run.cpu, start, clk, out);
    }

    /// End a context started with [`crate::cpu::CpuModel::begin`]; if it ran a task's
    /// dispatch that has now finished (no further yield), the task goes on.
    fn end_context(&mut self, cpu: u16, start: Ns, clk: Ns, out: &mut BlkOut) {
        self.cpu.end(cpu, start, clk);
        if let Some(t) = self.cpu.cur_task.take() {
            if self.cpu.task_parked.take() != Some(t) {
                out.task_resume.push((t, clk));
            }
        }
        self.cpu.task_parked = None;
    }

    // ------------------------------------------------------------------------------------
    // Completion
    // ------------------------------------------------------------------------------------

    /// The driver completed `rq` (`blk_mq_end_request`): the device side of `__blk_mq_end_request`
    /// (in-flight accounting, the data at the device boundary, the elevator's completion
    /// hooks), then the flush machinery's end_io for sequenced requests, or the rest of the
    /// completion ([`Self::complete_request`]).
    pub fn end_request(
        &mut self,
        rq: RqId,
        st: BlkStatus,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let (hctx, rq_flags) = {
            let r = self.pool.get(rq);
            assert_eq!(
                r.state,
                RqState::InFlight,
                "request {rq} completed while not in flight"
            );
            (r.hctx, r.rq_flags)
        };
        self.trace(out, now, b'C', TraceSrc::Rq(rq), 0);
        self.set_in_flight_delta(hctx, -1, now);
        self.pool.get_mut(rq).state = RqState::Idle;
        if rq_flags & crate::request::rqf::FLUSH_RQ != 0 {
            return self.flush_end_io(rq, st, drv, now, out);
        }
        // The oracle sees the data (bio versions) at the device boundary, before the bios go.
        let acked = rq_flags & crate::request::rqf::FLUSH_SEQ == 0;
        self.integrity
            .request_completed(&self.pool, rq, st == BlkStatus::Ok, acked);
        *now += self.cpu.costs.complete_ns;
        // `blk_mq_finish_request`: the elevator's completion hooks, for requests it saw.
        if rq_flags & crate::request::rqf::ELV != 0 {
            self.pool.get_mut(rq).rq_flags &= !crate::request::rqf::ELV;
            if self.cpu.on {
                let c = self.cpu.costs.elv(self.cpu.costs.elv_complete_ns);
                if self.elv_locked_finish {
                    let cpu = self.cpu.cur_cpu;
                    let _ = self.cpu.elv_hold(cpu, now, c, ElvHook::Finish);
                } else {
                    *now += c;
                }
            }
            if let Some(elv) = self.elevator.as_mut() {
                elv.completed_request_data(&self.pool, rq, &self.integrity, *now);
                elv.completed_request(&self.pool, rq, *now);
                elv.finish_request(&self.pool, rq, *now);
            }
        }
        if rq_flags & crate::request::rqf::FLUSH_SEQ != 0 {
            return self.flush_data_end_io(rq, st, drv, now, out);
        }
        self.complete_request(rq, st, drv, now, out);
    }

    /// The submitter's side of the completion: diskstats accounting (`blk_account_io_done`,
    /// by stat group: read, write, discard), the bios ended, the request and its tags freed,
    /// and `blk_mq_sched_restart`. Also where the flush machinery ends the requests it
    /// sequenced.
    pub(super) fn complete_request(
        &mut self,
        rq: RqId,
        st: BlkStatus,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let _ = drv;
        let (hctx, op, start, nsec, issued) = {
            let r = self.pool.get(rq);
            let started = r.rq_flags & crate::request::rqf::STARTED != 0;
            (r.hctx, r.op, r.issue_time, r.nr_sectors, started)
        };
        if !issued {
            // Never reached the driver (an empty flush ended by the flush machinery).
            self.trace(out, now, b'C', TraceSrc::Rq(rq), 0);
        }
        let start = if issued {
            start
        } else {
            self.pool.get(rq).alloc_time
        };
        let ticks = now.saturating_sub(start);
        match op {
            Op::Discard => {
                self.stats.discard_ios += 1;
                self.stats.discard_sectors += nsec as u64;
                self.stats.discard_ticks_ns += ticks;
            }
            _ => {
                let dir = op.dir();
                self.stats.ios[dir] += 1;
                self.stats.sectors[dir] += nsec as u64;
                self.stats.ticks_ns[dir] += ticks;
            }
        }
        // Complete every bio of the request (elevator-internal bios have no submitter).
        let mut b = self.pool.take_bios(rq);
        while b != NO_BIO {
            let bio = self.pool.free_bio(b);
            if bio.token & crate::integrity::INTERNAL_TOKEN == 0 {
                out.bio_done.push((bio.token, st));
                if self.cpu.on {
                    out.bio_done_at.push(*now);
                }
            }
            b = bio.next;
        }
        let freed = self.pool.free_rq_shell(rq);
        self.release_tags(&freed, now, out);
        self.sched_restart(hctx, now, out);
    }

    /// `blk_mq_sched_restart`, and the completion-time run kyber's token wait needs.
    fn sched_restart(&mut self, hctx: u16, now: &mut Ns, out: &mut BlkOut) {
        let h = hctx as usize;
        if self.hctxs[h].sched_restart {
            self.hctxs[h].sched_restart = false;
            self.delay_run_hw_queue(hctx, 0, now, out);
        } else if self
            .elevator
            .as_ref()
            .map(|e| e.wants_run_on_completion() && e.has_work())
            .unwrap_or(false)
        {
            self.delay_run_hw_queue(hctx, 0, now, out);
        }
    }

    /// Free the shells of requests an elevator absorbed into one it built
    /// ([`Elevator::take_released`]), with their scheduler tags.
    fn reap_elv_released(&mut self, now: &mut Ns, out: &mut BlkOut) {
        let mut shells = Vec::new();
        if let Some(elv) = self.elevator.as_mut() {
            elv.take_released(&mut shells);
        }
        for rq in shells {
            self.stats.rq_merges += 1;
            let freed = self.pool.free_rq_shell(rq);
            self.release_tags(&freed, now, out);
        }
    }

    fn put_driver_tag(&mut self, rq: RqId, now: &mut Ns, out: &mut BlkOut) {
        let (h, tag, cpu) = {
            let r = self.pool.get_mut(rq);
            let t = r.tag;
            r.tag = -1;
            (r.hctx as usize, t, r.cpu)
        };
        if tag >= 0 {
            self.driver_tags[h].put(tag as u32, cpu as usize);
            self.wake_tag_waiters(h, false, now, out);
        }
    }

    fn release_tags(&mut self, freed: &crate::request::Request, now: &mut Ns, out: &mut BlkOut) {
        let h = freed.hctx as usize;
        if freed.tag >= 0 {
            self.driver_tags[h].put(freed.tag as u32, freed.cpu as usize);
            if self.elevator.is_none() {
                self.wake_tag_waiters(h, false, now, out);
            }
        }
        if freed.sched_tag >= 0 {
            self.sched_tags[h].put(freed.sched_tag as u32, freed.cpu as usize);
            self.wake_tag_waiters(h, true, now, out);
        }
    }

    /// `sbitmap_queue_wake_up`: every `wake_batch` frees wake up to `wake_batch` sleepers;
    /// they allocate right away (their request is then plugged/inserted/issued, which is what
    /// the woken task would do next).
    fn wake_tag_waiters(&mut self, h: usize, sched: bool, _now: &mut Ns, out: &mut BlkOut) {
        let batch = if sched {
            self.wake_batch_sched
        } else {
            self.wake_batch_driver
        };
        let wq = if sched {
            &mut self.sched_waitq[h]
        } else {
            &mut self.driver_waitq[h]
        };
        if wq.waiters.is_empty() {
            return;
        }
        wq.wait_cnt = wq.wait_cnt.saturating_sub(1);
        if wq.wait_cnt > 0 {
            return;
        }
        wq.wait_cnt = batch;
        let n = batch.min(wq.waiters.len() as u32);
        // The wake-up makes them runnable; the event loop resumes them (possibly after a
        // wake-up latency) through `resume_tag_waiter`.
        for _ in 0..n {
            let Some(w) = wq.waiters.pop_front() else {
                break;
            };
            out.task_unblocked.push(w.task);
        }
    }

    /// The event loop resumes a task woken from a tag wait: retry the allocation for the bio
    /// it slept on. It may have to sleep again if another task took the tag first.
    pub fn resume_tag_waiter(
        &mut self,
        task: u32,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> Submit {
        let bio = self
            .task_wait_bio
            .get_mut(task as usize)
            .and_then(|b| b.take())
            .expect("task resumed without a pending bio");
        self.submit_bio_alloc(bio, drv, now, out)
    }

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
