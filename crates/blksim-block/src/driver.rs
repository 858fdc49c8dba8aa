//! The driver boundary, shaped like `struct blk_mq_ops` (`include/linux/blk-mq.h`).
//!
//! The block layer calls [`Driver::queue_rq`]; the driver answers like `blk_status_t`.
//! Everything the driver wants to happen later (its own timers, completions, re-running
//! queues, waking a dispatcher it blocked) goes into [`DriverOut`], which the event loop
//! drains. The driver never touches block-layer internals: it reads request fields through
//! the [`RqPool`] and names requests by [`RqId`].

use crate::request::{RqId, RqPool};
use blksim_core::Ns;

/// `blk_status_t` values a driver returns from `queue_rq`, plus `Blocked`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkStatus {
    /// BLK_STS_OK: the request was accepted.
    Ok,
    /// BLK_STS_RESOURCE: busy; the block layer re-runs the queue on a completion (restart),
    /// or after `BLK_MQ_RESOURCE_DELAY` (3 ms) if nothing is in flight.
    Resource,
    /// BLK_STS_DEV_RESOURCE: busy, and the driver guarantees a queue re-run itself.
    DevResource,
    /// BLK_STS_IOERR.
    IoErr,
    /// Accepted, but the calling context is now blocked inside `queue_rq` (a `BLK_MQ_F_BLOCKING`
    /// driver sleeping, e.g. the MMC legacy path waiting in `mmc_blk_rw_wait` for the previous
    /// request). The dispatch loop resumes when the driver lists the context in
    /// [`DriverOut::unblock`].
    Blocked,
}

impl BlkStatus {
    /// `blk_status_to_errno`, as a positive errno: what blktrace records for a completion
    /// with this status (`blk_add_trace_rq_complete`). The busy statuses never end a request.
    pub fn errno(self) -> u32 {
        const EIO: u32 = 5;
        match self {
            BlkStatus::IoErr => EIO,
            BlkStatus::Ok | BlkStatus::Blocked | BlkStatus::Resource | BlkStatus::DevResource => 0,
        }
    }
}

/// The context that called `queue_rq`: a dispatch run, identified so a blocked one can be
/// resumed, on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallCtx {
    pub id: u32,
    pub cpu: u16,
}

/// What a driver asks the rest of the simulation to do.
#[derive(Default, Debug)]
pub struct DriverOut {
    /// Driver timers: call [`Driver::on_event_cpu`] with this payload at this time.
    pub events: Vec<(Ns, u64)>,
    /// Requests the driver completed now (`blk_mq_end_request` / `blk_mq_complete_request`).
    pub completions: Vec<(RqId, BlkStatus)>,
    /// Requests the driver gives back to be issued again (`blk_mq_requeue_request(rq, true)`,
    /// a retry after an error).
    pub requeues: Vec<RqId>,
    /// Blocked dispatch contexts to resume, at a time (after a wake-up).
    pub unblock: Vec<(u32, Ns)>,
    /// Hardware queues to run asynchronously (`blk_mq_run_hw_queues(q, true)` from the driver).
    pub run_queues: Vec<(u16, Ns)>,
    /// `blk_mq_stop_hw_queues` / `blk_mq_start_stopped_hw_queues` (null_blk's mbps throttle).
    pub stop_queues: bool,
    pub start_queues: Vec<Ns>,
    /// Free-text trace notes (written as blktrace message records) when tracing is on.
    pub notes: Vec<(Ns, String)>,
    /// Whether the caller wants `notes` (so drivers skip formatting otherwise).
    pub tracing: bool,
    /// The device lost power at this time (a modelled power cut); the sectors whose data it
    /// lost or tore, with the versions they hold now (`[start, end)`, version).
    pub power_cut: Option<(Ns, CutSectors)>,
    /// Time requests spent at the driver's own stages (host queue, device), when asked.
    pub spans: crate::stage::Spans,
    /// Record [`Self::trails`] (`blksim run --explain`).
    pub explain: bool,
    /// The driver's part of the path of requests it ends now.
    pub trails: Vec<(RqId, DriverTrail)>,
}

