//! CPUs and locks, a layer of their own: the CPU time each step of the path costs, per-CPU
//! timelines, and locks as resources contexts wait for. The block layer and drivers use it as a
//! service ([`CpuService`] for drivers that run work in a kernel thread).
//!
//! # Model
//! * A *context* (a task in a syscall, a kblockd work item, an interrupt) runs on one CPU
//!   with a local clock. It starts at `max(event time, cpu.busy_until)` — work for a busy CPU
//!   waits, nothing preempts — and every step it executes advances the local clock by the
//!   step's cost ([`CpuCosts`]). When the context ends, `busy_until` is the local clock.
//! * A lock ([`Lock`]) is a timeline of hold intervals. A context arriving at local time `t`
//!   is granted the earliest gap at or after `t` long enough for its hold, plus a hand-off
//!   cost when the previous holder was another CPU (the lock word and the data it protects
//!   move between caches). For the elevator lock the hand-off is the lock's own
//!   (`elv_handoff_ns`) plus the *cold footprint* of the critical section about to run:
//!   `elv_cold_line_ns` × the lines of elevator state that hook touches and other CPUs write
//!   ([`CpuCosts::elv_cold_lines`], per [`ElvHook`]). A CPU that keeps the lock (the 2nd to
//!   Nth `dispatch_request` of a batch) finds that state warm in its cache and pays nothing,
//!   so a big scheduler (bfq) gains more from batching than a small one (mq-deadline). Waiting spins: the CPU stays busy (`spin_lock`, not a sleeping
//!   mutex). Departure from the kernel: the hold is placed by gap search, so a context
//!   processed later in the event loop may slot into an earlier gap — grants approximate a
//!   FIFO queued spinlock (`qspinlock`) rather than follow processing order strictly.
//! * Contexts whose local clock ran ahead of the event time yield at lock acquisitions in
//!   the dispatch loop and between bios of one `io_submit`/`io_uring_enter`, so concurrent
//!   contexts interleave at lock granularity, as CPUs do (see `queue.rs`).
//!
//! With every cost zero (the ideal platform) no clock ever moves, no context yields, locks
//! are never consulted, and results are those of the zero-cost model.

use blksim_core::headvec::HeadVec;
use blksim_core::Ns;

/// Per-step CPU costs in ns. Which kernel function each covers is documented on the field;
/// defaults and sources are in `blksim-sim`'s `platform::PLATFORM_PARAMS`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuCosts {
    /// `submit_bio` → `blk_mq_submit_bio` per bio: bio allocation, splitting check, request
    /// allocation (tag), accounting.
    pub bio_alloc_ns: Ns,
    /// `blk_add_rq_to_plug` per request (the flush itself is charged as inserts and runs).
    pub plug_ns: Ns,
    /// Elevator `bio_merge` attempt, under the elevator lock (`dd_bio_merge`, `bfq_bio_merge`).
    pub elv_merge_ns: Ns,
    /// Elevator `insert_requests` per request, under the elevator lock.
    pub elv_insert_ns: Ns,
    /// Elevator `dispatch_request` per call, under the elevator lock.
    pub elv_dispatch_ns: Ns,
    /// Elevator `completed_request` + `finish_request` per request (under the lock for bfq).
    pub elv_complete_ns: Ns,
    /// Hand-off cost of the elevator lock itself when it moves between CPUs (the queued
    /// spinlock's word and MCS hand-over). Not scaled per elevator; the elevator's own state
    /// that moves with the lock is [`Self::elv_cold_line_ns`] × [`Self::elv_cold_lines`].
    pub elv_handoff_ns: Ns,
    /// Cost of one cache line of the elevator's shared state that a critical section touches
    /// after the lock came from another CPU (the line was last written there: a remote
    /// cache-to-cache transfer, serialised by the pointer chasing of lists and trees).
    pub elv_cold_line_ns: Ns,
    /// Footprint per [`ElvHook`] of the elevator in use: lines of shared elevator state
    /// (not the requests themselves) that one critical section of the hook touches and that
    /// other CPUs write. Paid on a hand-off only: a CPU that keeps the lock (the 2nd to 8th
    /// `dispatch_request` of a batch, consecutive inserts of one plug flush) finds them warm.
    pub elv_cold_lines: [u64; 4],
    /// Scale of the elevator's own costs (`elv_*`), in percent, for the elevator in use.
    pub elv_cost_pct: u64,
    /// `blk_mq_dispatch_rq_list` → driver `queue_rq` per request (with `blk_mq_start_request`),
    /// under the driver's per-hardware-queue lock.
    pub queue_rq_ns: Ns,
    /// Hand-off cost of a hctx or driver lock moving between CPUs (one cache line).
    pub lock_handoff_ns: Ns,
    /// `blk_mq_end_request` per request: stats, tag release, `bio_endio`, the completion
    /// event for the submitter (CQE / aio event) and the wake-up call.
    pub complete_ns: Ns,
    /// Interrupt (or timer / softirq) entry for a completion that does not run inline.
    pub irq_ns: Ns,
}

