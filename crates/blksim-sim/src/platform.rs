//! The platform: CPUs, the CPU time each step of the I/O path costs, and locks.
//!
//! # CPU and lock model
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
//! Elevator costs (`elv_*`) are given for mq-deadline; each elevator declares its own
//! footprint (`Elevator::cpu_footprint`: the scale of those costs, its cold lines per hook,
//! whether it locks per request on insert and on completion), which a profile may override
//! per elevator (`elv_cost_pct_<scheduler>`, `elv_cold_lines_<hook>_<scheduler>`): bfq's
//! per-request bookkeeping (per-process queues, B-WF2Q+ tree updates, think time and seek
//! statistics, weight counters, injection; Documentation/block/bfq-iosched.rst) makes every
//! one of its hooks several times dearer; its larger hot state is the separate cold
//! footprint above.
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
use blksim_block::CpuFootprint;
use blksim_core::param::MAX_STEP_NS;
use blksim_core::ParamDef;
use std::collections::BTreeMap;

/// Platform parameters (`platform.*` in a profile): key, unit, default, meaning, source.
/// Every cost defaults to 0 (the ideal platform).
pub const PLATFORM_PARAMS: &[ParamDef] = &[
    ParamDef::new("nr_cpus", "count", "2", 1, 4096, "CPUs the jobs run on (job clone i on CPU i mod nr_cpus, or on its cpus_allowed set)", "blksim model"),
    ParamDef::new("kblockd_wakeup_ns", "ns", "0", 0, MAX_STEP_NS, "delay before an asynchronous hardware-queue run (kblockd work item wake-up and context switch)", "blksim model; 0 on the ideal platform"),
    ParamDef::new("task_wakeup_ns", "ns", "0", 0, MAX_STEP_NS, "delay before a task woken from a tag wait runs again", "blksim model; 0 on the ideal platform"),
    ParamDef::new("syscall_ns", "ns", "0", 0, MAX_STEP_NS, "CPU time of one submit syscall's entry and exit (io_submit, io_uring_enter, pread/pwrite)", "blksim model"),
    ParamDef::new("fget_ns", "ns", "0", 0, MAX_STEP_NS, "per I/O of an engine that takes a reference on the file for each I/O (libaio io_submit_one, io_uring io_file_get_normal, posixaio's threads): fget and the fput at completion; io_uring registerfiles (IOSQE_FIXED_FILE) and sqthread_poll skip it", "loop-2cpu: 30 [assumed: two uncontended atomics]; scripts/kernel-io_uring-options.sh measures registerfiles=1 saving 15-157 ns per read, within the spread of its runs"),
    ParamDef::new("iov_pin_ns", "ns", "0", 0, MAX_STEP_NS, "per direct I/O from user memory, the fixed part of pinning its buffer (bio_iov_iter_get_pages → pin_user_pages_fast) and releasing it at completion (bio_release_pages); io_uring fixedbufs (registered buffers, io_import_fixed) skips it", "measured on this project's 2-CPU VM (scripts/kernel-io_uring-options.sh: fixedbufs=1 saves 352 ns per 4 KiB and 3024 ns per 128 KiB read; the line through them: 266 + 86 per page, loop-2cpu)"),
    ParamDef::new("iov_pin_page_ns", "ns", "0", 0, MAX_STEP_NS, "per 4 KiB page of that buffer: pinning, release and, for reads, marking it dirty (bio_set_pages_dirty); measured on reads, writes are charged the same [assumed]", "measured on this project's 2-CPU VM (as iov_pin_ns)"),
    ParamDef::new("bio_alloc_ns", "ns", "0", 0, MAX_STEP_NS, "CPU time per bio: bio_alloc, blk_mq_submit_bio, request allocation (tag)", "blksim model"),
    ParamDef::new("plug_ns", "ns", "0", 0, MAX_STEP_NS, "CPU time per request added to the plug (blk_add_rq_to_plug)", "blksim model"),
    ParamDef::new("elv_merge_ns", "ns", "0", 0, MAX_STEP_NS, "elevator bio_merge lookup, under the elevator lock (mq-deadline; scaled per scheduler)", "blksim model"),
    ParamDef::new("elv_insert_ns", "ns", "0", 0, MAX_STEP_NS, "elevator insert_requests per request, under the elevator lock (scaled per scheduler)", "blksim model"),
    ParamDef::new("elv_dispatch_ns", "ns", "0", 0, MAX_STEP_NS, "elevator dispatch_request per call, under the elevator lock (scaled per scheduler)", "blksim model"),
    ParamDef::new("elv_complete_ns", "ns", "0", 0, MAX_STEP_NS, "elevator completed_request + finish_request per request (under the lock for bfq; scaled per scheduler)", "blksim model"),
    ParamDef::new("elv_handoff_ns", "ns", "0", 0, MAX_STEP_NS, "cost of the elevator lock itself moving to another CPU (qspinlock word and MCS hand-over; not scaled per scheduler)", "blksim model"),
    ParamDef::new("elv_cold_line_ns", "ns", "0", 0, MAX_STEP_NS, "cost per cache line of elevator state a critical section touches after the lock moved from another CPU (remote cache-to-cache transfer, dependent loads); 0 = off", "platform: remote (dirty) cache-line transfer; null_blk-server: 300, fitted on the bfq mainline row of measurements §3, consistent with lines spread over Kunpeng 920's 4 NUMA nodes"),
    ParamDef::new("elv_cold_lines_merge_mq-deadline", "lines", "2", 0, 1024, "footprint of dd_bio_merge: per_prio[BE] sort_list root, elevator hash bucket", "block/mq-deadline.c dd_bio_merge/dd_request_merge (reference §1.5); count of written shared lines"),
    ParamDef::new("elv_cold_lines_insert_mq-deadline", "lines", "3", 0, 1024, "footprint of dd_insert_requests (one hold per list): per_prio[BE] sort/fifo heads, stats.inserted, hash bucket", "block/mq-deadline.c dd_insert_request (reference §1.3)"),
    ParamDef::new("elv_cold_lines_dispatch_mq-deadline", "lines", "3", 0, 1024, "footprint of dd_dispatch_request: per_prio[BE] lists and latest_pos, stats (dispatched; completed written lock-free by dd_finish_request), dd batching/starved", "block/mq-deadline.c dd_dispatch_request (reference §1.4, §1.6)"),
    ParamDef::new("elv_cold_lines_merge_bfq", "lines", "3", 0, 1024, "footprint of bfq_bio_merge: bfqd bio_bfqq/bio_bic, the task's bfqq sort_list, hash bucket", "block/bfq-iosched.c bfq_bio_merge"),
    ParamDef::new("elv_cold_lines_insert_bfq", "lines", "6", 0, 1024, "footprint of bfq_insert_request: bfqq (refs, sort_list, fifo, next_rq, think time / seek stats), bfqd queued and injection fields, entity + service tree + weights tree when the queue becomes busy", "block/bfq-iosched.c bfq_insert_request/bfq_add_request (reference §3.6)"),
    ParamDef::new("elv_cold_lines_dispatch_bfq", "lines", "10", 0, 1024, "footprint of bfq_dispatch_request: bfqd dispatch/in-service/queued/rq_in_driver, peak-rate and injection fields, in-service bfqq, B-WF2Q+ entity service and sched_data vtime (bfq_bfqq_served), amortised expiry and next-queue lookup", "block/bfq-iosched.c __bfq_dispatch_request, bfq-wf2q.c (reference §3.3, §3.6)"),
    ParamDef::new("elv_cold_lines_finish_bfq", "lines", "4", 0, 1024, "footprint of bfq_finish_requeue_request: bfqd rq_in_driver, completion and injection fields, bfqq dispatched / ttime", "block/bfq-iosched.c bfq_completed_request (reference §3.6)"),
    ParamDef::new("elv_cost_pct_mq-deadline", "%", "100", 0, 10_000, "scale of the elv_* costs for mq-deadline (overrides the elevator's declared footprint)", "declared by mq-deadline (cpu_footprint): the reference of the elv_* costs"),
    ParamDef::new("elv_cost_pct_bfq", "%", "270", 0, 10_000, "scale of the elv_* costs for bfq (overrides the elevator's declared footprint)", "declared by bfq (cpu_footprint): Documentation/block/bfq-iosched.rst, ~1.9 us vs ~0.7 us per request for mq-deadline"),
    ParamDef::new("elv_cost_pct_kyber", "%", "60", 0, 10_000, "scale of the elv_* costs for kyber (overrides the elevator's declared footprint)", "declared by kyber (cpu_footprint): blksim model, kyber's hooks are lighter than mq-deadline's"),
    ParamDef::new("elv_cost_pct_eraseblock", "%", "100", 0, 10_000, "scale of the elv_* costs for eraseblock (overrides the elevator's declared footprint)", "declared by eraseblock (cpu_footprint): blksim model, deadline-like"),
    ParamDef::new("queue_rq_ns", "ns", "0", 0, MAX_STEP_NS, "driver queue_rq per request with blk_mq_start_request, under the hardware queue's driver lock", "blksim model"),
    ParamDef::new("lock_handoff_ns", "ns", "0", 0, MAX_STEP_NS, "cost of a hctx or driver lock moving to another CPU (one cache line)", "blksim model"),
    ParamDef::new("complete_ns", "ns", "0", 0, MAX_STEP_NS, "blk_mq_end_request per request: stats, tags, bio_endio, the submitter's completion event and wake-up call", "blksim model"),
    ParamDef::new("irq_ns", "ns", "0", 0, MAX_STEP_NS, "interrupt / timer / softirq entry for a completion that does not run inline in queue_rq", "blksim model"),
    ParamDef::new("ctxsw_ns", "ns", "0", 0, MAX_STEP_NS, "context switch when a sleeping task is woken (reap, tag wait, thinktime) and runs again", "blksim model"),
    ParamDef::new("kblockd_jitter_ns", "ns", "0", 0, MAX_STEP_NS, "extra kblockd wake-up latency, uniform in [0, value], per asynchronous queue run (workqueue scheduling latency varies)", "blksim model; 0 = none"),
    ParamDef::new("kblockd_tail_ppm", "ppm", "0", 0, 1_000_000, "share of asynchronous queue runs (per million) whose kblockd worker is held off much longer than usual: preempted by a higher-priority thread, behind an interrupt-off section, on a CPU waking from a deep idle state", "blksim model; 0 = none. emmc-allwinner: 1000 [assumed], see that profile"),
    ParamDef::new("kblockd_tail_ns", "ns", "0", 0, MAX_STEP_NS, "mean of that long hold-off: uniform in [0, 2 x value], on top of kblockd_wakeup_ns and kblockd_jitter_ns", "blksim model; emmc-allwinner: 200000 [assumed], see that profile"),
    ParamDef::new("irq_cpu", "cpu", "0", 0, 4095, "CPU that takes the device interrupt of drivers completing from a hardware IRQ (MMC host controller)", "blksim model; default affinity of a platform device IRQ is CPU 0"),
    ParamDef::new("llc_cpus", "count", "0", 0, 4096, "CPUs per last-level-cache domain (0 = all CPUs share one); with queue.rq_affinity=1 a completion is sent to the submitting CPU only when it does not share a cache with the IRQ CPU (blk_mq_complete_need_ipi, cpus_share_cache)", "blksim model"),
];

