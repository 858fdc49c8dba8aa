//! CQE (drivers/mmc/host/cqhci-core.c, block.c `mmc_blk_cqe_issue_rw_rq`): the card holds up
//! to 31 data tasks + 1 DCMD and picks which one to execute (`card.cq_policy`).

use super::*;

/// A CQE task held by the card.
#[derive(Clone, Copy, Debug)]
pub(super) struct Task {
    pub(super) rq: RqId,
    pub(super) seq: u64,
    pub(super) acc: Access,
    pub(super) bypassed: u32,
    pub(super) dcmd: bool,
}

/// `struct cqhci_host`: the tasks the card holds and the engine's DAT-line state.
#[derive(Debug, Default)]
pub(super) struct Cqhci {
    pub(super) tasks: Vec<Task>,
    /// Queueing order (FIFO reference for `card.cq_policy` and `card.cq_max_bypass`).
    pub(super) seq: u64,
    /// Tasks queued and not yet completed (`cq_host->qcnt`).
    pub(super) outstanding: u32,
    /// The DAT line is busy with a transfer or R1b busy until.
    pub(super) bus_until: Ns,
    /// The next scheduled `EV_CQE_KICK`.
    pub(super) kick_at: Option<Ns>,
}

impl Cqhci {
    /// Everything in flight failed (power cut, removal).
    pub(super) fn abort(&mut self, now: Ns) {
        self.tasks.clear();
        self.outstanding = 0;
        self.bus_until = now;
        self.kick_at = None;
    }
}

impl MmcDriver {
    pub(super) fn cqe_issue(
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
        let segs = if ty == IssueType::Dcmd {
            0
        } else {
            self.tracked[&rq].segs
        };
        let t = self.prep(now, segs, self.cfg.host.cqe_task);
        // CMD44 + CMD45 queue the task on the CMD line (DCMD: sent when executed).
        let q = if ty == IssueType::Dcmd {
            t
        } else {
            let q = t.max(self.cmd_free) + 2 * self.card.bus().cmd_ns(R1_BITS);
            self.cmd_free = q;
            q
        };
        self.cqe.outstanding += 1;
        out.events.push((q, self.ev(EV_CQE_QUEUED, rq)));
        BlkStatus::Ok
    }

    fn cqe_schedule_kick(&mut self, at: Ns, out: &mut DriverOut) {
        if self.cqe.kick_at.map(|k| k <= at).unwrap_or(false) {
            return;
        }
        self.cqe.kick_at = Some(at);
        out.events.push((at, self.ev(EV_CQE_KICK, 0)));
    }

    /// Pick the next task per `card.cq_policy`; None = wait until `Err(t)`.
    fn cqe_pick(&self, now: Ns) -> Result<usize, Ns> {
        if let Some(i) = self.cqe.tasks.iter().position(|t| t.dcmd) {
            return Ok(i);
        }
        let oldest = (0..self.cqe.tasks.len())
            .min_by_key(|&i| self.cqe.tasks[i].seq)
            .unwrap();
        let forced = self.cfg.cq_policy == CqPolicy::Fifo
            || self.cqe.tasks[oldest].bypassed >= self.cfg.cq_max_bypass;
        if forced {
            let r = self.cqe.tasks[oldest].acc.ready;
            return if r <= now { Ok(oldest) } else { Err(r) };
        }
        let best = (0..self.cqe.tasks.len())
            .min_by_key(|&i| (self.cqe.tasks[i].acc.ready.max(now), self.cqe.tasks[i].seq))
            .unwrap();
        let r = self.cqe.tasks[best].acc.ready;
        if r <= now {
            Ok(best)
        } else {
            Err(r)
        }
    }

