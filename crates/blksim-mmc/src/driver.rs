//! The MMC block driver (`drivers/mmc/core/queue.c`, `block.c`) on one of three host paths.
//!
//! Time conventions: every `Ns` this driver puts in [`DriverOut`] (`events`, `unblock`,
//! `run_queues`) is an absolute virtual time. CPU work done inside `queue_rq` (request prep, DMA
//! mapping) is charged on one dispatch-CPU timeline (`cpu_free`) instead of holding the caller:
//! `queue_rq` returns at `now`, and the work it started happens at `max(now, cpu_free)` onward.
//! Where the kernel *sleeps* inside `queue_rq` (legacy `mmc_blk_rw_wait`, SYNC requests waiting for
//! idle and running their command) the driver returns `Blocked`, keeps `mq.busy` set, and lists the
//! context in `out.unblock` when the kernel's `queue_rq` would return.
//!
//! This file is the common part of block.c and queue.c (`mmc_mq_queue_rq`, issue types,
//! `mq->in_flight`, `mq->busy`, SYNC requests, completion, the recovery work); each host path
//! is a submodule reached through its `MmcHostOps` table (`host_ops.rs`): `legacy.rs`,
//! `mmc_hsq.rs`, `cqhci.rs`. Host-side work is charged in a few places only: `prep` (request
//! prep and DMA mapping in `queue_rq`, on `cpu_free`), each path's `issue` and `event`
//! (interrupt, wake-up, `complete_work`, `host.complete` and `unmap_ns` in the completion,
//! `poll_completion` on the legacy path), `run_sync`, and the recovery work.

mod cqhci;
mod host_ops;
mod legacy;
mod mmc_hsq;

use cqhci::{Cqhci, CqhciOps};
use host_ops::MmcHostOps;
use legacy::{LegacyOps, MmcLegacy};
use mmc_hsq::{HsqOps, MmcHsq};

use crate::hsq::{HsqSlots, NextTag, Slot};
use crate::recovery::{Costs, Fault, FaultConfig, Outcome, Recovery, RecoveryOps};
use crate::HostCosts;
use blksim_block::driver::{BlkStatus, CallCtx, Driver, DriverOut, DriverStats, DriverTrail};
use blksim_block::pdu::RqMap;
use blksim_block::request::{flags, Op, RqId, RqPool};
use blksim_block::stage::Stage;
use blksim_core::Ns;
use blksim_device::emmc::bus::R1_BITS;
use blksim_device::emmc::{Access, Card, CardCmd, CardOp, CardTiming, Proto};

/// `MMC_QUEUE_DEPTH`: blk-mq tags for the legacy and hsq paths.
pub const MMC_QUEUE_DEPTH: u32 = 64;
/// CQHCI `NUM_SLOTS` and `DCMD_SLOT`.
pub const CQHCI_NUM_SLOTS: u32 = 32;
pub const CQHCI_DCMD_SLOT: u32 = 31;
/// `__mmc_poll_for_busy`: the sleep between polls doubles up to this.
pub const BUSY_POLL_MAX_NS: Ns = 32_768_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostQueue {
    Legacy,
    Hsq,
    Cqe,
}

/// `enum mmc_issue_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IssueType {
    Sync = 0,
    Dcmd = 1,
    Async = 2,
}

/// CQE card task order (`card.cq_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqPolicy {
    /// Strict arrival order.
    Fifo,
    /// The queued task whose data is ready first (reads once sensed; writes when the cache has
    /// room), ties to the oldest; the oldest task may be bypassed at most `max_bypass` times.
    ReadyFirst,
}

#[derive(Clone, Debug)]
pub struct MmcConfig {
    pub queue: HostQueue,
    pub hsq_depth: u32,
    pub hsq_perf_depth: u32,
    pub hsq_dynamic: bool,
    pub hsq_next_tag: NextTag,
    pub cqe_dcmd: bool,
    pub cmdq_depth: u32,
    pub cq_policy: CqPolicy,
    pub cq_max_bypass: u32,
    pub host: HostCosts,
    /// `host->max_segs`, `host->max_req_size` (bytes), `host->max_blk_count`
    /// (`mmc_setup_queue`).
    pub max_segs: u32,
    pub max_req_size: u32,
    pub max_blk_count: u32,
    /// `card.rel_wr` and `card.avoid_rel_write` (`mmc_blk_alloc_req`).
    pub rel_wr: bool,
    /// `card.cache_host_flush`: the host sees the card's cache (write cache, FLUSH).
    pub cache_host_flush: bool,
    pub avoid_rel_write: bool,
    /// `card.fault_*`: fault rates and the removal time (`recovery.rs`).
    pub faults: FaultConfig,
}

// Event kinds (payload = kind << 32 | argument).
const EV_LEG_IRQ: u64 = 1;
const EV_LEG_WAKE: u64 = 2;
const EV_LEG_HANDOFF: u64 = 3;
const EV_LEG_WORK: u64 = 4;
const EV_DONE: u64 = 5;
const EV_SYNC_DONE: u64 = 6;
const EV_HSQ_ENQ: u64 = 7;
const EV_HSQ_IRQ: u64 = 8;
const EV_CQE_QUEUED: u64 = 9;
const EV_CQE_KICK: u64 = 10;
const EV_CQE_IRQ: u64 = 11;
const EV_LEG_POST: u64 = 12;

const EV_POWER_CUT: u64 = 13;
const EV_RECOVERY: u64 = 14;
const EV_RECOVERY_DONE: u64 = 15;
const EV_REMOVED: u64 = 16;

/// Payloads carry the driver's generation (bumped by a power cut, which ends everything in
/// flight): events of an earlier generation are stale and dropped.
const GEN_SHIFT: u32 = 40;