#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    pub nr_cpus: u16,
    pub kblockd_wakeup_ns: u64,
    pub task_wakeup_ns: u64,
    pub syscall_ns: u64,
    /// Per I/O: the file reference of engines that take one per I/O (`fget`/`fput`).
    pub fget_ns: u64,
    /// Per direct I/O from user memory: pinning and releasing its buffer, fixed part and per
    /// 4 KiB page (`bio_iov_iter_get_pages`, `bio_release_pages`).
    pub iov_pin_ns: u64,
    pub iov_pin_page_ns: u64,
    pub ctxsw_ns: u64,
    pub irq_cpu: u16,
    pub llc_cpus: u16,
    pub kblockd_jitter_ns: u64,
    pub kblockd_tail_ppm: u64,
    pub kblockd_tail_ns: u64,
    /// Block-layer step costs; the elevator's part is set by [`Self::cpu_costs`].
    pub costs: CpuCosts,
    /// The profile's overrides of elevators' declared footprints, by elevator name
    /// (`elv_cost_pct_<name>`, `elv_cold_lines_<hook>_<name>`).
    pub elv_overrides: BTreeMap<String, ElvOverride>,
}

/// A profile's override of one elevator's [`CpuFootprint`] numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ElvOverride {
    pub cost_pct: Option<u64>,
    /// Per hook: merge, insert, dispatch, finish.
    pub cold_lines: [Option<u64>; 4],
}

