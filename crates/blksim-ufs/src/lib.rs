//! The UFS host driver (`drivers/ufs/core/ufshcd.c`, `ufs-mcq.c`) over the SSD model
//! ([`blksim_device::ssd`]), whose flash and controller a UFS device shares: what is UFS's own
//! is the queueing, the link and its power states.
//!
//! * **Queues.** Legacy single doorbell (`ufs.mode=sdb`): one hardware queue of `ufs.nutrs`
//!   transfer request slots (UTRDs), one of which ufshcd keeps for device management
//!   commands, so `nutrs - 1` tags. Multi-circular queues (`ufs.mode=mcq`, UFSHCI 4.0): one
//!   hardware queue per CPU (or `ufs.mcq_queues`), which share one tag space of
//!   `ufs.mcq_depth - 1` tags (`ufshcd_mcq_init` sets `host_tagset`, so
//!   `BLK_MQ_F_TAG_HCTX_SHARED`), one kept for device management as in SDB mode.
//! * **Link.** The M-PHY gear and lanes are the SSD model's link rate (`ssd.link_mbps`).
//! * **WriteBooster** is the SSD model's SLC cache: `ufs.wb_buffer_gib` of writes at the SLC
//!   rate, then the native TLC rate, folded back into TLC while the device is idle.
//! * **Power.** With auto-hibern8 (`ufs.ahit_ns` > 0) the link enters hibern8 after that long
//!   idle; the next command then pays the exit (`ufs.h8_exit_ns`) before the device sees it.
//! * `ufs.state` is the device's starting state (the SSD model's fresh, used or steady).
//!
//! Completions come by interrupt `ufs.irq_ns` after the device: in SDB mode the one
//! interrupt line is taken on the platform's IRQ CPU (`ufshcd_intr`), and
//! `blk_mq_complete_need_ipi` sends the completion on only to a submitting CPU that does not
//! share its cache; in MCQ mode each completion queue has its own vector (ESI, as the
//! Qualcomm and MediaTek hosts configure it: `config_esi`), on the submitting CPU.
//!
//! Departures from the kernel:
//! * There is no SCSI layer: no `scsi_queue_rq` or device queue-depth budget
//!   (`scsi_mq_get_budget`) between blk-mq and the host.

use blksim_block::driver::{CallCtx, DeviceTrails, DriverStats};
use blksim_block::{BlkStatus, Driver, DriverOut, RqId, RqPool};
use blksim_core::param::{lookup_enum, lookup_u64, MAX_STEP_NS};
use blksim_core::{Ns, ParamDef};
use blksim_device::ssd::{Ssd, SsdConfig};

/// The UFS parameters (`ufs.*` keys), the one place they are defined.
pub static UFS_PARAMS: &[ParamDef] = &[
    ParamDef::choice("ufs.mode", "enum:sdb|mcq", "sdb", "Host queueing: legacy single doorbell (one queue of UTRD slots) or multi-circular queues (UFSHCI 4.0).", "drivers/ufs/core/ufshcd.c, ufs-mcq.c"),
    ParamDef::new("ufs.nutrs", "slots", "32", 2, 32, "sdb: transfer request slots (UTRDs); one is kept for device management, so nutrs - 1 tags.", "UFSHCI 3.x: at most 32 slots; ufshcd.c can_queue = nutrs - UFSHCD_NUM_RESERVED"),
    ParamDef::new("ufs.mcq_queues", "count", "0", 0, 256, "mcq: I/O queues; 0 = one per CPU, at most 256 (MCQCap.MAXQ).", "ufs-mcq.c ufshcd_mcq_config_nr_queues: min3(hba_maxq, rw_queues, num_possible_cpus()), hba_maxq from the 8-bit, 0-based MAXQ field of UFSHCI 4.0's MCQCap"),
    ParamDef::new("ufs.mcq_depth", "entries", "64", 2, 256, "mcq: queue depth (the smaller of the host's MAC and the device's bQueueDepth); one tag is kept for device management, so depth - 1 tags, shared by all queues (host_tagset).", "ufs-mcq.c ufshcd_mcq_decide_queue_depth (bQueueDepth at most 256; Qualcomm hosts: 64); ufshcd.c UFSHCD_NUM_RESERVED"),
    ParamDef::choice("ufs.state", "enum:fresh|used|steady", "used", "The device's starting state (the SSD model's ssd.state: fresh, used, steady).", "as ssd.state"),
    ParamDef::new("ufs.wb_buffer_gib", "GiB", "0", 0, 1 << 12, "WriteBooster buffer (SLC): writes at the SLC rate until it is full, folded back at idle.", "JEDEC UFS 3.1 WriteBooster; size from the part's datasheet"),
    ParamDef::new("ufs.ahit_ns", "ns", "150000000", 0, MAX_STEP_NS, "Auto-hibern8 idle timer: the link enters hibern8 after this long idle; 0 = off.", "ufshcd.c: \"default auto-hibernate idle timer value to 150 ms\" (phone kernels use 1-10 ms)"),
    ParamDef::new("ufs.h8_exit_ns", "ns", "0", 0, MAX_STEP_NS, "Hibern8 exit: the link's wake-up before the next command.", "M-PHY / UniPro hibern8 exit [per part]"),
    ParamDef::new("ufs.irq_ns", "ns", "2000", 0, MAX_STEP_NS, "From the device's completion to ufshcd_intr on the CPU.", "model parameter [assumed]"),
];