impl CpuCosts {
    /// Any cost non-zero: the CPU model is on.
    pub fn active(&self) -> bool {
        self.bio_alloc_ns
            | self.plug_ns
            | self.elv_merge_ns
            | self.elv_insert_ns
            | self.elv_dispatch_ns
            | self.elv_complete_ns
            | self.elv_handoff_ns
            | self.elv_cold_line_ns
            | self.queue_rq_ns
            | self.lock_handoff_ns
            | self.complete_ns
            | self.irq_ns
            != 0
    }

    /// An elevator cost scaled for the elevator in use.
    #[inline]
    pub fn elv(&self, base: Ns) -> Ns {
        base * self.elv_cost_pct / 100
    }
}

/// Which elevator hook takes the elevator lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElvHook {
    /// `bio_merge` lookup.
    Merge = 0,
    /// `insert_requests` (per list for mq-deadline, per request for bfq).
    Insert = 1,
    /// `dispatch_request` (one call, or a batch of calls under one hold).
    Dispatch = 2,
    /// `finish_request` (bfq).
    Finish = 3,
}

/// No CPU has held the lock yet.
const NO_OWNER: u16 = u16::MAX;

/// A spinlock as a timeline of hold intervals `[start, end)` by CPU, in timeline order.
///
/// The holds live in one list in timeline order. They are normally disjoint, so their ends
/// are sorted too and an acquisition finds the first hold ending after its arrival by binary
/// search. A hold may overlap the next one (a contended acquisition that found a gap without
/// hand-off pays the hand-off after all, see [`Lock::hold`]); from then until the lock's
/// timeline empties, the list is searched from its start, which gives the same grants.
///
/// A list, not a tree: an acquisition walks the holds after its arrival until a gap fits, so
/// it is linear in them anyway, and contiguous holds walk faster. On the seed-002 workload
/// (`blksim bench --workload=server`) a lock held 12 holds on average and an acquisition
/// walked 10 of them; a B-tree keyed by `(end, start, seq)` spent a fifth of its time loading
/// owners from its nodes. There, 97 % of the acquisitions found no gap, and the holds after
/// the arrival were nearly always back to back: the lock counts its gaps, and with none the
/// walk is one comparison (−6 % of that workload's instructions).
#[derive(Clone, Debug, Default)]
pub struct Lock {
    /// Holds `(start, end, cpu)` in timeline order. Every acquisition trims, usually one
    /// hold, which a [`HeadVec`] does by moving its start.
    list: HeadVec<(Ns, Ns, u16)>,
    /// A hold overlaps the next one: the ends may be out of order until the list empties.
    overlapped: bool,
    /// Idle gaps between consecutive holds (kept while no hold overlaps). A saturated lock
    /// has none: its holds follow each other, so an acquisition that does not fit in front
    /// of the first hold ending after its arrival goes after the last one.
    gaps: u32,
    /// Owner of the last interval dropped from the timeline (for the next hand-off).
    past_owner: Option<u16>,
    pub acquisitions: u64,
    pub handoffs: u64,
    /// Time spent spinning, summed over acquisitions.
    pub wait_ns: u64,
}

