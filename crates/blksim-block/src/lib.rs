//! blksim-block: the blk-mq layer.
//!
//! Bios come down from the workload, become requests (`rq`), wait in a plug, an elevator or a
//! hardware context's dispatch list, and are handed to a [`Driver`] through `queue_rq`.
//! Completions come back up through [`queue::RequestQueue::end_request`].
//!
//! Module map (kernel file each follows):
//! * [`request`]: `struct bio` / `struct request` and the slab they live in (`include/linux/blk-mq.h`).
//! * [`tags`]: scheduler and driver tags on an sbitmap with per-CPU hints (`lib/sbitmap.c`, `block/blk-mq-tag.c`).
//! * [`elevator`]: the [`Elevator`] trait, shaped like `struct elevator_mq_ops` (`block/elevator.h`), and `none`.
//! * [`merge`]: the generic merge rules (`block/blk-merge.c`).
//! * [`plug`]: per-task plugging (`blk_add_rq_to_plug`, `blk_mq_flush_plug_list`).
//! * [`queue`]: submission (`blk_mq_submit_bio`), hardware-queue runs and dispatch
//!   (`block/blk-mq-sched.c`, `blk_mq_dispatch_rq_list`), completion and restart.
//! * [`integrity`]: the data-integrity oracle (per-sector versions, checked on every read).
//! * [`driver`]: the [`Driver`] trait, shaped like `struct blk_mq_ops`.
//! * [`stage`]: the time a request spends at each stage, for queue depth over time.
//! * `testing` (feature `testing`): a fake driver, a FIFO elevator and an event loop, for
//!   tests of the block layer and the elevators on their own.

/// The CPU/lock model, its own layer (`blksim-cpu`), as the block layer sees it.
pub use blksim_cpu as cpu;
pub mod driver;
pub mod elevator;
pub mod integrity;
pub mod limits;
pub mod merge;
pub mod pdu;
pub mod plug;
pub mod queue;
pub mod request;
pub mod stage;
pub mod tags;
#[cfg(feature = "testing")]
pub mod testing;

pub use driver::{BlkStatus, Driver, DriverOut};
pub use elevator::{CpuFootprint, Elevator, ElvMerge, Tunable};
pub use limits::QueueLimits;
pub use queue::RequestQueue;
pub use request::{Bio, BioId, Op, Request, RqId, RqPool};
