//! The loop driver (`drivers/block/loop.c`) over a file in the page cache: the device whose
//! "hardware" is a kernel thread copying data, so what it costs is CPU time on the same CPUs
//! that run fio and the block layer.
//!
//! * `loop_queue_rq` starts the request and hands it to `loop_queue_work`: the command goes
//!   on the list of its cgroup's worker (every job of one cgroup shares one list,
//!   `lo->rootcg_cmd_list`) and `queue_work` wakes that worker if it is idle. Nothing else
//!   happens in the submitter's context (its cost is the platform's `queue_rq_ns`).
//! * The worker (`loop_process_work`, a work item of the device's `WQ_UNBOUND` workqueue)
//!   runs on whichever CPU the scheduler gives it, takes the commands in order and, for each,
//!   `loop_handle_cmd` → `do_req_filebacked` copies the data through the backing file's page
//!   cache (`lo_read_simple` / `lo_write_simple` for a buffered backing file; a flush is
//!   `vfs_fsync`) and calls `blk_mq_complete_request` in its own context. One work item is
//!   never run twice at once, so one cgroup's commands are served by one thread at a time:
//!   the worker is a single server, and it competes for the CPUs with everything else.
//! * When the list is empty the worker returns; the next command wakes it again
//!   (`worker_wakeup_ns`).
//!
//! The device has one hardware queue of `hw_queue_depth` tags (`loop_add`), a volatile write
//! cache (the backing file has `->fsync`: `BLK_FEAT_WRITE_CACHE`, no FUA), and the backing
//! file's size.

use blksim_block::cpu::CpuService;
use blksim_block::driver::{CallCtx, DriverStats};
use blksim_block::{BlkStatus, Driver, DriverOut, Op, RqId, RqPool};
use blksim_core::param::MAX_STEP_NS;
use blksim_core::{Ns, ParamDef};
use std::collections::VecDeque;

/// `BLK_MQ_MAX_DEPTH` (`include/linux/blk-mq.h`).
const BLK_MQ_MAX_DEPTH: u64 = 10240;

/// What `blksim calibrate` fits on a loop profile unless told otherwise: the worker's CPU
/// costs and its wake-up, the model's three platform-dependent times.
pub const LOOP_CALIBRATE: &[&str] = &["worker_ns", "copy_ns_per_kib", "worker_wakeup_ns"];

/// The loop parameters, the one place they are defined. The module parameter keeps its
/// kernel name; the costs are the model's, calibrated per platform (profiles/loop-2cpu.toml).
pub const LOOP_PARAMS: &[ParamDef] = &[
    ParamDef::new("hw_queue_depth", "tags", "128", 1, BLK_MQ_MAX_DEPTH, "driver tags of the one hardware queue", "drivers/block/loop.c hw_queue_depth module parameter (default 128)"),
    ParamDef::new("size", "MiB", "1024", 1, 1 << 30, "size of the backing file", "losetup of a file of this size; blksim bound: 1 PiB"),
    ParamDef::new("blocksize", "bytes", "512", 512, 4096, "logical block size (a power of two)", "drivers/block/loop.c loop_configure: the backing file's, 512 for a regular file"),
    ParamDef::new("worker_ns", "ns", "0", 0, MAX_STEP_NS, "CPU time of the worker per command, besides the copy: loop_process_work list handling, loop_handle_cmd, the backing file's read_iter/write_iter call path (0 on the ideal platform)", "calibrated per platform (profiles/loop-2cpu.toml)"),
    ParamDef::new("copy_ns_per_kib", "ns", "0", 0, MAX_STEP_NS, "CPU time of the worker per KiB copied between the page cache and the request's pages (copy_page_to_iter / copy_page_from_iter)", "calibrated per platform (profiles/loop-2cpu.toml)"),
    ParamDef::new("worker_wakeup_ns", "ns", "0", 0, MAX_STEP_NS, "from queue_work on an idle worker to the worker running (kworker wake-up and context switch)", "calibrated per platform (profiles/loop-2cpu.toml)"),
];

fn def(key: &str) -> &'static ParamDef {
    LOOP_PARAMS
        .iter()
        .find(|d| d.key == key)
        .unwrap_or_else(|| panic!("loop parameter {key} is not in the table"))
}

