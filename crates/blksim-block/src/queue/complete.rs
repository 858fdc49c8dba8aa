//! Completion (`blk_mq_complete_request`, `blk_mq_end_request`, `blk_mq_requeue_request` in
//! `block/blk-mq.c`): where the completion work runs (`blk_mq_complete_need_ipi`), the
//! elevator's completion hooks, and in-flight accounting for the disk stats.

use super::*;
use crate::stage::Stage;

impl RequestQueue {
    /// Process completions the driver reported (inline or from its timers).
    /// Completions the driver reported from an interrupt or timer at event time `now`.
    /// With the CPU model on, each runs as an interrupt context on the submitting CPU
    /// (`blk_mq_complete_request` steers the completion there, `blk_mq_complete_need_ipi`).
    pub fn drain_driver_completions(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        drv: &mut dyn Driver,
        now: Ns,
        out: &mut BlkOut,
    ) {
        // A driver thread (loop's worker) completes in its own context: no interrupt.
        let from = drv.completing_cpu();
        if !cpus.is_on() {
            let mut t = now;
            while let Some((rq, st)) = out.drv.completions.pop() {
                self.ctx_cpu = self.completion_cpu(rq, from);
                self.end_request(cpus, rq, st, drv, &mut t, out);
            }
            return;
        }
        while let Some((rq, st)) = out.drv.completions.pop() {
            let cpu = self.completion_cpu(rq, from);
            self.ctx_cpu = cpu;
            let start = cpus.begin(cpu, now);
            // A polled request is completed by its submitter's `blk_mq_poll`: no interrupt.
            let polled = self.pool.get(rq).flags & crate::request::flags::REQ_POLLED != 0;
            let irq = if from.is_some() || polled {
                0
            } else {
                cpus.costs().irq_ns
            };
            let mut clk = start + irq;
            self.end_request(cpus, rq, st, drv, &mut clk, out);
            cpus.end(cpu, start, clk);
        }
    }

    /// Requests the driver gave back (`blk_mq_requeue_request(rq, true)`): each leaves the
    /// driver (`__blk_mq_requeue_request`: the driver tag goes back when an elevator owns the
    /// request) and, as the MMC driver marks its requests RQF_DONTPREP, the requeue work puts
    /// it at the tail of `hctx->dispatch` (`blk_mq_request_bypass_insert`) and runs the queue.
    /// Departure: the elevator's requeue hook is not called; its completion hooks run once,
    /// when the request finally completes.
    pub fn drain_driver_requeues(&mut self, now: Ns, out: &mut BlkOut) {
        while let Some(rq) = out.drv.requeues.pop() {
            let mut t = now;
            let now = &mut t;
            let hctx = {
                let r = self.pool.get(rq);
                assert_eq!(
                    r.state,
                    RqState::InFlight,
                    "request {rq} requeued while not in flight"
                );
                r.hctx
            };
            self.trace(out, now, b'R', TraceSrc::Rq(rq), 0);
            // A failed attempt's path is not the one the request completes with.
            if out.drv.explain {
                out.drv.trails.retain(|x| x.0 != rq);
            }
            self.set_in_flight_delta(hctx, -1, now, &mut out.spans);
            self.stats.requeues += 1;
            let r = self.pool.get_mut(rq);
            // The failed attempt was the driver's time; the block layer has the request
            // again from now.
            out.spans
                .push(Stage::BlockLayer, r.stage_from, r.issue_time);
            out.spans.push(Stage::Driver, r.issue_time, *now);
            r.stage_from = *now;
            r.state = RqState::Idle;
            r.requeues += 1;
            if self.elevator.is_some() {
                self.put_driver_tag(rq, now, out);
            }
            self.bypass_insert(rq, false, *now);
            self.delay_run_hw_queue(hctx, 0, now, out);
        }
    }

    /// Where the block layer's completion work for `rq` runs (`blk_mq_complete_request` →
    /// `blk_mq_complete_need_ipi`): on the CPU that took the interrupt, unless `rq_affinity`
    /// asks for the submitting CPU (2) or (1, the default) the two CPUs do not share a cache.
    /// Restarts and the driver's queue runs issued from there become kblockd work on that CPU,
    /// and that CPU's sbitmap hint allocates the next driver tags.
    /// `from`: the CPU a driver thread calls `blk_mq_complete_request` on, instead of the
    /// interrupt's.
    pub(super) fn completion_cpu(&self, rq: RqId, from: Option<u16>) -> u16 {
        let sub = self.pool.get(rq).cpu;
        let Some(irq) = from.or(self.irq_cpu) else {
            return sub;
        };
        let share = self.llc_cpus == 0 || irq / self.llc_cpus == sub / self.llc_cpus;
        match self.lim.rq_affinity {
            0 => irq,
            2 => sub,
            _ if share => irq,
            _ => sub,
        }
    }

