//! blksim-trace
