//! An NVMe SSD as a timing model: a controller in front of NAND dies on channels, behind a
//! PCIe link. The NVMe driver (`blksim-nvme`) asks it when a command it submits completes.
//!
//! * **Reads** stripe by NAND page over the dies (`ssd.channels × ssd.dies_per_channel`, page
//!   `p` on die `p mod dies`, a die's channel `die mod channels`). A page is sensed on its die
//!   (`ssd.t_r_ns`, the die busy meanwhile), moved over its channel (`ssd.channel_mbps`, only
//!   the bytes asked for), then over the link (`ssd.link_mbps`), each a timeline that serves in
//!   arrival order. The command completes when its last byte crossed the link, plus
//!   `ssd.read_ctrl_ns` (fetch, FTL lookup, completion entry). So IOPS grow with the queue depth
//!   until the dies (or the channels, or the link) are all busy, then flatten.
//! * **Writes** complete once their data is in the controller's DRAM buffer
//!   (`ssd.dram_buffer_mib`): after the link and `ssd.write_ctrl_ns`, as soon as the buffer has
//!   room. The buffer drains through one program engine that stands for every die at once:
//!   into the SLC cache (`ssd.slc_cache_gib`, programmed at `ssd.t_prog_slc_ns` per page on every
//!   plane of every die) while it has room, then straight to TLC (`ssd.t_prog_ns`) through the
//!   page-mapped FTL, whose greedy garbage collection adds its copies and erases (the eMMC
//!   model's [`crate::emmc::ftl::PageFtl`], with `ssd.op_pct` over-provisioning). Idle time
//!   folds the SLC cache back into TLC at the TLC rate. A sustained write therefore runs at the
//!   SLC rate for the cache's size, then at the TLC rate.
//! * Every read and write first occupies the controller for `ssd.cmd_ns` or
//!   `ssd.cmd_write_ns` (commands one after another): the rated IOPS ceilings of a drive whose
//!   NAND could go faster.
//! * **Flush** waits for nothing the host could lose: the DRAM buffer is flushed by the drive in
//!   `ssd.flush_ns` (it is protected as consumer drives protect their mapping and buffer, or
//!   small enough to drain in that time). Trims cost `ssd.trim_ns`.
//!
//! The FTL keeps state for `ssd.ftl_model_gib` of logical space at most, offsets folded into
//! it, so a 1 TB drive costs what a 16 GiB one does (its write amplification under uniform or
//! sequential writes is the same).
//!
//! Departures, stated: reads are never held behind a program (drives suspend programs for
//! reads); folding does not go through the FTL's garbage collection; a read of a never-written
//! block costs as much as any other.

use crate::emmc::ftl::{CardState, Ftl, Nand, PageFtl};
use blksim_core::param::{lookup_enum, lookup_u64, MAX_STEP_NS};
use blksim_core::{Ns, ParamDef};
use std::collections::VecDeque;

/// What `blksim calibrate` fits on an NVMe profile unless told otherwise: the controller's
/// times around a read and a write, and the TLC program time.
pub const SSD_CALIBRATE: &[&str] = &["ssd.read_ctrl_ns", "ssd.write_ctrl_ns", "ssd.t_prog_ns"];

