//! Generic merge rules (`block/blk-merge.c`: `blk_rq_merge_ok`, `blk_try_merge`,
//! `ll_back_merge_fn`/`ll_front_merge_fn`, `ll_merge_requests_fn`).
//!
//! **[blk-merge.c not re-read]**: these are the standard rules from the reference §4.8:
//! same op and no `REQ_NOMERGE`, flush and discard never merge here, same ioprio, adjacency,
//! and the merged request stays within `max_sectors` and `max_segments`.

use crate::elevator::{BioInfo, ElvMerge};
use crate::limits::QueueLimits;
use crate::request::{flags, rqf, Op, Request};

/// `blk_rq_merge_ok` + `blk_try_merge` + the size checks.
pub fn bio_merge_kind(rq: &Request, bio: &BioInfo, lim: &QueueLimits) -> ElvMerge {
    if !rq_mergeable(rq) || !mergeable_op(bio.op, bio.flags) {
        return ElvMerge::NoMerge;
    }
    if rq.op != bio.op
        || (rq.flags & flags::REQ_FUA) != (bio.flags & flags::REQ_FUA)
        || rq.ioprio != bio.ioprio
    {
        return ElvMerge::NoMerge;
    }
    if rq.nr_sectors as u64 + bio.nr_sectors as u64 > lim.max_sectors() as u64 {
        return ElvMerge::NoMerge;
    }
    if rq.nr_segments as u32 + bio.nr_segments as u32 > lim.max_segments as u32 {
        return ElvMerge::NoMerge;
    }
    if rq.end_sector() == bio.sector {
        ElvMerge::BackMerge
    } else if bio.sector + bio.nr_sectors as u64 == rq.sector {
        ElvMerge::FrontMerge
    } else {
        ElvMerge::NoMerge
    }
}

/// Can `next` be appended to `rq` (`ll_merge_requests_fn` / `attempt_merge`)?
pub fn requests_mergeable(rq: &Request, next: &Request, lim: &QueueLimits) -> bool {
    rq_mergeable(rq)
        && rq_mergeable(next)
        && rq.op == next.op
        && rq.ioprio == next.ioprio
        && (rq.flags & flags::REQ_FUA) == (next.flags & flags::REQ_FUA)
        && rq.end_sector() == next.sector
        && rq.nr_sectors as u64 + next.nr_sectors as u64 <= lim.max_sectors() as u64
        && rq.nr_segments as u32 + next.nr_segments as u32 <= lim.max_segments as u32
}

/// `rq_mergeable`: the op and `REQ_NOMERGE_FLAGS`, and no `RQF_NOMERGE_FLAGS` (a request the
/// flush machinery sequences, `RQF_FLUSH_SEQ`, keeps its one bio even once its REQ_FUA has
/// been stripped for a device without FUA).
pub fn rq_mergeable(rq: &Request) -> bool {
    mergeable_op(rq.op, rq.flags) && rq.rq_flags & rqf::FLUSH_SEQ == 0
}

/// `bio_mergeable` / `rq_mergeable`: reads and writes without `REQ_NOMERGE_FLAGS`
/// (`REQ_NOMERGE | REQ_PREFLUSH | REQ_FUA`, `include/linux/blk_types.h`).
fn mergeable_op(op: Op, f: u32) -> bool {
    matches!(op, Op::Read | Op::Write)
        && f & (flags::REQ_NOMERGE | flags::REQ_PREFLUSH | flags::REQ_FUA) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{IoPrio, IoPrioClass};

    /// `blk_rq_merge_ok` and `attempt_merge`: adjacent reads merge only at the same I/O
    /// priority value, level included.
    #[test]
    fn different_priorities_do_not_merge() {
        let lim = QueueLimits::default();
        let rq = Request {
            op: Op::Read,
            sector: 0,
            nr_sectors: 8,
            nr_segments: 1,
            ioprio: IoPrio::of_class(IoPrioClass::Rt),
            ..Request::default()
        };
        let bio = |ioprio| BioInfo {
            op: Op::Read,
            flags: 0,
            sector: 8,
            nr_sectors: 8,
            nr_segments: 1,
            cpu: 0,
            task: 0,
            ioprio,
        };
        let rt = IoPrio::of_class(IoPrioClass::Rt);
        assert_eq!(bio_merge_kind(&rq, &bio(rt), &lim), ElvMerge::BackMerge);
        for other in [IoPrio::default(), IoPrio(rt.0 | 3)] {
            assert_eq!(bio_merge_kind(&rq, &bio(other), &lim), ElvMerge::NoMerge);
            let next = Request {
                sector: 8,
                ioprio: other,
                ..rq.clone()
            };
            assert!(!requests_mergeable(&rq, &next, &lim));
        }
    }
}
