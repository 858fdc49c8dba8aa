//! The one place where every eMMC card (`card.*`) and MMC host (`host.*`) parameter is defined:
//! key, unit, default, meaning and where the default comes from.
//!
//! Profiles and `--set=card.KEY=VALUE` / `--set=host.KEY=VALUE` give values as strings through a
//! [`ParamLookup`]; the typed getters here parse them (falling back to the table default) and
//! name the key and the expected unit in every error. Card and host parameters are separate
//! namespaces so one card can be put behind another host.
//!
//! Source tags used below:
//! * `JEDEC` — JESD84-B51 facts as summarised in reference §8 (the spec text itself was not read;
//!   bus rates are standard, gap minimums are from memory and marked so).
//! * `kernel` — a constant or behaviour read in torvalds/linux (file named).
//! * `typical` — a typical datasheet-class value for the NAND generation; a calibration start.
//! * `calib:<profile>` — chosen to fit measurements.md for that profile.

use std::collections::BTreeMap;

use blksim_core::param::MAX_STEP_NS;
pub use blksim_core::ParamDef;
use blksim_core::NSEC_PER_SEC;

/// A numeric parameter with bounds `[min, max]` in its unit.
const fn p(
    key: &'static str,
    unit: &'static str,
    default: &'static str,
    min: u64,
    max: u64,
    doc: &'static str,
    source: &'static str,
) -> ParamDef {
    ParamDef::new(key, unit, default, min, max, doc, source)
}

/// A `bool` or `enum:` parameter.
const fn c(
    key: &'static str,
    unit: &'static str,
    default: &'static str,
    doc: &'static str,
    source: &'static str,
) -> ParamDef {
    ParamDef::choice(key, unit, default, doc, source)
}

/// What `blksim calibrate` fits on an eMMC profile unless told otherwise: the card's
/// per-command firmware times, its NAND sense and program times and the L2P map miss. These
/// are the values datasheets do not give and the bundled profiles were fitted on
/// (profiles/*.toml `# calib:` lines); geometry (page, block, dies) and cache sizes are read
/// from EXT_CSD or the datasheet, not fitted.
pub static CARD_CALIBRATE: &[&str] = &[
    "card.read_fw_ns",
    "card.write_fw_ns",
    "card.t_r_ns",
    "card.t_prog_ns",
    "card.map_miss_ns",
];