impl Default for Platform {
    fn default() -> Self {
        Platform {
            nr_cpus: 2,
            kblockd_wakeup_ns: 0,
            task_wakeup_ns: 0,
            syscall_ns: 0,
            fget_ns: 0,
            iov_pin_ns: 0,
            iov_pin_page_ns: 0,
            ctxsw_ns: 0,
            irq_cpu: 0,
            llc_cpus: 0,
            kblockd_jitter_ns: 0,
            kblockd_tail_ppm: 0,
            kblockd_tail_ns: 0,
            costs: CpuCosts::default(),
            elv_overrides: BTreeMap::new(),
        }
    }
}

impl Platform {
    /// Whether any CPU cost is non-zero (the ideal platform has none).
    pub fn is_ideal(&self) -> bool {
        !self.costs.active()
            && self.syscall_ns == 0
            && self.ctxsw_ns == 0
            && self.fget_ns == 0
            && self.iov_pin_ns == 0
            && self.iov_pin_page_ns == 0
    }

    /// The block layer's step costs for a queue running the elevator `elv` (its name and
    /// the footprint it declares; `None` without an elevator), with this profile's overrides.
    pub fn cpu_costs(&self, elv: Option<(&str, CpuFootprint)>) -> CpuCosts {
        let mut c = self.costs.clone();
        let Some((name, fp)) = elv else {
            c.elv_cost_pct = 100;
            return c;
        };
        let o = self.elv_overrides.get(name).cloned().unwrap_or_default();
        c.elv_cost_pct = o.cost_pct.unwrap_or(fp.cost_pct);
        for (i, line) in c.elv_cold_lines.iter_mut().enumerate() {
            *line = o.cold_lines[i].unwrap_or(fp.cold_lines[i]);
        }
        c
    }