    /// The platform's interrupt topology (see `completion_cpu`).
    pub fn set_completion_topology(&mut self, irq_cpu: Option<u16>, llc_cpus: u16) {
        self.irq_cpu = irq_cpu;
        self.llc_cpus = llc_cpus;
    }

    /// Completions reported inline (inside `queue_rq`, null_blk `irqmode=0`): they run in
    /// the calling context.
    pub(super) fn drain_driver_completions_at(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        while let Some((rq, st)) = out.drv.completions.pop() {
            self.end_request(cpus, rq, st, drv, now, out);
        }
    }

    pub(super) fn set_in_flight_delta(
        &mut self,
        hctx: u16,
        delta: i32,
        now: &mut Ns,
        spans: &mut crate::stage::Spans,
    ) {
        // Accounting for util (`io_ticks`: time with a request started at the driver).
        // Contexts on different CPUs may run at slightly different local times: never
        // account backwards.
        let t = (*now).max(self.last_busy_change);
        let span = t - self.last_busy_change;
        if self.total_in_flight > 0 {
            self.stats.busy_ns += span;
        }
        self.last_busy_change = t;
        let h = &mut self.hctxs[hctx as usize];
        if delta > 0 {
            h.in_flight += 1;
            if self.total_in_flight == 0 {
                self.busy_since = t;
            }
            self.total_in_flight += 1;
            self.stats.max_in_flight = self.stats.max_in_flight.max(self.total_in_flight);
        } else {
            h.in_flight -= 1;
            self.total_in_flight -= 1;
            if self.total_in_flight == 0 {
                spans.push_busy(self.busy_since, t);
            }
        }
    }

    /// Close the util accounting at the end of a run.
    pub fn account_until(&mut self, now: Ns, spans: &mut crate::stage::Spans) {
        let span = now.saturating_sub(self.last_busy_change);
        if self.total_in_flight > 0 {
            self.stats.busy_ns += span;
            spans.push_busy(self.busy_since, now);
            self.busy_since = now;
        }
        self.last_busy_change = now.max(self.last_busy_change);
    }

    /// The driver completed `rq` (`blk_mq_end_request`): the device side of `__blk_mq_end_request`
    /// (in-flight accounting, the data at the device boundary, the elevator's completion
    /// hooks), then the flush machinery's end_io for sequenced requests, or the rest of the
    /// completion (`complete_request`).
    pub fn end_request(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        st: BlkStatus,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let (hctx, rq_flags) = {
            let r = self.pool.get(rq);
            assert_eq!(
                r.state,
                RqState::InFlight,
                "request {rq} completed while not in flight"
            );
            (r.hctx, r.rq_flags)
        };
        self.trace(out, now, b'C', TraceSrc::Rq(rq), st.errno());
        self.set_in_flight_delta(hctx, -1, now, &mut out.spans);
        self.pool.get_mut(rq).state = RqState::Idle;
        if out.drv.explain {
            let t = &mut out.drv.trails;
            let d = t.iter().position(|x| x.0 == rq).map(|i| t.swap_remove(i).1);
            self.pool.get_mut(rq).drv_trail = d;
        }
        if rq_flags & crate::request::rqf::FLUSH_RQ != 0 {
            // The flush machinery's own request ends here (`flush_end_io`), not in
            // `complete_request`: its stage time is told now.
            self.push_stage_spans(rq, true, *now, out);
            return self.flush_end_io(cpus, rq, st, drv, now, out);
        }
        // The oracle sees the data (bio versions) at the device boundary, before the bios go.
        let acked = rq_flags & crate::request::rqf::FLUSH_SEQ == 0;
        self.integrity
            .request_completed(&self.pool, rq, st == BlkStatus::Ok, acked);
        *now += cpus.costs().complete_ns;
        // `blk_mq_finish_request`: the elevator's completion hooks, for requests it saw.
        if rq_flags & crate::request::rqf::ELV != 0 {
            self.pool.get_mut(rq).rq_flags &= !crate::request::rqf::ELV;
            if cpus.is_on() {
                let c = cpus.costs().elv(cpus.costs().elv_complete_ns);
                if self.elv_locked_finish {
                    let cpu = cpus.cur_cpu();
                    let _ = cpus.elv_hold(cpu, now, c, ElvHook::Finish);
                } else {
                    *now += c;
                }
            }
            if let Some(elv) = self.elevator.as_mut() {
                elv.completed_request_data(&self.pool, rq, &self.integrity, *now);
                elv.completed_request(&self.pool, rq, *now);
                elv.finish_request(&self.pool, rq, *now);
            }
        }
        if rq_flags & crate::request::rqf::FLUSH_SEQ != 0 {
            return self.flush_data_end_io(cpus, rq, st, drv, now, out);
        }
        self.complete_request(cpus, rq, st, drv, now, out);
    }

