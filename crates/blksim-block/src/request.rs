//! Bios and requests.
//!
//! A [`Request`] owns a singly linked chain of [`Bio`]s (as `rq->bio` / `bio->bi_next`). Both
//! live in slabs inside [`RqPool`]; everything else holds [`RqId`]s. Requests are recycled, so
//! memory does not grow with the number of I/Os simulated.

use blksim_core::{Ns, Slab};

pub type RqId = u32;
pub type BioId = u32;
pub const NO_BIO: BioId = u32::MAX;

/// The operation, as `enum req_op` (REQ_OP_READ, REQ_OP_WRITE, REQ_OP_FLUSH, REQ_OP_DISCARD).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Op {
    #[default]
    Read,
    Write,
    Flush,
    Discard,
}

impl Op {
    pub fn is_write(self) -> bool {
        !matches!(self, Op::Read)
    }
    /// Data direction for the elevators' per-direction lists (`DD_READ`/`DD_WRITE`):
    /// everything but reads counts as a write, as `op_is_write()` does.
    pub fn dir(self) -> usize {
        if self.is_write() {
            1
        } else {
            0
        }
    }
}

/// `REQ_*` flags that matter to the model.
pub mod flags {
    pub const REQ_SYNC: u32 = 1 << 0;
    pub const REQ_FUA: u32 = 1 << 1;
    pub const REQ_PREFLUSH: u32 = 1 << 2;
    pub const REQ_META: u32 = 1 << 3;
    pub const REQ_NOMERGE: u32 = 1 << 4;
    pub const REQ_IDLE: u32 = 1 << 5;
    /// `REQ_POLLED`: the submitter polls for the completion (`blk_mq_poll`), no interrupt.
    pub const REQ_POLLED: u32 = 1 << 6;
}

/// `RQF_*` request flags the model needs (`include/linux/blk-mq.h`).
pub mod rqf {
    /// `RQF_FLUSH_SEQ`: the request is sequenced by the flush machinery (`blk-flush.c`).
    pub const FLUSH_SEQ: u8 = 1 << 0;
    /// The flush queue's own `REQ_OP_FLUSH` request (`fq->flush_rq`, `is_flush_rq`).
    pub const FLUSH_RQ: u8 = 1 << 1;
    /// Inserted into the elevator (`RQF_USE_SCHED` requests that went through
    /// `insert_requests`); its completion hooks run for these only.
    pub const ELV: u8 = 1 << 2;
    /// The tags belong to another request (the flush request borrows the first waiting
    /// request's tag, `blk_kick_flush`) and are not freed with this one.
    pub const BORROWED_TAGS: u8 = 1 << 3;
    /// Handed to the driver at least once (`blk_mq_start_request`).
    pub const STARTED: u8 = 1 << 4;
}

/// I/O priority class, as `IOPRIO_CLASS_*`; mq-deadline maps RT/BE/IDLE to its three levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, PartialOrd, Ord)]
pub enum IoPrioClass {
    Rt = 1,
    #[default]
    Be = 2,
    Idle = 3,
}

/// An I/O priority value as the kernel carries it in `bio->bi_ioprio` and `rq->ioprio`: the
/// class in the bits from IOPRIO_CLASS_SHIFT (13) up, the level below. 0 is
/// IOPRIO_CLASS_NONE, which the elevators treat as best effort (`dd_rq_ioclass`,
/// `bfq_set_next_ioprio_data`). Requests and bios merge only at equal values
/// (`blk_rq_merge_ok`, `attempt_merge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IoPrio(pub u16);

impl IoPrio {
    pub const CLASS_SHIFT: u32 = 13;

    /// The scheduling class (`IOPRIO_PRIO_CLASS`), NONE as best effort.
    pub fn class(self) -> IoPrioClass {
        match self.0 >> Self::CLASS_SHIFT {
            1 => IoPrioClass::Rt,
            3 => IoPrioClass::Idle,
            _ => IoPrioClass::Be,
        }
    }

    /// The value of `class` at level 0.
    pub fn of_class(class: IoPrioClass) -> Self {
        IoPrio((class as u16) << Self::CLASS_SHIFT)
    }
}

/// A bio: one contiguous piece of a submitter's I/O.
#[derive(Clone, Debug)]
pub struct Bio {
    /// Opaque token of the submitter (the workload's io_u id); returned at completion.
    pub token: u64,
    pub op: Op,
    pub flags: u32,
    pub sector: u64,
    pub nr_sectors: u32,
    /// Physical segments this bio adds (pages for direct I/O of user buffers).
    pub nr_segments: u16,
    /// Submitting task (fio job clone index) and the CPU it ran on.
    pub task: u32,
    pub cpu: u16,
    pub ioprio: IoPrio,
    /// Data version written (per-sector integrity oracle); 0 for reads.
    pub version: u64,
    /// Time the bio entered the block layer (blktrace `Q`).
    pub queue_time: Ns,
    pub next: BioId,
}