#[derive(Clone, Debug, PartialEq)]
pub struct LoopConfig {
    pub hw_queue_depth: u32,
    pub size_mib: u64,
    pub blocksize: u32,
    pub worker_ns: Ns,
    pub copy_ns_per_kib: Ns,
    pub worker_wakeup_ns: Ns,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            hw_queue_depth: 128,
            size_mib: 1024,
            blocksize: 512,
            worker_ns: 0,
            copy_ns_per_kib: 0,
            worker_wakeup_ns: 0,
        }
    }
}

impl LoopConfig {
    /// Build from `key → value` strings (profile + `--set`), validating each.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut c = LoopConfig::default();
        let num = |key: &str| -> Result<Option<u64>, String> {
            get(key).map(|v| def(key).parse_u64(&v)).transpose()
        };
        if let Some(n) = num("hw_queue_depth")? {
            c.hw_queue_depth = n as u32;
        }
        if let Some(n) = num("size")? {
            c.size_mib = n;
        }
        if let Some(n) = num("blocksize")? {
            if !n.is_power_of_two() {
                return Err(format!(
                    "blocksize: expected 512, 1024, 2048 or 4096, got {n}"
                ));
            }
            c.blocksize = n as u32;
        }
        if let Some(n) = num("worker_ns")? {
            c.worker_ns = n;
        }
        if let Some(n) = num("copy_ns_per_kib")? {
            c.copy_ns_per_kib = n;
        }
        if let Some(n) = num("worker_wakeup_ns")? {
            c.worker_wakeup_ns = n;
        }
        Ok(c)
    }
}

/// The worker's timer: start (or go on with) the next command.
const EV_WORK: u64 = 1;
/// The command the worker is on has been served.
const EV_DONE: u64 = 2;

pub struct Loop {
    cfg: LoopConfig,
    /// The cgroup worker's command list (`lo->rootcg_cmd_list`), in queueing order, with
    /// when each was queued: the dispatch context that queued it may have run ahead of the
    /// event at which the worker, going on with its list, finds it.
    cmds: VecDeque<(RqId, Ns)>,
    /// Whether the work item is queued or running (`queue_work` does nothing then).
    worker_active: bool,
    /// The CPU the worker runs on while it is active.
    worker_cpu: u16,
    /// The command being served, if any.
    current: Option<RqId>,
    in_flight: u32,
    completed: u64,
    wakeups: u64,
}

impl Loop {
    pub fn new(cfg: LoopConfig) -> Self {
        Loop {
            cfg,
            cmds: VecDeque::new(),
            worker_active: false,
            worker_cpu: 0,
            current: None,
            in_flight: 0,
            completed: 0,
            wakeups: 0,
        }
    }

    /// CPU time the worker spends on `rq`: the per-command path and the data copy (a flush,
    /// `vfs_fsync` on a file in the page cache, and a discard cost the per-command path only).
    fn service_ns(&self, pool: &RqPool, rq: RqId) -> Ns {
        let r = pool.get(rq);
        let copy = match r.op {
            Op::Read | Op::Write => r
                .bytes()
                .div_ceil(1024)
                .saturating_mul(self.cfg.copy_ns_per_kib),
            _ => 0,
        };
        self.cfg.worker_ns.saturating_add(copy)
    }
}

impl Driver for Loop {
    fn name(&self) -> &str {
        "loop"
    }

    fn nr_hw_queues(&self) -> u16 {
        1
    }

    fn queue_depth(&self) -> u32 {
        self.cfg.hw_queue_depth
    }

    fn capacity_sectors(&self) -> u64 {
        self.cfg.size_mib << 11
    }

    /// `loop_update_dio` / `loop_configure`: a backing file with `->fsync` makes the device
    /// `BLK_FEAT_WRITE_CACHE`; loop never declares FUA.
    fn write_cache(&self) -> bool {
        true
    }

    fn fua(&self) -> bool {
        false
    }

    fn apply_limits(&self, lim: &mut blksim_block::QueueLimits) {
        lim.logical_block_size = self.cfg.blocksize;
    }