    pub fn from_profile(p: &crate::profile::Profile) -> Result<Self, String> {
        let mut pl = Platform::default();
        for (k, v) in p.with_prefix("platform") {
            let Some(def) = PLATFORM_PARAMS.iter().find(|d| d.key == k) else {
                let hint = crate::profile::nearest(&k, PLATFORM_PARAMS.iter().map(|p| p.key))
                    .map(|s| format!(" (did you mean 'platform.{s}'?)"))
                    .unwrap_or_default();
                return Err(format!("{}: unknown field 'platform.{k}'{hint}", v.origin));
            };
            // The table's unit, syntax and bounds (one minute for every time; see
            // `blksim_core::param::MAX_STEP_NS`).
            let n = def
                .parse_u64(&v.value)
                .map_err(|e| format!("{}: platform.{e}", v.origin))?;
            match k.as_str() {
                "nr_cpus" => pl.nr_cpus = n as u16,
                "kblockd_wakeup_ns" => pl.kblockd_wakeup_ns = n,
                "task_wakeup_ns" => pl.task_wakeup_ns = n,
                "syscall_ns" => pl.syscall_ns = n,
                "fget_ns" => pl.fget_ns = n,
                "iov_pin_ns" => pl.iov_pin_ns = n,
                "iov_pin_page_ns" => pl.iov_pin_page_ns = n,
                "ctxsw_ns" => pl.ctxsw_ns = n,
                "kblockd_jitter_ns" => pl.kblockd_jitter_ns = n,
                "kblockd_tail_ppm" => pl.kblockd_tail_ppm = n,
                "kblockd_tail_ns" => pl.kblockd_tail_ns = n,
                "irq_cpu" => pl.irq_cpu = n as u16,
                "llc_cpus" => pl.llc_cpus = n as u16,
                "bio_alloc_ns" => pl.costs.bio_alloc_ns = n,
                "plug_ns" => pl.costs.plug_ns = n,
                "elv_merge_ns" => pl.costs.elv_merge_ns = n,
                "elv_insert_ns" => pl.costs.elv_insert_ns = n,
                "elv_dispatch_ns" => pl.costs.elv_dispatch_ns = n,
                "elv_complete_ns" => pl.costs.elv_complete_ns = n,
                "elv_handoff_ns" => pl.costs.elv_handoff_ns = n,
                "elv_cold_line_ns" => pl.costs.elv_cold_line_ns = n,
                k if k.starts_with("elv_cost_pct_") => {
                    let name = &k["elv_cost_pct_".len()..];
                    pl.elv_overrides.entry(name.into()).or_default().cost_pct = Some(n);
                }
                k if k.starts_with("elv_cold_lines_") => {
                    let rest = &k["elv_cold_lines_".len()..];
                    let (hook, name) = rest
                        .split_once('_')
                        .unwrap_or_else(|| unreachable!("platform.{k}: no hook"));
                    let i = ["merge", "insert", "dispatch", "finish"]
                        .iter()
                        .position(|h| *h == hook)
                        .unwrap_or_else(|| unreachable!("platform.{k}: unknown hook"));
                    pl.elv_overrides.entry(name.into()).or_default().cold_lines[i] = Some(n);
                }
                "queue_rq_ns" => pl.costs.queue_rq_ns = n,
                "lock_handoff_ns" => pl.costs.lock_handoff_ns = n,
                "complete_ns" => pl.costs.complete_ns = n,
                "irq_ns" => pl.costs.irq_ns = n,
                _ => unreachable!("platform.{k} is in PLATFORM_PARAMS but not applied"),
            }
        }
        if pl.irq_cpu >= pl.nr_cpus {
            // Name where each of the two was set (`--set`, a profile line, or the default).
            let at = |k: &str| match p.values.get(k) {
                Some(v) => v.origin.clone(),
                None => "default".to_string(),
            };
            return Err(format!(
                "{}: platform.irq_cpu={} is not one of the {} CPUs (platform.nr_cpus: {})",
                at("platform.irq_cpu"),
                pl.irq_cpu,
                pl.nr_cpus,
                at("platform.nr_cpus")
            ));
        }
        Ok(pl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn table_is_consistent_and_every_key_applies() {
        blksim_core::param::check_table(PLATFORM_PARAMS).unwrap();
        // Every key of the table is accepted (at its default) by `from_profile`.
        let mut text = String::from("driver = \"null_blk\"\n[platform]\n");
        for d in PLATFORM_PARAMS {
            text.push_str(&format!("\"{}\" = \"{}\"\n", d.key, d.default));
        }
        let p = Profile::parse(&text, "all.toml").unwrap();
        let all = Platform::from_profile(&p).unwrap();
        let def = Platform::default();
        assert_eq!(
            Platform {
                elv_overrides: BTreeMap::new(),
                ..all.clone()
            },
            def
        );
        // The footprint keys at their defaults change no elevator's costs.
        let ep = blksim_block::elevator::ElvParams {
            nr_requests: 64,
            queue_depth: 32,
            rotational: false,
            erase_block_bytes: Some(512 * 1024),
            seed: 1,
        };
        for name in blksim_sched::ELEVATOR_NAMES {
            let e = blksim_sched::make_elevator(name, &ep).unwrap();
            let elv = e.as_ref().map(|e| (e.name(), e.cpu_footprint()));
            assert_eq!(all.cpu_costs(elv), def.cpu_costs(elv), "{name}");
        }
    }

    #[test]
    fn values_are_bounded_and_errors_are_located() {
        let mut p = Profile::parse("driver = \"null_blk\"\n", "x.toml").unwrap();
        p.set("platform.kblockd_tail_ns=61s").unwrap();
        let e = Platform::from_profile(&p).unwrap_err();
        assert!(
            e.starts_with("--set=platform.kblockd_tail_ns=61s: platform.kblockd_tail_ns"),
            "{e}"
        );
        assert!(e.contains("0..=60000000000 ns"), "{e}");
        let mut p = Profile::parse("driver = \"null_blk\"\n", "x.toml").unwrap();
        p.set("platform.syscall_ns=2us").unwrap();
        assert_eq!(Platform::from_profile(&p).unwrap().syscall_ns, 2000);
    }

    /// An IRQ CPU beyond the CPUs names where each of the two values came from, not only the
    /// profile file (found by `blksim fuzz`: `--set=platform.irq_cpu=1234` on null_blk was
    /// reported at `profiles/null_blk.toml`).
    #[test]
    fn irq_cpu_beyond_the_cpus_names_both_origins() {
        let text = "driver = \"null_blk\"\n[platform]\nnr_cpus = 2\n";
        let mut p = Profile::parse(text, "x.toml").unwrap();
        p.set("platform.irq_cpu=1234").unwrap();
        let e = Platform::from_profile(&p).unwrap_err();
        assert_eq!(
            e,
            "--set=platform.irq_cpu=1234: platform.irq_cpu=1234 is not one of the 2 CPUs (platform.nr_cpus: x.toml:3)"
        );
        let mut p =
            Profile::parse("driver = \"null_blk\"\n[platform]\nirq_cpu = 3\n", "y.toml").unwrap();
        p.set("platform.nr_cpus=2").unwrap();
        let e = Platform::from_profile(&p).unwrap_err();
        assert_eq!(
            e,
            "y.toml:3: platform.irq_cpu=3 is not one of the 2 CPUs (platform.nr_cpus: --set=platform.nr_cpus=2)"
        );
        let p =
            Profile::parse("driver = \"null_blk\"\n[platform]\nirq_cpu = 2\n", "z.toml").unwrap();
        let e = Platform::from_profile(&p).unwrap_err();
        assert!(e.ends_with("(platform.nr_cpus: default)"), "{e}");
    }

    /// Every elevator declares its own footprint, and the parameter table's defaults for
    /// the override keys are those declarations (one source); a profile's key overrides
    /// only the elevator it names.
    #[test]
    fn footprints_are_declared_by_the_elevators_and_overridable() {
        let p = blksim_block::elevator::ElvParams {
            nr_requests: 64,
            queue_depth: 32,
            rotational: false,
            erase_block_bytes: Some(512 * 1024),
            seed: 1,
        };
        let hooks = ["merge", "insert", "dispatch", "finish"];
        let def = |k: &str| PLATFORM_PARAMS.iter().find(|d| d.key == k);
        let mut seen = Vec::new();
        for name in blksim_sched::ELEVATOR_NAMES
            .iter()
            .filter(|n| **n != "none")
        {
            let e = blksim_sched::make_elevator(name, &p).unwrap().unwrap();
            let fp = e.cpu_footprint();
            let d = def(&format!("elv_cost_pct_{name}")).expect("a cost key per elevator");
            assert_eq!(d.default, fp.cost_pct.to_string(), "{name}");
            for (i, h) in hooks.iter().enumerate() {
                if let Some(d) = def(&format!("elv_cold_lines_{h}_{name}")) {
                    assert_eq!(d.default, fp.cold_lines[i].to_string(), "{name} {h}");
                }
            }
            seen.push((name.to_string(), fp));
        }
        // bfq's footprint is its own (not mq-deadline's), as are its locking rules.
        let fp = |n: &str| seen.iter().find(|(m, _)| m == n).unwrap().1;
        assert_ne!(fp("bfq"), fp("mq-deadline"));
        assert!(fp("bfq").lock_per_insert && fp("bfq").locked_finish);
        assert!(!fp("kyber").locked_finish);

        let mut prof = Profile::parse("name='t'\ndriver='null_blk'\n", "t.toml").unwrap();
        prof.set("platform.elv_cold_lines_dispatch_bfq=7").unwrap();
        prof.set("platform.elv_cost_pct_kyber=80").unwrap();
        let pl = Platform::from_profile(&prof).unwrap();
        let bfq = pl.cpu_costs(Some(("bfq", fp("bfq"))));
        assert_eq!(bfq.elv_cold_lines, [3, 6, 7, 4]);
        assert_eq!(bfq.elv_cost_pct, 270);
        assert_eq!(pl.cpu_costs(Some(("kyber", fp("kyber")))).elv_cost_pct, 80);
        assert_eq!(
            pl.cpu_costs(Some(("mq-deadline", fp("mq-deadline"))))
                .elv_cold_lines,
            [2, 3, 3, 0]
        );
    }
}
