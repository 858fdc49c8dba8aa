//! blksim-report
