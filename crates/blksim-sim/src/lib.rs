//! blksim-sim: the event loop that wires the layers together.
//!
//! ```text
//!  fio jobs (blksim-job) ─► tasks + io generation (blksim-workload)
//!        │ bios
//!        ▼
//!  blk-mq (blksim-block): plug ─► merge ─► elevator (blksim-sched) ─► hctx dispatch
//!        │ queue_rq
//!        ▼
//!  driver: null_blk (blksim-nullblk) | mmc (blksim-mmc) ─► device (blksim-device)
//!        │ completions (events)
//!        ▼
//!  stats (blksim-report) ─► fio normal / json / json+ ; blktrace (blksim-trace)
//! ```
//!
//! # Determinism guarantees
//! One event queue ordered by (time, sequence), one root seed from which every random
//! stream is named and derived, no hash-map iteration, no wall clock. The event digest in
//! the JSON (`blksim.event_digest`) is identical for identical inputs and seed.

pub mod engine;
pub mod error;
pub mod params;
pub mod platform;
pub mod profile;
pub mod setup;
pub mod verify;

pub use engine::{Sim, SimOutput, TaskResult};
pub use error::RunError;
pub use profile::{Profile, BUNDLED, DEFAULT_DEVICE};
pub use setup::{build_report, RunOptions};