/// The SSD's parameters (`ssd.*` keys), the one place they are defined.
pub static SSD_PARAMS: &[ParamDef] = &[
    ParamDef::new("ssd.capacity_gib", "GiB", "931", 1, 1 << 16, "User capacity (a 1 TB drive: 10^12 B = 931 GiB).", "datasheet"),
    ParamDef::new("ssd.channels", "count", "8", 1, 64, "NAND channels.", "controller datasheet (8 channels is typical of PCIe 4.0 client controllers)"),
    ParamDef::new("ssd.dies_per_channel", "count", "2", 1, 64, "NAND dies on each channel.", "capacity / die density"),
    ParamDef::new("ssd.planes", "count", "4", 1, 16, "Planes per die (programmed together).", "NAND datasheet"),
    ParamDef::new("ssd.page_kib", "KiB", "16", 4, 64, "NAND page.", "NAND datasheet"),
    ParamDef::new("ssd.pages_per_block", "count", "384", 16, 4096, "Pages per erase block (per plane).", "NAND datasheet [typical]"),
    ParamDef::new("ssd.t_r_ns", "ns", "45000", 1, MAX_STEP_NS, "Page read (sense) time.", "NAND datasheet"),
    ParamDef::new("ssd.t_prog_ns", "ns", "500000", 1, MAX_STEP_NS, "TLC page program time (one page on every plane of a die).", "NAND datasheet"),
    ParamDef::new("ssd.t_prog_slc_ns", "ns", "100000", 1, MAX_STEP_NS, "SLC-mode page program time (the SLC cache).", "NAND datasheet [typical]"),
    ParamDef::new("ssd.t_bers_ns", "ns", "3500000", 1, MAX_STEP_NS, "Block erase time.", "NAND datasheet [typical]"),
    ParamDef::new("ssd.channel_mbps", "MB/s", "1200", 1, 100_000, "Transfer rate of one NAND channel.", "NAND interface (Toggle DDR 4.0: 1.2 Gb/s per pin, 8 bits)"),
    ParamDef::new("ssd.link_mbps", "MB/s", "7000", 1, 1_000_000, "Host link payload rate (PCIe 4.0 x4: 7.88 GB/s raw).", "PCIe 4.0 x4, less protocol overhead"),
    ParamDef::new("ssd.cmd_ns", "ns", "0", 0, MAX_STEP_NS, "Controller occupancy per read (and flush, trim) command: commands are taken one after another, so the drive tops out at 1 / cmd_ns reads a second whatever the NAND could do.", "datasheet (a rated random read IOPS ceiling, e.g. 1M IOPS: 1000 ns)"),
    ParamDef::new("ssd.cmd_write_ns", "ns", "0", 0, MAX_STEP_NS, "Controller occupancy per write command (same timeline as ssd.cmd_ns).", "datasheet (a rated random write IOPS ceiling)"),
    ParamDef::new("ssd.read_ctrl_ns", "ns", "20000", 0, MAX_STEP_NS, "Controller time of a read command: fetch, FTL lookup, completion entry.", "fitted per profile"),
    ParamDef::new("ssd.write_ctrl_ns", "ns", "10000", 0, MAX_STEP_NS, "Controller time of a write command until its completion entry.", "fitted per profile"),
    ParamDef::new("ssd.dram_buffer_mib", "MiB", "64", 1, 1 << 20, "Write buffer in the controller's DRAM: writes complete once in it.", "datasheet DRAM size [share assumed]"),
    ParamDef::new("ssd.slc_cache_gib", "GiB", "0", 0, 1 << 16, "SLC cache: writes program at the SLC rate until it is full.", "datasheet (TurboWrite, SLC cache size)"),
    ParamDef::new("ssd.op_pct", "pct", "7", 1, 100, "Over-provisioning: physical space beyond the user capacity.", "GiB/GB difference (7 %) [typical]"),
    ParamDef::new("ssd.gc_low_blocks", "count", "16", 2, 1 << 20, "Free blocks below which greedy garbage collection runs.", "model choice"),
    ParamDef::new("ssd.map_unit_kib", "KiB", "4", 4, 64, "FTL mapping unit.", "typical (4 KiB page-level map)"),
    ParamDef::new("ssd.ftl_model_gib", "GiB", "16", 1, 64, "Logical space the FTL keeps state for (at most 64 GiB: a steady state is built over all of it at setup, a quarter of a second per 32 GiB): offsets fold into it (offset mod size), so memory and setup stay bounded whatever the capacity. Write amplification under uniform random and sequential writes does not depend on the size; a workload confined to less than this keeps its locality.", "model choice (the page FTL's state is 4 bytes per mapping unit once written)"),
    ParamDef::choice("ssd.state", "enum:fresh|used|steady", "used", "Starting state, as card.state: fresh (nothing written), used (ssd.prefill_pct written in order, the SLC cache folded), steady (written in full and overwritten at random until greedy GC's write amplification is steady, built directly).", "MQSim's preconditioning (Tavakkol et al., FAST 2018)"),
    ParamDef::new("ssd.prefill_pct", "pct", "50", 0, 100, "used: share of the logical space written.", "model choice"),
    ParamDef::new("ssd.flush_ns", "ns", "20000", 0, MAX_STEP_NS, "A flush command (the drive's own buffer write-back).", "fitted per profile [assumed]"),
    ParamDef::new("ssd.trim_ns", "ns", "10000", 0, MAX_STEP_NS, "A dataset-management (deallocate) command.", "[assumed]"),
];

