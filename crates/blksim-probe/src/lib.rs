//! `blksim probe`: measure a block device or file (or a simulated device), flashbench-style,
//! save the measurements as fio JSON results, and calibrate a profile on them.

pub mod geometry;
pub mod sim;
pub mod target;
