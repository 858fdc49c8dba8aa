//! The platform: CPUs, the CPU time each step of the I/O path costs, and locks.
//!
//! # CPU and lock model (issue #4)
//!
//! Jobs run as tasks on `nr_cpus` CPUs (job clone *i* on CPU *i* mod `nr_cpus`). Every step
//! of the path costs CPU time on the CPU that executes it: the submit syscall, bio and
//! request allocation, plugging, the elevator's insert / dispatch / merge / completion hooks,
//! the driver's `queue_rq`, the completion interrupt, the completion itself, the wake-up of
//! the submitter and its context switch. A CPU executes one context at a time; work for a
//! busy CPU waits (no preemption). Locks are resources with a timeline: a context that needs
//! a lock held by another CPU spins until it is free and then pays a hand-off cost when the
//! lock (and the data it protects) moves between CPUs:
//!
//! * the **elevator lock** (`dd->lock`, `bfqd->lock`, `khd->lock`; one per queue):
//!   `bio_merge` (once per bio), `insert_requests` (mq-deadline once per plug flush, bfq once
//!   per request: `bfq_insert_request` locks per request), `dispatch_request` (mainline: once
//!   per request in `__blk_mq_do_dispatch_sched`; with `queue.sched_batch_dispatch=N`, once
//!   per N requests), and completion for bfq (`bfq_finish_requeue_request`). Its hand-off
//!   cost is `elv_handoff_ns`, scaled like the elevator's other costs (the scheduler's hot
//!   state moves with the lock);
//! * the **hctx lock** and the **driver's submission lock** per hardware queue (`queue_rq`
//!   runs under it), with hand-off `lock_handoff_ns`.
//!
//! Several CPUs run the same hardware queue's dispatch at once, as in the kernel: each
//! submitting task runs the dispatch inline from its plug flush, and with a single-queue
//! scheduler every CPU's dispatch pulls from the one elevator. Concurrent contexts
//! interleave at lock granularity (a context whose clock ran ahead yields before its next
//! elevator-lock acquisition and between the bios of one syscall), so with several CPUs
//! pulling one request per lock hold the driver can see the elevator's 1, 2, 3, 4 as
//! 1, 3, 2, 4 (`blksim.dispatch_inversions`); batch dispatch issues each batch in order.
//!
//! Elevator costs (`elv_*`) are given for mq-deadline and scaled per scheduler by
//! `elv_cost_pct_<scheduler>`: bfq's per-request bookkeeping (per-process queues, B-WF2Q+
//! tree updates, think time and seek statistics, weight counters, injection; reference
//! §3.6) makes every one of its hooks several times dearer, and its hot state larger.
//!
//! The bundled `null_blk` profile keeps the **ideal platform**: every cost zero, so no
//! clock moves, no lock is consulted and closed-form results stay exact.
//!
//! Departures from the kernel: no preemption (interrupts wait for a busy CPU); completions
//! that do not run inline are taken on the submitting CPU; a lock grant is placed in the
//! earliest free gap of the lock's timeline (≈ a FIFO queued spinlock); the costs are
//! constants per step, not functions of cache state beyond the hand-off.

use blksim_block::cpu::CpuCosts;

/// Platform parameters (`platform.*` in a profile): key, unit, default, meaning, source.
/// Every cost defaults to 0 (the ideal platform).
pub const PLATFORM_PARAMS: &[(&str, &str, &str, &str, &str)] = &[
    ("nr_cpus", "count", "2", "CPUs the jobs run on (job clone i on CPU i mod nr_cpus)", "blksim model"),
    ("kblockd_wakeup_ns", "ns", "0", "delay before an asynchronous hardware-queue run (kblockd work item wake-up and context switch)", "blksim model; 0 on the ideal platform"),
    ("task_wakeup_ns", "ns", "0", "delay before a task woken from a tag wait runs again", "blksim model; 0 on the ideal platform"),
    ("syscall_ns", "ns", "0", "CPU time of one submit syscall's entry and exit (io_submit, io_uring_enter, pread/pwrite)", "blksim model"),
    ("bio_alloc_ns", "ns", "0", "CPU time per bio: bio_alloc, blk_mq_submit_bio, request allocation (tag)", "blksim model"),
    ("plug_ns", "ns", "0", "CPU time per request added to the plug (blk_add_rq_to_plug)", "blksim model"),
    ("elv_merge_ns", "ns", "0", "elevator bio_merge lookup, under the elevator lock (mq-deadline; scaled per scheduler)", "blksim model"),
    ("elv_insert_ns", "ns", "0", "elevator insert_requests per request, under the elevator lock (scaled per scheduler)", "blksim model"),
    ("elv_dispatch_ns", "ns", "0", "elevator dispatch_request per call, under the elevator lock (scaled per scheduler)", "blksim model"),
    ("elv_complete_ns", "ns", "0", "elevator completed_request + finish_request per request (under the lock for bfq; scaled per scheduler)", "blksim model"),
    ("elv_handoff_ns", "ns", "0", "extra cost when the elevator lock moves to another CPU: lock word and scheduler state change caches (scaled per scheduler)", "blksim model"),
    ("elv_cost_pct_mq-deadline", "%", "100", "scale of the elv_* costs for mq-deadline", "blksim model (reference)"),
    ("elv_cost_pct_bfq", "%", "270", "scale of the elv_* costs for bfq", "reference §3.6: ~1.9 us vs ~0.7 us per request for mq-deadline"),
    ("elv_cost_pct_kyber", "%", "60", "scale of the elv_* costs for kyber", "blksim model (kyber's hooks are lighter than mq-deadline's)"),
    ("elv_cost_pct_eraseblock", "%", "100", "scale of the elv_* costs for eraseblock", "blksim model (deadline-like)"),
    ("queue_rq_ns", "ns", "0", "driver queue_rq per request with blk_mq_start_request, under the hardware queue's driver lock", "blksim model"),
    ("lock_handoff_ns", "ns", "0", "cost of a hctx or driver lock moving to another CPU (one cache line)", "blksim model"),
    ("complete_ns", "ns", "0", "blk_mq_end_request per request: stats, tags, bio_endio, the submitter's completion event and wake-up call", "blksim model"),
    ("irq_ns", "ns", "0", "interrupt / timer / softirq entry for a completion that does not run inline in queue_rq", "blksim model"),
    ("ctxsw_ns", "ns", "0", "context switch when a sleeping task is woken (reap, tag wait, thinktime) and runs again", "blksim model"),
];

