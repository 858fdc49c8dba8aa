//! blksim-mmc: the MMC block driver (`drivers/mmc/core/queue.c`, `block.c`) and its three host
//! paths, as a [`blksim_block::Driver`] on top of an eMMC card model from `blksim-device`.
//!
//! * `host.queue = legacy`: one request on the bus and one prepared; the dispatching context
//!   sleeps in `queue_rq` (`mmc_blk_rw_wait`) and is woken by the completion IRQ.
//! * `host.queue = hsq`: the host software queue (`mmc_hsq.c`): 64 slots by tag, at most
//!   `hsq_depth + 1` ASYNC in flight, one on the host, the next started from the completion path.
//! * `host.queue = cqe`: CQHCI: 31 data tasks (+1 DCMD) held by the card, which orders them.
//!
//! Build one from a parameter map with [`build_mmc_driver`]; the keys are the `host.*` and
//! `card.*` tables in `blksim_device::emmc::params`.

pub mod driver;
pub mod hsq;
pub mod recovery;
#[cfg(test)]
mod tests;

pub use driver::{CqPolicy, HostQueue, IssueType, MmcConfig, MmcDriver, MMC_QUEUE_DEPTH};
pub use hsq::{HsqSlots, NextTag, HSQ_NUM_SLOTS};

use blksim_block::Driver;
use blksim_core::Ns;
use blksim_device::emmc::{self, get_bool, get_enum, get_u32, get_u64, ParamLookup};

/// Host-side CPU and interrupt costs (`host.*` keys), separate from the card so one card can
/// sit behind another host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCosts {
    pub prep: Ns,
    pub dma_map_base: Ns,
    pub dma_map_per_seg: Ns,
    /// `host.dma_unmap_per_seg_ns` (reads only).
    pub dma_unmap_per_seg: Ns,
    pub request: Ns,
    pub irq: Ns,
    pub wakeup: Ns,
    pub complete: Ns,
    pub busy_poll_min: Ns,
    /// `host.data_timeout_ns`, `host.reset_ns` (recovery).
    pub data_timeout: Ns,
    pub reset: Ns,
    pub cqe_task: Ns,
    pub hw_busy_detect: bool,
}

impl HostCosts {
    pub fn from_params(p: &dyn ParamLookup) -> Result<Self, String> {
        Ok(HostCosts {
            prep: get_u64(p, "host.prep_ns")?,
            dma_map_base: get_u64(p, "host.dma_map_base_ns")?,
            dma_map_per_seg: get_u64(p, "host.dma_map_per_seg_ns")?,
            dma_unmap_per_seg: get_u64(p, "host.dma_unmap_per_seg_ns")?,
            request: get_u64(p, "host.request_ns")?,
            irq: get_u64(p, "host.irq_ns")?,
            wakeup: get_u64(p, "host.wakeup_ns")?,
            complete: get_u64(p, "host.complete_ns")?,
            busy_poll_min: get_u64(p, "host.busy_poll_min_ns")?,
            data_timeout: get_u64(p, "host.data_timeout_ns")?,
            reset: get_u64(p, "host.reset_ns")?,
            cqe_task: get_u64(p, "host.cqe_task_ns")?,
            hw_busy_detect: get_bool(p, "host.hw_busy_detect")?,
        })
    }
}

