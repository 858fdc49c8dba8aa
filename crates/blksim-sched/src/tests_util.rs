//! Helpers for the unit tests: a pool, requests built from one bio each, params.

use blksim_block::elevator::ElvParams;
use blksim_block::request::{Bio, IoPrio, IoPrioClass, Op, RqId, RqPool, NO_BIO};
use blksim_core::Ns;

pub fn params(rotational: bool) -> ElvParams {
    ElvParams {
        nr_requests: 256,
        queue_depth: 128,
        rotational,
        erase_block_bytes: None,
        seed: 1,
    }
}

pub struct Rq {
    pub op: Op,
    pub sector: u64,
    pub sectors: u32,
    pub prio: IoPrioClass,
    pub task: u32,
    pub cpu: u16,
    pub flags: u32,
}

impl Rq {
    pub fn read(sector: u64) -> Self {
        Rq {
            op: Op::Read,
            sector,
            sectors: 8,
            prio: IoPrioClass::Be,
            task: 0,
            cpu: 0,
            flags: 0,
        }
    }
    pub fn write(sector: u64) -> Self {
        Rq {
            op: Op::Write,
            ..Rq::read(sector)
        }
    }
    pub fn prio(mut self, p: IoPrioClass) -> Self {
        self.prio = p;
        self
    }
    pub fn task(mut self, t: u32) -> Self {
        self.task = t;
        self
    }
    pub fn cpu(mut self, c: u16) -> Self {
        self.cpu = c;
        self
    }
    pub fn op(mut self, o: Op) -> Self {
        self.op = o;
        self
    }
}

/// Allocate a request with one bio at `now`.
pub fn mk(pool: &mut RqPool, r: Rq, now: Ns) -> RqId {
    let b = pool.alloc_bio(Bio {
        token: 0,
        op: r.op,
        flags: r.flags,
        sector: r.sector,
        nr_sectors: r.sectors,
        nr_segments: 1,
        task: r.task,
        cpu: r.cpu,
        ioprio: IoPrio::of_class(r.prio),
        version: 0,
        queue_time: now,
        next: NO_BIO,
    });
    pool.alloc_rq_from_bio(b, 0, now)
}

/// Free a request and its bios (after `finish_request`).
pub fn free(pool: &mut RqPool, rq: RqId) {
    let mut b = pool.take_bios(rq);
    while b != NO_BIO {
        b = pool.free_bio(b).next;
    }
    pool.free_rq_shell(rq);
}
