//! blksim-sim