impl Lock {
    /// Acquire at local time `*now` on `cpu` for `hold` ns of critical section; the local
    /// clock moves to the end of the hold (spinning included). `handoff` is paid when the
    /// previous holder in time was another CPU. Returns when the critical section starts
    /// (after the spin and the hand-off).
    ///
    /// The hold goes into the earliest gap, at or after the arrival, that fits it with the
    /// hand-off its predecessor implies; holds that end by the arrival are passed over.
    pub fn hold(&mut self, cpu: u16, now: &mut Ns, hold: Ns, handoff: Ns) -> Ns {
        self.acquisitions += 1;
        let arrival = *now;
        // Walk the timeline from the first hold that ends after the arrival, with the owner
        // of the hold before it. `next`: the hold the new one goes in front of.
        // While the holds are disjoint the ones ending by the arrival are a prefix, passed
        // over at once; the last of them owned the lock before.
        let holds = self.list.live();
        let from = if self.overlapped {
            0
        } else {
            Self::ended_by(holds, arrival)
        };
        let prev = match from {
            0 => self.past_owner.unwrap_or(NO_OWNER),
            i => holds[i - 1].2,
        };
        let (s, prev, next) = match (holds.get(from), holds.last()) {
            (Some(&(a, _, _)), Some(&(_, b, o)))
                if !self.overlapped && self.gaps == 0 && hold > 0 =>
            {
                // No gaps: behind the first hold, the holds run back to back, and a hold of
                // non-zero length fits nowhere among them (the walk would pass each one).
                let got = if arrival + Self::handoff_to(prev, cpu, handoff) + hold <= a {
                    (arrival, prev, Some((a, from)))
                } else {
                    (arrival.max(b), o, None)
                };
                debug_assert_eq!(
                    got,
                    Self::walk(holds, from, arrival, prev, cpu, hold, handoff)
                );
                got
            }
            _ => Self::walk(holds, from, arrival, prev, cpu, hold, handoff),
        };
        // A contended acquisition (it had to spin) migrates even if the previous hold in the
        // timeline was this CPU's: the queued spinlock is FIFO, so other waiters would have
        // taken it in between; the timeline only lacks them because they are processed later.
        let contended = s > arrival;
        let h = if prev != NO_OWNER && (prev != cpu || contended) {
            handoff
        } else {
            0
        };
        if h > 0 {
            self.handoffs += 1;
        }
        let end = s + h + hold;
        self.wait_ns += s - arrival;
        if next.is_some_and(|(a, _)| end > a) {
            // This hold runs into the next one.
            self.overlapped = true;
        }
        let at = next.map_or(self.list.len(), |(_, i)| i);
        if !self.overlapped {
            // The gap the hold goes into (if any) becomes the ones on either side of it.
            let holds = self.list.live();
            let left = at.checked_sub(1).map(|i| holds[i].1);
            let right = holds.get(at).map(|h| h.0);
            let was = matches!((left, right), (Some(l), Some(r)) if r > l);
            let before = left.is_some_and(|l| s > l);
            let after = right.is_some_and(|r| r > end);
            self.gaps = self.gaps + before as u32 + after as u32 - was as u32;
        }
        self.list.insert(at, (s, end, cpu));
        *now = end;
        s + h
    }

    /// The holds in timeline order (tests).
    #[cfg(test)]
    fn timeline(&self) -> Vec<(Ns, Ns, u16)> {
        self.list.live().to_vec()
    }

