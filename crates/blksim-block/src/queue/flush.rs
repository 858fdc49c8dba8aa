//! The flush machinery (`block/blk-flush.c`): how REQ_PREFLUSH and REQ_FUA requests are
//! sequenced into PREFLUSH, DATA and POSTFLUSH steps around the device's volatile cache.
//!
//! `blk_insert_flush` decides a request's policy from the queue's features:
//! * no write cache: PREFLUSH and FUA mean nothing; an empty flush completes at once, a write
//!   goes on as a normal request;
//! * write cache and FUA support: PREFLUSH becomes a flush before the data, FUA is passed to
//!   the driver with the data;
//! * write cache without FUA: FUA becomes a flush after the data (POSTFLUSH).
//!
//! The flushes themselves are double buffered per hardware queue (`struct blk_flush_queue`):
//! requests that need a PREFLUSH or POSTFLUSH wait on `flush_queue[pending_idx]`; one
//! `REQ_OP_FLUSH` request (`fq->flush_rq`) is issued for all of them (C1: one flush in flight;
//! C2: none while a sequenced request's DATA is in flight, so one POSTFLUSH can serve several
//! writes; C3: unless the oldest has waited `FLUSH_PENDING_TIMEOUT`). When it completes,
//! `flush_end_io` moves every request it served to its next step. So concurrent flushes merge:
//! N fsyncs waiting together cost one device flush.
//!
//! The flush request bypasses the elevator (`blk_mq_insert_request` puts `REQ_OP_FLUSH` at the
//! head of `hctx->dispatch`); it borrows the first waiting request's driver tag without an
//! elevator, or its scheduler tag (and gets a driver tag at dispatch) with one. Sequenced
//! writes keep going through the elevator (`RQF_USE_SCHED` is set for every op but
//! `REQ_OP_FLUSH`, `blk_mq_limit_depth`).
//!
//! Accounting (`blk_account_io_done`, `blk_account_io_flush`): the flush request counts in the
//! disk's flush fields; a sequenced request is accounted once, when its whole sequence is done,
//! as the write it is (an empty PREFLUSH write from `blkdev_issue_flush` counts as a write with
//! no sectors, which is why fio's disk stats show writes + fsyncs on a device with a cache).
//!
//! Departure: `blk_mq_kick_requeue_list` hands the flush request and DATA steps to kblockd's
//! requeue work, which inserts them and runs the queues; here they are inserted at once and the
//! queue is run asynchronously (a kblockd run), which orders them the same way.

use super::{BlkOut, RequestQueue};
use crate::driver::{BlkStatus, Driver};
use crate::request::{flags, rqf, Op, Request, RqId, RqState, NO_BIO};
use blksim_core::{Ns, NSEC_PER_SEC};
use std::collections::VecDeque;

/// `REQ_FSEQ_*`: the steps of a flush sequence.
pub const REQ_FSEQ_PREFLUSH: u8 = 1 << 0;
pub const REQ_FSEQ_DATA: u8 = 1 << 1;
pub const REQ_FSEQ_POSTFLUSH: u8 = 1 << 2;
pub const REQ_FSEQ_DONE: u8 = 1 << 3;
pub const REQ_FSEQ_ACTIONS: u8 = REQ_FSEQ_PREFLUSH | REQ_FSEQ_DATA | REQ_FSEQ_POSTFLUSH;

/// `FLUSH_PENDING_TIMEOUT` = 5 * HZ: a flush waits for sequenced DATA at most this long.
pub const FLUSH_PENDING_TIMEOUT: Ns = 5 * NSEC_PER_SEC;

/// `struct blk_flush_queue`, one per hardware queue.
#[derive(Debug, Default)]
pub struct FlushQueue {
    /// `flush_queue[2]`: requests waiting for a flush, and those the running flush serves.
    queue: [VecDeque<RqId>; 2],
    pending_idx: usize,
    running_idx: usize,
    /// `flush_data_in_flight`: sequenced requests whose DATA step is in flight.
    data_in_flight: u32,
    /// `flush_pending_since`: when the pending list became non-empty.
    pending_since: Ns,
}

