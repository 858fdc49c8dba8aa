//! blksim-sched
