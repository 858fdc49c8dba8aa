//! blksim-core: the deterministic substrate every layer stands on.
//!
//! * [`Ns`]: virtual time in integer nanoseconds (never floating point).
//! * [`EventQueue`]: a min-heap ordered by `(time, sequence)`, so two events at the same
//!   instant are handled in the order they were scheduled (FIFO tie-break, as in
//!   FoundationDB's `Sim2` and nexosim's priority queue).
//! * [`Rng`] and [`RngStreams`]: one root seed, one named stream per source of randomness.
//! * [`Slab`]: recycled storage for requests, so steady state allocates nothing per I/O.
//! * [`Digest`]: a running hash of the event sequence, printed at the end of a run so two runs
//!   can be compared for determinism.
//!
//! # Determinism guarantees
//! Nothing here reads the wall clock, the OS RNG or iterates a hash map. Given the same
//! inputs and root seed, the same events are handled in the same order at the same virtual
//! times, and the digest is identical.

pub mod digest;
pub mod event;
pub mod extent;
pub mod hash;
pub mod headvec;
pub mod idset;
pub mod mutate;
pub mod output;
pub mod param;
pub mod prefetch;
pub mod rng;
pub mod slab;
pub mod value;

pub use digest::Digest;
pub use event::EventQueue;
pub use param::ParamDef;
pub use rng::{Rng, RngStreams};
pub use slab::Slab;

/// Virtual time or a duration, in nanoseconds.
pub type Ns = u64;

/// The end of virtual time: 2^62 ns, about 146 years. A run whose next event lies beyond it
/// stops with an error instead of letting any sum of times wrap; every parameter's bound is
/// far below it, so only a run that really simulates a century reaches it.
pub const NS_HORIZON: Ns = 1 << 62;

pub const NSEC_PER_USEC: Ns = 1_000;
pub const NSEC_PER_MSEC: Ns = 1_000_000;
pub const NSEC_PER_SEC: Ns = 1_000_000_000;

/// Bytes per sector, as the kernel's `SECTOR_SHIFT` (9).
pub const SECTOR_SIZE: u64 = 512;
pub const SECTOR_SHIFT: u32 = 9;