    /// Free the shells of requests an elevator absorbed into one it built
    /// ([`Elevator::take_released`]), with their scheduler tags.
    pub(super) fn reap_elv_released(&mut self, now: &mut Ns, out: &mut BlkOut) {
        let mut shells = Vec::new();
        if let Some(elv) = self.elevator.as_mut() {
            elv.take_released(&mut shells);
        }
        for rq in shells {
            self.stats.rq_merges += 1;
            let freed = self.pool.free_rq_shell(rq);
            self.release_tags(&freed, now, out);
        }
    }

    /// The submitter's side of the completion: diskstats accounting (`blk_account_io_done`,
    /// by stat group: read, write, discard), the bios ended, the request and its tags freed,
    /// and `blk_mq_sched_restart`. Also where the flush machinery ends the requests it
    /// sequenced.
    /// The request's time in the block layer (made or requeued → accepted by `queue_rq`) and
    /// at the driver, for the report's stage depths; one that never reached the driver was in
    /// the block layer throughout.
    fn push_stage_spans(&self, rq: RqId, issued: bool, now: Ns, out: &mut BlkOut) {
        if !out.spans.on {
            return;
        }
        let r = self.pool.get(rq);
        if issued {
            out.spans
                .push(Stage::BlockLayer, r.stage_from, r.issue_time);
            out.spans.push(Stage::Driver, r.issue_time, now);
        } else {
            out.spans.push(Stage::BlockLayer, r.stage_from, now);
        }
    }

    pub(super) fn complete_request(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        st: BlkStatus,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let _ = drv;
        let (hctx, op, nsec, issued) = {
            let r = self.pool.get(rq);
            let started = r.rq_flags & crate::request::rqf::STARTED != 0;
            (r.hctx, r.op, r.nr_sectors, started)
        };
        if !issued {
            // Never reached the driver: a flush-sequenced request the flush machinery ended
            // (an empty flush, a failed preflush, a power cut). A request the driver refused
            // was started first and is recorded in `end_request`.
            self.trace(out, now, b'C', TraceSrc::Rq(rq), st.errno());
        }
        // `blk_account_io_done`: from `rq->start_time_ns`, set when the request was made
        // (`blk_mq_rq_ctx_init`), so time in the elevator and waiting for a driver tag
        // counts, not only the time at the driver.
        let ticks = now.saturating_sub(self.pool.get(rq).alloc_time);
        match op {
            Op::Discard => {
                self.stats.discard_ios += 1;
                self.stats.discard_sectors += nsec as u64;
                self.stats.discard_ticks_ns += ticks;
            }
            _ => {
                let dir = op.dir();
                self.stats.ios[dir] += 1;
                self.stats.sectors[dir] += nsec as u64;
                self.stats.ticks_ns[dir] += ticks;
            }
        }
        self.push_stage_spans(rq, issued, *now, out);
        let trail = out.explain.then(|| {
            let r = self.pool.get(rq);
            crate::queue::RqTrail {
                alloc: r.alloc_time,
                insert: r.insert_time,
                issue: r.issue_time,
                complete: *now,
                elv: r.sched_tag >= 0,
                started: r.rq_flags & crate::request::rqf::STARTED != 0,
                tag: r.tag,
                hctx: r.hctx,
                sector: r.sector,
                nr_sectors: r.nr_sectors,
                drv: r.drv_trail,
            }
        });
        // Complete every bio of the request (elevator-internal bios have no submitter).
        let mut b = self.pool.take_bios(rq);
        while b != NO_BIO {
            let bio = self.pool.free_bio(b);
            if bio.token & crate::integrity::INTERNAL_TOKEN == 0 {
                out.bio_done.push((bio.token, st));
                if cpus.is_on() {
                    out.bio_done_at.push(*now);
                }
                if let Some(t) = trail {
                    out.bio_trail.push(t);
                }
            }
            b = bio.next;
        }
        let freed = self.pool.free_rq_shell(rq);
        self.release_tags(&freed, now, out);
        self.sched_restart(hctx, now, out);
    }
}