/// The SSD's configuration, from `ssd.*` values (missing keys take the table's defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct SsdConfig {
    pub capacity_bytes: u64,
    pub channels: u64,
    pub dies: u64,
    pub planes: u64,
    pub page_bytes: u64,
    pub pages_per_block: u64,
    pub t_r: Ns,
    pub t_prog: Ns,
    pub t_prog_slc: Ns,
    pub t_bers: Ns,
    pub channel_mbps: u64,
    pub link_mbps: u64,
    pub cmd: Ns,
    pub cmd_write: Ns,
    pub read_ctrl: Ns,
    pub write_ctrl: Ns,
    pub dram_bytes: u64,
    pub slc_bytes: u64,
    pub op_pct: u64,
    pub gc_low: u32,
    pub map_unit_bytes: u64,
    pub ftl_model_bytes: u64,
    pub state: CardState,
    pub prefill_pct: u64,
    pub flush: Ns,
    pub trim: Ns,
}

impl SsdConfig {
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<SsdConfig, String> {
        let n = |k: &str| lookup_u64(SSD_PARAMS, k, get);
        let state = CardState::parse(lookup_enum(SSD_PARAMS, "ssd.state", get)?)?;
        Ok(SsdConfig {
            capacity_bytes: n("ssd.capacity_gib")? << 30,
            channels: n("ssd.channels")?,
            dies: n("ssd.channels")? * n("ssd.dies_per_channel")?,
            planes: n("ssd.planes")?,
            page_bytes: n("ssd.page_kib")? << 10,
            pages_per_block: n("ssd.pages_per_block")?,
            t_r: n("ssd.t_r_ns")?,
            t_prog: n("ssd.t_prog_ns")?,
            t_prog_slc: n("ssd.t_prog_slc_ns")?,
            t_bers: n("ssd.t_bers_ns")?,
            channel_mbps: n("ssd.channel_mbps")?,
            link_mbps: n("ssd.link_mbps")?,
            cmd: n("ssd.cmd_ns")?,
            cmd_write: n("ssd.cmd_write_ns")?,
            read_ctrl: n("ssd.read_ctrl_ns")?,
            write_ctrl: n("ssd.write_ctrl_ns")?,
            dram_bytes: n("ssd.dram_buffer_mib")? << 20,
            slc_bytes: n("ssd.slc_cache_gib")? << 30,
            op_pct: n("ssd.op_pct")?,
            gc_low: n("ssd.gc_low_blocks")? as u32,
            map_unit_bytes: n("ssd.map_unit_kib")? << 10,
            ftl_model_bytes: n("ssd.ftl_model_gib")? << 30,
            state,
            prefill_pct: n("ssd.prefill_pct")?,
            flush: n("ssd.flush_ns")?,
            trim: n("ssd.trim_ns")?,
        })
    }
}

/// Bytes at `mbps` (MB/s = bytes per µs) in ns, rounded up.
fn xfer_ns(bytes: u64, mbps: u64) -> Ns {
    (bytes * 1000).div_ceil(mbps.max(1))
}

/// Entries kept in the DRAM buffer's drain list before neighbours merge (bounded memory).
const DRAIN_ENTRIES: usize = 4096;