/// Card parameters (`card.*`): the eMMC device itself.
pub static CARD_PARAMS: &[ParamDef] = &[
    p(
        "card.capacity_mib",
        "MiB",
        "8192",
        1,
        1 << 24,
        "User-area capacity.",
        "typical (8 GiB part)",
    ),
    p(
        "card.ncr_clks",
        "clk",
        "2",
        2,
        64,
        "N_CR: clocks between the end of a command and its response.",
        "JEDEC min 2, max 64 [from memory]",
    ),
    p(
        "card.page_kib",
        "KiB",
        "16",
        1,
        1024,
        "NAND page size.",
        "typical TLC (2D/3D NAND 2015+)",
    ),
    p(
        "card.planes",
        "count",
        "2",
        1,
        16,
        "Planes per die used by multi-plane operations.",
        "typical",
    ),
    p(
        "card.dies",
        "count",
        "2",
        1,
        64,
        "Dies that operate in parallel.",
        "typical 8-32 GiB eMMC",
    ),
    p(
        "card.pages_per_block",
        "count",
        "256",
        1,
        65536,
        "NAND pages per erase block.",
        "typical TLC",
    ),
    p(
        "card.t_r_ns",
        "ns",
        "60000",
        0,
        MAX_STEP_NS,
        "t_R: page sense time (array to page register).",
        "typical TLC 50-90 us",
    ),
    p(
        "card.t_prog_ns",
        "ns",
        "400000",
        0,
        MAX_STEP_NS,
        "t_PROG: page program time (amortised SLC-cache/TLC).",
        "typical 200 us SLC .. 2 ms TLC",
    ),
    p(
        "card.t_bers_ns",
        "ns",
        "3000000",
        0,
        MAX_STEP_NS,
        "t_BERS: block erase time.",
        "typical 2-5 ms",
    ),
    p(
        "card.channel_mbps",
        "MB/s",
        "400",
        1,
        100_000,
        "NAND channel transfer rate (controller <-> dies), MB/s = bytes/us.",
        "typical ONFI/Toggle 200-400 MT/s",
    ),
    p(
        "card.read_fw_ns",
        "ns",
        "20000",
        0,
        MAX_STEP_NS,
        "Firmware time per read command before sensing (decode, map lookup).",
        "calibration start: hbg4a2 QD1 read",
    ),
    p(
        "card.write_fw_ns",
        "ns",
        "10000",
        0,
        MAX_STEP_NS,
        "Firmware time after a write's last block before busy is released.",
        "calibration start",
    ),
    p(
        "card.cache_kib",
        "KiB",
        "1024",
        0,
        1 << 22,
        "Volatile cache (EXT_CSD CACHE_SIZE); 0 = no cache (eMMC < 4.5).",
        "JEDEC 4.5+; size typical",
    ),
    c(
        "card.cache_host_flush",
        "bool",
        "true",
        "The host knows the cache and flushes it (eMMC CACHE_CTRL; SD 6.0+ cache enabled by sd_enable_cache), so the queue has a write cache and sends FLUSH. false: the cache is a write buffer inside the card the host cannot see or flush (SD cards before 6.0): writes complete into it and are programmed behind the host's back; the queue has no write cache. A power cut is refused then, since nothing the host does bounds what it loses.",
        "kernel drivers/mmc/core/block.c mmc_blk_alloc_req (blk_queue_write_cache only with mmc_cache_enabled), sd.c sd_enable_cache (SD 6.0 performance enhancement register)",
    ),
    p(
        "card.flush_fw_ns",
        "ns",
        "100000",
        0,
        MAX_STEP_NS,
        "Fixed cost of CMD6 FLUSH_CACHE on top of writing back dirty data.",
        "typical (flush 1-20 ms incl. data)",
    ),
    c(
        "card.rel_wr",
        "bool",
        "true",
        "The card supports reliable writes (EXT_CSD WR_REL_PARAM EN_REL_WR, or REL_WR_SEC_C > 0): with CMD23 the MMC driver sets MMC_BLK_REL_WR, declares FUA and sends FUA writes as reliable writes.",
        "kernel drivers/mmc/core/block.c mmc_blk_alloc_req, mmc_blk_rw_rq_prep (do_rel_wr); JEDEC 4.41+ cards report it",
    ),
    c(
        "card.avoid_rel_write",
        "bool",
        "false",
        "MMC_QUIRK_AVOID_REL_WRITE: reliable writes are slow on this card; with a cache, FUA is not declared and the block layer flushes after FUA writes instead.",
        "kernel drivers/mmc/core/block.c mmc_blk_alloc_req (avoid_fua), quirks.h",
    ),
    c(
        "card.ftl",
        "enum:page|au",
        "page",
        "FTL: page-mapped with GC, or allocation-unit (log-block) mapped.",
        "model choice",
    ),
    p(
        "card.map_unit_kib",
        "KiB",
        "4",
        1,
        1024,
        "page FTL: mapping unit; smaller writes read-modify-write one unit.",
        "typical",
    ),
    p(
        "card.ftl_model_gib",
        "GiB",
        "64",
        1,
        64,
        "page FTL: logical space it keeps state for, and at most 2^24 mapping units (16 GiB of 1 KiB units; a steady state is built over all of it at setup, about 0.6 s and 240 MB for 2^24 units); a larger card folds into it (offset mod size), so memory and setup stay bounded whatever the capacity and mapping unit. Write amplification under uniform random and sequential writes does not depend on the size.",
        "model choice, as ssd.ftl_model_gib (the page FTL's state is 4 bytes per mapping unit once written)",
    ),
    p(
        "card.op_pct",
        "pct",
        "7",
        1,
        400,
        "page FTL: over-provisioning, percent of the user capacity.",
        "typical 7%",
    ),
    p(
        "card.gc_low_blocks",
        "count",
        "8",
        1,
        65536,
        "page FTL: GC runs when free blocks fall below this.",
        "model choice",
    ),
    c(
        "card.kind",
        "enum:emmc|sd",
        "emmc",
        "The card: an eMMC, or an SD card. An SD card takes an SD bus mode (host.bus_mode sd_ds to ddr50) on 1 or 4 lines, runs on the legacy or hsq host path (the kernel has no command queue engine for SD), and has no reliable write (mmc_blk_alloc_req offers REL_WR to MMC cards only).",
        "SD Physical Layer Simplified Specification; kernel drivers/mmc/core/block.c mmc_blk_alloc_req, sd.c",
    ),
    c(
        "card.state",
        "enum:fresh|used|steady",
        "used",
        "Starting state. fresh: nothing written, no unit open (a card out of the factory). used: a card in use: the page FTL holds card.prefill_pct of the logical space, written in order; the au FTL has card.au_open units open elsewhere (at the top of the card), each half written, so the first write away from them pays a merge. steady: the page FTL's logical space written in full, then overwritten at random (twice its size, uniform 4 KiB units, not reported) until greedy GC's write amplification is at its steady state, as MQSim preconditions its SSD; the au FTL as used.",
        "measurements s4 (the 2009 card was measured in use: a write to an erase block pays the merge of the unit left open before it); MQSim's preconditioning (Tavakkol et al., FAST 2018)",
    ),
    p(
        "card.prefill_pct",
        "pct",
        "50",
        0,
        100,
        "page FTL, card.state=used: percent of the logical space already written at start, in order.",
        "assumed: a card about half full",
    ),
    p(
        "card.au_kib",
        "KiB",
        "4096",
        1,
        1 << 20,
        "au FTL: allocation unit size (preferred_erase_size).",
        "typical 4 MiB (Linaro flash card survey, Arnd Bergmann 2011; the SD Physical Layer spec's AU sizes)",
    ),
    p(
        "card.au_open",
        "count",
        "2",
        1,
        64,
        "au FTL: allocation units the card keeps open at once.",
        "typical older cards 1-6 [flashbench folklore]",
    ),
    c(
        "card.au_random_in_open",
        "bool",
        "false",
        "au FTL: an open unit accepts writes below its write pointer without a merge.",
        "model choice",
    ),
    p(
        "card.au_merge_fw_ns",
        "ns",
        "1000000",
        0,
        MAX_STEP_NS,
        "au FTL: fixed firmware cost of one merge (closing a unit that needs copying).",
        "calibration start",
    ),
    c(
        "card.au_gap_merge",
        "bool",
        "false",
        "au FTL: a write that leaves a gap after an open unit's write pointer merges and restarts the unit (instead of copying the gap in).",
        "measurements s4 (two writes to one erase block with a gap: ~510 ms, two merges)",
    ),
    p(
        "card.read_buffer_kib",
        "KiB",
        "0",
        0,
        1 << 20,
        "Controller read buffer: the most recently sensed NAND pages; a read entirely inside it skips t_R and the channel. 0 = off.",
        "model choice (measurements s1 seq vs rand read, s4 'likes sequential reads')",
    ),
    p(
        "card.read_buffer_ns",
        "ns",
        "20000",
        0,
        MAX_STEP_NS,
        "Firmware time to serve a read from the controller read buffer (replaces read_fw_ns + t_R).",
        "calibration start; calib per profile",
    ),
    p(
        "card.map_cache_segs",
        "count",
        "0",
        0,
        1 << 20,
        "L2P map segments the controller keeps in SRAM (LRU); a command touching a segment not resident loads it from NAND first (card.map_miss_ns). 0 = the whole map is resident (no misses).",
        "model choice (demand-paged map as DFTL, Gupta et al. ASPLOS 2009; the miss cost is why UFS added HPB, JESD220-3 / kernel drivers/ufs/core/ufshpb.c); calib:emmc-hbg4a2 §1 legacy write vs randwrite",
    ),
    p(
        "card.map_seg_kib",
        "KiB",
        "16384",
        1,
        1 << 24,
        "Logical span covered by one L2P map segment.",
        "typical: one 16 KiB map page of 4-byte entries for 4 KiB units = 16 MiB",
    ),
    p(
        "card.map_miss_ns",
        "ns",
        "25000",
        0,
        MAX_STEP_NS,
        "Loading one map segment on a miss (SLC-mode page read + firmware). Reads: before sensing; writes: added to the busy after the data.",
        "typical SLC t_R 20-30 us; calib:emmc-hbg4a2 §1 legacy write 69.68 vs randwrite 35.96 MiB/s",
    ),
    p(
        "card.t_r_step_ns",
        "ns",
        "0",
        0,
        MAX_STEP_NS,
        "Extra t_R per TLC page type: page index mod 3 adds 0, 1 or 2 steps (LSB/CSB/MSB sense).",
        "typical TLC (LSB/CSB/MSB t_R differ by 10-30 us)",
    ),
    p(
        "card.bkops_interval_ns",
        "ns",
        "0",
        0,
        3600 * NSEC_PER_SEC,
        "Period of card-initiated background operations (auto-BKOPS, read reclaim) that hold the NAND engine. 0 = off.",
        "model choice; fitted per profile",
    ),
    p(
        "card.bkops_ns",
        "ns",
        "0",
        0,
        MAX_STEP_NS,
        "Duration of one background operation (foreground commands wait behind it).",
        "model choice; fitted per profile",
    ),
    p(
        "card.trim_ns",
        "ns",
        "500000",
        0,
        MAX_STEP_NS,
        "Discard/trim fixed busy time (CMD38).",
        "typical",
    ),
    p(
        "card.trim_ns_per_mib",
        "ns",
        "10000",
        0,
        MAX_STEP_NS,
        "Discard/trim busy time per MiB.",
        "typical",
    ),
    p(
        "card.power_cut_ns",
        "ns",
        "0",
        0,
        1_000_000_000 * NSEC_PER_SEC,
        "Power cut at this virtual time (0 = none): the volatile cache is lost, the program in progress is torn at the NAND page, commands in flight fail; the job's write phase ends and its read-back (verify) follows.",
        "blksim model (what FLUSH and FUA promise: the block layer's blk-flush.c semantics)",
    ),
    p(
        "card.power_cut_after_ios",
        "count",
        "0",
        0,
        1 << 40,
        "Power cut right after the card completed this many data commands (0 = none); see card.power_cut_ns.",
        "blksim model",
    ),
    p(
        "card.fault_crc_ppm",
        "ppm",
        "0",
        0,
        1_000_000,
        "Per attempt of a data command: probability (per million) of a data CRC error (-EILSEQ): the transfer runs, then fails.",
        "blksim fault model; recovery as drivers/mmc/core/block.c mmc_blk_mq_rw_recovery",
    ),
    p(
        "card.fault_timeout_ppm",
        "ppm",
        "0",
        0,
        1_000_000,
        "Per attempt of a data command: probability (per million) of a data timeout (-ETIMEDOUT): the host waits host.data_timeout_ns.",
        "blksim fault model",
    ),
    p(
        "card.fault_cmd_ppm",
        "ppm",
        "0",
        0,
        1_000_000,
        "Per attempt of a data command: probability (per million) of a command response error (CRC or no response): it fails at once, before any data.",
        "blksim fault model",
    ),
    p(
        "card.fault_removed_ns",
        "ns",
        "0",
        0,
        1_000_000_000 * NSEC_PER_SEC,
        "The card is removed at this virtual time (0 = never): commands in flight fail, every later request fails at once (mmc_mq_queue_rq: mmc_card_removed).",
        "kernel drivers/mmc/core/queue.c mmc_mq_queue_rq",
    ),
    c(
        "card.debug_flush_skips_cache",
        "bool",
        "false",
        "Test only: CMD6 FLUSH_CACHE returns without writing the cache back, so a power cut loses data a completed flush covered (the integrity oracle must report it).",
        "blksim tests",
    ),
    p(
        "card.cmdq_depth",
        "count",
        "32",
        1,
        32,
        "EXT_CSD CMDQ_DEPTH (CQE only).",
        "JEDEC 5.1 max 32",
    ),
    c(
        "card.cq_policy",
        "enum:fifo|ready_first",
        "ready_first",
        "CQE task order: arrival order, or the task whose data is ready first (ties: oldest).",
        "model choice (documented in blksim-mmc cqe)",
    ),
    p(
        "card.cq_max_bypass",
        "count",
        "8",
        0,
        1 << 20,
        "ready_first: times the oldest task may be bypassed before it must go next.",
        "model choice",
    ),
];

