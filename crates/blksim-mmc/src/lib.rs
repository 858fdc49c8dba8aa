//! blksim-mmc
