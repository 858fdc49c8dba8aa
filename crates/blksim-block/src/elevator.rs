//! The elevator boundary, shaped like `struct elevator_mq_ops` (`block/elevator.h`).
//!
//! The core owns requests; an elevator holds [`RqId`]s and reads request fields through the
//! [`RqPool`]. Time is an explicit argument (the kernel reads jiffies/ktime; a simulation must
//! not hide a clock). Tunables are data (`name`, show, store), like sysfs `elv_fs_entry`, so
//! `--set=queue.iosched.NAME=VALUE` needs no code per scheduler.
//!
//! Optional hooks have default bodies that do what a NULL hook does in the kernel.

use crate::request::{Op, RqId, RqPool};
use blksim_core::{Ns, ParamDef};

/// `enum elv_merge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElvMerge {
    NoMerge,
    FrontMerge,
    BackMerge,
}

/// A bio as the merge hooks see it (position and type, no ownership).
#[derive(Clone, Copy, Debug)]
pub struct BioInfo {
    pub op: Op,
    pub flags: u32,
    pub sector: u64,
    pub nr_sectors: u32,
    pub nr_segments: u16,
    pub cpu: u16,
    pub task: u32,
    pub ioprio: crate::request::IoPrio,
}

/// One tunable of an elevator, as a sysfs attribute under `queue/iosched/`: its definition
/// (unit, kernel default, the bounds of what the store accepts, source) in the elevator's one
/// table, and the current value as sysfs shows it.
#[derive(Clone, Debug)]
pub struct Tunable {
    pub def: &'static ParamDef,
    pub value: String,
}

impl Tunable {
    pub fn name(&self) -> &'static str {
        self.def.key
    }
}

/// The value of tunable `name` from an elevator's table: the one value syntax of blksim, the
/// table's unit and bounds (the input range the kernel's sysfs store accepts, or a stated
/// blksim bound). The elevator then applies the kernel's own clamps.
pub fn parse_tunable(
    table: &'static [ParamDef],
    elevator: &str,
    name: &str,
    value: &str,
) -> Result<u64, String> {
    table
        .iter()
        .find(|d| d.key == name)
        .ok_or_else(|| format!("no tunable '{name}' for elevator '{elevator}'"))?
        .parse_u64(value)
}

/// [`Tunable`]s of a table in table order, with their current values.
pub fn tunables_of(table: &'static [ParamDef], value: impl Fn(&str) -> String) -> Vec<Tunable> {
    table
        .iter()
        .map(|d| Tunable {
            def: d,
            value: value(d.key),
        })
        .collect()
}

/// `struct elevator_mq_ops`, for one hardware queue's worth of scheduling state.
///
/// Locking: the caller (the block layer) models the scheduler lock (`dd->lock`,
/// `bfqd->lock`, `khd->lock`) around `insert_requests`, `dispatch_request` and the merge
/// hooks; implementations need no locking of their own.
/// What an elevator's hooks cost the CPU model and how they take its lock, declared by each
/// elevator (no elevator inherits another's). A platform supplies the speed (its `elv_*_ns`
/// are mq-deadline's per-hook costs, its hand-off and cold-line costs are the machine's) and
/// may override the numbers per elevator (`platform.elv_cost_pct_<name>`,
/// `platform.elv_cold_lines_<hook>_<name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuFootprint {
    /// The hooks' instruction cost, in % of the platform's `elv_*_ns`.
    pub cost_pct: u64,
    /// Lines of shared elevator state each hook writes, in [`crate::cpu::ElvHook`] order
    /// (merge, insert, dispatch, finish): paid per line when the lock came from another CPU.
    pub cold_lines: [u64; 4],
    /// `insert_requests` takes the lock once per request rather than once per list.
    pub lock_per_insert: bool,
    /// `finish_request` runs under the elevator lock rather than lock-free.
    pub locked_finish: bool,
}

pub trait Elevator {
    /// The name `scheduler` shows (`mq-deadline`, `kyber`, `bfq`, ...).
    fn name(&self) -> &'static str;

    /// The CPU footprint of this elevator's hooks (see [`CpuFootprint`]).
    fn cpu_footprint(&self) -> CpuFootprint;

    /// `QUEUE_FLAG_SQ_SCHED` (`blk_queue_sq_sched`), which `dd_init_sched` and
    /// `bfq_init_queue` set: the elevator ignores the hctx it dispatches for, so
    /// `blk_mq_run_hw_queues` runs only the calling CPU's hctx (`blk_mq_get_sq_hctx`) and the
    /// hctxs with requests on their dispatch list, not every hctx. kyber keeps per-hctx
    /// state and leaves it unset.
    fn sq_sched(&self) -> bool {
        false
    }

    /// `insert_requests`: add requests (in list order). `at_head` for requeues and
    /// `BLK_MQ_INSERT_AT_HEAD`.
    fn insert_requests(&mut self, pool: &mut RqPool, rqs: &[RqId], at_head: bool, now: Ns);

    /// `dispatch_request`: choose the next request to hand to the driver, removing it from
    /// the elevator, or None.
    fn dispatch_request(&mut self, pool: &mut RqPool, now: Ns) -> Option<RqId>;

    /// `has_work`.
    fn has_work(&self) -> bool;