/// The drive's state: resource timelines, the buffer and the FTL.
pub struct Ssd {
    cfg: SsdConfig,
    /// The whole array as the program engine and FTL see it (every plane of every die).
    nand: Nand,
    ftl: Ftl,
    die_free: Vec<Ns>,
    chan_free: Vec<Ns>,
    link_free: Ns,
    cmd_free: Ns,
    /// When the last write entered the DRAM buffer: writes enter in order.
    admit_free: Ns,
    prog_free: Ns,
    /// Data in the DRAM buffer: (programmed by, bytes), in program order.
    drain: VecDeque<(Ns, u64)>,
    buffered: u64,
    slc_used: u64,
    pub stats: SsdStats,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SsdStats {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub slc_bytes: u64,
    pub tlc_bytes: u64,
    pub buffer_stalls: u64,
    pub buffer_stall_ns: u64,
}

impl Ssd {
    pub fn new(cfg: SsdConfig) -> Result<Ssd, String> {
        let nand = Nand {
            page_bytes: cfg.page_bytes,
            parallel: cfg.dies * cfg.planes,
            pages_per_block: cfg.pages_per_block,
            t_r: cfg.t_r,
            t_prog: cfg.t_prog,
            t_bers: cfg.t_bers,
            channel_mbps: cfg.channel_mbps * cfg.channels,
        };
        let prefill = match cfg.state {
            CardState::Used => cfg.prefill_pct,
            CardState::Fresh | CardState::Steady => 0,
        };
        let space = crate::emmc::ftl::model_space(
            cfg.capacity_bytes,
            cfg.ftl_model_bytes,
            cfg.map_unit_bytes,
            nand.block_bytes(),
        );
        let mut ftl = PageFtl::new(
            &nand,
            space,
            cfg.map_unit_bytes,
            cfg.op_pct,
            cfg.gc_low,
            prefill,
        )
        .map_err(|e| e.describe("ssd.map_unit_kib", "ssd.ftl_model_gib"))?;
        if cfg.capacity_bytes > space {
            ftl.fold_larger_device(space);
        }
        if cfg.state == CardState::Steady {
            ftl.precondition_steady();
        }
        let ftl = Ftl::Page(ftl);
        Ok(Ssd {
            die_free: vec![0; cfg.dies as usize],
            chan_free: vec![0; cfg.channels as usize],
            link_free: 0,
            cmd_free: 0,
            admit_free: 0,
            prog_free: 0,
            drain: VecDeque::new(),
            buffered: 0,
            slc_used: 0,
            stats: SsdStats::default(),
            nand,
            ftl,
            cfg,
        })
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.cfg.capacity_bytes
    }

    pub fn config(&self) -> &SsdConfig {
        &self.cfg
    }

    /// The controller takes the command (`ssd.cmd_ns`, one at a time): when it is taken.
    fn take(&mut self, now: Ns, cost: Ns) -> Ns {
        let t = self.cmd_free.max(now) + cost;
        self.cmd_free = t;
        t
    }

    /// A read of `bytes` at byte `offset` submitted at `now`: when it completes.
    pub fn read(&mut self, now: Ns, offset: u64, bytes: u64) -> Ns {
        let now = self.take(now, self.cfg.cmd);
        self.stats.reads += 1;
        self.stats.bytes_read += bytes;
        let page = self.cfg.page_bytes;
        let mut done = now;
        let mut off = offset;
        let end = offset + bytes.max(1);
        while off < end {
            let p = off / page;
            let chunk = ((p + 1) * page).min(end) - off;
            let die = (p % self.cfg.dies) as usize;
            let ch = die % self.cfg.channels as usize;
            let sensed = self.die_free[die].max(now) + self.cfg.t_r;
            self.die_free[die] = sensed;
            let moved = self.chan_free[ch].max(sensed) + xfer_ns(chunk, self.cfg.channel_mbps);
            self.chan_free[ch] = moved;
            let sent = self.link_free.max(moved) + xfer_ns(chunk, self.cfg.link_mbps);
            self.link_free = sent;
            done = done.max(sent);
            off += chunk;
        }
        done + self.cfg.read_ctrl
    }