impl MmcConfig {
    pub fn from_params(p: &dyn ParamLookup) -> Result<Self, String> {
        let queue = match get_enum(p, "host.queue")? {
            "legacy" => HostQueue::Legacy,
            "hsq" => HostQueue::Hsq,
            _ => HostQueue::Cqe,
        };
        // Ranges (hsq_depth 1..=63, cmdq_depth 1..=32, ...) are the parameter table's bounds.
        Ok(MmcConfig {
            queue,
            hsq_depth: get_u32(p, "host.hsq_depth")?,
            hsq_perf_depth: get_u32(p, "host.hsq_perf_depth")?,
            hsq_dynamic: get_bool(p, "host.hsq_dynamic_depth")?,
            hsq_next_tag: match get_enum(p, "host.hsq_next_tag")? {
                "scan" => NextTag::Scan,
                _ => NextTag::Fifo,
            },
            cqe_dcmd: get_bool(p, "host.cqe_dcmd")?,
            cmdq_depth: get_u32(p, "card.cmdq_depth")?,
            cq_policy: match get_enum(p, "card.cq_policy")? {
                "fifo" => CqPolicy::Fifo,
                _ => CqPolicy::ReadyFirst,
            },
            cq_max_bypass: get_u32(p, "card.cq_max_bypass")?,
            host: HostCosts::from_params(p)?,
            max_segs: get_u32(p, "host.max_segs")?,
            max_req_size: get_u32(p, "host.max_req_size")?,
            max_blk_count: get_u32(p, "host.max_blk_count")?,
            rel_wr: get_bool(p, "card.rel_wr")?,
            cache_host_flush: get_bool(p, "card.cache_host_flush")?,
            avoid_rel_write: get_bool(p, "card.avoid_rel_write")?,
            faults: recovery::FaultConfig {
                crc_ppm: get_u64(p, "card.fault_crc_ppm")?,
                timeout_ppm: get_u64(p, "card.fault_timeout_ppm")?,
                cmd_ppm: get_u64(p, "card.fault_cmd_ppm")?,
                removed_at: get_u64(p, "card.fault_removed_ns")?,
            },
        })
    }
}

/// What an SD card changes (`card.kind=sd`): its bus is an SD bus, and the host runs it on the
/// paths the kernel has for SD.
fn check_card_kind(p: &dyn ParamLookup, cfg: &mut MmcConfig) -> Result<(), String> {
    let sd = get_enum(p, "card.kind")? == "sd";
    let mode = get_enum(p, "host.bus_mode")?;
    let sd_mode = emmc::bus::BusMode::parse(mode)?.is_sd();
    if sd != sd_mode {
        return Err(if sd {
            format!("host.bus_mode={mode}: an SD card (card.kind=sd) needs an SD bus mode (sd_ds, sd_hs, sdr50, sdr104, ddr50)")
        } else {
            format!("host.bus_mode={mode} is an SD bus mode: set card.kind=sd, or an eMMC mode (legacy, hs, ddr52, hs200, hs400)")
        });
    }
    if sd {
        if cfg.queue == HostQueue::Cqe {
            return Err("host.queue=cqe: the kernel runs SD cards without a command queue engine (CQHCI serves eMMC only); use legacy or hsq".into());
        }
        // mmc_blk_alloc_req: reliable write (and so FUA) only for MMC cards.
        cfg.rel_wr = false;
    }
    Ok(())
}

/// Build the MMC driver (host path from `host.queue`) with its card, from `host.*` and
/// `card.*` keys (missing keys take the table defaults; unknown keys are errors).
pub fn build_mmc_driver(params: &dyn ParamLookup) -> Result<Box<dyn Driver>, String> {
    Ok(Box::new(build_mmc(params)?))
}

/// As [`build_mmc_driver`], returning the concrete type.
pub fn build_mmc(params: &dyn ParamLookup) -> Result<MmcDriver, String> {
    emmc::check_known_keys(params)?;
    let mut cfg = MmcConfig::from_params(params)?;
    check_card_kind(params, &mut cfg)?;
    let card = emmc::build_card(params)?;
    let cmd23 = get_bool(params, "host.cmd23")?;
    let cut = (
        get_u64(params, "card.power_cut_ns")?,
        get_u64(params, "card.power_cut_after_ios")?,
    );
    if !cfg.cache_host_flush && get_u64(params, "card.cache_kib")? > 0 && (cut.0 > 0 || cut.1 > 0) {
        return Err("card.power_cut_*: the card's cache is a buffer the host cannot flush (card.cache_host_flush=false), so no FLUSH or FUA bounds what a power cut loses; set card.cache_kib=0 or card.cache_host_flush=true".into());
    }
    let mut drv = MmcDriver::new(cfg, Box::new(card), cmd23);
    drv.set_power_cut(cut.0, cut.1);
    Ok(drv)
}