/// An accepted request, until it completes.
#[derive(Clone, Copy, Debug)]
struct Track {
    ty: IssueType,
    cmd: CardCmd,
    tag: u32,
    segs: u16,
    accepted: Ns,
    /// Entered the hsq slot / CQE task list.
    queued: Ns,
    /// Bus command start.
    started: Ns,
    /// Transfer (and busy) done on the card.
    hw_done: Ns,
    /// The fault of the current attempt, and (once recovery decided) what happens next.
    fault: Fault,
    outcome: Option<Outcome>,
    /// CQE: the task's completion interrupt came (it is past the card's queue).
    irq_done: bool,
    /// When `EV_DONE` was scheduled for (to schedule it again after a CQE recovery).
    done_at: Ns,
}

/// The host and card steps recovery takes (see `recovery.rs`).
struct HostOps<'a> {
    card: &'a mut dyn Card,
    proto: Proto,
    /// The failed request's command.
    cmd: CardCmd,
    reset_ns: Ns,
    request: Ns,
    irq_wake: Ns,
    cmd13: Ns,
    /// When the failed attempt's busy ends, and how the host waits for it (`host.*`).
    busy_end: Ns,
    hw_busy_detect: bool,
    busy_poll_min: Ns,
    /// CMD13 polls sent.
    polls: u64,
}

impl RecoveryOps for HostOps<'_> {
    /// `mmc_blk_reset` → `_mmc_hw_reset`: flush the cache (errors ignored), reset, and
    /// re-initialise the card.
    fn reset(&mut self, t: Ns) -> Ns {
        let flush = CardCmd {
            op: CardOp::Flush,
            sector: 0,
            nr_sectors: 0,
            reliable: false,
            tag: u32::MAX,
        };
        let end = if self.card.cache_bytes() > 0 {
            self.card.submit(t, &flush, self.proto).busy_end
        } else {
            t
        };
        end + self.reset_ns
    }

    /// `card_busy_detect`.
    fn card_busy(&mut self, t: Ns) -> Ns {
        let (end, polls) = poll_busy(
            self.hw_busy_detect,
            self.busy_poll_min,
            self.cmd13,
            t,
            self.busy_end,
        );
        self.polls += polls;
        end
    }

    /// `mmc_blk_read_single`: CMD17 per sector, up to `MMC_READ_SINGLE_RETRIES` more tries
    /// each, a CMD13 after each.
    fn read_single(&mut self, rec: &mut Recovery, mut t: Ns) -> (Ns, bool) {
        let mut all_ok = true;
        for i in 0..self.cmd.nr_sectors as u64 {
            let one = CardCmd {
                op: CardOp::Read,
                sector: self.cmd.sector + i,
                nr_sectors: 1,
                reliable: false,
                tag: self.cmd.tag,
            };
            let mut ok = false;
            for _ in 0..=crate::recovery::MMC_READ_SINGLE_RETRIES {
                let tm = self.card.submit(t + self.request, &one, self.proto);
                t = tm.busy_end + self.irq_wake + self.cmd13;
                if rec.draw() == Fault::None {
                    ok = true;
                    break;
                }
            }
            all_ok &= ok;
        }
        (t, all_ok)
    }
}

/// Wait for the card to leave the programming state (busy until `busy_end`) after `t0`
/// (`card_busy_detect` → `__mmc_poll_for_busy`), one CMD13 costing `cmd13`: with host busy
/// detection the host sees the end of busy and one CMD13 confirms; otherwise CMD13 polls with
/// a sleep doubling from `poll_min` to 32.768 ms. Returns when the card is seen ready and the
/// CMD13s sent.
fn poll_busy(hw_busy_detect: bool, poll_min: Ns, cmd13: Ns, t0: Ns, busy_end: Ns) -> (Ns, u64) {
    let c = cmd13;
    if hw_busy_detect {
        return (t0.max(busy_end) + c, 1);
    }
    let mut t = t0 + c;
    let mut polls = 1;
    let mut delay = poll_min.max(1);
    while t < busy_end && delay < BUSY_POLL_MAX_NS {
        t += delay + c;
        polls += 1;
        delay = (delay * 2).min(BUSY_POLL_MAX_NS);
    }
    if t < busy_end {
        // The sleep has reached its cap: the remaining polls are evenly spaced, counted in
        // one step however long the card stays busy.
        let step = delay + c;
        let k = (busy_end - t).div_ceil(step);
        t += k * step;
        polls += k;
    }
    (t, polls)
}

/// A dispatching context asleep inside `queue_rq`.
#[derive(Clone, Copy, Debug)]
struct Waiter {
    ctx: u32,
    rq: RqId,
    ready_at: Ns,
    sync: bool,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    queue_rq_calls: u64,
    accepted: [u64; 3],
    resource_busy: u64,
    resource_depth: u64,
    resource_dcmd: u64,
    blocked: u64,
    completed: u64,
    mmc_queue_wait_ns: u64,
    bus_ns: u64,
    card_ns: u64,
    completion_ns: u64,
    hsq_slot_wait_ns: u64,
    hsq_slot_wait_max_ns: u64,
    hsq_depth_raises: u64,
    cmd13_polls: u64,
    legacy_wakeups: u64,
    legacy_complete_work: u64,
    legacy_took_done: u64,
    legacy_lock_waits: u64,
    cqe_reordered: u64,
    max_in_flight_async: u32,
    power_cuts: u64,
    power_cut_aborted: u64,
    removed_failed: u64,
}