    fn queue_rq(
        &mut self,
        _pool: &RqPool,
        rq: RqId,
        _hctx: u16,
        _last: bool,
        _ctx: CallCtx,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        // `loop_queue_work`: on the worker's list; `queue_work` wakes an idle worker.
        self.in_flight += 1;
        self.cmds.push_back((rq, now));
        if !self.worker_active {
            self.worker_active = true;
            self.wakeups += 1;
            out.events
                .push((now.saturating_add(self.cfg.worker_wakeup_ns), EV_WORK << 32));
        }
        BlkStatus::Ok
    }

    fn on_event(&mut self, _payload: u64, _pool: &RqPool, _now: Ns, _out: &mut DriverOut) {
        unreachable!("the loop driver's timers run through on_event_cpu");
    }

    fn on_event_cpu(
        &mut self,
        payload: u64,
        pool: &RqPool,
        now: Ns,
        cpu: &mut dyn CpuService,
        out: &mut DriverOut,
    ) {
        match payload >> 32 {
            EV_WORK => {
                debug_assert!(self.current.is_none());
                if self.current.is_none() && self.cmds.is_empty() {
                    // `loop_process_work` found the list empty: the worker sleeps again.
                    self.worker_active = false;
                    return;
                }
                if self.current.is_none() {
                    // The scheduler keeps an unbound kworker where it can run soonest: the
                    // load balancer moves it between CPUs as fio's threads come and go, so
                    // each command starts on the CPU free first.
                    let (rq, queued) = self.cmds.pop_front().expect("a command is queued");
                    let at = now.max(queued);
                    self.worker_cpu = cpu.least_busy(at);
                    let end = cpu.run(self.worker_cpu, at, self.service_ns(pool, rq));
                    self.current = Some(rq);
                    out.events.push((end, EV_DONE << 32));
                }
            }
            EV_DONE => {
                let rq = self.current.take().expect("the worker served a command");
                self.in_flight -= 1;
                self.completed += 1;
                // `blk_mq_complete_request` in the worker's context (`completing_cpu`); the
                // block layer's completion work runs next on this CPU, then the worker goes
                // on with the list (an event at the same time, after the completion).
                out.completions.push((rq, BlkStatus::Ok));
                out.events.push((now, (EV_WORK << 32) | 1));
            }
            k => panic!("loop: unknown event kind {k}"),
        }
    }

    fn completing_cpu(&self) -> Option<u16> {
        Some(self.worker_cpu)
    }

    fn stats(&self) -> DriverStats {
        DriverStats {
            entries: vec![
                ("loop_completed".into(), self.completed),
                ("loop_worker_wakeups".into(), self.wakeups),
            ],
            faults: Vec::new(),
        }
    }

