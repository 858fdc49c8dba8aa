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
//!   per N requests), and completion for bfq (`bfq_finish_requeue_request`). When it moves
//!   to another CPU it costs `elv_handoff_ns` (the lock itself) plus the cold footprint of
//!   the critical section that follows: `elv_cold_line_ns` per line of elevator state the
//!   hook touches and other CPUs write (`elv_cold_lines_<hook>_<elevator>`, counted from the
//!   kernel source: bfq's dispatch walks bfqd, the in-service queue and the B-WF2Q+ trees,
//!   mq-deadline's a few list heads). A CPU that keeps the lock finds that state warm, so
//!   batch dispatch pays one dispatch footprint per N requests instead of one per request —
//!   which is why it helps bfq (2.35×) more than mq-deadline (1.81×) in measurements §3;
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
//! §3.6) makes every one of its hooks several times dearer; its larger hot state is the
//! separate cold footprint above.
//!
//! The bundled `null_blk` profile keeps the **ideal platform**: every cost zero, so no
//! clock moves, no lock is consulted and closed-form results stay exact.
//!
//! Departures from the kernel: no preemption (interrupts wait for a busy CPU); completions
//! that do not run inline are taken on the submitting CPU; a lock grant is placed in the
//! earliest free gap of the lock's timeline (≈ a FIFO queued spinlock); the costs are
//! constants per step; cache state enters only through the hand-off and the elevator's
//! cold footprint (warm or cold as a whole, per hook; no partial eviction, no per-request
//! lines, which are cold in both dispatch modes and sit in the step costs). The hand-off
//! does not grow with the number of spinning CPUs (MCS queueing keeps the lock word's
//! traffic per hand-off constant, and in §3 the lock is saturated in both modes, ~14 of 16
//! CPUs spinning, so such a term would not separate mainline from batch anyway).

use blksim_block::cpu::CpuCosts;
use blksim_core::ParamDef;