    /// `bio_merge` / `request_merge`: find a queued request `bio` could be merged into. The
    /// core checks the size/segment limits and does the merge; it then calls
    /// [`Elevator::request_merged`]. Default: no merge candidates.
    fn find_merge(&mut self, _pool: &RqPool, _bio: &BioInfo) -> Option<(RqId, ElvMerge)> {
        None
    }

    /// `request_merged`: `rq` grew by a bio (front merges move its start sector).
    fn request_merged(&mut self, _pool: &mut RqPool, _rq: RqId, _kind: ElvMerge) {}

    /// `next_request` (`elv_rb_latter_request`): the queued request right after `rq` in
    /// sector order, for request–request back merges after a bio merge.
    fn next_request(&self, _pool: &RqPool, _rq: RqId) -> Option<RqId> {
        None
    }

    /// `former_request` (`elv_rb_former_request`).
    fn former_request(&self, _pool: &RqPool, _rq: RqId) -> Option<RqId> {
        None
    }

    /// `requests_merged`: `next` was merged into `rq` and must leave the elevator.
    fn requests_merged(&mut self, _pool: &mut RqPool, _rq: RqId, _next: RqId) {}

    /// `insert_requests` may merge a request into a queued one (`blk_mq_sched_try_insert_merge`,
    /// mq-deadline does this). If it does, the elevator moves the bios with
    /// [`RqPool::merge_requests`]`(into, rq)` and returns `Some(into)`; the core then frees
    /// `rq`'s empty shell and its tags. Default: none.
    fn try_insert_merge(&mut self, _pool: &mut RqPool, _rq: RqId) -> Option<RqId> {
        None
    }

    /// `completed_request`: the driver completed `rq` (kyber measures latency here).
    fn completed_request(&mut self, _pool: &RqPool, _rq: RqId, _now: Ns) {}

    /// `finish_request`: `rq` is being freed.
    fn finish_request(&mut self, _pool: &RqPool, _rq: RqId, _now: Ns) {}

    /// `limit_depth`: shallow depth for allocating a scheduler tag for `op` (async writes in
    /// mq-deadline and bfq), None = full depth.
    fn limit_depth(&self, _op: Op, _sync: bool) -> Option<u32> {
        None
    }

    /// `depth_updated`: `nr_requests` changed.
    fn depth_updated(&mut self, _nr_requests: u32) {}

    /// The smallest shallow depth [`Elevator::limit_depth`] can return, as the elevator tells
    /// the scheduler tags' sbitmap_queue (`sbitmap_queue_min_shallow_depth`, through
    /// `blk_mq_set_min_shallow_depth` from its `depth_updated` hook). The wake batch is
    /// computed from it (`sbq_calc_wake_batch`), so that the tags a shallow allocation can
    /// hold are enough to wake its waiters. None: no shallow allocations (`UINT_MAX`).
    fn min_shallow_depth(&self) -> Option<u32> {
        None
    }

    /// Timers the elevator wants (bfq idling, kyber's latency timer): the earliest time at
    /// which the block layer should call [`Elevator::timer`], if any.
    fn next_timer(&self) -> Option<Ns> {
        None
    }

    /// A timer fired; return true if the hardware queue should be run.
    fn timer(&mut self, _pool: &mut RqPool, _now: Ns) -> bool {
        false
    }

    /// Whether dispatch waits for tokens (kyber): the block layer must re-run the queue when
    /// a request completes even if nothing else would.
    fn wants_run_on_completion(&self) -> bool {
        false
    }

    /// Tunables, as sysfs shows them.
    fn tunables(&self) -> Vec<Tunable> {
        Vec::new()
    }

    /// Store a tunable; error text names the expected form.
    fn set_tunable(&mut self, name: &str, _value: &str) -> Result<(), String> {
        Err(format!(
            "no tunable '{name}' for elevator '{}'",
            self.name()
        ))
    }

    /// Like `completed_request`, called just before it, with the data-integrity oracle: an
    /// elevator that issued its own reads (the `eraseblock` scheduler's gap reads) learns
    /// here what data (versions) they returned. Default: nothing.
    fn completed_request_data(
        &mut self,
        _pool: &RqPool,
        _rq: RqId,
        _data: &crate::integrity::Integrity,
        _now: Ns,
    ) {
    }

    /// Requests whose bios the elevator moved into a request it built itself (absorbed into a
    /// combined write): the core frees their empty shells and scheduler tags, as it does after
    /// an insert merge. Called after `insert_requests`, `dispatch_request` and `timer`.
    fn take_released(&mut self, _out: &mut Vec<RqId>) {}

    /// Device capacity in sectors, told once at setup (elevators that issue their own I/O
    /// must stay inside the device).
    fn set_capacity(&mut self, _sectors: u64) {}

    /// Statistics the elevator wants reported under `blksim.elevator` (name, value).
    fn stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Parameters every elevator constructor gets.
#[derive(Clone, Debug)]
pub struct ElvParams {
    pub nr_requests: u32,
    /// Driver queue depth (`tag_set.queue_depth`).
    pub queue_depth: u32,
    pub rotational: bool,
    /// Erase block size of the device in bytes, if it has one (eraseblock scheduler).
    pub erase_block_bytes: Option<u64>,
    pub seed: u64,
}