pub struct MmcDriver {
    cfg: MmcConfig,
    /// The host path's operations (`host.queue`).
    ops: &'static dyn MmcHostOps,
    card: Box<dyn Card>,
    proto: Proto,
    name: String,
    /// `mq->in_flight[]` indexed by [`IssueType`].
    in_flight: [u32; 3],
    /// `mq->busy`: a dispatching context is inside (sleeping in) `queue_rq`.
    busy: bool,
    /// Each request's state here (`struct mmc_queue_req`, the request's PDU).
    tracked: RqMap<Track>,
    cpu_free: Ns,
    /// End of the last data transfer (asserts one transfer on the bus at a time).
    dat_free: Ns,
    /// CMD line timeline (CQE queueing/execute commands).
    cmd_free: Ns,
    /// `mq->complete_lock` held until.
    complete_lock_until: Ns,
    /// Legacy path state (`mq->complete_req`, `mq->rw_wait`, `mq->waiting`).
    legacy: MmcLegacy,
    waiter: Option<Waiter>,
    /// SYNC request whose command runs now (context to unblock at the end).
    sync_running: Option<(RqId, u32)>,
    /// Host software queue state (`struct mmc_hsq`).
    hsq: MmcHsq,
    /// CQHCI state (`struct cqhci_host`).
    cqe: Cqhci,
    stats: Stats,
    /// Event generation (see [`GEN_SHIFT`]).
    generation: u64,
    /// `card.power_cut_ns` (0 = none) and `card.power_cut_after_ios` (0 = none).
    power_cut_at: Ns,
    power_cut_after: u64,
    /// Data commands the card completed (for `power_cut_after`).
    data_done: u64,
    /// Faults and recovery (`recovery.rs`).
    recovery: Recovery,
    /// hsq/CQE: `mq->recovery_needed` (queue halted, `queue_rq` answers BLK_STS_RESOURCE).
    recovery_needed: bool,
    /// The card was removed (`mmc_card_removed`).
    removed: bool,
}

