//! blksim-device: device models below the driver boundary.
//!
//! * [`emmc`]: an eMMC card as a pure timing model (bus modes and framing, command overheads,
//!   NAND read/program/erase, volatile cache, and two FTLs: page-mapped with garbage collection
//!   and allocation-unit (log-block) mapped), plus the parameter table (`card.*` and `host.*`
//!   keys) that profiles and `--set=` use. The MMC block driver and host paths that sit on top of
//!   it are in `blksim-mmc`.
//! * [`ssd`]: an NVMe SSD (dies on channels behind a PCIe link, a DRAM buffer, an SLC cache,
//!   the page-mapped FTL) and its `ssd.*` parameter table; the `nvme` driver is `blksim-nvme`.
//! * `null_blk` is its own crate, `blksim-nullblk`.

pub mod emmc;
pub mod ssd;