    /// From hold `from` on, with the clock at `s` and `prev` owning the lock before: where a
    /// hold of `hold` ns fits. Returns when it may start (before its hand-off), the owner
    /// before it, and the hold it goes in front of (`(start, index)`; None: at the end).
    fn walk(
        holds: &[(Ns, Ns, u16)],
        from: usize,
        mut s: Ns,
        mut prev: u16,
        cpu: u16,
        hold: Ns,
        handoff: Ns,
    ) -> (Ns, u16, Option<(Ns, usize)>) {
        for (i, &(a, b, o)) in holds[from..].iter().enumerate() {
            if b <= s {
                prev = o;
                continue;
            }
            if s + Self::handoff_to(prev, cpu, handoff) + hold <= a {
                return (s, prev, Some((a, from + i)));
            }
            s = s.max(b);
            prev = o;
        }
        (s, prev, None)
    }

    /// How many holds end by `t`, for disjoint holds (ends in order). Usually one or two: a
    /// short scan from the front finds them without a binary search's chain of dependent
    /// loads, which was most of [`Self::trim`]'s time on the seed-002 workload.
    #[inline]
    fn ended_by(holds: &[(Ns, Ns, u16)], t: Ns) -> usize {
        let k = holds.len().min(4);
        match holds[..k].iter().position(|h| h.1 > t) {
            Some(i) => i,
            None => k + holds[k..].partition_point(|h| h.1 <= t),
        }
    }

    #[inline]
    fn handoff_to(prev: u16, cpu: u16, handoff: Ns) -> Ns {
        if prev != NO_OWNER && prev != cpu {
            handoff
        } else {
            0
        }
    }

    /// Forget holds that ended before `t` (no context can arrive earlier than the event
    /// being processed), keeping the last owner for the hand-off rule.
    pub fn trim(&mut self, t: Ns) {
        // Most acquisitions find nothing to trim: the first hold still runs.
        if self.list.first().is_none_or(|h| h.1 > t) {
            return;
        }
        let holds = self.list.live();
        let n = if self.overlapped {
            holds.iter().take_while(|h| h.1 <= t).count()
        } else {
            Self::ended_by(holds, t)
        };
        self.past_owner = Some(holds[n - 1].2);
        if !self.overlapped {
            // The gaps behind each dropped hold go with it.
            let dropped = holds[..n.min(holds.len() - 1) + 1]
                .windows(2)
                .filter(|w| w[1].0 > w[0].1)
                .count();
            self.gaps -= dropped as u32;
        }
        self.list.drop_front(n);
        if self.list.is_empty() {
            self.overlapped = false;
            self.gaps = 0;
        }
    }
}

/// Per-CPU timelines and the locks of one request queue.
///
/// The interface the block layer and the event loop use: a context `begin`s on a CPU and
/// `end`s, charges costs (`costs()` says what each step costs), takes the elevator, hctx and
/// driver locks (`elv_hold`, `hctx_hold`, `drv_hold`), and a dispatch run inside a task's
/// syscall may park that task (`park_task`) to be resumed later (`take_parked`).
#[derive(Clone, Debug, Default)]
pub struct CpuModel {
    costs: CpuCosts,
    on: bool,
    busy_until: Vec<Ns>,
    /// The elevator lock (`dd->lock`, `bfqd->lock`, `khd->lock`; one per queue for the
    /// single-queue schedulers, `QUEUE_FLAG_SQ_SCHED`).
    elv_lock: Lock,
    /// `hctx->lock` per hardware queue (protects `hctx->dispatch`).
    hctx_locks: Vec<Lock>,
    /// The driver's submission lock per hardware queue (held across `queue_rq`).
    drv_locks: Vec<Lock>,
    /// Busy time per CPU (for utilisation reports).
    busy_ns: Vec<u64>,
    /// Elevator-lock acquisitions and hand-offs per [`ElvHook`].
    elv_hook_acq: [u64; 4],
    elv_hook_handoffs: [u64; 4],
    /// Event time of the context being run: no later context can arrive before it.
    floor: Ns,
    /// CPU of the running context.
    cur_cpu: u16,
    /// The task whose syscall the running context is (None for kblockd and interrupts).
    cur_task: Option<u32>,
    /// Set when a dispatch run inside `cur_task`'s syscall yielded: the task waits for it.
    task_parked: Option<u32>,
}