    pub(super) fn cqe_kick(&mut self, now: Ns, out: &mut DriverOut) {
        // `cqhci` is halted during recovery.
        if self.cqe.tasks.is_empty() || self.recovery_needed {
            return;
        }
        if self.cqe.bus_until > now {
            self.cqe_schedule_kick(self.cqe.bus_until, out);
            return;
        }
        let i = match self.cqe_pick(now) {
            Ok(i) => i,
            Err(t) => {
                self.cqe_schedule_kick(t, out);
                return;
            }
        };
        let task = self.cqe.tasks.remove(i);
        if !task.dcmd {
            let oldest_seq = self.cqe.tasks.iter().map(|t| t.seq).min();
            if let Some(o) = oldest_seq.filter(|&o| o < task.seq) {
                self.stats.cqe_reordered += 1;
                for t in self.cqe.tasks.iter_mut().filter(|t| t.seq == o) {
                    t.bypassed += 1;
                }
            }
        }
        let r1 = self.card.bus().cmd_ns(R1_BITS);
        let mut tr = self.tracked[&task.rq];
        let busy_end = if task.dcmd {
            let t = now.max(self.cmd_free) + r1;
            self.cmd_free = t;
            let be = self.card.busy_command(t, &tr.cmd);
            self.stats.card_ns += be - t;
            be
        } else {
            // CMD13 queue status + CMD46/CMD47 execute, then the data phase.
            let t = now.max(self.cmd_free) + 2 * r1;
            self.cmd_free = t;
            let ds = t.max(task.acc.ready);
            assert!(ds >= self.dat_free, "cqe: two data transfers on the bus");
            tr.fault = self.recovery.draw();
            let (de, be) = match tr.fault {
                Fault::Cmd => {
                    self.card.unstage_data(tr.tag);
                    (ds, ds)
                }
                Fault::DataTimeout => {
                    let (_, be) = self.card.transfer(ds, &tr.cmd, &task.acc);
                    let end = be.max(ds + self.cfg.host.data_timeout);
                    (end, end)
                }
                _ => self.card.transfer(ds, &tr.cmd, &task.acc),
            };
            self.dat_free = de;
            self.stats.bus_ns += (de - ds) + 2 * r1;
            self.stats.card_ns += (ds - tr.queued.min(ds)) + (be - de);
            be
        };
        tr.started = now;
        tr.hw_done = busy_end;
        self.stats.mmc_queue_wait_ns += now - tr.accepted;
        self.tracked.insert(task.rq, tr);
        let name = &self.name;
        self.note(out, now, || {
            format!(
                "{name} cqe exec rq={} tag={} {:?} busy_end={busy_end}",
                task.rq, tr.tag, tr.cmd.op
            )
        });
        // One transfer (or R1b busy) on DAT at a time.
        self.cqe.bus_until = busy_end;
        out.events
            .push((busy_end + self.cfg.host.irq, self.ev(EV_CQE_IRQ, task.rq)));
        self.cqe_schedule_kick(busy_end, out);
    }

    pub(super) fn cqe_event(&mut self, kind: u64, rq: RqId, now: Ns, out: &mut DriverOut) {
        match kind {
            EV_CQE_QUEUED => {
                let mut tr = self.tracked[&rq];
                tr.queued = now;
                self.tracked.insert(rq, tr);
                let dcmd = tr.ty == IssueType::Dcmd;
                let acc = if dcmd {
                    Access {
                        ready: now,
                        nand_end: now,
                        tail_blocks: 0,
                        busy_extra: 0,
                    }
                } else {
                    // The card starts preparing the task as soon as it is queued.
                    self.card.access(now, &tr.cmd)
                };
                self.cqe.seq += 1;
                self.cqe.tasks.push(Task {
                    rq,
                    seq: self.cqe.seq,
                    acc,
                    bypassed: 0,
                    dcmd,
                });
                assert!(
                    self.cqe.tasks.iter().filter(|t| !t.dcmd).count() as u32 <= self.cqe_qdepth()
                );
                self.cqe_kick(now, out);
            }
            EV_CQE_KICK => {
                if self.cqe.kick_at == Some(now) {
                    self.cqe.kick_at = None;
                }
                self.cqe_kick(now, out);
            }
            EV_CQE_IRQ => {
                // `cqhci_irq` → `cqhci_finish_mrq` → `mmc_blk_cqe_req_done` →
                // `blk_mq_complete_request`.
                let mut tr = self.tracked[&rq];
                if tr.fault != Fault::None {
                    // An error interrupt: `mmc_blk_cqe_req_done` sets recovery_needed, halts
                    // the engine (`cqe_recovery_start`) and schedules the recovery work, which
                    // discards every task still queued (this one included).
                    if !self.recovery_needed {
                        self.recovery_needed = true;
                        out.events
                            .push((now + self.cfg.host.wakeup, self.ev(EV_RECOVERY, rq)));
                    }
                    return;
                }
                self.cqe.outstanding -= 1;
                tr.irq_done = true;
                let u = self.unmap_ns(rq);
                tr.done_at = now + self.cfg.host.complete + u;
                self.tracked.insert(rq, tr);
                out.events.push((tr.done_at, self.ev(EV_DONE, rq)));
            }
            _ => unreachable!(),
        }
    }
}

