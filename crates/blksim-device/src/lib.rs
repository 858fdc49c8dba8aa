//! blksim-device