#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    pub nr_cpus: u16,
    pub kblockd_wakeup_ns: u64,
    pub task_wakeup_ns: u64,
    pub syscall_ns: u64,
    pub ctxsw_ns: u64,
    /// Block-layer step costs; `elv_cost_pct` is set per scheduler by [`Self::cpu_costs`].
    pub costs: CpuCosts,
    pub elv_cost_pct_deadline: u64,
    pub elv_cost_pct_bfq: u64,
    pub elv_cost_pct_kyber: u64,
    pub elv_cost_pct_eraseblock: u64,
}

impl Default for Platform {
    fn default() -> Self {
        Platform {
            nr_cpus: 2,
            kblockd_wakeup_ns: 0,
            task_wakeup_ns: 0,
            syscall_ns: 0,
            ctxsw_ns: 0,
            costs: CpuCosts::default(),
            elv_cost_pct_deadline: 100,
            elv_cost_pct_bfq: 270,
            elv_cost_pct_kyber: 60,
            elv_cost_pct_eraseblock: 100,
        }
    }
}

impl Platform {
    /// Whether any CPU cost is non-zero (the ideal platform has none).
    pub fn is_ideal(&self) -> bool {
        !self.costs.active() && self.syscall_ns == 0 && self.ctxsw_ns == 0
    }

    /// The block layer's step costs for a queue running elevator `elv` (`none` included).
    pub fn cpu_costs(&self, elv: &str) -> CpuCosts {
        let mut c = self.costs.clone();
        c.elv_cost_pct = match elv {
            "bfq" => self.elv_cost_pct_bfq,
            "kyber" => self.elv_cost_pct_kyber,
            "eraseblock" => self.elv_cost_pct_eraseblock,
            _ => self.elv_cost_pct_deadline,
        };
        c
    }

    pub fn from_profile(p: &crate::profile::Profile) -> Result<Self, String> {
        let mut pl = Platform::default();
        for (k, v) in p.with_prefix("platform") {
            let n: u64 = v.value.parse().map_err(|_| {
                format!(
                    "{}: platform.{k}: expected a whole number, got '{}'",
                    v.origin, v.value
                )
            })?;
            match k.as_str() {
                "nr_cpus" => {
                    if n == 0 || n > 4096 {
                        return Err(format!(
                            "{}: platform.nr_cpus: expected 1..4096, got {n}",
                            v.origin
                        ));
                    }
                    pl.nr_cpus = n as u16
                }
                "kblockd_wakeup_ns" => pl.kblockd_wakeup_ns = n,
                "task_wakeup_ns" => pl.task_wakeup_ns = n,
                "syscall_ns" => pl.syscall_ns = n,
                "ctxsw_ns" => pl.ctxsw_ns = n,
                "bio_alloc_ns" => pl.costs.bio_alloc_ns = n,
                "plug_ns" => pl.costs.plug_ns = n,
                "elv_merge_ns" => pl.costs.elv_merge_ns = n,
                "elv_insert_ns" => pl.costs.elv_insert_ns = n,
                "elv_dispatch_ns" => pl.costs.elv_dispatch_ns = n,
                "elv_complete_ns" => pl.costs.elv_complete_ns = n,
                "elv_handoff_ns" => pl.costs.elv_handoff_ns = n,
                "elv_cost_pct_mq-deadline" => pl.elv_cost_pct_deadline = n,
                "elv_cost_pct_bfq" => pl.elv_cost_pct_bfq = n,
                "elv_cost_pct_kyber" => pl.elv_cost_pct_kyber = n,
                "elv_cost_pct_eraseblock" => pl.elv_cost_pct_eraseblock = n,
                "queue_rq_ns" => pl.costs.queue_rq_ns = n,
                "lock_handoff_ns" => pl.costs.lock_handoff_ns = n,
                "complete_ns" => pl.costs.complete_ns = n,
                "irq_ns" => pl.costs.irq_ns = n,
                _ => {
                    let hint = crate::profile::nearest(&k, PLATFORM_PARAMS.iter().map(|p| p.0))
                        .map(|s| format!(" (did you mean 'platform.{s}'?)"))
                        .unwrap_or_default();
                    return Err(format!("{}: unknown field 'platform.{k}'{hint}", v.origin));
                }
            }
        }
        Ok(pl)
    }
}