/// The driver's part of a request's path (`blksim run --explain`): when it was queued to the
/// host (an MMC host software queue slot or CQE task), its command reached the device (the
/// MMC bus, an NVMe or UFS device), and the device finished it (transfer and busy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverTrail {
    /// 0: the path has no such queue (legacy MMC, NVMe, UFS).
    pub queued: Ns,
    pub on_bus: Ns,
    pub device_done: Ns,
}

/// How `blksim run --explain` names the steps of a [`DriverTrail`] ([`Driver::trail_labels`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrailLabels {
    pub queued: &'static str,
    pub on_bus: &'static str,
    pub device_done: &'static str,
}

impl TrailLabels {
    /// A device that takes commands from the driver's queue (NVMe, UFS).
    pub const DEVICE: TrailLabels = TrailLabels {
        queued: "queued to the host",
        on_bus: "command at the device",
        device_done: "done in the device",
    };
}

/// The device part of each request's path, for drivers whose device takes a command at one
/// time and finishes it at a known later one (NVMe, UFS): recorded at `queue_rq` only when
/// asked (stage spans for the HTML report, trails for `--explain`), told when the request
/// ends. The wait from `queue_rq` to the device (UFS: the link's hibern8 exit) is the host
/// queue stage.
#[derive(Debug, Default)]
pub struct DeviceTrails {
    /// Per request: `queue_rq`, command at the device, device done.
    open: crate::pdu::RqMap<(Ns, Ns, Ns)>,
}

impl DeviceTrails {
    pub fn issued(&mut self, rq: RqId, queued: Ns, at: Ns, done: Ns, out: &DriverOut) {
        if out.spans.on || out.explain {
            self.open.insert(rq, (queued, at, done));
        }
    }

    /// `rq` ends now: its spans and trail.
    pub fn ended(&mut self, rq: RqId, out: &mut DriverOut) {
        let Some((queued, at, done)) = self.open.remove(&rq) else {
            return;
        };
        out.spans.push(crate::stage::Stage::HostQueue, queued, at);
        out.spans.push(crate::stage::Stage::Device, at, done);
        if out.explain {
            out.trails.push((
                rq,
                DriverTrail {
                    queued: 0,
                    on_bus: at,
                    device_done: done,
                },
            ));
        }
    }
}

/// Sector ranges a power cut changed: `[start, end)` and the version each holds now.
pub type CutSectors = Vec<(u64, u64, u64)>;

impl DriverOut {
    pub fn is_idle(&self) -> bool {
        self.events.is_empty()
            && self.completions.is_empty()
            && self.requeues.is_empty()
            && self.unblock.is_empty()
            && self.run_queues.is_empty()
            && !self.stop_queues
            && self.start_queues.is_empty()
            && self.power_cut.is_none()
    }
}

/// Per-layer time facts a driver reports (ns summed over requests).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DriverStats {
    pub entries: Vec<(String, u64)>,
    /// Injected faults and what recovery did about them (the JSON `blksim.faults`); empty
    /// for a driver without a fault model.
    pub faults: Vec<(&'static str, u64)>,
}

pub trait Driver {
    fn name(&self) -> &str;

    /// `tag_set.nr_hw_queues`.
    fn nr_hw_queues(&self) -> u16;

    /// `tag_set.queue_depth`: driver tags per hardware queue, or over all of them with
    /// [`Self::shared_tags`].
    fn queue_depth(&self) -> u32;

    /// `BLK_MQ_F_TAG_HCTX_SHARED` (a SCSI host's `host_tagset`): one tag space of
    /// `queue_depth` shared by all hardware queues, and one of `nr_requests` scheduler tags
    /// (`blk_mq_init_sched`: `q->sched_shared_tags`).
    fn shared_tags(&self) -> bool {
        false
    }

    /// `BLK_MQ_F_BLOCKING`: `queue_rq` may sleep, so dispatch never runs inline from IRQ.
    fn blocking(&self) -> bool {
        false
    }

