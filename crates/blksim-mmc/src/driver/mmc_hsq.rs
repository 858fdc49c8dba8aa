//! The host software queue (drivers/mmc/host/mmc_hsq.c): `mmc_blk_cqe_issue_rw_rq` →
//! `mmc_hsq_request` puts the request in its tag's slot, `mmc_hsq_pump_requests` starts one on
//! the host, and the completion path (`mmc_hsq_post_request`) pumps the next one.

use super::*;

/// `struct mmc_hsq`: the slots and the current depth (`hsq_depth`, raised by
/// `mmc_hsq_modify_threshold` when `host.hsq_dynamic_depth`).
#[derive(Debug)]
pub(super) struct MmcHsq {
    pub(super) slots: HsqSlots,
    pub(super) depth: u32,
    /// Requests accepted by `queue_rq` whose prep has not reached `mmc_hsq_request` yet.
    pub(super) preparing: u32,
}

impl MmcHsq {
    pub(super) fn new(cfg: &MmcConfig) -> Self {
        MmcHsq {
            slots: HsqSlots::new(cfg.hsq_next_tag),
            depth: cfg.hsq_depth,
            preparing: 0,
        }
    }
}

impl MmcDriver {
    pub(super) fn hsq_issue(
        &mut self,
        rq: RqId,
        ctx: CallCtx,
        ty: IssueType,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        if ty == IssueType::Sync {
            return self.block_for_sync(rq, ctx, now, out);
        }
        let segs = self.tracked[&rq].segs;
        let t = self.prep(now, segs, 0);
        self.hsq.preparing += 1;
        out.events.push((t, self.ev(EV_HSQ_ENQ, rq)));
        BlkStatus::Ok
    }

    /// `mmc_hsq_pump_requests`.
    pub(super) fn hsq_pump(&mut self, now: Ns, out: &mut DriverOut) {
        // `hsq->recovery_halt`: no pump during recovery.
        if self.hsq.slots.on_host.is_some() || self.hsq.slots.qcnt == 0 || self.recovery_needed {
            return;
        }
        if self.cfg.hsq_dynamic {
            let d = self
                .hsq
                .slots
                .threshold(self.cfg.hsq_depth, self.cfg.hsq_perf_depth);
            if d > self.hsq.depth {
                self.stats.hsq_depth_raises += 1;
            }
            self.hsq.depth = d;
        }
        let (tag, s) = self.hsq.slots.pump().unwrap();
        let wait = now - self.tracked[&s.rq].queued;
        self.stats.hsq_slot_wait_ns += wait;
        self.stats.hsq_slot_wait_max_ns = self.stats.hsq_slot_wait_max_ns.max(wait);
        out.spans.push(Stage::HsqSlot, now - wait, now);
        let name = &self.name;
        self.note(out, now, || {
            format!("{name} hsq start tag={tag} slot_wait_ns={wait}")
        });
        // `request_atomic` from this (possibly IRQ) context. Hosts on hsq signal busy end, so
        // the IRQ comes after DAT0 is released either way.
        let (_, busy_end) = self.start_on_bus(s.rq, now, out);
        out.events
            .push((busy_end + self.cfg.host.irq, self.ev(EV_HSQ_IRQ, s.rq)));
    }

    pub(super) fn hsq_event(&mut self, kind: u64, rq: RqId, now: Ns, out: &mut DriverOut) {
        match kind {
            EV_HSQ_ENQ => {
                self.hsq.preparing -= 1;
                let mut tr = self.tracked[&rq];
                tr.queued = now;
                self.tracked.insert(rq, tr);
                let s = Slot {
                    rq,
                    is_4k_write: tr.cmd.op == CardOp::Write && tr.cmd.nr_sectors == 8,
                };
                self.hsq.slots.enqueue(tr.tag as usize, s);
                self.hsq_pump(now, out);
            }
            EV_HSQ_IRQ => {
                // `mmc_hsq_finalize_request` → `mmc_cqe_request_done` (→ blk_mq_complete_request,
                // ends in softirq) → `mmc_hsq_post_request` → pump the next one right here.
                let tag = self.tracked[&rq].tag as usize;
                let s = self.hsq.slots.finalize(tag);
                assert_eq!(s.rq, rq);
                if self.tracked[&rq].fault != Fault::None {
                    // `mmc_blk_hsq_req_done`: recovery_needed, the queue halted
                    // (`mmc_hsq_recovery_start`), the recovery work scheduled.
                    self.recovery_needed = true;
                    out.events
                        .push((now + self.cfg.host.wakeup, self.ev(EV_RECOVERY, rq)));
                    return;
                }
                // `mmc_blk_cqe_complete_rq` → `mmc_cqe_post_req` unmaps in the completion.
                let u = self.unmap_ns(rq);
                out.events
                    .push((now + self.cfg.host.complete + u, self.ev(EV_DONE, rq)));
                self.hsq_pump(now, out);
            }
            _ => unreachable!(),
        }
    }
}

/// The hsq path's ops (`mmc_hsq_ops`: `request`, `post_req` through the completion path,
/// `recovery_start`/`recovery_finish`).
pub(super) struct HsqOps;

impl MmcHostOps for HsqOps {
    fn name(&self) -> &'static str {
        "mmc-hsq"
    }

    fn host_queue(&self) -> bool {
        true
    }

    /// `hsq_depth + 1`: `mmc_mq_queue_rq` lets one more in than the depth (the host's own).
    fn async_limit(&self, drv: &MmcDriver) -> u32 {
        let d = if drv.cfg.hsq_dynamic {
            drv.cfg.hsq_depth.max(drv.cfg.hsq_perf_depth)
        } else {
            drv.cfg.hsq_depth
        };
        d + 1
    }

    /// `mmc_mq_queue_rq`: `host->hsq_enabled && mq->in_flight[issue_type] > host->hsq_depth`.
    fn async_full(&self, drv: &MmcDriver) -> Option<u32> {
        (drv.in_flight_async() > drv.hsq.depth).then_some(drv.hsq.depth)
    }

    fn issue(
        &self,
        drv: &mut MmcDriver,
        rq: RqId,
        ctx: CallCtx,
        ty: IssueType,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        drv.hsq_issue(rq, ctx, ty, now, out)
    }

    fn event(&self, drv: &mut MmcDriver, kind: u64, arg: u32, now: Ns, out: &mut DriverOut) {
        drv.hsq_event(kind, arg, now, out)
    }

    /// `mmc_hsq_wait_for_idle`: nothing on the host, queued, or on its way to a slot.
    fn idle(&self, drv: &MmcDriver) -> Option<bool> {
        Some(drv.hsq.slots.on_host.is_none() && drv.hsq.slots.qcnt == 0 && drv.hsq.preparing == 0)
    }

    /// `mmc_hsq_recovery_finish`: the queue resumes and is pumped.
    fn recovery_finish(&self, drv: &mut MmcDriver, rq: RqId, now: Ns, out: &mut DriverOut) {
        drv.done(rq, now, out);
        drv.recovery_needed = false;
        drv.hsq_pump(now, out);
    }

    fn check(&self, drv: &MmcDriver, _total: u32, async_limit: u32) {
        drv.hsq.slots.check();
        assert!(drv.hsq.slots.occupied() as u32 <= async_limit);
    }
}