/// The most I/O queues a UFSHCI 4.0 host can report (`MCQCap.MAXQ`, 8 bits, 0-based).
const MCQ_MAXQ: u16 = 256;

#[derive(Clone, Debug, PartialEq)]
pub struct UfsConfig {
    pub mcq: bool,
    pub nr_queues: u16,
    pub tags: u32,
    pub ahit: Ns,
    pub h8_exit: Ns,
    pub irq: Ns,
}

impl UfsConfig {
    /// From `ufs.*` values; `nr_cpus` is the platform's, for MCQ's one queue per CPU.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>, nr_cpus: u16) -> Result<Self, String> {
        let n = |k: &str| lookup_u64(UFS_PARAMS, k, get);
        let mcq = lookup_enum(UFS_PARAMS, "ufs.mode", get)? == "mcq";
        let q = n("ufs.mcq_queues")? as u16;
        Ok(UfsConfig {
            mcq,
            nr_queues: if !mcq {
                1
            } else if q == 0 {
                // One per CPU, as many as the host has queues: MAXQ is 8 bits, 0-based.
                nr_cpus.clamp(1, MCQ_MAXQ)
            } else {
                q
            },
            tags: if mcq {
                n("ufs.mcq_depth")? as u32 - 1
            } else {
                n("ufs.nutrs")? as u32 - 1
            },
            ahit: n("ufs.ahit_ns")?,
            h8_exit: n("ufs.h8_exit_ns")?,
            irq: n("ufs.irq_ns")?,
        })
    }

    /// The device behind it: the SSD model's `ssd.*` values, with the starting state and the
    /// WriteBooster buffer from the UFS keys that name them. Those two are checked against
    /// the UFS table first (its bounds, its defaults), so that an error names the key the
    /// profile or `--set` gave, not the SSD key it becomes.
    pub fn device(get: &dyn Fn(&str) -> Option<String>) -> Result<SsdConfig, String> {
        let state = lookup_enum(UFS_PARAMS, "ufs.state", get)?.to_string();
        let wb = lookup_u64(UFS_PARAMS, "ufs.wb_buffer_gib", get)?.to_string();
        SsdConfig::from_lookup(&|k| match k {
            "ssd.state" => Some(state.clone()),
            "ssd.slc_cache_gib" => Some(wb.clone()),
            _ => get(k),
        })
    }
}

const EV_COMPLETE: u64 = 1;

pub struct Ufs {
    cfg: UfsConfig,
    ssd: Ssd,
    /// The device part of each request's path (stage spans, `--explain`).
    trails: DeviceTrails,
    in_flight: u32,
    /// When the link last had nothing to do (the last completion with none in flight).
    idle_since: Ns,
    /// When the link is back up after the last hibern8 exit: a command sent during the exit
    /// waits for it too.
    link_up: Ns,
    completed: u64,
    h8_exits: u64,
}

impl Ufs {
    pub fn new(cfg: UfsConfig, dev: SsdConfig) -> Result<Ufs, String> {
        Ok(Ufs {
            cfg,
            ssd: Ssd::new(dev)?,
            trails: DeviceTrails::default(),
            in_flight: 0,
            idle_since: 0,
            link_up: 0,
            completed: 0,
            h8_exits: 0,
        })
    }

    /// When the device sees a command sent at `now`: after the hibern8 exit if the link
    /// had been idle for the auto-hibern8 time.
    fn wake(&mut self, now: Ns) -> Ns {
        let idle = self.in_flight == 0 && now.saturating_sub(self.idle_since) > self.cfg.ahit;
        if self.cfg.ahit > 0 && idle {
            self.h8_exits += 1;
            self.link_up = now + self.cfg.h8_exit;
        }
        now.max(self.link_up)
    }
}

impl Driver for Ufs {
    fn name(&self) -> &str {
        if self.cfg.mcq {
            "ufs-mcq"
        } else {
            "ufs"
        }
    }

