//! Per-task plugging (`struct blk_plug`, `blk_add_rq_to_plug`, `blk_mq_flush_plug_list`).

use crate::request::RqId;

/// `BLK_MAX_REQUEST_COUNT` (32 since ~5.16; 16 before).
pub const BLK_MAX_REQUEST_COUNT: usize = 32;
/// `BLK_PLUG_FLUSH_SIZE` = 128 KiB.
pub const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;

#[derive(Default, Debug, Clone)]
pub struct Plug {
    /// Whether the task is inside `blk_start_plug` ... `blk_finish_plug`.
    pub active: bool,
    /// Plugged requests, in submission order.
    pub list: Vec<RqId>,
    /// `plug->multiple_queues`: one queue only in this model.
    pub multiple_queues: bool,
}

impl Plug {
    pub fn rq_count(&self) -> usize {
        self.list.len()
    }

    pub fn last(&self) -> Option<RqId> {
        self.list.last().copied()
    }

    /// `blk_add_rq_to_plug` flush rule: before adding, flush if the plug already holds
    /// `max_count` requests, or (merges allowed) the last plugged request is at least
    /// `BLK_PLUG_FLUSH_SIZE` bytes.
    pub fn must_flush_before_add(&self, last_rq_bytes: u64, nomerges: bool) -> bool {
        let max_count = if self.multiple_queues {
            2 * BLK_MAX_REQUEST_COUNT
        } else {
            BLK_MAX_REQUEST_COUNT
        };
        !self.list.is_empty()
            && (self.list.len() >= max_count || (!nomerges && last_rq_bytes >= BLK_PLUG_FLUSH_SIZE))
    }
}