/// Host parameters (`host.*`): the MMC host controller, its driver and the CPU costs around it.
pub static HOST_PARAMS: &[ParamDef] = &[
    c(
        "host.queue",
        "enum:legacy|hsq|cqe",
        "legacy",
        "MMC host path: legacy (2 in flight), host software queue, or CQHCI command queue.",
        "kernel drivers/mmc/core/queue.c",
    ),
    p(
        "host.hsq_depth",
        "count",
        "2",
        1,
        63,
        "hsq: in-flight ASYNC limit tested as in_flight > depth (HSQ_NORMAL_DEPTH).",
        "kernel mmc_hsq.h",
    ),
    p(
        "host.hsq_perf_depth",
        "count",
        "5",
        1,
        63,
        "hsq dynamic depth: depth with >= 2 queued 4 KiB writes (HSQ_PERFORMANCE_DEPTH).",
        "kernel mmc_hsq.h (v6.7)",
    ),
    c(
        "host.hsq_dynamic_depth",
        "bool",
        "false",
        "hsq: mmc_hsq_modify_threshold on every pump.",
        "kernel mmc_hsq.c (v6.7)",
    ),
    c(
        "host.hsq_next_tag",
        "enum:fifo|scan",
        "fifo",
        "hsq next request: FIFO list (v6.2+) or the old next_tag+1 / lowest-slot scan.",
        "kernel mmc_hsq.c",
    ),
    c(
        "host.bus_mode",
        "enum:legacy|hs|ddr52|hs200|hs400|sd_ds|sd_hs|sdr50|sdr104|ddr50",
        "hs400",
        "Bus timing mode: eMMC (legacy to hs400) or, for card.kind=sd, SD (sd_ds to ddr50).",
        "JEDEC JESD84-B51; SD Physical Layer Simplified Specification (UHS-I)",
    ),
    p(
        "host.bus_width",
        "count",
        "8",
        1,
        8,
        "Data lines: 1, 4 or 8 (SD: 1 or 4; UHS-I: 4).",
        "JEDEC; SD Physical Layer Simplified Specification",
    ),
    p(
        "host.bus_clock_hz",
        "Hz",
        "0",
        0,
        400_000_000,
        "Bus clock; 0 = the mode's maximum (eMMC 26/52/52/200/200 MHz; SD 25/50/100/208/50 MHz).",
        "JEDEC; SD Physical Layer Simplified Specification",
    ),
    c(
        "host.cmd23",
        "bool",
        "true",
        "Host and card use CMD23 SET_BLOCK_COUNT (else CMD12 stops multi-block transfers).",
        "kernel block.c mmc_blk_rw_rq_prep",
    ),
    c(
        "host.hw_busy_detect",
        "bool",
        "true",
        "Host waits for DAT0 busy end before the transfer-complete IRQ (MMC_CAP_WAIT_WHILE_BUSY).",
        "kernel sdhci",
    ),
    c(
        "host.cqe_dcmd",
        "bool",
        "true",
        "MMC_CAP2_CQE_DCMD: flush as a direct command in slot 31 (31 data tasks).",
        "kernel cqhci-core.c cqhci_init",
    ),
    p(
        "host.max_segs",
        "count",
        "128",
        1,
        65535,
        "mmc_host->max_segs: scatterlist entries per request (queue max_segments).",
        "kernel sdhci.c sdhci_setup_host (SDHCI_MAX_SEGS = 128 with ADMA); mmci.c NR_SG = 128 (emmc-ux500)",
    ),
    p(
        "host.max_req_size",
        "bytes",
        "524288",
        512,
        1 << 30,
        "mmc_host->max_req_size: largest request in bytes.",
        "kernel sdhci.c sdhci_setup_host (512 KiB); mmci.c (1 << datalength_bits) - 1 (emmc-ux500)",
    ),
    p(
        "host.max_blk_count",
        "count",
        "65535",
        1,
        65535,
        "mmc_host->max_blk_count: largest block count of one data command.",
        "kernel sdhci.c sdhci_setup_host (65535 unless SDHCI_QUIRK_NO_MULTIBLOCK); mmci.c max_req_size >> 11 (emmc-ux500)",
    ),
    p(
        "host.prep_ns",
        "ns",
        "8000",
        0,
        MAX_STEP_NS,
        "mmc_blk_rw_rq_prep + blk_rq_map_sg, per request, in the dispatching context.",
        "calibration start",
    ),
    p(
        "host.dma_map_base_ns",
        "ns",
        "2000",
        0,
        MAX_STEP_NS,
        "pre_req DMA mapping fixed cost per request.",
        "calibration start",
    ),
    p(
        "host.dma_map_per_seg_ns",
        "ns",
        "300",
        0,
        MAX_STEP_NS,
        "pre_req DMA mapping cost per scatterlist segment (cache clean/invalidate on non-coherent hosts); overlaps the previous transfer on the legacy path.",
        "calibration start (arm64-class); calib:emmc-ux500 §2 read 1 MiB vs 16 MiB records (Cortex-A9 + PL310, arch/arm/mm/dma-mapping.c __dma_page_cpu_to_dev)",
    ),
    p(
        "host.dma_unmap_per_seg_ns",
        "ns",
        "0",
        0,
        MAX_STEP_NS,
        "post_req DMA unmapping cost per scatterlist segment of a READ (DMA_FROM_DEVICE: the CPU caches are invalidated again at unmap; DMA_TO_DEVICE unmaps do no cache work). Charged when the request completes: hidden behind the next transfer on the legacy path, exposed for the last request of a burst.",
        "kernel arch/arm/mm/dma-mapping.c __dma_page_dev_to_cpu (invalidate unless DMA_TO_DEVICE), mmci_post_request -> dma_unmap_sg; default 0 (cache-coherent or cheap maintenance); calib per profile",
    ),
    p(
        "host.request_ns",
        "ns",
        "3000",
        0,
        MAX_STEP_NS,
        "Host ->request()/request_atomic(): controller register setup before the command goes out.",
        "calibration start",
    ),
    p(
        "host.irq_ns",
        "ns",
        "5000",
        0,
        MAX_STEP_NS,
        "Hardware event to the host's (threaded) IRQ handler running.",
        "calibration start",
    ),
    p(
        "host.wakeup_ns",
        "ns",
        "25000",
        0,
        MAX_STEP_NS,
        "wake_up()/queue_work() to the woken task running (scheduler + context switch).",
        "calib:emmc-hbg4a2 (legacy vs hsq gap)",
    ),
    p(
        "host.complete_ns",
        "ns",
        "5000",
        0,
        MAX_STEP_NS,
        "blk_mq_complete_request to the request ending (softirq/IPI).",
        "calibration start",
    ),
    p(
        "host.busy_poll_min_ns",
        "ns",
        "32000",
        0,
        MAX_STEP_NS,
        "First CMD13 busy-poll sleep; doubles up to 32768 us (__mmc_poll_for_busy).",
        "kernel mmc_ops.c",
    ),
    p(
        "host.data_timeout_ns",
        "ns",
        "100000000",
        1,
        MAX_STEP_NS,
        "How long the host waits for data before it reports a data timeout.",
        "kernel drivers/mmc/core/core.c mmc_set_data_timeout (from the card's TAAC/NSAC and R2W_FACTOR; SDHCI caps it); 100 ms typical",
    ),
    p(
        "host.reset_ns",
        "ns",
        "30000000",
        0,
        MAX_STEP_NS,
        "mmc_hw_reset: reset (RST_n or power cycle) and re-initialisation of the card (mmc_init_card: CMD0, CMD1 until ready, CMD2/3/9/7, EXT_CSD, bus width and timing switch, tuning), after flushing its cache.",
        "kernel drivers/mmc/core/mmc.c _mmc_hw_reset; blksim assumption (tens of ms typical, the spec allows CMD1 polling up to 1 s)",
    ),
    p(
        "host.cqe_task_ns",
        "ns",
        "2000",
        0,
        MAX_STEP_NS,
        "CQE: writing a task descriptor and ringing the doorbell.",
        "calibration start",
    ),
];