    fn nr_hw_queues(&self) -> u16 {
        self.cfg.nr_queues
    }

    fn queue_depth(&self) -> u32 {
        self.cfg.tags
    }

    /// SDB: the host's one interrupt line (`ufshcd_intr`) is taken on the platform's IRQ
    /// CPU, and `blk_mq_complete_request` completes there or sends the completion to the
    /// submitting CPU (`blk_mq_complete_need_ipi`). MCQ: each queue's completion queue has
    /// its own vector (ESI, which the phone hosts configure: `ufs_qcom_config_esi`, MediaTek's
    /// `config_esi`), affine to the queue's CPUs, so completions run where they were
    /// submitted. Departure: an MCQ host without ESI takes its completion queues' events on
    /// the one `ufshcd_intr` line, as SDB does.
    fn hw_irq(&self) -> bool {
        !self.cfg.mcq
    }

    /// MCQ: `ufshcd_mcq_init` sets the SCSI host's `host_tagset`, so the queues share
    /// `nutrs - 1` tags (`can_queue`).
    fn shared_tags(&self) -> bool {
        self.cfg.mcq
    }

    fn capacity_sectors(&self) -> u64 {
        self.ssd.capacity_bytes() / 512
    }

    /// UFS devices have a volatile cache and honour FUA (WRITE(10) FUA bit).
    fn write_cache(&self) -> bool {
        true
    }

    fn fua(&self) -> bool {
        true
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
        let at = self.wake(now);
        let done = self
            .ssd
            .command(at, r.op, r.sector * 512, r.nr_sectors as u64 * 512);
        self.in_flight += 1;
        self.trails.issued(rq, now, at, done, out);
        out.events
            .push((done + self.cfg.irq, (EV_COMPLETE << 32) | rq as u64));
        BlkStatus::Ok
    }

    fn on_event(&mut self, payload: u64, _pool: &RqPool, now: Ns, out: &mut DriverOut) {
        match payload >> 32 {
            EV_COMPLETE => {
                self.in_flight -= 1;
                self.completed += 1;
                self.trails.ended((payload & 0xffff_ffff) as RqId, out);
                if self.in_flight == 0 {
                    self.idle_since = now;
                }
                out.completions
                    .push(((payload & 0xffff_ffff) as RqId, BlkStatus::Ok));
            }
            k => panic!("ufs: unknown event kind {k}"),
        }
    }

    fn stats(&self) -> DriverStats {
        let mut entries = vec![
            ("ufs_completed".to_string(), self.completed),
            ("ufs_hibern8_exits".to_string(), self.h8_exits),
        ];
        entries.extend(self.ssd.stats_entries());
        DriverStats {
            entries,
            faults: Vec::new(),
        }
    }