/// Platform parameters (`platform.*` in a profile): key, unit, default, meaning, source.
/// Every cost defaults to 0 (the ideal platform).
pub const PLATFORM_PARAMS: &[ParamDef] = &[
    ParamDef { key: "nr_cpus", unit: "count", default: "2", doc: "CPUs the jobs run on (job clone i on CPU i mod nr_cpus)", source: "blksim model" },
    ParamDef { key: "kblockd_wakeup_ns", unit: "ns", default: "0", doc: "delay before an asynchronous hardware-queue run (kblockd work item wake-up and context switch)", source: "blksim model; 0 on the ideal platform" },
    ParamDef { key: "task_wakeup_ns", unit: "ns", default: "0", doc: "delay before a task woken from a tag wait runs again", source: "blksim model; 0 on the ideal platform" },
    ParamDef { key: "syscall_ns", unit: "ns", default: "0", doc: "CPU time of one submit syscall's entry and exit (io_submit, io_uring_enter, pread/pwrite)", source: "blksim model" },
    ParamDef { key: "bio_alloc_ns", unit: "ns", default: "0", doc: "CPU time per bio: bio_alloc, blk_mq_submit_bio, request allocation (tag)", source: "blksim model" },
    ParamDef { key: "plug_ns", unit: "ns", default: "0", doc: "CPU time per request added to the plug (blk_add_rq_to_plug)", source: "blksim model" },
    ParamDef { key: "elv_merge_ns", unit: "ns", default: "0", doc: "elevator bio_merge lookup, under the elevator lock (mq-deadline; scaled per scheduler)", source: "blksim model" },
    ParamDef { key: "elv_insert_ns", unit: "ns", default: "0", doc: "elevator insert_requests per request, under the elevator lock (scaled per scheduler)", source: "blksim model" },
    ParamDef { key: "elv_dispatch_ns", unit: "ns", default: "0", doc: "elevator dispatch_request per call, under the elevator lock (scaled per scheduler)", source: "blksim model" },
    ParamDef { key: "elv_complete_ns", unit: "ns", default: "0", doc: "elevator completed_request + finish_request per request (under the lock for bfq; scaled per scheduler)", source: "blksim model" },
    ParamDef { key: "elv_handoff_ns", unit: "ns", default: "0", doc: "cost of the elevator lock itself moving to another CPU (qspinlock word and MCS hand-over; not scaled per scheduler)", source: "blksim model" },
    ParamDef { key: "elv_cold_line_ns", unit: "ns", default: "0", doc: "cost per cache line of elevator state a critical section touches after the lock moved from another CPU (remote cache-to-cache transfer, dependent loads); 0 = off", source: "platform: remote (dirty) cache-line transfer; null_blk-server: 300, fitted on the bfq mainline row of measurements §3, consistent with lines spread over Kunpeng 920's 4 NUMA nodes" },
    ParamDef { key: "elv_cold_lines_merge_mq-deadline", unit: "lines", default: "2", doc: "footprint of dd_bio_merge: per_prio[BE] sort_list root, elevator hash bucket", source: "block/mq-deadline.c dd_bio_merge/dd_request_merge (reference §1.5); count of written shared lines" },
    ParamDef { key: "elv_cold_lines_insert_mq-deadline", unit: "lines", default: "3", doc: "footprint of dd_insert_requests (one hold per list): per_prio[BE] sort/fifo heads, stats.inserted, hash bucket", source: "block/mq-deadline.c dd_insert_request (reference §1.3)" },
    ParamDef { key: "elv_cold_lines_dispatch_mq-deadline", unit: "lines", default: "3", doc: "footprint of dd_dispatch_request: per_prio[BE] lists and latest_pos, stats (dispatched; completed written lock-free by dd_finish_request), dd batching/starved", source: "block/mq-deadline.c dd_dispatch_request (reference §1.4, §1.6)" },
    ParamDef { key: "elv_cold_lines_merge_bfq", unit: "lines", default: "3", doc: "footprint of bfq_bio_merge: bfqd bio_bfqq/bio_bic, the task's bfqq sort_list, hash bucket", source: "block/bfq-iosched.c bfq_bio_merge" },
    ParamDef { key: "elv_cold_lines_insert_bfq", unit: "lines", default: "6", doc: "footprint of bfq_insert_request: bfqq (refs, sort_list, fifo, next_rq, think time / seek stats), bfqd queued and injection fields, entity + service tree + weights tree when the queue becomes busy", source: "block/bfq-iosched.c bfq_insert_request/bfq_add_request (reference §3.6)" },
    ParamDef { key: "elv_cold_lines_dispatch_bfq", unit: "lines", default: "10", doc: "footprint of bfq_dispatch_request: bfqd dispatch/in-service/queued/rq_in_driver, peak-rate and injection fields, in-service bfqq, B-WF2Q+ entity service and sched_data vtime (bfq_bfqq_served), amortised expiry and next-queue lookup", source: "block/bfq-iosched.c __bfq_dispatch_request, bfq-wf2q.c (reference §3.3, §3.6)" },
    ParamDef { key: "elv_cold_lines_finish_bfq", unit: "lines", default: "4", doc: "footprint of bfq_finish_requeue_request: bfqd rq_in_driver, completion and injection fields, bfqq dispatched / ttime", source: "block/bfq-iosched.c bfq_completed_request (reference §3.6)" },
    ParamDef { key: "elv_cost_pct_mq-deadline", unit: "%", default: "100", doc: "scale of the elv_* costs for mq-deadline", source: "blksim model (reference)" },
    ParamDef { key: "elv_cost_pct_bfq", unit: "%", default: "270", doc: "scale of the elv_* costs for bfq", source: "reference §3.6: ~1.9 us vs ~0.7 us per request for mq-deadline" },
    ParamDef { key: "elv_cost_pct_kyber", unit: "%", default: "60", doc: "scale of the elv_* costs for kyber", source: "blksim model (kyber's hooks are lighter than mq-deadline's)" },
    ParamDef { key: "elv_cost_pct_eraseblock", unit: "%", default: "100", doc: "scale of the elv_* costs for eraseblock", source: "blksim model (deadline-like)" },
    ParamDef { key: "queue_rq_ns", unit: "ns", default: "0", doc: "driver queue_rq per request with blk_mq_start_request, under the hardware queue's driver lock", source: "blksim model" },
    ParamDef { key: "lock_handoff_ns", unit: "ns", default: "0", doc: "cost of a hctx or driver lock moving to another CPU (one cache line)", source: "blksim model" },
    ParamDef { key: "complete_ns", unit: "ns", default: "0", doc: "blk_mq_end_request per request: stats, tags, bio_endio, the submitter's completion event and wake-up call", source: "blksim model" },
    ParamDef { key: "irq_ns", unit: "ns", default: "0", doc: "interrupt / timer / softirq entry for a completion that does not run inline in queue_rq", source: "blksim model" },
    ParamDef { key: "ctxsw_ns", unit: "ns", default: "0", doc: "context switch when a sleeping task is woken (reap, tag wait, thinktime) and runs again", source: "blksim model" },
    ParamDef { key: "kblockd_jitter_ns", unit: "ns", default: "0", doc: "extra kblockd wake-up latency, uniform in [0, value], per asynchronous queue run (workqueue scheduling latency varies)", source: "blksim model; 0 = none" },
    ParamDef { key: "kblockd_tail_ppm", unit: "ppm", default: "0", doc: "share of asynchronous queue runs (per million) whose kblockd worker is held off much longer than usual: preempted by a higher-priority thread, behind an interrupt-off section, on a CPU waking from a deep idle state", source: "blksim model; 0 = none. emmc-allwinner: 1000 [assumed], see that profile" },
    ParamDef { key: "kblockd_tail_ns", unit: "ns", default: "0", doc: "mean of that long hold-off: uniform in [0, 2 x value], on top of kblockd_wakeup_ns and kblockd_jitter_ns", source: "blksim model; emmc-allwinner: 200000 [assumed], see that profile" },
    ParamDef { key: "irq_cpu", unit: "cpu", default: "0", doc: "CPU that takes the device interrupt of drivers completing from a hardware IRQ (MMC host controller)", source: "blksim model; default affinity of a platform device IRQ is CPU 0" },
    ParamDef { key: "llc_cpus", unit: "count", default: "0", doc: "CPUs per last-level-cache domain (0 = all CPUs share one); with queue.rq_affinity=1 a completion is sent to the submitting CPU only when it does not share a cache with the IRQ CPU (blk_mq_complete_need_ipi, cpus_share_cache)", source: "blksim model" },
];