impl MmcDriver {
    pub fn new(cfg: MmcConfig, card: Box<dyn Card>, cmd23: bool) -> Self {
        let cfg_faults = cfg.faults;
        let ops: &'static dyn MmcHostOps = match cfg.queue {
            HostQueue::Legacy => &LegacyOps,
            HostQueue::Hsq => &HsqOps,
            HostQueue::Cqe => &CqhciOps,
        };
        MmcDriver {
            ops,
            hsq: MmcHsq::new(&cfg),
            cfg,
            card,
            proto: if cmd23 {
                Proto::Cmd23
            } else {
                Proto::OpenEnded
            },
            name: ops.name().to_string(),
            in_flight: [0; 3],
            busy: false,
            tracked: RqMap::default(),
            cpu_free: 0,
            dat_free: 0,
            cmd_free: 0,
            complete_lock_until: 0,
            legacy: MmcLegacy::default(),
            waiter: None,
            sync_running: None,
            cqe: Cqhci::default(),
            stats: Stats::default(),
            generation: 0,
            power_cut_at: 0,
            power_cut_after: 0,
            data_done: 0,
            recovery: Recovery::new(cfg_faults),
            recovery_needed: false,
            removed: false,
        }
    }

    /// Cut the card's power at `at` (virtual time, 0 = never) or after `after_ios` data
    /// commands (0 = never); see `power_cut`.
    pub fn set_power_cut(&mut self, at: Ns, after_ios: u64) {
        self.power_cut_at = at;
        self.power_cut_after = after_ios;
    }

    fn ev(&self, kind: u64, arg: u32) -> u64 {
        self.generation << GEN_SHIFT | kind << 32 | arg as u64
    }

    /// The card loses power at `now` and comes back at once: it keeps what reached NAND (the
    /// cache is lost, programs in progress torn), and the host sees every command in flight
    /// fail (as after a card reset, `mmc_blk_reset`): each request ends with an I/O error, the
    /// host path restarts empty, sleeping dispatchers wake, and the queue is run again.
    fn power_cut(&mut self, now: Ns, out: &mut DriverOut) {
        let changed = self.card.power_cut(now);
        out.power_cut = Some((now, changed));
        self.stats.power_cuts += 1;
        self.stats.power_cut_aborted += self.tracked.len() as u64;
        self.abort_all(now, out);
    }

    /// The card was removed at `now`: everything in flight fails, and every later request
    /// fails at once (`mmc_mq_queue_rq` → `mmc_card_removed`).
    fn remove_card(&mut self, now: Ns, out: &mut DriverOut) {
        self.removed = true;
        self.stats.removed_failed += self.tracked.len() as u64;
        self.recovery.failed += self.tracked.len() as u64;
        self.abort_all(now, out);
    }

    /// Every command in flight fails (the card lost power or went away): each request ends
    /// with an I/O error, the host path restarts empty, sleeping dispatchers wake, the queue
    /// is run again, and events of the old generation are dropped.
    fn abort_all(&mut self, now: Ns, out: &mut DriverOut) {
        let tracked = std::mem::take(&mut self.tracked);
        for (rq, tr) in tracked.iter() {
            self.card.unstage_data(tr.tag);
            out.completions.push((rq, BlkStatus::IoErr));
        }
        self.recovery.forget_all();
        self.recovery_needed = false;
        self.in_flight = [0; 3];
        let mut ctxs: Vec<u32> = Vec::new();
        ctxs.extend(self.waiter.take().map(|w| w.ctx));
        ctxs.extend(self.sync_running.take().map(|(_, c)| c));
        ctxs.extend(self.legacy.post.take().map(|(_, c)| c));
        ctxs.sort_unstable();
        ctxs.dedup();
        for c in ctxs {
            out.unblock.push((c, now));
        }
        self.busy = false;
        self.legacy.abort();
        self.hsq = MmcHsq::new(&self.cfg);
        self.cqe.abort(now);
        self.cpu_free = self.cpu_free.min(now);
        self.dat_free = now;
        self.cmd_free = now;
        self.complete_lock_until = now;
        self.bump_generation(now, out);
        out.run_queues.push((0, now));
        let name = &self.name;
        self.note(out, now, || {
            format!("{name} every command in flight failed ({})", tracked.len())
        });
    }

    /// Drop every event scheduled so far; the power cut and removal still to come are
    /// scheduled again.
    fn bump_generation(&mut self, now: Ns, out: &mut DriverOut) {
        self.generation += 1;
        if self.power_cut_at > now {
            out.events
                .push((self.power_cut_at, self.ev(EV_POWER_CUT, 0)));
        }
        if self.cfg.faults.removed_at > now && !self.removed {
            out.events
                .push((self.cfg.faults.removed_at, self.ev(EV_REMOVED, 0)));
        }
    }

    /// The recovery work (`mmc_mq_recovery_handler`) for the failed request `rq`, on the hsq
    /// and CQE paths; the queue is halted meanwhile.
    fn recovery_work(&mut self, rq: RqId, now: Ns, out: &mut DriverOut) {
        let t = now.max(self.dat_free).max(self.cmd_free);
        let ops = self.ops;
        let end = ops.recovery(self, rq, t, now, out);
        out.events.push((end, self.ev(EV_RECOVERY_DONE, rq)));
    }

    /// The recovery work ends: the failed request (CQE: every discarded task) is requeued or
    /// failed, the queue resumes (`cqe_recovery_finish`, `blk_mq_run_hw_queues`).
    fn recovery_done(&mut self, rq: RqId, now: Ns, out: &mut DriverOut) {
        let ops = self.ops;
        ops.recovery_finish(self, rq, now, out);
        out.run_queues.push((0, now));
    }

    /// One attempt of a data command on the bus at `t_cmd`, with the fault it meets: a
    /// command error fails after the command (the card does nothing); a data CRC error after
    /// the transfer; a data timeout when the host's timeout runs out.
    fn attempt(&mut self, tr: &mut Track, t_cmd: Ns) -> CardTiming {
        tr.fault = if matches!(tr.cmd.op, CardOp::Read | CardOp::Write) {
            self.recovery.draw()
        } else {
            Fault::None
        };
        match tr.fault {
            Fault::Cmd => {
                self.card.unstage_data(tr.tag);
                let end = t_cmd + self.card.bus().cmd_ns(R1_BITS);
                CardTiming {
                    cmd_start: t_cmd,
                    cmd_end: end,
                    data_start: end,
                    data_end: end,
                    busy_end: end,
                }
            }
            Fault::DataTimeout => {
                let mut tm = self.card.submit(t_cmd, &tr.cmd, self.proto);
                let end = tm.busy_end.max(tm.data_start + self.cfg.host.data_timeout);
                tm.data_end = end;
                tm.busy_end = end;
                tm
            }
            _ => self.card.submit(t_cmd, &tr.cmd, self.proto),
        }
    }

    fn recovery_costs(&self) -> Costs {
        Costs {
            cmd13: self.cmd13_ns(),
            cmd12: self.cfg.host.request + self.card.bus().cmd_ns(R1_BITS),
        }
    }

    /// `mmc_blk_mq_rw_recovery` for `rq`'s failed attempt, starting at `t`: the recovery
    /// commands hold the bus, a reset also flushes the card's cache and takes
    /// `host.reset_ns`, a single-sector re-read issues one CMD17 per sector. Records what
    /// happens to the request next and returns when recovery ends.
    fn recover(&mut self, rq: RqId, t: Ns) -> Ns {
        let mut tr = self.tracked[&rq];
        let read = tr.cmd.op == CardOp::Read;
        let costs = self.recovery_costs();
        let reset_ns = self.cfg.host.reset;
        let request = self.cfg.host.request;
        let irq_wake = self.cfg.host.irq + self.cfg.host.wakeup;
        let mut ops = HostOps {
            card: self.card.as_mut(),
            proto: self.proto,
            cmd: tr.cmd,
            reset_ns,
            request,
            irq_wake,
            cmd13: costs.cmd13,
            busy_end: tr.hw_done,
            hw_busy_detect: self.cfg.host.hw_busy_detect,
            busy_poll_min: self.cfg.host.busy_poll_min,
            polls: 0,
        };
        let (end, outcome) =
            self.recovery
                .rw_recovery(rq, read, tr.cmd.nr_sectors, tr.fault, t, &costs, &mut ops);
        self.stats.cmd13_polls += ops.polls;
        self.dat_free = self.dat_free.max(end);
        tr.outcome = Some(outcome);
        self.tracked.insert(rq, tr);
        end
    }

    pub fn card(&self) -> &dyn Card {
        self.card.as_ref()
    }

    /// `mq->in_flight[MMC_ISSUE_ASYNC]`.
    pub fn in_flight_async(&self) -> u32 {
        self.in_flight[IssueType::Async as usize]
    }

    /// Data tasks the CQE can hold (`cqe_qdepth`, 31 with a DCMD slot).
    pub fn cqe_qdepth(&self) -> u32 {
        let host = if self.cfg.cqe_dcmd {
            CQHCI_NUM_SLOTS - 1
        } else {
            CQHCI_NUM_SLOTS
        };
        host.min(self.cfg.cmdq_depth)
    }

    /// Upper bound on ASYNC requests in flight for this path.
    pub fn async_limit(&self) -> u32 {
        self.ops.async_limit(self)
    }

    /// `mmc_issue_type`.
    fn issue_type(&self, op: Op) -> IssueType {
        self.ops.issue_type(self, op)
    }

    fn note(&self, out: &mut DriverOut, t: Ns, f: impl FnOnce() -> String) {
        if out.tracing {
            out.notes.push((t, f()));
        }
    }

    fn hot_check(&mut self) {
        let a = self.in_flight_async();
        self.stats.max_in_flight_async = self.stats.max_in_flight_async.max(a);
        assert!(
            a <= self.async_limit(),
            "{}: {a} ASYNC in flight > limit {}",
            self.name,
            self.async_limit()
        );
        assert!(
            self.in_flight[IssueType::Dcmd as usize] <= 1,
            "more than one DCMD in flight"
        );
    }

    // ------------------------------------------------------------------------------------
    // Shared pieces
    // ------------------------------------------------------------------------------------

    /// Request prep + pre_req DMA mapping in the dispatching context
    /// (`mmc_blk_rw_rq_prep`, `mmc_pre_req`); returns when it is done.
    fn prep(&mut self, now: Ns, segs: u16, extra: Ns) -> Ns {
        let h = &self.cfg.host;
        let t = now.max(self.cpu_free)
            + h.prep
            + h.dma_map_base
            + h.dma_map_per_seg * segs as Ns
            + extra;
        self.cpu_free = t;
        t
    }

    /// `post_req` DMA unmapping of a finished request (`host.dma_unmap_per_seg_ns`): only reads
    /// do cache work at unmap (DMA_FROM_DEVICE invalidates; DMA_TO_DEVICE unmaps are free).
    fn unmap_ns(&self, rq: RqId) -> Ns {
        let tr = &self.tracked[&rq];
        if tr.cmd.op == CardOp::Read {
            self.cfg.host.dma_unmap_per_seg * tr.segs as Ns
        } else {
            0
        }
    }

    /// One CMD13 SEND_STATUS through `mmc_wait_for_cmd` (the caller sleeps for its IRQ).
    fn cmd13_ns(&self) -> Ns {
        let h = &self.cfg.host;
        h.request + self.card.bus().cmd_ns(R1_BITS) + h.irq + h.wakeup
    }

    /// Wait for the card to leave the programming state after `t0` (see [`poll_busy`]).
    fn poll_busy(&mut self, t0: Ns, busy_end: Ns) -> Ns {
        let h = &self.cfg.host;
        let (t, polls) = poll_busy(
            h.hw_busy_detect,
            h.busy_poll_min,
            self.cmd13_ns(),
            t0,
            busy_end,
        );
        self.stats.cmd13_polls += polls;
        t
    }

    /// `mmc_blk_mq_poll_completion` for a finished legacy request: writes check card busy.
    /// A failed attempt goes through `mmc_blk_mq_rw_recovery` here.
    fn poll_completion(&mut self, rq: RqId, t0: Ns) -> Ns {
        let tr = self.tracked[&rq];
        if tr.fault != Fault::None {
            return self.recover(rq, t0);
        }
        if tr.cmd.op == CardOp::Write {
            self.poll_busy(t0, tr.hw_done)
        } else {
            t0
        }
    }

    /// Put a data request on the bus at `t` (host `->request()` then the card sequence).
    /// Returns (hardware done for the IRQ, busy end).
    fn start_on_bus(&mut self, rq: RqId, t: Ns, out: &mut DriverOut) -> (Ns, Ns) {
        let t_cmd = t + self.cfg.host.request;
        let mut tr = self.tracked[&rq];
        assert!(
            t_cmd >= self.dat_free,
            "{}: command at {t_cmd} while the bus is busy until {}",
            self.name,
            self.dat_free
        );
        let tm = self.attempt(&mut tr, t_cmd);
        self.dat_free = tm.busy_end;
        let hw_done = if self.cfg.host.hw_busy_detect || tr.cmd.op == CardOp::Read {
            tm.busy_end
        } else {
            tm.data_end
        };
        tr.started = t;
        tr.hw_done = tm.busy_end;
        self.stats.mmc_queue_wait_ns += t - tr.accepted;
        self.stats.bus_ns += (tm.cmd_end - tm.cmd_start) + (tm.data_end - tm.data_start);
        self.stats.card_ns += (tm.data_start - tm.cmd_end) + (tm.busy_end - tm.data_end);
        self.tracked.insert(rq, tr);
        let name = &self.name;
        self.note(out, t, || {
            format!(
                "{name} start rq={rq} tag={} {:?} sector={} n={} data={}..{} busy_end={}",
                tr.tag,
                tr.cmd.op,
                tr.cmd.sector,
                tr.cmd.nr_sectors,
                tm.data_start,
                tm.data_end,
                tm.busy_end
            )
        });
        (hw_done, tm.busy_end)
    }

    /// The request ends (`blk_mq_end_request` through the MMC completion path).
    fn done(&mut self, rq: RqId, now: Ns, out: &mut DriverOut) {
        let tr = self.tracked.remove(&rq).unwrap_or_else(|| {
            panic!(
                "{}: request {rq} completed twice or never accepted",
                self.name
            )
        });
        let ty = tr.ty as usize;
        if self.legacy.work == Some(rq) {
            self.legacy.work = None;
        }
        assert!(self.in_flight[ty] > 0);
        self.in_flight[ty] -= 1;
        self.stats.completed += 1;
        if matches!(tr.cmd.op, CardOp::Read | CardOp::Write) {
            self.data_done += 1;
            if self.power_cut_after > 0 && self.data_done == self.power_cut_after {
                out.events.push((now, self.ev(EV_POWER_CUT, 0)));
            }
        }
        if tr.hw_done > 0 && now >= tr.hw_done {
            self.stats.completion_ns += now - tr.hw_done;
        }
        // Queue depth over time: waiting in the driver until the command went on the bus,
        // then on the bus and in the card until the transfer and busy ended.
        if tr.started > 0 && out.explain {
            out.trails.push((
                rq,
                DriverTrail {
                    queued: if self.ops.host_queue() { tr.queued } else { 0 },
                    on_bus: tr.started,
                    device_done: tr.hw_done.max(tr.started),
                },
            ));
        }
        if tr.started > 0 {
            out.spans.push(Stage::HostQueue, tr.accepted, tr.started);
            out.spans
                .push(Stage::Device, tr.started, tr.hw_done.max(tr.started));
        }
        // After a failed attempt: requeued for another try, or failed (`mmc_blk_mq_complete_rq`).
        match tr.outcome {
            Some(Outcome::Requeue) => out.requeues.push(rq),
            Some(Outcome::Fail) => out.completions.push((rq, BlkStatus::IoErr)),
            _ => {
                if matches!(tr.cmd.op, CardOp::Read | CardOp::Write) {
                    self.recovery.success(rq, tr.cmd.op == CardOp::Read);
                }
                out.completions.push((rq, BlkStatus::Ok));
            }
        }
        let name = &self.name;
        self.note(out, now, || {
            format!(
                "{name} done rq={rq} tag={} lat_ns={}",
                tr.tag,
                now - tr.accepted
            )
        });
        // `mmc_blk_cqe_complete_rq` (hsq and CQE): `mmc_cqe_check_busy` then
        // `blk_mq_run_hw_queues(q, true)` to refill the queue.
        if self.ops.complete_runs_queues() && tr.ty != IssueType::Sync {
            out.run_queues.push((0, now));
        }
    }

    /// Run a SYNC request's command (`mmc_blk_issue_flush` / `mmc_blk_issue_discard_rq`) at `t`
    /// in the context `ctx`, which stays blocked until it ends.
    fn run_sync(&mut self, rq: RqId, ctx: u32, t: Ns, out: &mut DriverOut) {
        let t = t
            .max(self.cpu_free)
            .max(self.complete_lock_until)
            .max(self.dat_free);
        let mut tr = self.tracked[&rq];
        let h = self.cfg.host.clone();
        if tr.cmd.op == CardOp::Flush && self.card.cache_bytes() == 0 {
            // `mmc_blk_issue_flush` → `mmc_flush_cache`: no cache, no CMD6; the request ends
            // at once (a card without a cache gets flushes when it declares reliable writes).
            tr.started = t;
            tr.hw_done = t;
            self.tracked.insert(rq, tr);
            self.sync_running = Some((rq, ctx));
            out.events.push((t, self.ev(EV_SYNC_DONE, rq)));
            return;
        }
        let tm = self.card.submit(t + h.request, &tr.cmd, self.proto);
        self.dat_free = tm.busy_end;
        // R1b: with host busy detection the IRQ comes at busy end and wakes the caller;
        // otherwise the caller polls CMD13.
        let end = if h.hw_busy_detect {
            tm.busy_end + h.irq + h.wakeup
        } else {
            self.poll_busy(tm.cmd_end + h.irq + h.wakeup, tm.busy_end)
        };
        tr.started = t;
        tr.hw_done = tm.busy_end;
        self.stats.mmc_queue_wait_ns += t - tr.accepted;
        self.stats.bus_ns += tm.cmd_end - tm.cmd_start;
        self.stats.card_ns += tm.busy_end - tm.cmd_end;
        self.tracked.insert(rq, tr);
        self.cpu_free = self.cpu_free.max(end);
        self.sync_running = Some((rq, ctx));
        let name = &self.name;
        self.note(out, t, || {
            format!(
                "{name} sync rq={rq} {:?} busy_end={}",
                tr.cmd.op, tm.busy_end
            )
        });
        out.events.push((end, self.ev(EV_SYNC_DONE, rq)));
    }

    /// hsq/CQE: a SYNC request waits for the queue to be idle (`cqe_wait_for_idle`).
    fn maybe_run_waiting_sync(&mut self, now: Ns, out: &mut DriverOut) {
        let Some(idle) = self.ops.idle(self) else {
            return;
        };
        if idle {
            if let Some(w) = self.waiter.take() {
                debug_assert!(w.sync);
                self.run_sync(w.rq, w.ctx, now.max(w.ready_at), out);
            }
        }
    }

    /// A SYNC request (flush, discard) on the hsq and CQE paths: the dispatcher waits for the
    /// queue to go idle (`mmc_blk_wait_for_idle`), then issues it synchronously.
    fn block_for_sync(
        &mut self,
        rq: RqId,
        ctx: CallCtx,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        self.waiter = Some(Waiter {
            ctx: ctx.id,
            rq,
            ready_at: now.max(self.cpu_free),
            sync: true,
        });
        self.busy = true;
        self.stats.blocked += 1;
        self.maybe_run_waiting_sync(now, out);
        BlkStatus::Blocked
    }
}

