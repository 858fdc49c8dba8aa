//! Queue limits and sysfs-named queue settings (`/sys/block/<dev>/queue/*`).

/// Queue settings, named as their sysfs files so `--set=queue.NAME=VALUE` reads like sysfs.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueLimits {
    /// `nr_requests`: scheduler tags per hardware queue (kernel default 2 × min(queue_depth, 128)
    /// when an elevator is attached, `blk_mq_init_sched`).
    pub nr_requests: u32,
    /// `max_sectors_kb`: largest request in KiB (`max_sectors` × 512 / 1024).
    pub max_sectors_kb: u32,
    /// `max_hw_sectors_kb` (read-only in sysfs): the driver's limit.
    pub max_hw_sectors_kb: u32,
    /// `max_segments`.
    pub max_segments: u16,
    /// `nomerges`: 0 all merges, 1 only the one-hit cache (no hash/rbtree lookups), 2 none.
    pub nomerges: u8,
    /// `logical_block_size` in bytes.
    pub logical_block_size: u32,
    /// `rotational`.
    pub rotational: bool,
    /// `scheduler`: the elevator name.
    pub scheduler: String,
    /// `rq_affinity`: 0 complete on the CPU that took the interrupt, 1 (default) redirect to
    /// the submitting CPU unless the two share a cache (`QUEUE_FLAG_SAME_COMP`), 2 always the
    /// submitting CPU (`QUEUE_FLAG_SAME_FORCE`).
    pub rq_affinity: u8,
    /// Batch dispatch under one elevator lock (Yu Kuai 2025 series, unmerged): 0 = mainline.
    pub sched_batch_dispatch: u32,
    /// `write_cache` (`BLK_FEAT_WRITE_CACHE`): the device has a volatile cache, so PREFLUSH
    /// and FUA have work to do (`blk_queue_write_cache`).
    pub write_cache: bool,
    /// `fua` (`BLK_FEAT_FUA`): the device honours FUA itself; without it the flush machinery
    /// follows a FUA write with a flush.
    pub fua: bool,
}

impl Default for QueueLimits {
    fn default() -> Self {
        QueueLimits {
            nr_requests: 128,
            max_sectors_kb: 1280,
            max_hw_sectors_kb: 1280,
            max_segments: 128,
            nomerges: 0,
            logical_block_size: 512,
            rotational: false,
            scheduler: "none".into(),
            sched_batch_dispatch: 0,
            rq_affinity: 1,
            write_cache: false,
            fua: false,
        }
    }
}

impl QueueLimits {
    #[inline]
    pub fn max_sectors(&self) -> u32 {
        self.max_sectors_kb.min(self.max_hw_sectors_kb) * 2
    }
}