    /// A write of `bytes` at byte `offset` submitted at `now`: when it completes (its data in
    /// the DRAM buffer); its programming is scheduled behind the buffered data.
    pub fn write(&mut self, now: Ns, offset: u64, bytes: u64) -> Ns {
        let now = self.take(now, self.cfg.cmd_write);
        self.stats.writes += 1;
        self.stats.bytes_written += bytes;
        let arrived = self.link_free.max(now) + xfer_ns(bytes, self.cfg.link_mbps);
        self.link_free = arrived;
        let t_in = arrived + self.cfg.write_ctrl;
        // Room in the buffer: data leaves it as it is programmed, and writes enter it in
        // order (none overtakes one still waiting for room).
        let mut t = t_in.max(self.admit_free);
        while self.buffered + bytes > self.cfg.dram_bytes {
            match self.drain.front() {
                Some(&(end, b)) => {
                    if end > t {
                        t = end;
                    }
                    self.buffered -= b;
                    self.drain.pop_front();
                }
                None => break,
            }
        }
        while let Some(&(end, b)) = self.drain.front() {
            if end > t {
                break;
            }
            self.buffered -= b;
            self.drain.pop_front();
        }
        if t > t_in {
            self.stats.buffer_stalls += 1;
            self.stats.buffer_stall_ns += t - t_in;
        }
        self.admit_free = t;
        // Idle program engine: the SLC cache folds back into TLC meanwhile.
        if self.prog_free < t_in && self.slc_used > 0 {
            let idle = t_in - self.prog_free;
            let rate_num = self.nand.round_bytes();
            let folded = (idle as u128 * rate_num as u128 / self.cfg.t_prog.max(1) as u128) as u64;
            self.slc_used = self.slc_used.saturating_sub(folded);
        }
        let start = self.prog_free.max(t_in);
        let dur = if self.slc_used + bytes <= self.cfg.slc_bytes {
            self.slc_used += bytes;
            self.stats.slc_bytes += bytes;
            (bytes as u128 * self.cfg.t_prog_slc as u128).div_ceil(self.nand.round_bytes() as u128)
                as Ns
        } else {
            self.stats.tlc_bytes += bytes;
            let nr = bytes.div_ceil(512) as u32;
            self.ftl.program(&self.nand, offset / 512, nr, true)
        };
        self.prog_free = start + dur;
        // Small writes share an entry up to a quantum of the buffer (a merged entry leaves
        // with its last write's end: at most one quantum's program time late), so the list
        // stays under DRAIN_ENTRIES whatever the write size.
        let quantum = (self.cfg.dram_bytes / DRAIN_ENTRIES as u64).max(1);
        match self.drain.back_mut() {
            Some(last) if last.1 + bytes <= quantum => {
                last.0 = self.prog_free;
                last.1 += bytes;
            }
            _ => self.drain.push_back((self.prog_free, bytes)),
        }
        self.buffered += bytes;
        // A write larger than the whole buffer completes only as its own data is programmed.
        if bytes > self.cfg.dram_bytes {
            let over = self.prog_free - start;
            let wait = (over as u128 * (bytes - self.cfg.dram_bytes) as u128 / bytes as u128) as Ns;
            return t.max(start + wait);
        }
        t
    }

    /// A block request's command submitted at `now` (`op` at byte `offset`, `bytes` long):
    /// when it completes.
    pub fn command(&mut self, now: Ns, op: blksim_block::Op, offset: u64, bytes: u64) -> Ns {
        use blksim_block::Op;
        match op {
            Op::Read => self.read(now, offset, bytes),
            Op::Write => self.write(now, offset, bytes),
            Op::Flush => self.flush(now),
            Op::Discard => self.trim(now, offset, bytes),
        }
    }

    /// A flush submitted at `now`.
    pub fn flush(&mut self, now: Ns) -> Ns {
        now + self.cfg.flush
    }

    /// A deallocate of `bytes` at `offset` submitted at `now`.
    pub fn trim(&mut self, now: Ns, offset: u64, bytes: u64) -> Ns {
        // The FTL folds the range into its modelled space (`ssd.ftl_model_gib`).
        self.ftl.trim(offset / 512, bytes.div_ceil(512));
        now + self.cfg.trim
    }