impl Driver for MmcDriver {
    fn name(&self) -> &str {
        &self.name
    }

    /// The host controller's interrupt (sdhci/mmci IRQ handler → `mmc_request_done` or the
    /// hsq's `mmc_hsq_finalize_request`) runs on the platform's IRQ CPU.
    fn hw_irq(&self) -> bool {
        true
    }

    fn trail_labels(&self) -> blksim_block::driver::TrailLabels {
        blksim_block::driver::TrailLabels {
            queued: "queued to the host (hsq slot or CQE task)",
            on_bus: "command on the bus",
            device_done: "transfer and busy done in the card",
        }
    }

    fn nr_hw_queues(&self) -> u16 {
        1
    }

    /// `mmc_init_queue`: `MMC_QUEUE_DEPTH` for legacy and hsq; for a real CQE
    /// `min(card cmdq_depth, host cqe_qdepth)`.
    fn queue_depth(&self) -> u32 {
        self.ops.queue_depth(self)
    }

    fn blocking(&self) -> bool {
        true
    }

    /// `mmc_blk_alloc_req` → `set_capacity(md->disk, size)`: the card's user area.
    fn capacity_sectors(&self) -> u64 {
        self.card.capacity_bytes() >> 9
    }

    /// `mmc_blk_alloc_req`: `blk_queue_write_cache(md->queue.queue, cache_enabled, fua)` with
    /// `mmc_cache_enabled(host)` true when the card reports a cache (EXT_CSD CACHE_SIZE > 0,
    /// turned on by `mmc_init_card`). Then REQ_PREFLUSH/fsync reach the driver as
    /// REQ_OP_FLUSH → `mmc_blk_issue_flush` (CMD6 FLUSH_CACHE).
    /// With reliable writes (`MMC_BLK_REL_WR`, which needs CMD23) the driver declares FUA and a
    /// write cache even for a card without one (`mmc_blk_alloc_req`), unless the card has a
    /// cache and `MMC_QUIRK_AVOID_REL_WRITE`, when only the cache is declared.
    fn write_cache(&self) -> bool {
        (self.card.cache_bytes() > 0 && self.cfg.cache_host_flush) || self.fua()
    }