impl CpuModel {
    /// The model for `nr_cpus` CPUs and `nr_hw` hardware queues; on when `costs` charge
    /// anything (see [`Self::set_on`]).
    pub fn new(costs: CpuCosts, nr_cpus: usize, nr_hw: usize) -> Self {
        CpuModel {
            on: costs.active(),
            costs,
            busy_until: vec![0; nr_cpus.max(1)],
            elv_lock: Lock::default(),
            hctx_locks: vec![Lock::default(); nr_hw.max(1)],
            drv_locks: vec![Lock::default(); nr_hw.max(1)],
            busy_ns: vec![0; nr_cpus.max(1)],
            elv_hook_acq: [0; 4],
            elv_hook_handoffs: [0; 4],
            floor: 0,
            cur_cpu: 0,
            cur_task: None,
            task_parked: None,
        }
    }

    /// Whether contexts run on CPU timelines at all (off on the ideal platform: every
    /// context runs at its event time and charges nothing).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Run contexts on the CPU timelines even if no block-layer cost is set (a platform
    /// whose only costs are the syscall's or the context switch's).
    pub fn set_on(&mut self, on: bool) {
        self.on = on;
    }

    /// What each step costs on this platform.
    #[inline]
    pub fn costs(&self) -> &CpuCosts {
        &self.costs
    }

    /// CPU of the running context.
    #[inline]
    pub fn cur_cpu(&self) -> u16 {
        self.cur_cpu
    }

    /// The task whose syscall the running context is, if any.
    #[inline]
    pub fn current_task(&self) -> Option<u32> {
        self.cur_task
    }

    /// Make `t` (or no task) the running context's task: a syscall's context (after
    /// [`Self::begin`]), or a parked dispatch run resuming in the syscall it belongs to.
    #[inline]
    pub fn set_current_task(&mut self, t: Option<u32>) {
        self.cur_task = t;
    }

    /// A dispatch run inside task `t`'s syscall yielded: the task waits for it.
    #[inline]
    pub fn park_task(&mut self, t: u32) {
        self.task_parked = Some(t);
    }

    /// The task parked by the running context, if any, clearing it.
    #[inline]
    pub fn take_parked(&mut self) -> Option<u32> {
        self.task_parked.take()
    }

    /// The running context ended: no task, nothing parked.
    #[inline]
    pub fn leave_task(&mut self) {
        self.cur_task = None;
        self.task_parked = None;
    }

    /// The model's figures for the report (empty when the model is off).
    pub fn stats(&self) -> Vec<(&'static str, u64)> {
        if !self.on {
            return Vec::new();
        }
        let sum = |ls: &[Lock], f: fn(&Lock) -> u64| -> u64 { ls.iter().map(f).sum() };
        let mut v = vec![
            ("elv_lock_acquisitions", self.elv_lock.acquisitions),
            ("elv_lock_handoffs", self.elv_lock.handoffs),
            ("elv_lock_wait_ns", self.elv_lock.wait_ns),
            (
                "drv_lock_acquisitions",
                sum(&self.drv_locks, |l| l.acquisitions),
            ),
            ("drv_lock_handoffs", sum(&self.drv_locks, |l| l.handoffs)),
            ("drv_lock_wait_ns", sum(&self.drv_locks, |l| l.wait_ns)),
            (
                "hctx_lock_acquisitions",
                sum(&self.hctx_locks, |l| l.acquisitions),
            ),
            ("hctx_lock_handoffs", sum(&self.hctx_locks, |l| l.handoffs)),
            ("cpu_busy_ns", self.busy_ns.iter().sum()),
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
            v.push((acq, self.elv_hook_acq[hook as usize]));
            v.push((handoffs, self.elv_hook_handoffs[hook as usize]));
        }
        v
    }