/// `RQF_*`-like state of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RqState {
    #[default]
    Idle,
    /// In a plug list.
    Plugged,
    /// Inside the elevator.
    Queued,
    /// On `hctx->dispatch` (leftovers or bypass inserts).
    OnDispatchList,
    /// Handed to the driver (`blk_mq_start_request` done).
    InFlight,
}

#[derive(Clone, Debug, Default)]
pub struct Request {
    pub op: Op,
    pub flags: u32,
    pub ioprio: IoPrio,
    /// First sector (`blk_rq_pos`) and length (`blk_rq_sectors`).
    pub sector: u64,
    pub nr_sectors: u32,
    pub nr_segments: u16,
    pub hctx: u16,
    /// Software queue (CPU) the request was allocated on.
    pub cpu: u16,
    /// Submitting task of the first bio.
    pub task: u32,
    /// Scheduler tag (`rq->internal_tag`), -1 without an elevator.
    pub sched_tag: i32,
    /// Driver tag (`rq->tag`), -1 until one is assigned.
    pub tag: i32,
    pub state: RqState,
    /// Allocation time, insert time (`rq->fifo_time` base), and issue time (`io_start_time_ns`).
    pub alloc_time: Ns,
    pub insert_time: Ns,
    pub issue_time: Ns,
    /// When the request last changed where a dispatch finds it: its insertion, or a bio or
    /// request merged into it. A context whose clock ran ahead of its event (CPU model) may
    /// have made the change at a time later than the next dispatch's; that dispatch cannot
    /// take the request earlier (`RequestQueue::queue_rq`).
    pub ready_time: Ns,
    /// Since when the request is in the block layer this time: made, or given back by the
    /// driver (`blk_mq_requeue_request`). Where the report's stage depths start it.
    pub stage_from: Ns,
    /// The driver's part of the path, when `--explain` asked for it.
    pub drv_trail: Option<crate::driver::DriverTrail>,
    /// Elevator-private words (`rq->elv.priv[]`): deadline, per-prio index, bfq queue id...
    pub elv_priv: [u64; 2],
    /// Merge counters for statistics.
    pub nr_merged_bios: u32,
    pub bio_head: BioId,
    pub bio_tail: BioId,
    /// Times queue_rq returned a resource error for this request (requeues).
    pub requeues: u32,
    /// [`rqf`] flags.
    pub rq_flags: u8,
    /// `rq->flush.seq`: the `REQ_FSEQ_*` steps of its flush sequence already done.
    pub flush_seq: u8,
    /// A flush request: the integrity oracle's acknowledgement sequence when it was issued
    /// (what it makes durable).
    pub flush_ack_seq: u64,
}

impl Request {
    pub fn end_sector(&self) -> u64 {
        self.sector + self.nr_sectors as u64
    }
    pub fn bytes(&self) -> u64 {
        (self.nr_sectors as u64) << 9
    }
}

/// What is left of a freed request: where its tags go back.
#[derive(Clone, Copy, Debug)]
pub struct FreedRq {
    pub op: Op,
    pub hctx: u16,
    pub cpu: u16,
    pub tag: i32,
    pub sched_tag: i32,
    pub rq_flags: u8,
}

/// What is left of a freed bio: whom to tell, and the rest of its chain.
#[derive(Clone, Copy, Debug)]
pub struct FreedBio {
    pub token: u64,
    pub next: BioId,
}

/// The slab of requests and bios owned by the request queue.
#[derive(Default)]
pub struct RqPool {
    rqs: Slab<Request>,
    bios: Slab<Bio>,
}

impl RqPool {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn alloc_bio(&mut self, bio: Bio) -> BioId {
        self.bios.insert(bio)
    }

    pub fn bio(&self, id: BioId) -> &Bio {
        self.bios.get(id)
    }

    /// Free a bio; returns its submitter's token and the next bio of its chain.
    pub fn free_bio(&mut self, id: BioId) -> FreedBio {
        let b = self.bios.get(id);
        let freed = FreedBio {
            token: b.token,
            next: b.next,
        };
        self.bios.discard(id);
        freed
    }