    fn fua(&self) -> bool {
        let rel_wr = self.proto == Proto::Cmd23 && self.cfg.rel_wr;
        let avoid_fua = self.card.cache_bytes() > 0 && self.cfg.avoid_rel_write;
        rel_wr && !avoid_fua
    }

    /// `mmc_setup_queue`: `max_hw_sectors = min(host->max_blk_count, host->max_req_size / 512)`,
    /// `max_segments = host->max_segs`; `max_sectors` then defaults to
    /// `min(max_hw_sectors, BLK_DEF_MAX_SECTORS)` (`blk_validate_limits`).
    fn apply_limits(&self, lim: &mut blksim_block::limits::QueueLimits) {
        let hw_sectors = self
            .cfg
            .max_blk_count
            .min(self.cfg.max_req_size / 512)
            .max(8);
        lim.max_hw_sectors_kb = hw_sectors / 2;
        lim.max_sectors_kb = lim.max_sectors_kb.min(lim.max_hw_sectors_kb);
        lim.max_segments = self.cfg.max_segs.clamp(1, u16::MAX as u32) as u16;
        lim.logical_block_size = 512;
        lim.rotational = false;
    }

    /// `mmc_mq_queue_rq`.
    fn queue_rq(
        &mut self,
        pool: &RqPool,
        rq: RqId,
        _hctx: u16,
        _last: bool,
        ctx: CallCtx,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        self.stats.queue_rq_calls += 1;
        let r = pool.get(rq);
        let ty = self.issue_type(r.op);
        let name = &self.name;
        if self.removed {
            // `mmc_card_removed`: fail at once (RQF_QUIET).
            self.stats.removed_failed += 1;
            self.recovery.failed += 1;
            return BlkStatus::IoErr;
        }
        if self.busy || self.recovery_needed {
            // Parallel dispatch into the driver is not supported (`mq->busy`); during
            // recovery the queue waits (`mq->recovery_needed`).
            self.stats.resource_busy += 1;
            self.note(out, now, || format!("{name} resource busy rq={rq}"));
            return BlkStatus::Resource;
        }
        match ty {
            IssueType::Dcmd if self.in_flight[IssueType::Dcmd as usize] > 0 => {
                self.stats.resource_dcmd += 1;
                return BlkStatus::Resource;
            }
            IssueType::Async => {
                // The host path's own limit (hsq: `mq->in_flight[issue_type] > hsq_depth`).
                if let Some(d) = self.ops.async_full(self) {
                    self.stats.resource_depth += 1;
                    self.note(out, now, || {
                        format!("{name} resource hsq_depth={d} rq={rq}")
                    });
                    return BlkStatus::Resource;
                }
            }
            _ => {}
        }
        assert!(r.tag >= 0, "queue_rq without a driver tag");
        assert!(
            (r.tag as u32) < self.queue_depth(),
            "tag {} beyond queue depth",
            r.tag
        );
        let cmd = CardCmd {
            op: match r.op {
                Op::Read => CardOp::Read,
                Op::Write => CardOp::Write,
                Op::Flush => CardOp::Flush,
                Op::Discard => CardOp::Discard,
            },
            sector: r.sector,
            nr_sectors: r.nr_sectors,
            // `mmc_blk_rw_rq_prep`: do_rel_wr = REQ_FUA on a write with MMC_BLK_REL_WR.
            reliable: r.op == Op::Write && r.flags & flags::REQ_FUA != 0 && self.fua(),
            tag: r.tag as u32,
        };
        if r.op == Op::Write && self.card.tracks_content() {
            // The data the card will hold (per-sector versions of the request's bios).
            let mut data = Vec::new();
            let mut b = r.bio_head;
            while b != blksim_block::request::NO_BIO {
                let bio = pool.bio(b);
                data.push((bio.sector, bio.sector + bio.nr_sectors as u64, bio.version));
                b = bio.next;
            }
            self.card.stage_data(r.tag as u32, data);
        }
        let tr = Track {
            ty,
            cmd,
            tag: r.tag as u32,
            segs: r.nr_segments.max(1),
            accepted: now,
            queued: now,
            started: 0,
            hw_done: 0,
            fault: Fault::None,
            outcome: None,
            irq_done: false,
            done_at: 0,
        };
        assert!(
            self.tracked.insert(rq, tr).is_none(),
            "{}: request {rq} issued while already in flight",
            self.name
        );
        self.in_flight[ty as usize] += 1;
        self.stats.accepted[ty as usize] += 1;
        let ops = self.ops;
        let st = ops.issue(self, rq, ctx, ty, now, out);
        self.hot_check();
        st
    }