    fn check_invariants(&self) {
        // SDB has one queue and MCQ's queues share their tags: at most `tags` in flight.
        assert!(self.in_flight <= self.cfg.tags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blksim_block::Op;
    use blksim_core::param::lookup_pairs as lookup;

    #[test]
    fn table_is_consistent_and_queues_follow_the_mode() {
        blksim_core::param::check_table(UFS_PARAMS).unwrap();
        let sdb = UfsConfig::from_lookup(&lookup(&[]), 8).unwrap();
        assert_eq!((sdb.nr_queues, sdb.tags), (1, 31));
        let mcq = UfsConfig::from_lookup(&lookup(&[("ufs.mode", "mcq")]), 8).unwrap();
        assert_eq!((mcq.nr_queues, mcq.tags), (8, 63));
        // More CPUs than a host can have queues: one per queue the host has.
        let big = UfsConfig::from_lookup(&lookup(&[("ufs.mode", "mcq")]), 4096).unwrap();
        assert_eq!(big.nr_queues, 256);
        assert!(UfsConfig::from_lookup(&lookup(&[("ufs.nutrs", "64")]), 8)
            .unwrap_err()
            .starts_with("ufs.nutrs:"));
    }

    /// SDB: one interrupt line on the IRQ CPU, a tag space of its own. MCQ: per-queue
    /// vectors on the submitting CPU, and one tag space shared by the queues (`host_tagset`).
    #[test]
    fn interrupt_and_tag_sharing_follow_the_mode() {
        for (mode, hw_irq, shared) in [("sdb", true, false), ("mcq", false, true)] {
            let get = lookup(&[("ufs.mode", mode)]);
            let cfg = UfsConfig::from_lookup(&get, 8).unwrap();
            let ufs = Ufs::new(cfg, UfsConfig::device(&get).unwrap()).unwrap();
            assert_eq!(
                (ufs.hw_irq(), ufs.shared_tags()),
                (hw_irq, shared),
                "{mode}"
            );
        }
    }

    /// The two UFS keys the SSD model reads under its own names keep the UFS table's bounds,
    /// and their errors name them.
    #[test]
    fn ufs_keys_for_the_ssd_are_checked_under_their_own_names() {
        let e = UfsConfig::device(&lookup(&[("ufs.wb_buffer_gib", "5000")])).unwrap_err();
        assert!(e.starts_with("ufs.wb_buffer_gib:"), "{e}");
        let e = UfsConfig::device(&lookup(&[("ufs.wb_buffer_gib", "abc")])).unwrap_err();
        assert!(e.starts_with("ufs.wb_buffer_gib:"), "{e}");
        let e = UfsConfig::device(&lookup(&[("ufs.state", "bogus")])).unwrap_err();
        assert!(e.starts_with("ufs.state:"), "{e}");
        let d = UfsConfig::device(&lookup(&[("ufs.wb_buffer_gib", "4096")])).unwrap();
        assert_eq!(d.slc_bytes, 4096 << 30);
    }

    /// WriteBooster: a sequential write of twice the buffer runs at the SLC rate up to the
    /// buffer's size, then at the native rate.
    #[test]
    fn writebooster_fills_then_the_native_rate() {
        let kv = [
            ("ufs.wb_buffer_gib", "1"),
            ("ufs.state", "fresh"),
            ("ssd.capacity_gib", "8"),
            ("ssd.channels", "1"),
            ("ssd.dies_per_channel", "2"),
            ("ssd.planes", "2"),
            ("ssd.dram_buffer_mib", "1"),
            ("ssd.t_prog_slc_ns", "100000"),
            ("ssd.t_prog_ns", "500000"),
            ("ssd.write_ctrl_ns", "0"),
        ];
        let mut s = Ssd::new(UfsConfig::device(&lookup(&kv)).unwrap()).unwrap();
        let (chunk, mut t, mut half) = (1u64 << 20, 0, 0);
        for i in 0..2048u64 {
            t = s.write(t, i * chunk, chunk);
            if i == 1023 {
                half = t;
            }
        }
        // 4 planes x 16 KiB = 64 KiB per round: SLC 655 MB/s, native 131 MB/s.
        let slc = 1024.0 * chunk as f64 / (half as f64 / 1e9);
        let native = 1024.0 * chunk as f64 / ((t - half) as f64 / 1e9);
        assert!((slc / 655.36e6 - 1.0).abs() < 0.02, "{slc}");
        assert!((native / 131.072e6 - 1.0).abs() < 0.05, "{native}");
    }

    /// A read after more idle time than the auto-hibern8 timer pays the hibern8 exit; one
    /// after a shorter gap does not.
    #[test]
    fn idle_links_hibernate_and_the_next_command_pays_the_exit() {
        let kv = [
            ("ufs.ahit_ns", "1000000"),
            ("ufs.h8_exit_ns", "300000"),
            ("ufs.irq_ns", "0"),
            ("ssd.capacity_gib", "4"),
        ];
        let mut u = Ufs::new(
            UfsConfig::from_lookup(&lookup(&kv), 1).unwrap(),
            UfsConfig::device(&lookup(&kv)).unwrap(),
        )
        .unwrap();
        let mut pool = RqPool::default();
        let rq = pool.alloc_rq(blksim_block::Request {
            op: Op::Read,
            sector: 0,
            nr_sectors: 8,
            ..Default::default()
        });
        let ctx = CallCtx { id: 0, cpu: 0 };
        let lat = |u: &mut Ufs, at: Ns| {
            let mut out = DriverOut::default();
            u.queue_rq(&pool, rq, 0, true, ctx, at, &mut out);
            let (done, p) = out.events[0];
            let mut o2 = DriverOut::default();
            u.on_event(p, &pool, done, &mut o2);
            done - at
        };
        let base = lat(&mut u, 0);
        // 0.5 ms idle: awake.
        let t1 = base + 500_000;
        assert_eq!(lat(&mut u, t1), base);
        // 5 ms idle: hibernating, 300 µs more.
        let t2 = t1 + base + 5_000_000;
        assert_eq!(lat(&mut u, t2), base + 300_000);
        // A second command sent during the exit reaches the device when the link is up too,
        // not before (the first is in flight, so the link is not idle for it).
        let t3 = t2 + base + 300_000 + 10_000_000;
        let mut out = DriverOut::default();
        u.queue_rq(&pool, rq, 0, true, ctx, t3, &mut out);
        assert_eq!(u.wake(t3 + 100_000), t3 + 300_000);
        assert_eq!(u.wake(t3 + 400_000), t3 + 400_000);
    }
}
