//! What differs between the three host paths, as one ops table per path (the way the core
//! calls a host through `struct mmc_host_ops` and a command queue engine through
//! `struct mmc_cqe_ops`). [`MmcDriver`] holds the table of its `host.queue` and calls it from
//! the common code (`mmc_mq_queue_rq`, the completion, the recovery work); the tables are
//! stateless and every path's state lives in its own struct ([`super::MmcLegacy`],
//! [`super::MmcHsq`], [`super::Cqhci`]).
//!
//! The host paths do their work (CPU on the dispatch timeline, bus commands, interrupts) only
//! in `issue` and `event`; the defaults below are the legacy/hsq behaviour of block.c.

use super::*;

pub(super) trait MmcHostOps: Sync {
    /// Driver name in reports and traces.
    fn name(&self) -> &'static str;

    /// Requests wait in a queue of the host's own (hsq slots, CQE tasks) between `queue_rq`
    /// and the bus; the legacy path has none (what `--explain` shows as a step).
    fn host_queue(&self) -> bool {
        false
    }

    /// `mmc_issue_type`: reads and writes are ASYNC, everything else SYNC.
    fn issue_type(&self, _drv: &MmcDriver, op: Op) -> IssueType {
        match op {
            Op::Read | Op::Write => IssueType::Async,
            _ => IssueType::Sync,
        }
    }

    /// blk-mq tags (`mmc_init_queue`): `MMC_QUEUE_DEPTH`.
    fn queue_depth(&self, _drv: &MmcDriver) -> u32 {
        MMC_QUEUE_DEPTH
    }

    /// Upper bound on ASYNC requests in flight on this path.
    fn async_limit(&self, drv: &MmcDriver) -> u32;

    /// `mmc_mq_queue_rq`'s per-path in-flight limit for an ASYNC request: `Some(depth)` when
    /// the request must wait (BLK_STS_RESOURCE).
    fn async_full(&self, _drv: &MmcDriver) -> Option<u32> {
        None
    }

    /// Start an accepted request (`mmc_blk_mq_issue_rq` for this path): CPU, bus and the
    /// events that finish it.
    fn issue(
        &self,
        drv: &mut MmcDriver,
        rq: RqId,
        ctx: CallCtx,
        ty: IssueType,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus;

    /// An event this path scheduled (interrupt, wake-up, work item).
    fn event(&self, drv: &mut MmcDriver, kind: u64, arg: u32, now: Ns, out: &mut DriverOut);

    /// Whether a waiting SYNC request may run (`mmc_blk_wait_for_idle` → `cqe_wait_for_idle`);
    /// `None` when SYNC requests never wait for idle on this path.
    fn idle(&self, _drv: &MmcDriver) -> Option<bool> {
        None
    }

    /// `mmc_blk_cqe_complete_rq` reruns the hardware queues after an ASYNC/DCMD completion
    /// (hsq and CQE); the legacy path does not.
    fn complete_runs_queues(&self) -> bool {
        true
    }

    /// The recovery work for the failed `rq`, starting at `t` (`mmc_blk_mq_recovery` →
    /// `mmc_blk_mq_rw_recovery`); returns when it ends.
    fn recovery(&self, drv: &mut MmcDriver, rq: RqId, t: Ns, _now: Ns, _out: &mut DriverOut) -> Ns {
        drv.recover(rq, t)
    }

    /// The recovery work ends: the failed request is requeued or failed, the queue resumes.
    fn recovery_finish(&self, drv: &mut MmcDriver, rq: RqId, now: Ns, out: &mut DriverOut) {
        drv.done(rq, now, out);
        drv.recovery_needed = false;
    }

    /// This path's invariants, given the requests in flight (`total`) and the ASYNC limit.
    fn check(&self, drv: &MmcDriver, total: u32, async_limit: u32);
}