    fn power_cut_planned(&self) -> bool {
        self.power_cut_at > 0 || self.power_cut_after > 0
    }

    fn init(&mut self, seed: u64, out: &mut DriverOut) {
        self.recovery.seed(seed);
        if self.power_cut_at > 0 {
            out.events
                .push((self.power_cut_at, self.ev(EV_POWER_CUT, 0)));
        }
        if self.cfg.faults.removed_at > 0 {
            out.events
                .push((self.cfg.faults.removed_at, self.ev(EV_REMOVED, 0)));
        }
    }

    fn on_event(&mut self, payload: u64, _pool: &RqPool, now: Ns, out: &mut DriverOut) {
        if payload >> GEN_SHIFT != self.generation {
            // Scheduled before a power cut ended everything it was about.
            return;
        }
        let kind = (payload >> 32) & 0xff;
        let arg = payload as u32;
        match kind {
            EV_POWER_CUT => {
                self.power_cut(now, out);
                return;
            }
            EV_REMOVED => {
                self.remove_card(now, out);
                return;
            }
            EV_RECOVERY => self.recovery_work(arg, now, out),
            EV_RECOVERY_DONE => self.recovery_done(arg, now, out),
            EV_DONE => self.done(arg, now, out),
            EV_SYNC_DONE => {
                let (rq, ctx) = self
                    .sync_running
                    .take()
                    .expect("sync done without a sync running");
                assert_eq!(rq, arg);
                self.done(rq, now, out);
                self.busy = false;
                out.unblock.push((ctx, now));
            }
            EV_LEG_IRQ | EV_LEG_WAKE | EV_LEG_HANDOFF | EV_LEG_WORK | EV_LEG_POST | EV_HSQ_ENQ
            | EV_HSQ_IRQ | EV_CQE_QUEUED | EV_CQE_KICK | EV_CQE_IRQ => {
                let ops = self.ops;
                ops.event(self, kind, arg, now, out)
            }
            _ => panic!("{}: unknown event payload {payload:#x}", self.name),
        }
        if self.waiter.map(|w| w.sync).unwrap_or(false) && self.sync_running.is_none() {
            self.maybe_run_waiting_sync(now, out);
        }
        self.hot_check();
    }