    /// Hold the elevator lock on `cpu` for `hold` ns (scaled elevator cost already applied).
    #[inline]
    pub fn elv_hold(&mut self, cpu: u16, now: &mut Ns, hold: Ns, hook: ElvHook) -> Ns {
        let f = self.floor;
        let handoff = self.costs.elv_handoff_ns
            + self.costs.elv_cold_line_ns * self.costs.elv_cold_lines[hook as usize];
        self.elv_lock.trim(f);
        let h0 = self.elv_lock.handoffs;
        let r = self.elv_lock.hold(cpu, now, hold, handoff);
        self.elv_hook_acq[hook as usize] += 1;
        self.elv_hook_handoffs[hook as usize] += self.elv_lock.handoffs - h0;
        r
    }

    /// Hold `hctx->lock` of hardware queue `h`.
    #[inline]
    pub fn hctx_hold(&mut self, h: u16, cpu: u16, now: &mut Ns, hold: Ns) {
        let f = self.floor;
        let handoff = self.costs.lock_handoff_ns;
        let l = &mut self.hctx_locks[h as usize];
        l.trim(f);
        l.hold(cpu, now, hold, handoff);
    }

    /// Hold the driver's submission lock of hardware queue `h` for `hold` ns.
    #[inline]
    pub fn drv_hold(&mut self, h: u16, cpu: u16, now: &mut Ns, hold: Ns) {
        let f = self.floor;
        let handoff = self.costs.lock_handoff_ns;
        let l = &mut self.drv_locks[h as usize];
        l.trim(f);
        l.hold(cpu, now, hold, handoff);
    }

    /// Event time of the context being run.
    #[inline]
    pub fn floor(&self) -> Ns {
        self.floor
    }

    /// Start a context on `cpu` at event time `now`: the local clock.
    #[inline]
    pub fn begin(&mut self, cpu: u16, now: Ns) -> Ns {
        self.cur_task = None;
        self.task_parked = None;
        self.cur_cpu = cpu;
        if !self.on {
            return now;
        }
        let c = cpu as usize % self.busy_until.len();
        self.floor = self.floor.max(now);
        now.max(self.busy_until[c])
    }

    /// End a context started with [`Self::begin`] at local `start`, now at local `clk`.
    #[inline]
    pub fn end(&mut self, cpu: u16, start: Ns, clk: Ns) {
        if !self.on {
            return;
        }
        let c = cpu as usize % self.busy_until.len();
        self.busy_until[c] = self.busy_until[c].max(clk);
        self.busy_ns[c] += clk.saturating_sub(start);
    }

    /// Charge `cpu`'s timeline directly (work done by a context that already ended).
    pub fn charge(&mut self, cpu: u16, at: Ns, cost: Ns) -> Ns {
        let c = cpu as usize % self.busy_until.len();
        let s = at.max(self.busy_until[c]);
        self.busy_until[c] = s + cost;
        self.busy_ns[c] += cost;
        s + cost
    }

    pub fn busy_until(&self, cpu: u16) -> Ns {
        self.busy_until[cpu as usize % self.busy_until.len()]
    }
}

/// What a driver that runs work in a kernel thread may ask of the CPU model (loop's worker,
/// `loop_process_work`): which CPU an unbound work item runs on, and running work there
/// after what that CPU already runs.
pub trait CpuService {
    /// The CPU that can start work earliest at `at` (the lowest such CPU): where the
    /// scheduler places an unbound workqueue's kworker (`WQ_UNBOUND`).
    fn least_busy(&self, at: Ns) -> u16;
    /// Run `cost` ns of work on `cpu`, from `at` or when the CPU is free if later; returns
    /// when it ends.
    fn run(&mut self, cpu: u16, at: Ns, cost: Ns) -> Ns;
}