/// Upper bound of the kblockd latency parameters (one minute).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    pub nr_cpus: u16,
    pub kblockd_wakeup_ns: u64,
    pub task_wakeup_ns: u64,
    pub syscall_ns: u64,
    pub ctxsw_ns: u64,
    pub irq_cpu: u16,
    pub llc_cpus: u16,
    pub kblockd_jitter_ns: u64,
    pub kblockd_tail_ppm: u64,
    pub kblockd_tail_ns: u64,
    /// Block-layer step costs; `elv_cost_pct` is set per scheduler by [`Self::cpu_costs`].
    pub costs: CpuCosts,
    pub elv_cost_pct_deadline: u64,
    pub elv_cost_pct_bfq: u64,
    pub elv_cost_pct_kyber: u64,
    pub elv_cost_pct_eraseblock: u64,
    /// Cold footprints per hook (merge, insert, dispatch, finish) for mq-deadline (also used
    /// for kyber and eraseblock) and bfq.
    pub elv_cold_lines_deadline: [u64; 4],
    pub elv_cold_lines_bfq: [u64; 4],
}

impl Default for Platform {
    fn default() -> Self {
        Platform {
            nr_cpus: 2,
            kblockd_wakeup_ns: 0,
            task_wakeup_ns: 0,
            syscall_ns: 0,
            ctxsw_ns: 0,
            irq_cpu: 0,
            llc_cpus: 0,
            kblockd_jitter_ns: 0,
            kblockd_tail_ppm: 0,
            kblockd_tail_ns: 0,
            costs: CpuCosts::default(),
            elv_cost_pct_deadline: 100,
            elv_cost_pct_bfq: 270,
            elv_cost_pct_kyber: 60,
            elv_cost_pct_eraseblock: 100,
            elv_cold_lines_deadline: [2, 3, 3, 0],
            elv_cold_lines_bfq: [3, 6, 10, 4],
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
        c.elv_cold_lines = match elv {
            "bfq" => self.elv_cold_lines_bfq,
            _ => self.elv_cold_lines_deadline,
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
                // Latencies of up to a minute; beyond that virtual time would run out.
                "kblockd_wakeup_ns" | "kblockd_jitter_ns" | "kblockd_tail_ns"
                    if n > MAX_LATENCY_NS =>
                {
                    return Err(format!(
                        "{}: platform.{k}: expected 0..{MAX_LATENCY_NS} ns, got {n}",
                        v.origin
                    ));
                }
                "kblockd_wakeup_ns" => pl.kblockd_wakeup_ns = n,
                "task_wakeup_ns" => pl.task_wakeup_ns = n,
                "syscall_ns" => pl.syscall_ns = n,
                "ctxsw_ns" => pl.ctxsw_ns = n,
                "kblockd_jitter_ns" => pl.kblockd_jitter_ns = n,
                "kblockd_tail_ppm" => {
                    if n > 1_000_000 {
                        return Err(format!(
                            "{}: platform.kblockd_tail_ppm: expected 0..1000000, got {n}",
                            v.origin
                        ));
                    }
                    pl.kblockd_tail_ppm = n
                }
                "kblockd_tail_ns" => pl.kblockd_tail_ns = n,
                "irq_cpu" => pl.irq_cpu = n.min(u16::MAX as u64) as u16,
                "llc_cpus" => pl.llc_cpus = n.min(u16::MAX as u64) as u16,
                "bio_alloc_ns" => pl.costs.bio_alloc_ns = n,
                "plug_ns" => pl.costs.plug_ns = n,
                "elv_merge_ns" => pl.costs.elv_merge_ns = n,
                "elv_insert_ns" => pl.costs.elv_insert_ns = n,
                "elv_dispatch_ns" => pl.costs.elv_dispatch_ns = n,
                "elv_complete_ns" => pl.costs.elv_complete_ns = n,
                "elv_handoff_ns" => pl.costs.elv_handoff_ns = n,
                "elv_cold_line_ns" => pl.costs.elv_cold_line_ns = n,
                "elv_cold_lines_merge_mq-deadline" => pl.elv_cold_lines_deadline[0] = n,
                "elv_cold_lines_insert_mq-deadline" => pl.elv_cold_lines_deadline[1] = n,
                "elv_cold_lines_dispatch_mq-deadline" => pl.elv_cold_lines_deadline[2] = n,
                "elv_cold_lines_merge_bfq" => pl.elv_cold_lines_bfq[0] = n,
                "elv_cold_lines_insert_bfq" => pl.elv_cold_lines_bfq[1] = n,
                "elv_cold_lines_dispatch_bfq" => pl.elv_cold_lines_bfq[2] = n,
                "elv_cold_lines_finish_bfq" => pl.elv_cold_lines_bfq[3] = n,
                "elv_cost_pct_mq-deadline" => pl.elv_cost_pct_deadline = n,
                "elv_cost_pct_bfq" => pl.elv_cost_pct_bfq = n,
                "elv_cost_pct_kyber" => pl.elv_cost_pct_kyber = n,
                "elv_cost_pct_eraseblock" => pl.elv_cost_pct_eraseblock = n,
                "queue_rq_ns" => pl.costs.queue_rq_ns = n,
                "lock_handoff_ns" => pl.costs.lock_handoff_ns = n,
                "complete_ns" => pl.costs.complete_ns = n,
                "irq_ns" => pl.costs.irq_ns = n,
                _ => {
                    let hint = crate::profile::nearest(&k, PLATFORM_PARAMS.iter().map(|p| p.key))
                        .map(|s| format!(" (did you mean 'platform.{s}'?)"))
                        .unwrap_or_default();
                    return Err(format!("{}: unknown field 'platform.{k}'{hint}", v.origin));
                }
            }
        }
        if pl.irq_cpu >= pl.nr_cpus {
            return Err(format!(
                "{}: platform.irq_cpu={} is not one of the {} CPUs",
                p.file, pl.irq_cpu, pl.nr_cpus
            ));
        }
        Ok(pl)
    }
}