    fn stats(&self) -> DriverStats {
        let s = &self.stats;
        let mut e: Vec<(String, u64)> = [
            ("mmc_queue_rq_calls", s.queue_rq_calls),
            ("mmc_accepted_sync", s.accepted[0]),
            ("mmc_accepted_dcmd", s.accepted[1]),
            ("mmc_accepted_async", s.accepted[2]),
            ("mmc_resource_busy", s.resource_busy),
            ("mmc_resource_hsq_depth", s.resource_depth),
            ("mmc_resource_dcmd", s.resource_dcmd),
            ("mmc_blocked_dispatch", s.blocked),
            ("mmc_completed", s.completed),
            ("mmc_queue_wait_ns", s.mmc_queue_wait_ns),
            ("mmc_bus_ns", s.bus_ns),
            ("mmc_card_ns", s.card_ns),
            ("mmc_completion_ns", s.completion_ns),
            ("mmc_hsq_slot_wait_ns", s.hsq_slot_wait_ns),
            ("mmc_hsq_slot_wait_max_ns", s.hsq_slot_wait_max_ns),
            ("mmc_hsq_depth_raises", s.hsq_depth_raises),
            ("mmc_cmd13_polls", s.cmd13_polls),
            ("mmc_legacy_wakeups", s.legacy_wakeups),
            ("mmc_legacy_complete_work", s.legacy_complete_work),
            ("mmc_legacy_took_done", s.legacy_took_done),
            ("mmc_legacy_lock_waits", s.legacy_lock_waits),
            ("mmc_cqe_reordered", s.cqe_reordered),
            ("mmc_max_in_flight_async", s.max_in_flight_async as u64),
            ("mmc_power_cuts", s.power_cuts),
            ("mmc_power_cut_aborted", s.power_cut_aborted),
            ("mmc_removed_failed", s.removed_failed),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        e.extend(self.card.stats());
        let r = &self.recovery;
        let faults = vec![
            ("injected", r.injected),
            ("retried", r.retried),
            ("resets", r.resets),
            ("single_block_fallbacks", r.single_block_fallbacks),
            ("failed_ios", r.failed),
            ("recoveries", r.recoveries),
        ];
        DriverStats { entries: e, faults }
    }

    fn check_invariants(&self) {
        let a = self.in_flight_async();
        assert!(
            a <= self.async_limit(),
            "{}: {a} ASYNC in flight",
            self.name
        );
        let total: u32 = self.in_flight.iter().sum();
        assert_eq!(
            total as usize,
            self.tracked.len(),
            "in_flight out of step with tracked requests"
        );
        self.ops.check(self, total, a);
        if self.busy {
            assert!(
                self.waiter.is_some() || self.sync_running.is_some() || self.legacy.post.is_some(),
                "mq.busy without a sleeping context"
            );
        }
    }
}