impl MmcDriver {
    /// The recovery work from `t` after an error interrupt; returns when it ends.
    pub(super) fn cqe_recovery(&mut self, t: Ns, now: Ns, out: &mut DriverOut) -> Ns {
        // `mmc_blk_cqe_recovery` → `mmc_cqe_recovery`: CMD12, then CMD48 discarding
        // the card's whole queue; `cqhci_recovery_finish` ends every task not yet
        // completed with an error (`mmc_blk_cqe_complete_rq` requeues it while
        // retries++ < MMC_CQE_RETRIES).
        let c = self.recovery_costs();
        let end = t + 2 * c.cmd12;
        self.recovery.recoveries += 1;
        let discard: Vec<RqId> = self
            .tracked
            .iter()
            .filter(|(_, tr)| !tr.irq_done && tr.ty != IssueType::Sync)
            .map(|(r, _)| r)
            .collect();
        for r in discard {
            let outcome = self.recovery.cqe_retry(r);
            let tr = self.tracked.get_mut(&r).unwrap();
            tr.outcome = Some(outcome);
            self.card.unstage_data(tr.tag);
        }
        self.cqe.tasks.clear();
        self.cqe.outstanding = 0;
        self.cqe.kick_at = None;
        self.cqe.bus_until = end;
        self.cmd_free = end;
        self.dat_free = self.dat_free.max(end);
        // Events of the discarded tasks are dropped; the completions already under
        // way are scheduled again.
        self.bump_generation(now, out);
        let pending: Vec<(Ns, RqId)> = self
            .tracked
            .iter()
            .filter(|(_, tr)| tr.irq_done)
            .map(|(r, tr)| (tr.done_at.max(now), r))
            .collect();
        for (at, r) in pending {
            out.events.push((at, self.ev(EV_DONE, r)));
        }
        end
    }

    /// `mmc_blk_cqe_recovery` ends: every discarded task is requeued or failed
    /// (`cqhci_recovery_finish`), and the engine runs again.
    pub(super) fn cqe_recovery_finish(&mut self, now: Ns, out: &mut DriverOut) {
        let decided: Vec<RqId> = self
            .tracked
            .iter()
            .filter(|(_, tr)| tr.outcome.is_some())
            .map(|(r, _)| r)
            .collect();
        for r in decided {
            self.done(r, now, out);
        }
        self.recovery_needed = false;
        self.cqe_kick(now, out);
    }
}

/// The CQE path's ops (`cqhci_cqe_ops`: `cqe_request`, `cqe_wait_for_idle`,
/// `cqe_recovery_start`/`cqe_recovery_finish`).
pub(super) struct CqhciOps;

impl MmcHostOps for CqhciOps {
    fn name(&self) -> &'static str {
        "mmc-cqe"
    }

    fn host_queue(&self) -> bool {
        true
    }

    /// `mmc_issue_type`: a flush is a DCMD when the host has the DCMD slot.
    fn issue_type(&self, drv: &MmcDriver, op: Op) -> IssueType {
        match op {
            Op::Read | Op::Write => IssueType::Async,
            Op::Flush if drv.cfg.cqe_dcmd => IssueType::Dcmd,
            _ => IssueType::Sync,
        }
    }

    /// `mmc_init_queue`: `min(card cmdq_depth, host cqe_qdepth)`.
    fn queue_depth(&self, drv: &MmcDriver) -> u32 {
        drv.cqe_qdepth()
    }

    fn async_limit(&self, drv: &MmcDriver) -> u32 {
        drv.cqe_qdepth()
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
        drv.cqe_issue(rq, ctx, ty, now, out)
    }

    fn event(&self, drv: &mut MmcDriver, kind: u64, arg: u32, now: Ns, out: &mut DriverOut) {
        drv.cqe_event(kind, arg, now, out)
    }

    /// `cqhci_wait_for_idle`: no task outstanding.
    fn idle(&self, drv: &MmcDriver) -> Option<bool> {
        Some(drv.cqe.outstanding == 0)
    }

    fn recovery(&self, drv: &mut MmcDriver, _rq: RqId, t: Ns, now: Ns, out: &mut DriverOut) -> Ns {
        drv.cqe_recovery(t, now, out)
    }

    fn recovery_finish(&self, drv: &mut MmcDriver, _rq: RqId, now: Ns, out: &mut DriverOut) {
        drv.cqe_recovery_finish(now, out)
    }

    fn check(&self, drv: &MmcDriver, _total: u32, _async_limit: u32) {
        let data = drv.cqe.tasks.iter().filter(|t| !t.dcmd).count() as u32;
        assert!(data <= drv.cqe_qdepth(), "cqe: {data} data tasks");
        assert!(drv.in_flight[IssueType::Dcmd as usize] <= 1);
    }
}