    /// Facts for the JSON `blksim` key.
    pub fn stats_entries(&self) -> Vec<(String, u64)> {
        let s = &self.stats;
        let f = self.ftl.stats().clone();
        vec![
            ("ssd_reads".into(), s.reads),
            ("ssd_writes".into(), s.writes),
            ("ssd_bytes_read".into(), s.bytes_read),
            ("ssd_bytes_written".into(), s.bytes_written),
            ("ssd_slc_bytes".into(), s.slc_bytes),
            ("ssd_tlc_bytes".into(), s.tlc_bytes),
            ("ssd_buffer_stalls".into(), s.buffer_stalls),
            ("ssd_buffer_stall_ns".into(), s.buffer_stall_ns),
            ("ftl_gc_blocks".into(), f.gc_blocks),
            ("ftl_gc_copied_units".into(), f.gc_copied_units),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssd(kv: &[(&str, &str)]) -> Ssd {
        let get = blksim_core::param::lookup_pairs(kv);
        Ssd::new(SsdConfig::from_lookup(&get).unwrap()).unwrap()
    }

    /// The page FTL's errors name the SSD's keys, not the eMMC card's.
    #[test]
    fn ftl_errors_name_the_ssd_keys() {
        // 5 KiB does not divide the 6 MiB block (16 KiB pages x 384). The map cannot
        // overflow through these keys (ssd.ftl_model_gib is at most 64 GiB).
        let get = |k: &str| (k == "ssd.map_unit_kib").then(|| "5".to_string());
        let e = Ssd::new(SsdConfig::from_lookup(&get).unwrap()).err();
        assert_eq!(
            e.as_deref(),
            Some("ssd.map_unit_kib must divide the NAND block size")
        );
    }

    #[test]
    fn table_is_consistent() {
        blksim_core::param::check_table(SSD_PARAMS).unwrap();
    }

    /// One die, one channel: a 4 KiB read is t_R + channel + link + controller, exactly; N
    /// reads submitted together finish one t_R apart (the die is the bottleneck).
    #[test]
    fn reads_are_the_arithmetic_of_their_resources() {
        let one_die = [
            ("ssd.channels", "1"),
            ("ssd.dies_per_channel", "1"),
            ("ssd.capacity_gib", "4"),
            ("ssd.t_r_ns", "50000"),
            ("ssd.channel_mbps", "1000"),
            ("ssd.link_mbps", "4000"),
            ("ssd.read_ctrl_ns", "10000"),
        ];
        let mut s = ssd(&one_die);
        let one = 50_000 + 4096 + 1024 + 10_000;
        assert_eq!(s.read(0, 0, 4096), one);
        let mut s2 = ssd(&one_die);
        let ends: Vec<Ns> = (0..4).map(|i| s2.read(0, i << 20, 4096)).collect();
        for w in ends.windows(2) {
            assert_eq!(w[1] - w[0], 50_000);
        }
    }

    /// Random 4 KiB reads at depth d over D dies: throughput grows with d up to D, then
    /// flattens at D / t_R.
    #[test]
    fn read_iops_scale_with_depth_up_to_the_dies() {
        let iops = |depth: u64| {
            let mut s = ssd(&[
                ("ssd.channels", "4"),
                ("ssd.dies_per_channel", "2"),
                ("ssd.capacity_gib", "16"),
                ("ssd.t_r_ns", "50000"),
                ("ssd.read_ctrl_ns", "0"),
            ]);
            let mut rng = blksim_core::Rng::from_seed(7);
            // Closed loop: `depth` slots, each reissued when its read completes.
            let mut slots: Vec<Ns> = vec![0; depth as usize];
            let n = 20_000;
            for _ in 0..n {
                let i = (0..slots.len()).min_by_key(|&i| slots[i]).unwrap();
                let off = rng.below(16 << 30) & !4095;
                slots[i] = s.read(slots[i], off, 4096);
            }
            n as f64 / (*slots.iter().max().unwrap() as f64 / 1e9)
        };
        let (i1, i4, i32, i128) = (iops(1), iops(4), iops(32), iops(128));
        // Depth 1: one t_R plus the 4 KiB on the channel (3.4 µs) and the link (0.6 µs).
        assert!((i1 - 1e9 / 54_000.0).abs() / i1 < 0.01, "{i1}");
        assert!(i4 > 3.0 * i1, "{i4} vs {i1}");
        // 8 dies at 50 µs: at most 160k IOPS. With N reads spread at random over D dies a
        // closed loop keeps about N / (N + D - 1) of the dies busy (the machine-repair
        // closed form): 82 % at depth 32, 95 % at depth 128.
        let max = 160_000.0;
        for (n, i) in [(32.0, i32), (128.0, i128)] {
            let want = max * n / (n + 7.0);
            assert!(
                (i - want).abs() / want < 0.08 && i <= max,
                "depth {n}: {i} vs {want}"
            );
        }
    }

    /// With the buffer full, small writes complete as the program engine frees room: evenly,
    /// one write's worth of programming apart, however many writes the buffer holds (no
    /// bursts when a merged entry of the drain list leaves).
    #[test]
    fn a_full_buffer_releases_writes_evenly() {
        let mut s = ssd(&[
            ("ssd.channels", "1"),
            ("ssd.dies_per_channel", "1"),
            ("ssd.planes", "1"),
            ("ssd.capacity_gib", "4"),
            ("ssd.dram_buffer_mib", "64"),
            ("ssd.t_prog_ns", "160000"),
            ("ssd.write_ctrl_ns", "0"),
            ("ssd.state", "fresh"),
        ]);
        // 16 KiB per 160 µs: a 4 KiB write is 40 µs of programming.
        let n = 40_000u64;
        let ends: Vec<Ns> = (0..n).map(|i| s.write(0, i * 4096, 4096)).collect();
        // Past the 16384 writes the buffer holds, completions are 40 µs apart, give or take
        // one quantum of the drain list (64 MiB / 4096 entries = 16 KiB: 160 µs).
        for w in ends[20_000..].windows(2) {
            let gap = w[1] - w[0];
            assert!(gap <= 40_000 + 160_000, "gap {gap}");
        }
        let span = ends[n as usize - 1] - ends[20_000];
        let per = span as f64 / (n - 20_001) as f64;
        assert!((per / 40_000.0 - 1.0).abs() < 0.01, "{per}");
    }

    /// A sequential write twice the SLC cache: the first half at the SLC rate, then the TLC
    /// rate (the buffer small, so completions follow the programs).
    #[test]
    fn writes_slow_down_when_the_slc_cache_is_full() {
        let mut s = ssd(&[
            ("ssd.channels", "2"),
            ("ssd.dies_per_channel", "1"),
            ("ssd.planes", "2"),
            ("ssd.capacity_gib", "16"),
            ("ssd.slc_cache_gib", "1"),
            ("ssd.dram_buffer_mib", "1"),
            ("ssd.t_prog_slc_ns", "100000"),
            ("ssd.t_prog_ns", "1000000"),
            ("ssd.write_ctrl_ns", "0"),
            ("ssd.state", "fresh"),
        ]);
        // 4 planes x 16 KiB per round: SLC 64 KiB / 100 µs = 655 MB/s, TLC 65.5 MB/s.
        let chunk = 1u64 << 20;
        let mut t = 0;
        let mut at_half = 0;
        for i in 0..2048u64 {
            t = s.write(t, i * chunk, chunk);
            if i == 1023 {
                at_half = t;
            }
        }
        let slc_rate = 1024.0 * chunk as f64 / (at_half as f64 / 1e9);
        let tlc_rate = 1024.0 * chunk as f64 / ((t - at_half) as f64 / 1e9);
        assert!((slc_rate / 655.36e6 - 1.0).abs() < 0.02, "{slc_rate}");
        assert!((tlc_rate / 65.536e6 - 1.0).abs() < 0.05, "{tlc_rate}");
    }
}