/// Every parameter, card first.
pub fn all_params() -> impl Iterator<Item = &'static ParamDef> {
    CARD_PARAMS.iter().chain(HOST_PARAMS.iter())
}

pub fn find_param(key: &str) -> Option<&'static ParamDef> {
    all_params().find(|d| d.key == key)
}

/// Where parameter values come from (a profile, `--set=` options...). Values are text in the
/// unit of the table; missing keys take the table default.
pub trait ParamLookup {
    fn get(&self, key: &str) -> Option<String>;
    /// The keys this lookup sets (to reject unknown `card.*`/`host.*` keys).
    fn keys(&self) -> Vec<String>;
}

/// A plain ordered map of overrides (deterministic iteration).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamMap(pub BTreeMap<String, String>);

impl ParamMap {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn set(&mut self, key: &str, value: &str) -> &mut Self {
        self.0.insert(key.to_string(), value.to_string());
        self
    }
    pub fn with(mut self, key: &str, value: &str) -> Self {
        self.set(key, value);
        self
    }
}

impl ParamLookup for ParamMap {
    fn get(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }
    fn keys(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

impl ParamLookup for BTreeMap<String, String> {
    fn get(&self, key: &str) -> Option<String> {
        BTreeMap::get(self, key).cloned()
    }
    fn keys(&self) -> Vec<String> {
        BTreeMap::keys(self).cloned().collect()
    }
}

/// Reject keys in the `card.`/`host.` namespaces that the table does not define (typos).
pub fn check_known_keys(params: &dyn ParamLookup) -> Result<(), String> {
    for k in params.keys() {
        if (k.starts_with("card.") || k.starts_with("host.")) && find_param(&k).is_none() {
            return Err(format!("unknown parameter '{k}' (see the card.*/host.* table in blksim-device emmc::params)"));
        }
    }
    Ok(())
}

fn def(key: &str) -> &'static ParamDef {
    find_param(key).unwrap_or_else(|| panic!("parameter {key} is not in the table"))
}

fn raw(params: &dyn ParamLookup, key: &str) -> (String, &'static ParamDef) {
    let d = def(key);
    (params.get(key).unwrap_or_else(|| d.default.to_string()), d)
}

/// An unsigned integer in the table's unit, within the table's bounds, in the one value
/// syntax of blksim (`blksim_core::value`: `20us` or `20000` for a `ns` key).
pub fn get_u64(params: &dyn ParamLookup, key: &str) -> Result<u64, String> {
    let (v, d) = raw(params, key);
    d.parse_u64(&v)
}

pub fn get_u32(params: &dyn ParamLookup, key: &str) -> Result<u32, String> {
    let x = get_u64(params, key)?;
    u32::try_from(x).map_err(|_| format!("{key}: value {x} too large"))
}

pub fn get_bool(params: &dyn ParamLookup, key: &str) -> Result<bool, String> {
    let (v, d) = raw(params, key);
    d.parse_bool(&v)
}

/// One of the names listed in the table's `enum:a|b|c` unit.
pub fn get_enum(params: &dyn ParamLookup, key: &str) -> Result<&'static str, String> {
    let (v, d) = raw(params, key);
    assert!(
        d.unit.starts_with("enum:"),
        "{key} is not an enum parameter"
    );
    d.parse_enum(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        let all: Vec<ParamDef> = all_params().copied().collect();
        // Unique keys, doc and source, every default parses and lies within its bounds.
        blksim_core::param::check_table(&all).unwrap();
        for d in &all {
            assert!(d.key.starts_with("card.") || d.key.starts_with("host."));
        }
    }

    #[test]
    fn errors_name_key_and_unit() {
        let m = ParamMap::new()
            .with("card.t_r_ns", "fast")
            .with("host.queue", "nvme");
        let e = get_u64(&m, "card.t_r_ns").unwrap_err();
        assert!(e.contains("card.t_r_ns") && e.contains("ns"), "{e}");
        let e = get_enum(&m, "host.queue").unwrap_err();
        assert!(e.contains("legacy|hsq|cqe"), "{e}");
        let m = ParamMap::new().with("card.t_r_ns", "70us");
        assert_eq!(get_u64(&m, "card.t_r_ns").unwrap(), 70_000);
        let m = ParamMap::new().with("card.no_such", "1");
        assert!(check_known_keys(&m).is_err());
    }
}
