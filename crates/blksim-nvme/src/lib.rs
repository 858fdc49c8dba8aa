//! The NVMe PCI driver (`drivers/nvme/host/pci.c`) over the SSD model
//! ([`blksim_device::ssd`]): one hardware queue per CPU (`nvme_setup_io_queues` asks for as
//! many I/O queues as CPUs, or `nvme.nr_io_queues`), `io_queue_depth` entries each (the tag
//! set's depth is one less, `nvme_pci_alloc_tag_set`: a full queue keeps one slot empty), and
//! the completion interrupt of a queue on the CPU it belongs to (its MSI-X vector is affine to
//! it), so a request completes on the CPU that submitted it. `queue_rq` writes the command into
//! the submission queue and rings the doorbell (`nvme_queue_rq`, `nvme_sq_copy_cmd`,
//! `nvme_write_sq_db`); the drive then takes the time the SSD model gives it, and the
//! completion entry raises the interrupt `nvme.irq_ns` later (`nvme_irq` → `nvme_poll_cq` →
//! `blk_mq_complete_request`). The CPU work of these steps is the platform's (`platform.*`
//! costs), as for every driver.

use blksim_block::driver::{CallCtx, DeviceTrails, DriverStats};
use blksim_block::{BlkStatus, Driver, DriverOut, RqId, RqPool};
use blksim_core::param::{lookup_u64, MAX_STEP_NS};
use blksim_core::{Ns, ParamDef};
use blksim_device::ssd::{Ssd, SsdConfig};

/// The driver's parameters (`nvme.*` keys): module parameters under their kernel names.
pub static NVME_PARAMS: &[ParamDef] = &[
    ParamDef::new("nvme.nr_io_queues", "count", "0", 0, 4096, "I/O queues (hardware contexts); 0 = one per CPU, as nvme_setup_io_queues asks (the drive may grant fewer).", "drivers/nvme/host/pci.c nvme_setup_io_queues (num_possible_cpus)"),
    ParamDef::new("nvme.io_queue_depth", "entries", "1024", 2, 65536, "Entries per I/O queue; the tag set's depth is one less (a full ring keeps one slot empty).", "drivers/nvme/host/pci.c io_queue_depth (default 1024), nvme_pci_alloc_tag_set (q_depth - 1)"),
    ParamDef::new("nvme.max_hw_kib", "KiB", "512", 4, 1 << 16, "Largest transfer (MDTS): max_hw_sectors.", "drivers/nvme/host/core.c nvme_set_ctrl_limits (2^MDTS pages; NVME_MAX_KB_SZ 8192 in pci.c)"),
    ParamDef::new("nvme.poll_queues", "count", "0", 0, 4096, "Queues for polled I/O (hipri): a polled I/O completes by its submitter's polling, without an interrupt; with none, polled I/O falls back to interrupts.", "drivers/nvme/host/pci.c poll_queues module parameter (default 0)"),
    ParamDef::new("nvme.irq_ns", "ns", "2000", 0, MAX_STEP_NS, "From the completion entry to nvme_irq on the queue's CPU (MSI-X delivery).", "model parameter [assumed]"),
];

#[derive(Clone, Debug, PartialEq)]
pub struct NvmeConfig {
    pub nr_io_queues: u16,
    pub io_queue_depth: u32,
    pub max_hw_kib: u32,
    pub poll_queues: u16,
    pub irq: Ns,
}

impl NvmeConfig {
    /// From `nvme.*` values; `nr_cpus` is the platform's, for one queue per CPU.
    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
        nr_cpus: u16,
    ) -> Result<NvmeConfig, String> {
        let n = |k: &str| lookup_u64(NVME_PARAMS, k, get);
        let q = n("nvme.nr_io_queues")? as u16;
        Ok(NvmeConfig {
            nr_io_queues: if q == 0 { nr_cpus.max(1) } else { q },
            io_queue_depth: n("nvme.io_queue_depth")? as u32,
            max_hw_kib: n("nvme.max_hw_kib")? as u32,
            poll_queues: n("nvme.poll_queues")? as u16,
            irq: n("nvme.irq_ns")?,
        })
    }
}

/// Event kinds in the payload's high word.
const EV_COMPLETE: u64 = 1;