impl CpuService for CpuModel {
    fn least_busy(&self, at: Ns) -> u16 {
        let mut best = 0;
        for (c, &b) in self.busy_until.iter().enumerate() {
            if b.max(at) < self.busy_until[best].max(at) {
                best = c;
            }
        }
        best as u16
    }

    fn run(&mut self, cpu: u16, at: Ns, cost: Ns) -> Ns {
        if !self.on {
            // The ideal platform: work takes no CPU time and never waits for a CPU.
            return at.saturating_add(cost);
        }
        self.floor = self.floor.max(at);
        self.charge(cpu, at, cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CPUs take one lock in turn: the hand-off cost shows up exactly once per move.
    #[test]
    fn handoff_cost_is_paid_exactly_when_the_lock_moves() {
        let mut l = Lock::default();
        // CPU 0 at t=0 holds 100 ns: first ever acquisition, no hand-off.
        let mut t0 = 0;
        assert_eq!(l.hold(0, &mut t0, 100, 30), 0);
        assert_eq!(t0, 100);
        // CPU 1 arrives at 50: spins to 100, pays 30 for the move, holds 100 → 230.
        let mut t1 = 50;
        assert_eq!(l.hold(1, &mut t1, 100, 30), 130);
        assert_eq!(t1, 230);
        // CPU 1 again at 300, uncontended: no move, no cost.
        let mut t1b = 300;
        l.hold(1, &mut t1b, 100, 30);
        assert_eq!(t1b, 400);
        // CPU 0 at 400: the lock moves back, 30 ns.
        let mut t0b = 400;
        l.hold(0, &mut t0b, 100, 30);
        assert_eq!(t0b, 530);
        assert_eq!(l.handoffs, 2);
        assert_eq!(l.wait_ns, 50);
        // A context processed later that arrives in an earlier gap slots into it:
        // [230, 300) is free; CPU 1 at 240 for 20 ns after CPU 1's hold: no hand-off.
        let mut t = 240;
        assert_eq!(l.hold(1, &mut t, 20, 30), 240);
        assert_eq!(t, 260);
    }

    /// The elevator lock's hand-off carries the hook's cold footprint; a CPU that keeps the
    /// lock pays neither.
    #[test]
    fn cold_footprint_is_paid_per_hook_only_when_the_lock_moves() {
        let costs = CpuCosts {
            elv_handoff_ns: 100,
            elv_cold_line_ns: 10,
            elv_cold_lines: [2, 0, 7, 0],
            elv_cost_pct: 100,
            ..CpuCosts::default()
        };
        let mut m = CpuModel::new(costs, 2, 1);
        // CPU 0 merges (first acquisition: nothing moves), then CPU 1 dispatches at 100:
        // 100 + 7 × 10 = 170 ns before its 50 ns hold.
        let mut t0 = 0;
        assert_eq!(m.elv_hold(0, &mut t0, 10, ElvHook::Merge), 0);
        let mut t1 = 100;
        assert_eq!(m.elv_hold(1, &mut t1, 50, ElvHook::Dispatch), 270);
        assert_eq!(t1, 320);
        // CPU 1 again, uncontended: warm.
        let mut t1b = 400;
        assert_eq!(m.elv_hold(1, &mut t1b, 50, ElvHook::Dispatch), 400);
        // CPU 0 merges: the lock moves back with the merge's footprint, 100 + 2 × 10.
        let mut t0b = 500;
        assert_eq!(m.elv_hold(0, &mut t0b, 10, ElvHook::Merge), 620);
        assert_eq!(m.elv_hook_handoffs, [1, 0, 1, 0]);
        assert_eq!(m.elv_hook_acq, [2, 0, 2, 0]);
    }

    /// The timeline as a plain sorted list searched from the start: the model's definition
    /// of [`Lock`], which the binary search over disjoint holds must reproduce grant for grant.
    #[derive(Default)]
    struct ListLock {
        holds: Vec<(Ns, Ns, u16)>,
        past_owner: Option<u16>,
        handoffs: u64,
        wait_ns: u64,
    }

    impl ListLock {
        fn hold(&mut self, cpu: u16, now: &mut Ns, hold: Ns, handoff: Ns) -> Ns {
            let arrival = *now;
            let mut s = arrival;
            let mut prev = self.past_owner.unwrap_or(NO_OWNER);
            let mut at = self.holds.len();
            for (i, &(a, b, o)) in self.holds.iter().enumerate() {
                if b <= s {
                    prev = o;
                    continue;
                }
                let h = if prev != NO_OWNER && prev != cpu {
                    handoff
                } else {
                    0
                };
                if s + h + hold <= a {
                    at = i;
                    break;
                }
                s = s.max(b);
                prev = o;
            }
            let contended = s > arrival;
            let h = if prev != NO_OWNER && (prev != cpu || contended) {
                handoff
            } else {
                0
            };
            if h > 0 {
                self.handoffs += 1;
            }
            let end = s + h + hold;
            self.wait_ns += s - arrival;
            self.holds.insert(at, (s, end, cpu));
            *now = end;
            s + h
        }

        fn trim(&mut self, t: Ns) {
            let n = self.holds.iter().take_while(|h| h.1 <= t).count();
            if n > 0 {
                self.past_owner = Some(self.holds[n - 1].2);
                self.holds.drain(..n);
            }
        }
    }

    /// Random acquisitions (zero-length holds, hand-offs longer than holds so that holds
    /// overlap, arrivals before and after the floor) get the same grants, clocks and
    /// timelines from [`Lock`] (binary search while disjoint) as from the plain list.
    #[test]
    fn lock_timeline_grants_what_the_plain_list_grants() {
        let (mut overlapped, mut compacted, mut gapless) = (0, 0, 0);
        for seed in 0..300u64 {
            let mut rng = blksim_core::Rng::from_seed(seed);
            let mut a = Lock::default();
            let mut b = ListLock::default();
            let mut floor = 0;
            let ncpu = 1 + rng.below(4) as u16;
            let handoff = [0, 5, 50, 300][rng.below(4) as usize];
            for _ in 0..400 {
                if rng.below(4) == 0 {
                    floor += rng.below(200);
                    let before = a.list.head();
                    a.trim(floor);
                    b.trim(floor);
                    compacted += (a.list.head() < before && !a.list.is_empty()) as u32;
                }
                let cpu = rng.below(ncpu as u64) as u16;
                let hold = [0, 1, 10, 100][rng.below(4) as usize] + rng.below(3);
                let arrival = floor + rng.below(600);
                let (mut ta, mut tb) = (arrival, arrival);
                let ra = a.hold(cpu, &mut ta, hold, handoff);
                let rb = b.hold(cpu, &mut tb, hold, handoff);
                assert_eq!((ra, ta), (rb, tb), "seed {seed}");
                assert_eq!(a.timeline(), b.holds, "seed {seed}");
                if !a.overlapped {
                    let gaps = b.holds.windows(2).filter(|w| w[1].0 > w[0].1).count();
                    assert_eq!(a.gaps as usize, gaps, "seed {seed}");
                    gapless += (a.gaps == 0 && b.holds.len() > 1) as u32;
                }
                overlapped += a.overlapped as u32;
            }
            assert_eq!((a.handoffs, a.wait_ns), (b.handoffs, b.wait_ns));
            assert_eq!(a.past_owner, b.past_owner);
        }
        // Overlapping holds, and the trimmed prefix dropped while holds remain, both happened.
        assert!(overlapped > 0);
        assert!(compacted > 0);
        assert!(
            gapless > 0,
            "back-to-back holds (the walk's shortcut) never happened"
        );
    }
}