    /// Whether completions come from a hardware interrupt (taken on the platform's IRQ CPU,
    /// e.g. the MMC host controller). False: the driver completes on the CPU that issued the
    /// request (null_blk's hrtimer and softirq modes).
    fn hw_irq(&self) -> bool {
        false
    }

    /// Device capacity in 512-byte sectors (`set_capacity`).
    fn capacity_sectors(&self) -> u64 {
        0
    }

    /// `blk_queue_write_cache(q, wc, fua)`: whether the device has a volatile write cache, so
    /// flushes (fsync) reach the driver. Without one the flush machinery completes them at
    /// once (`blk_flush_policy` returns 0).
    fn write_cache(&self) -> bool {
        false
    }

    /// The `fua` half of `blk_queue_write_cache` (`BLK_FEAT_FUA`): the device makes a FUA
    /// write durable itself; otherwise the flush machinery follows it with a flush.
    fn fua(&self) -> bool {
        false
    }

    /// Driver limits (`max_hw_sectors`, `max_segments`, logical block size) applied to the
    /// queue at setup, as the driver's `blk_mq_alloc_disk` limits would.
    fn apply_limits(&self, _lim: &mut crate::limits::QueueLimits) {}

    /// `queue_rq(hctx, bd)`. `last` is `bd->last` (no more requests follow in this batch).
    /// The arguments are the kernel's (`hctx`, `bd->rq`, `bd->last`) plus the simulator's
    /// context, kept flat as in `blk_mq_ops`.
    #[allow(clippy::too_many_arguments)]
    fn queue_rq(
        &mut self,
        pool: &RqPool,
        rq: RqId,
        hctx: u16,
        last: bool,
        ctx: CallCtx,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus;

    /// Poll queues (`HCTX_TYPE_POLL`): with none, the queue lacks `QUEUE_FLAG_POLL`, so
    /// `submit_bio_noacct` clears `REQ_POLLED` (`bio_clear_polled`) and a polled I/O completes
    /// by interrupt like any other.
    fn poll_queues(&self) -> u16 {
        0
    }

    /// `commit_rqs`: the batch ended early; kick the hardware.
    fn commit_rqs(&mut self, _hctx: u16, _now: Ns, _out: &mut DriverOut) {}

    /// Whether the device will lose power during the run (a modelled power cut): the
    /// integrity oracle then tracks what FLUSH and FUA made durable.
    fn power_cut_planned(&self) -> bool {
        false
    }

    /// The simulation starts: the driver may schedule its first timers. `seed` roots the
    /// driver's own random stream (fault injection).
    fn init(&mut self, _seed: u64, _out: &mut DriverOut) {}

    /// A timer the driver scheduled through [`DriverOut::events`] fired.
    fn on_event(&mut self, payload: u64, pool: &RqPool, now: Ns, out: &mut DriverOut);

    /// A driver timer, for drivers that run work in a kernel thread on the platform's CPUs
    /// (loop's worker): the same as [`Self::on_event`], with the CPU model as a service.
    fn on_event_cpu(
        &mut self,
        payload: u64,
        pool: &RqPool,
        now: Ns,
        _cpu: &mut dyn crate::cpu::CpuService,
        out: &mut DriverOut,
    ) {
        self.on_event(payload, pool, now, out)
    }

    /// The CPU on which the driver calls `blk_mq_complete_request` for the completions it
    /// reports now, when it completes from a thread (loop's worker) rather than from the
    /// device's interrupt; `None` (the default): from the interrupt, on `platform.irq_cpu`.
    fn completing_cpu(&self) -> Option<u16> {
        None
    }

    /// How `--explain` names this driver's steps.
    fn trail_labels(&self) -> TrailLabels {
        TrailLabels::DEVICE
    }

    /// Facts for the JSON `blksim` key (per-layer time, slot waits...).
    fn stats(&self) -> DriverStats {
        DriverStats::default()
    }

    /// Assert internal invariants (in-flight limits). Called by tests and, cheaply, by the
    /// event loop after each driver call in checked builds.
    fn check_invariants(&self) {}
}