pub struct Nvme {
    cfg: NvmeConfig,
    ssd: Ssd,
    /// The device part of each request's path (stage spans, `--explain`).
    trails: DeviceTrails,
    in_flight: u32,
    completed: u64,
}

impl Nvme {
    pub fn new(cfg: NvmeConfig, ssd: SsdConfig) -> Result<Nvme, String> {
        Ok(Nvme {
            cfg,
            ssd: Ssd::new(ssd)?,
            trails: DeviceTrails::default(),
            in_flight: 0,
            completed: 0,
        })
    }
}

impl Driver for Nvme {
    fn name(&self) -> &str {
        "nvme"
    }

    fn nr_hw_queues(&self) -> u16 {
        self.cfg.nr_io_queues
    }

    fn queue_depth(&self) -> u32 {
        self.cfg.io_queue_depth - 1
    }

    fn capacity_sectors(&self) -> u64 {
        self.ssd.capacity_bytes() / 512
    }

    fn poll_queues(&self) -> u16 {
        self.cfg.poll_queues
    }

    /// Client drives report a volatile write cache (VWC) and take FUA writes themselves.
    fn write_cache(&self) -> bool {
        true
    }

    fn fua(&self) -> bool {
        true
    }

    fn apply_limits(&self, lim: &mut blksim_block::QueueLimits) {
        lim.max_hw_sectors_kb = self.cfg.max_hw_kib;
        // NVME_MAX_SEGS (pci.c): 128 data segments per command since NVME_MAX_KB_SZ became
        // 8192 (6.3; 127 before).
        lim.max_segments = 128;
    }

    fn queue_rq(
        &mut self,
        pool: &RqPool,
        rq: RqId,
        _hctx: u16,
        _last: bool,
        _ctx: CallCtx,
        now: Ns,
        out: &mut DriverOut,
    ) -> BlkStatus {
        let r = pool.get(rq);
        let done = self
            .ssd
            .command(now, r.op, r.sector * 512, r.nr_sectors as u64 * 512);
        // A polled request's completion entry is found by the submitter's poll, with no
        // interrupt to deliver.
        let polled = r.flags & blksim_block::request::flags::REQ_POLLED != 0;
        let irq = if polled && self.cfg.poll_queues > 0 {
            0
        } else {
            self.cfg.irq
        };
        self.in_flight += 1;
        self.trails.issued(rq, now, now, done, out);
        out.events
            .push((done + irq, (EV_COMPLETE << 32) | rq as u64));
        BlkStatus::Ok
    }

    fn on_event(&mut self, payload: u64, _pool: &RqPool, _now: Ns, out: &mut DriverOut) {
        match payload >> 32 {
            EV_COMPLETE => {
                self.in_flight -= 1;
                self.completed += 1;
                self.trails.ended((payload & 0xffff_ffff) as RqId, out);
                out.completions
                    .push(((payload & 0xffff_ffff) as RqId, BlkStatus::Ok));
            }
            k => panic!("nvme: unknown event kind {k}"),
        }
    }

    fn stats(&self) -> DriverStats {
        let mut entries = vec![("nvme_completed".to_string(), self.completed)];
        entries.extend(self.ssd.stats_entries());
        DriverStats {
            entries,
            faults: Vec::new(),
        }
    }

    fn check_invariants(&self) {
        assert!(self.in_flight <= self.queue_depth() * self.cfg.nr_io_queues as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        blksim_core::param::check_table(NVME_PARAMS).unwrap();
    }

    #[test]
    fn one_queue_per_cpu_and_depth_one_less_than_the_ring() {
        let none = |_: &str| None;
        let c = NvmeConfig::from_lookup(&none, 16).unwrap();
        assert_eq!((c.nr_io_queues, c.io_queue_depth), (16, 1024));
        let d = Nvme::new(c, SsdConfig::from_lookup(&none).unwrap()).unwrap();
        assert_eq!((d.nr_hw_queues(), d.queue_depth()), (16, 1023));
        let e = NvmeConfig::from_lookup(&|k| (k == "nvme.io_queue_depth").then(|| "1".into()), 4)
            .unwrap_err();
        assert!(e.starts_with("nvme.io_queue_depth:"), "{e}");
    }
}
