//! blksim-workload
