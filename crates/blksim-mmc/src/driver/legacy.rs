//! The legacy host path (drivers/mmc/core/block.c `mmc_blk_mq_issue_rw_rq`): one request on
//! the bus and one prepared; the dispatching context sleeps in `queue_rq` (`mmc_blk_rw_wait`)
//! until the completion IRQ wakes it, or `mmc_blk_mq_complete_work` completes the request when
//! nobody is waiting.

use super::*;

/// The legacy path's state in `struct mmc_queue` (`mq->complete_req`, `mq->rw_wait`,
/// `mq->waiting`, `mq->complete_work`).
#[derive(Debug, Default)]
pub(super) struct MmcLegacy {
    /// The request on the bus (started, its IRQ not yet in).
    pub(super) on_bus: Option<RqId>,
    /// `mq->complete_req`: done on the bus, not yet completed by anyone.
    pub(super) complete_req: Option<RqId>,
    /// The previous request a woken dispatcher completes (`mmc_blk_mq_complete_prev_req`).
    pub(super) handoff: Option<RqId>,
    /// The request `complete_work` took (`mmc_blk_mq_complete_work`), until it ends.
    pub(super) work: Option<RqId>,
    /// The dispatcher is unmapping the previous request (`mmc_blk_mq_post_req`) after
    /// starting its own; (previous request, context) until `queue_rq` returns.
    pub(super) post: Option<(RqId, u32)>,
}

impl MmcLegacy {
    /// Everything in flight failed (power cut, removal); `post` was taken with its context.
    pub(super) fn abort(&mut self) {
        self.on_bus = None;
        self.complete_req = None;
        self.handoff = None;
        self.work = None;
    }
}

impl MmcDriver {
    pub(super) fn legacy_issue(
        &mut self,
        rq: RqId,
        ctx: CallCtx,
        ty: IssueType,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        let sync = ty == IssueType::Sync;
        let segs = self.tracked[&rq].segs;
        let ready = if sync {
            now.max(self.cpu_free)
        } else {
            self.prep(now, segs, 0)
        };
        if let Some(_on_bus) = self.legacy.on_bus {
            // `mmc_blk_rw_wait`: sleep until the request on the bus signals done.
            debug_assert!(self.legacy.complete_req.is_none());
            self.waiter = Some(Waiter {
                ctx: ctx.id,
                rq,
                ready_at: ready,
                sync,
            });
            self.busy = true;
            self.stats.blocked += 1;
            return BlkStatus::Blocked;
        }
        if let Some(prev) = self.legacy.complete_req.take() {
            // The previous request is done but `complete_work` has not run: complete it here
            // (`mmc_blk_mq_complete_prev_req`), then go on.
            let t0 = ready.max(self.complete_lock_until);
            let t = self.poll_completion(prev, t0);
            self.complete_lock_until = t;
            self.stats.legacy_took_done += 1;
            self.legacy.handoff = Some(prev);
            self.waiter = Some(Waiter {
                ctx: ctx.id,
                rq,
                ready_at: ready,
                sync,
            });
            self.busy = true;
            self.stats.blocked += 1;
            out.events.push((t, self.ev(EV_LEG_HANDOFF, rq)));
            return BlkStatus::Blocked;
        }
        if sync {
            self.busy = true;
            self.stats.blocked += 1;
            self.run_sync(rq, ctx.id, ready, out);
            return BlkStatus::Blocked;
        }
        if self.legacy.work.is_some() || self.complete_lock_until > now {
            // `complete_work` is still completing the previous request under
            // `mq->complete_lock`, and that request counts in `mq->in_flight` until its
            // `mmc_blk_mq_post_req`. This context takes the mutex in
            // `mmc_blk_mq_complete_prev_req` (`mmc_blk_rw_wait`) only after that, so it stays
            // inside queue_rq (`mq->busy`) until the lock is free, and sleeps on it if its own
            // prep ends first. (A dispatching CPU whose clock is already past the lock's
            // release still waits for that completion to be delivered.)
            if self.complete_lock_until > ready {
                self.stats.legacy_lock_waits += 1;
            }
            self.waiter = Some(Waiter {
                ctx: ctx.id,
                rq,
                ready_at: ready,
                sync,
            });
            self.busy = true;
            self.stats.blocked += 1;
            out.events.push((
                self.complete_lock_until.max(now),
                self.ev(EV_LEG_HANDOFF, rq),
            ));
            return BlkStatus::Blocked;
        }
        self.legacy_start(rq, ready, out);
        BlkStatus::Ok
    }

    fn legacy_start(&mut self, rq: RqId, t: Ns, out: &mut DriverOut) {
        let (hw_done, _) = self.start_on_bus(rq, t, out);
        self.legacy.on_bus = Some(rq);
        out.events
            .push((hw_done + self.cfg.host.irq, self.ev(EV_LEG_IRQ, rq)));
    }