impl FlushQueue {
    pub fn idle(&self) -> bool {
        self.queue[0].is_empty() && self.queue[1].is_empty() && self.data_in_flight == 0
    }
}

/// `op_is_flush`: the request asks for a flush or FUA.
pub fn op_is_flush(fl: u32) -> bool {
    fl & (flags::REQ_PREFLUSH | flags::REQ_FUA) != 0
}

/// `blk_flush_cur_seq`: the first step not done yet.
fn cur_seq(done: u8) -> u8 {
    1 << (!done).trailing_zeros().min(3)
}

impl RequestQueue {
    /// `blk_insert_flush`: true if the flush machinery took the request (or ended it), false
    /// if it goes on down the normal path (`blk_mq_submit_bio` then plugs, inserts or issues
    /// it).
    pub(super) fn insert_flush(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> bool {
        let (wc, fua) = (self.lim.write_cache, self.lim.fua);
        let r = self.pool.get_mut(rq);
        let mut policy = 0;
        if r.nr_sectors > 0 {
            policy |= REQ_FSEQ_DATA;
        }
        if wc {
            if r.flags & flags::REQ_PREFLUSH != 0 {
                policy |= REQ_FSEQ_PREFLUSH;
            }
            if r.flags & flags::REQ_FUA != 0 && !fua {
                policy |= REQ_FSEQ_POSTFLUSH;
            }
        }
        // Adjust REQ_PREFLUSH and REQ_FUA for the driver; they imply REQ_SYNC.
        r.flags &= !flags::REQ_PREFLUSH;
        if !fua {
            r.flags &= !flags::REQ_FUA;
        }
        r.flags |= flags::REQ_SYNC;
        match policy {
            0 => {
                // An empty flush on a device without a write-back cache: nothing to do.
                self.stats.flushes_elided += 1;
                self.complete_request(cpus, rq, BlkStatus::Ok, drv, now, out);
                true
            }
            REQ_FSEQ_DATA => false,
            p if p == REQ_FSEQ_DATA | REQ_FSEQ_POSTFLUSH => {
                // The data goes down the normal path; its completion starts the POSTFLUSH.
                let r = self.pool.get_mut(rq);
                r.rq_flags |= rqf::FLUSH_SEQ;
                r.flush_seq = REQ_FSEQ_PREFLUSH;
                let h = r.hctx as usize;
                self.hctxs[h].fq.data_in_flight += 1;
                false
            }
            p => {
                self.pool.get_mut(rq).rq_flags |= rqf::FLUSH_SEQ;
                self.flush_complete_seq(
                    cpus,
                    rq,
                    REQ_FSEQ_ACTIONS & !p,
                    BlkStatus::Ok,
                    drv,
                    now,
                    out,
                );
                true
            }
        }
    }

    /// `blk_flush_complete_seq`: `rq` finished the steps `seq`; move it to its next step.
    #[allow(clippy::too_many_arguments)]
    fn flush_complete_seq(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        seq: u8,
        st: BlkStatus,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let r = self.pool.get_mut(rq);
        debug_assert_eq!(r.flush_seq & seq, 0, "flush step done twice");
        r.flush_seq |= seq;
        let h = r.hctx as usize;
        let next = if st == BlkStatus::Ok {
            cur_seq(r.flush_seq)
        } else {
            REQ_FSEQ_DONE
        };
        match next {
            REQ_FSEQ_PREFLUSH | REQ_FSEQ_POSTFLUSH => {
                let fq = &mut self.hctxs[h].fq;
                let pending = &mut fq.queue[fq.pending_idx];
                if pending.is_empty() {
                    fq.pending_since = *now;
                }
                pending.push_back(rq);
            }
            REQ_FSEQ_DATA => {
                // `blk_mq_kick_requeue_list`: the requeue work inserts the request at the head
                // (of the elevator with RQF_USE_SCHED, else of its software queue) and runs
                // the queue.
                self.hctxs[h].fq.data_in_flight += 1;
                let r = self.pool.get_mut(rq);
                r.state = RqState::Idle;
                r.ready_time = r.ready_time.max(*now);
                if let Some(elv) = self.elevator.as_mut() {
                    self.pool.get_mut(rq).rq_flags |= rqf::ELV;
                    self.pool.get_mut(rq).state = RqState::Queued;
                    elv.insert_requests(&mut self.pool, &[rq], true, *now);
                } else {
                    let cpu = self.pool.get(rq).cpu as usize % self.nr_cpus;
                    self.pool.get_mut(rq).state = RqState::Queued;
                    self.sw_queues[cpu].push_front(rq);
                }
                self.delay_run_hw_queue(h as u16, 0, now, out);
            }
            _ => {
                // REQ_FSEQ_DONE: a normal request again (`blk_flush_restore_request`); end it.
                // A write whose data went down hears of it only now.
                if self.pool.get(rq).rq_flags & rqf::STARTED != 0 {
                    self.integrity.request_acknowledged(&self.pool, rq);
                }
                let r = self.pool.get_mut(rq);
                r.rq_flags &= !rqf::FLUSH_SEQ;
                self.complete_request(cpus, rq, st, drv, now, out);
            }
        }
        self.kick_flush(h, now, out);
    }

    /// `blk_kick_flush`: issue the flush if C1-C3 allow it.
    fn kick_flush(&mut self, h: usize, now: &mut Ns, out: &mut BlkOut) {
        let fq = &mut self.hctxs[h].fq;
        let pending_idx = fq.pending_idx;
        // C1: one flush at a time.
        if fq.pending_idx != fq.running_idx || fq.queue[pending_idx].is_empty() {
            return;
        }
        // C2 and C3.
        if fq.data_in_flight > 0 && *now < fq.pending_since.saturating_add(FLUSH_PENDING_TIMEOUT) {
            return;
        }
        fq.pending_idx ^= 1;
        let first = *fq.queue[pending_idx].front().expect("pending flush list");
        let f = self.pool.get(first).clone();
        // Without an elevator the flush borrows the first request's driver tag (they can't
        // be in flight at once); with one it borrows the scheduler tag and takes a driver
        // tag at dispatch.
        let (tag, sched_tag) = if self.elevator.is_none() {
            (f.tag, -1)
        } else {
            (-1, f.sched_tag)
        };
        let flush_rq = self.pool.alloc_rq(Request {
            op: Op::Flush,
            flags: flags::REQ_PREFLUSH | flags::REQ_SYNC,
            ioprio: f.ioprio,
            hctx: f.hctx,
            cpu: f.cpu,
            task: f.task,
            sched_tag,
            tag,
            state: RqState::Idle,
            alloc_time: *now,
            insert_time: *now,
            ready_time: *now,
            stage_from: *now,
            bio_head: NO_BIO,
            bio_tail: NO_BIO,
            rq_flags: rqf::FLUSH_RQ | rqf::FLUSH_SEQ | rqf::BORROWED_TAGS,
            ..Default::default()
        });
        self.stats.flush_rqs_issued += 1;
        self.trace(out, now, b'I', super::TraceSrc::Rq(flush_rq), 0);
        self.bypass_insert(flush_rq, true, *now);
        self.delay_run_hw_queue(f.hctx, 0, now, out);
    }

    /// The device lost power: a flush it has not received yet can no longer cover data the
    /// cut took, so every request waiting for one fails (those the running flush serves fail
    /// with it, as the driver ends every command in flight).
    pub fn power_cut_flush_waiters(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        for h in 0..self.hctxs.len() {
            // The pending list: with no flush running, every waiter; with one, those that came
            // after it (the running list fails with the flush request itself).
            let fq = &mut self.hctxs[h].fq;
            let waiting = std::mem::take(&mut fq.queue[fq.pending_idx]);
            for rq in waiting {
                self.stats.flush_waiters_failed += 1;
                let r = self.pool.get_mut(rq);
                r.flush_seq |= REQ_FSEQ_ACTIONS;
                r.rq_flags &= !rqf::FLUSH_SEQ;
                if r.rq_flags & rqf::STARTED != 0 {
                    self.integrity.request_acknowledged(&self.pool, rq);
                }
                self.complete_request(cpus, rq, BlkStatus::IoErr, drv, now, out);
            }
        }
    }

    /// `flush_end_io`: the flush request completed; every request it served moves on.
    pub(super) fn flush_end_io(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        flush_rq: RqId,
        st: BlkStatus,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        // `blk_account_io_flush`.
        let (h, start, snapshot) = {
            let r = self.pool.get(flush_rq);
            (r.hctx as usize, r.alloc_time, r.flush_ack_seq)
        };
        if st == BlkStatus::Ok {
            self.integrity.flush_completed(snapshot);
        }
        self.stats.flush_ios += 1;
        self.stats.flush_ticks_ns += now.saturating_sub(start);
        // The driver tag is the flush's own with an elevator (put it back); the borrowed
        // tags stay with their owner.
        if self.elevator.is_some() {
            self.put_driver_tag(flush_rq, now, out);
        }
        let freed = self.pool.free_rq_shell(flush_rq);
        debug_assert!(freed.rq_flags & rqf::BORROWED_TAGS != 0);
        let fq = &mut self.hctxs[h].fq;
        debug_assert_ne!(fq.pending_idx, fq.running_idx, "flush ended while none ran");
        let running = fq.running_idx;
        fq.running_idx ^= 1;
        let served = std::mem::take(&mut self.hctxs[h].fq.queue[running]);
        let n = served.len() as u64;
        if n > 1 {
            self.stats.flushes_merged += n - 1;
        }
        for &rq in &served {
            let seq = cur_seq(self.pool.get(rq).flush_seq);
            debug_assert!(seq == REQ_FSEQ_PREFLUSH || seq == REQ_FSEQ_POSTFLUSH);
            self.flush_complete_seq(cpus, rq, seq, st, drv, now, out);
        }
        // Give the list's buffer back so steady state does not allocate.
        let mut served = served;
        served.clear();
        if self.hctxs[h].fq.queue[running].is_empty() {
            self.hctxs[h].fq.queue[running] = served;
        }
    }

    /// `mq_flush_data_end_io`: the DATA step of a sequenced request completed on the device.
    pub(super) fn flush_data_end_io(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        st: BlkStatus,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = self.pool.get(rq).hctx;
        if self.elevator.is_some() {
            self.put_driver_tag(rq, now, out);
        }
        self.pool.get_mut(rq).state = RqState::Idle;
        let fq = &mut self.hctxs[h as usize].fq;
        fq.data_in_flight = fq.data_in_flight.saturating_sub(1);
        self.flush_complete_seq(cpus, rq, REQ_FSEQ_DATA, st, drv, now, out);
        self.sched_restart(h, now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_order() {
        assert_eq!(cur_seq(0), REQ_FSEQ_PREFLUSH);
        assert_eq!(cur_seq(REQ_FSEQ_PREFLUSH), REQ_FSEQ_DATA);
        assert_eq!(
            cur_seq(REQ_FSEQ_PREFLUSH | REQ_FSEQ_DATA),
            REQ_FSEQ_POSTFLUSH
        );
        assert_eq!(cur_seq(REQ_FSEQ_ACTIONS), REQ_FSEQ_DONE);
        // An empty PREFLUSH write: DATA and POSTFLUSH are marked done up front.
        assert_eq!(
            cur_seq(REQ_FSEQ_ACTIONS & !REQ_FSEQ_PREFLUSH),
            REQ_FSEQ_PREFLUSH
        );
        assert!(op_is_flush(flags::REQ_FUA) && op_is_flush(flags::REQ_PREFLUSH));
        assert!(!op_is_flush(flags::REQ_SYNC));
    }
}