    /// Make a request from a single bio (`blk_mq_bio_to_request`).
    pub fn alloc_rq_from_bio(&mut self, bio_id: BioId, hctx: u16, now: Ns) -> RqId {
        let b = self.bios.get(bio_id);
        let rq = Request {
            op: b.op,
            flags: b.flags,
            ioprio: b.ioprio,
            sector: b.sector,
            nr_sectors: b.nr_sectors,
            nr_segments: b.nr_segments,
            hctx,
            cpu: b.cpu,
            task: b.task,
            sched_tag: -1,
            tag: -1,
            state: RqState::Idle,
            alloc_time: now,
            insert_time: now,
            issue_time: 0,
            ready_time: now,
            stage_from: now,
            drv_trail: None,
            elv_priv: [0; 2],
            nr_merged_bios: 0,
            bio_head: bio_id,
            bio_tail: bio_id,
            requeues: 0,
            rq_flags: 0,
            flush_seq: 0,
            flush_ack_seq: 0,
        };
        self.rqs.insert(rq)
    }

    /// A request with no bio (flush issued by the block layer itself).
    pub fn alloc_rq(&mut self, rq: Request) -> RqId {
        self.rqs.insert(rq)
    }

    #[inline]
    pub fn get(&self, id: RqId) -> &Request {
        self.rqs.get(id)
    }

    #[inline]
    pub fn get_mut(&mut self, id: RqId) -> &mut Request {
        self.rqs.get_mut(id)
    }

    pub fn contains(&self, id: RqId) -> bool {
        self.rqs.contains(id)
    }

    /// Append `bio` at the back of `rq` (back merge, `bio_attempt_back_merge`).
    pub fn back_merge_bio(&mut self, rq: RqId, bio_id: BioId) {
        let (bs, bseg) = {
            let b = self.bios.get(bio_id);
            (b.nr_sectors, b.nr_segments)
        };
        let tail = self.rqs.get(rq).bio_tail;
        self.bios.get_mut(tail).next = bio_id;
        let r = self.rqs.get_mut(rq);
        r.bio_tail = bio_id;
        r.nr_sectors += bs;
        r.nr_segments += bseg;
        r.nr_merged_bios += 1;
    }

    /// Prepend `bio` at the front of `rq` (front merge, `bio_attempt_front_merge`).
    pub fn front_merge_bio(&mut self, rq: RqId, bio_id: BioId) {
        let (bsec, bs, bseg) = {
            let b = self.bios.get(bio_id);
            (b.sector, b.nr_sectors, b.nr_segments)
        };
        let head = self.rqs.get(rq).bio_head;
        self.bios.get_mut(bio_id).next = head;
        let r = self.rqs.get_mut(rq);
        r.bio_head = bio_id;
        r.sector = bsec;
        r.nr_sectors += bs;
        r.nr_segments += bseg;
        r.nr_merged_bios += 1;
    }

    /// Move all bios of `next` to the back of `rq` (request–request merge, `attempt_merge`).
    /// `rq` is ready no earlier than `next` was. The caller frees `next` afterwards with
    /// [`RqPool::free_rq_shell`].
    pub fn merge_requests(&mut self, rq: RqId, next: RqId) {
        let (nh, nt, ns, nseg, nm, ready) = {
            let n = self.rqs.get(next);
            (
                n.bio_head,
                n.bio_tail,
                n.nr_sectors,
                n.nr_segments,
                n.nr_merged_bios,
                n.ready_time,
            )
        };
        let tail = self.rqs.get(rq).bio_tail;
        self.bios.get_mut(tail).next = nh;
        let r = self.rqs.get_mut(rq);
        r.bio_tail = nt;
        r.nr_sectors += ns;
        r.nr_segments += nseg;
        r.nr_merged_bios += nm + 1;
        r.ready_time = r.ready_time.max(ready);
        let n = self.rqs.get_mut(next);
        n.bio_head = NO_BIO;
        n.bio_tail = NO_BIO;
    }

    /// Free a request whose bios were moved away or already completed; returns what the
    /// caller still needs (its tags, to put back).
    pub fn free_rq_shell(&mut self, id: RqId) -> FreedRq {
        let r = self.rqs.get(id);
        let freed = FreedRq {
            op: r.op,
            hctx: r.hctx,
            cpu: r.cpu,
            tag: r.tag,
            sched_tag: r.sched_tag,
            rq_flags: r.rq_flags,
        };
        self.rqs.discard(id);
        freed
    }

    /// Number of live requests and bios (leak checks).
    pub fn live(&self) -> (usize, usize) {
        (self.rqs.len(), self.bios.len())
    }

    /// Peak slots allocated (memory high-water mark).
    pub fn capacity_used(&self) -> (usize, usize) {
        (self.rqs.capacity_used(), self.bios.capacity_used())
    }

    /// Detach and return the bio chain of `rq` (head), for completion.
    pub fn take_bios(&mut self, rq: RqId) -> BioId {
        let r = self.rqs.get_mut(rq);
        let h = r.bio_head;
        r.bio_head = NO_BIO;
        r.bio_tail = NO_BIO;
        h
    }
}