    pub(super) fn legacy_event(&mut self, kind: u64, arg: u32, now: Ns, out: &mut DriverOut) {
        match kind {
            EV_LEG_IRQ => {
                // `mmc_blk_mq_req_done` (host without MMC_CAP_DONE_COMPLETE).
                assert_eq!(self.legacy.on_bus, Some(arg));
                self.legacy.on_bus = None;
                self.legacy.complete_req = Some(arg);
                let at = now + self.cfg.host.wakeup;
                if self.waiter.is_some() {
                    self.stats.legacy_wakeups += 1;
                    out.events.push((at, self.ev(EV_LEG_WAKE, arg)));
                } else {
                    self.stats.legacy_complete_work += 1;
                    out.events.push((at, self.ev(EV_LEG_WORK, arg)));
                }
            }
            EV_LEG_WAKE => {
                // The dispatcher sleeping in `mmc_blk_rw_wait` runs: poll-complete the previous
                // request, then start its own.
                let w = self.waiter.expect("legacy wake without a waiter");
                let t0 = now.max(w.ready_at).max(self.complete_lock_until);
                // `mmc_blk_mq_complete_prev_req`: a `complete_work` queued by an earlier
                // completion may have run between the IRQ and this wake-up and completed
                // `mq->complete_req` itself ("complete_work may still race with the dispatch
                // of a following request", `mmc_blk_mq_req_done`); then there is no previous
                // request, and this context only takes `complete_lock` before starting its own.
                let t = match self.legacy.complete_req.take() {
                    Some(prev) => {
                        let t = self.poll_completion(prev, t0);
                        self.complete_lock_until = t;
                        self.legacy.handoff = Some(prev);
                        t
                    }
                    None => t0,
                };
                out.events.push((t, self.ev(EV_LEG_HANDOFF, w.rq)));
            }
            EV_LEG_HANDOFF => {
                let w = self.waiter.take().expect("legacy handoff without a waiter");
                assert_eq!(w.rq, arg);
                // `prev` is None when this context only waited for `complete_lock`.
                let prev = self.legacy.handoff.take();
                let u = prev.map(|p| self.unmap_ns(p)).unwrap_or(0);
                if w.sync {
                    if let Some(p) = prev {
                        if u == 0 {
                            self.done(p, now, out);
                        } else {
                            out.events.push((now + u, self.ev(EV_DONE, p)));
                        }
                    }
                    self.run_sync(w.rq, w.ctx, now + u, out);
                } else {
                    // `mmc_start_request(new)`, then `mmc_blk_mq_post_req(prev)` unmaps and
                    // completes the previous request, then `queue_rq` returns. The request
                    // starts once its own prep is done (the lock may be free before that).
                    self.legacy_start(w.rq, now.max(w.ready_at), out);
                    match prev {
                        Some(p) if u > 0 => {
                            self.cpu_free = self.cpu_free.max(now) + u;
                            self.legacy.post = Some((p, w.ctx));
                            out.events.push((now + u, self.ev(EV_LEG_POST, p)));
                        }
                        _ => {
                            if let Some(p) = prev {
                                self.done(p, now, out);
                            }
                            self.busy = false;
                            out.unblock.push((w.ctx, now));
                        }
                    }
                }
            }
            EV_LEG_WORK => {
                // `mmc_blk_mq_complete_work`, unless a dispatcher already took the request:
                // poll completion, `mmc_blk_mq_post_req` (unmap), end it, under complete_lock.
                if let Some(prev) = self.legacy.complete_req.take() {
                    self.legacy.work = Some(prev);
                    let t0 = now.max(self.complete_lock_until);
                    let t = self.poll_completion(prev, t0) + self.unmap_ns(prev);
                    self.complete_lock_until = t;
                    out.events.push((t, self.ev(EV_DONE, prev)));
                }
            }
            EV_LEG_POST => {
                let (p, ctx) = self
                    .legacy
                    .post
                    .take()
                    .expect("legacy post without a request");
                assert_eq!(p, arg);
                self.done(p, now, out);
                self.busy = false;
                out.unblock.push((ctx, now));
            }
            _ => unreachable!(),
        }
    }
}

/// The legacy path's ops: SYNC requests wait in `queue_rq` behind the request on the bus,
/// never for an idle queue, and errors are recovered inline (`mmc_blk_mq_poll_completion`).
pub(super) struct LegacyOps;

impl MmcHostOps for LegacyOps {
    fn name(&self) -> &'static str {
        "mmc-legacy"
    }

    /// One request on the bus and one prepared.
    fn async_limit(&self, _drv: &MmcDriver) -> u32 {
        2
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
        drv.legacy_issue(rq, ctx, ty, now, out)
    }

    fn event(&self, drv: &mut MmcDriver, kind: u64, arg: u32, now: Ns, out: &mut DriverOut) {
        drv.legacy_event(kind, arg, now, out)
    }

    fn complete_runs_queues(&self) -> bool {
        false
    }

    fn check(&self, drv: &MmcDriver, total: u32, _async_limit: u32) {
        assert!(total <= 2, "legacy: {total} requests in flight");
        assert!(!(drv.legacy.on_bus.is_some() && drv.legacy.complete_req.is_some()));
    }
}
