//! blksim-block