    fn check_invariants(&self) {
        assert!(self.in_flight <= self.cfg.hw_queue_depth);
        assert!(self.current.is_none() && self.cmds.is_empty() && self.in_flight == 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kv: &[(&str, &str)]) -> Result<LoopConfig, String> {
        LoopConfig::from_lookup(&blksim_core::param::lookup_pairs(kv))
    }

    #[test]
    fn table_is_consistent_and_defaults_match_the_config() {
        blksim_core::param::check_table(LOOP_PARAMS).unwrap();
        let all: Vec<(&str, &str)> = LOOP_PARAMS.iter().map(|d| (d.key, d.default)).collect();
        assert_eq!(cfg(&all).unwrap(), LoopConfig::default());
    }

    #[test]
    fn values_are_bounded_and_errors_name_the_key() {
        assert_eq!(cfg(&[("worker_ns", "3us")]).unwrap().worker_ns, 3000);
        assert!(cfg(&[("hw_queue_depth", "0")])
            .unwrap_err()
            .starts_with("hw_queue_depth:"));
        assert!(cfg(&[("blocksize", "1536")])
            .unwrap_err()
            .starts_with("blocksize:"));
    }

    /// A CPU model of `n` CPUs for the driver alone: each CPU a timeline.
    struct Cpus(Vec<Ns>);
    impl CpuService for Cpus {
        fn least_busy(&self, at: Ns) -> u16 {
            (0..self.0.len())
                .min_by_key(|&c| self.0[c].max(at))
                .unwrap() as u16
        }
        fn run(&mut self, cpu: u16, at: Ns, cost: Ns) -> Ns {
            let c = &mut self.0[cpu as usize];
            *c = (*c).max(at) + cost;
            *c
        }
    }

    /// Drives the driver's timers in time order; returns (completion time, request).
    fn serve(
        lp: &mut Loop,
        pool: &RqPool,
        cpus: &mut Cpus,
        arrivals: &[(Ns, RqId)],
    ) -> Vec<(Ns, RqId)> {
        let mut out = DriverOut::default();
        let mut timers: Vec<(Ns, u64)> = Vec::new();
        let mut done = Vec::new();
        let mut arr = arrivals.to_vec();
        arr.reverse();
        let ctx = CallCtx { id: 0, cpu: 0 };
        loop {
            let next_timer = timers.iter().map(|t| t.0).min();
            let next_arr = arr.last().map(|a| a.0);
            let take_arrival = match (next_arr, next_timer) {
                (Some(a), Some(t)) => a <= t,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let now = if take_arrival {
                let (at, rq) = arr.pop().unwrap();
                assert_eq!(
                    lp.queue_rq(pool, rq, 0, true, ctx, at, &mut out),
                    BlkStatus::Ok
                );
                at
            } else {
                let t = next_timer.unwrap();
                let i = timers.iter().position(|x| x.0 == t).unwrap();
                let (at, p) = timers.remove(i);
                lp.on_event_cpu(p, pool, at, cpus, &mut out);
                at
            };
            timers.append(&mut out.events);
            for (rq, st) in out.completions.drain(..) {
                assert_eq!(st, BlkStatus::Ok);
                done.push((now, rq));
            }
        }
        lp.check_invariants();
        done
    }

    fn rq(pool: &mut RqPool, op: Op, sector: u64, nr: u32) -> RqId {
        pool.alloc_rq(blksim_block::Request {
            op,
            sector,
            nr_sectors: nr,
            ..Default::default()
        })
    }

    #[test]
    fn one_worker_serves_commands_in_order_after_one_wakeup() {
        let mut pool = RqPool::default();
        let rqs: Vec<RqId> = (0..4).map(|i| rq(&mut pool, Op::Read, i * 8, 8)).collect();
        let c = LoopConfig {
            worker_ns: 1000,
            copy_ns_per_kib: 100,
            worker_wakeup_ns: 5000,
            ..LoopConfig::default()
        };
        let mut lp = Loop::new(c);
        let mut cpus = Cpus(vec![0, 0]);
        // Four commands at once: one wake-up, then 1000 + 4 x 100 ns each, back to back.
        let arrivals: Vec<(Ns, RqId)> = rqs.iter().map(|&r| (0, r)).collect();
        let done = serve(&mut lp, &pool, &mut cpus, &arrivals);
        let order: Vec<RqId> = done.iter().map(|d| d.1).collect();
        assert_eq!(order, rqs);
        let times: Vec<Ns> = done.iter().map(|d| d.0).collect();
        assert_eq!(times, vec![6400, 7800, 9200, 10600]);
        assert_eq!(lp.wakeups, 1);
        // The worker's CPU time is on the CPUs' timelines: 4 x 1400 ns in all.
        assert_eq!(cpus.0.iter().max(), Some(&10600));
    }

    #[test]
    fn an_idle_worker_is_woken_again_and_runs_where_a_cpu_is_free() {
        let mut pool = RqPool::default();
        let a = rq(&mut pool, Op::Write, 0, 8);
        let b = rq(&mut pool, Op::Write, 64, 8);
        let c = LoopConfig {
            worker_ns: 1000,
            copy_ns_per_kib: 0,
            worker_wakeup_ns: 2000,
            ..LoopConfig::default()
        };
        let mut lp = Loop::new(c);
        // CPU 0 is busy until 50 us: the worker runs on CPU 1.
        let mut cpus = Cpus(vec![50_000, 0]);
        let done = serve(&mut lp, &pool, &mut cpus, &[(0, a), (100_000, b)]);
        assert_eq!(done, vec![(3000, a), (103_000, b)]);
        assert_eq!(lp.wakeups, 2);
        // At 100 us both CPUs are free: the lowest is taken.
        assert_eq!(cpus.0, vec![103_000, 3000]);
    }
}
