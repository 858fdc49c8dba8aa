//! null_blk (`drivers/block/null_blk/main.c`): a driver whose "device" does no work, so what
//! is measured is the block layer (and, with a timer, a fixed service time).
//!
//! Parameters keep the module-parameter names (reference §7). Completion by `irqmode`:
//! * 0 (none): `blk_mq_end_request` inline inside `queue_rq`;
//! * 1 (softirq): `blk_mq_complete_request`, completed after the platform's softirq latency
//!   ([`NullBlkConfig::softirq_nsec`], a model parameter, 0 on the ideal platform);
//! * 2 (timer): a per-command hrtimer fires `completion_nsec` after `queue_rq`.
//!
//! `mbps` throttling follows `null_handle_throttled`: 50 ticks a second
//! (`TICKS_PER_SEC`), a per-tick budget of `mbps` MiB/50; when exhausted the hardware queues
//! are stopped and the request gets BLK_STS_DEV_RESOURCE; a 20 ms timer refills the budget
//! and restarts the queues.

use blksim_block::driver::{CallCtx, DriverStats};
use blksim_block::{BlkStatus, Driver, DriverOut, RqId, RqPool};
use blksim_core::param::MAX_STEP_NS;
use blksim_core::{Ns, NSEC_PER_SEC};

/// `TICKS_PER_SEC` in null_blk.
const TICKS_PER_SEC: u64 = 50;
/// Throttle timer period: 1 s / TICKS_PER_SEC = 20 ms.
const TIMER_INTERVAL_NS: Ns = NSEC_PER_SEC / TICKS_PER_SEC;

pub use blksim_core::ParamDef;

/// What `blksim calibrate` fits on a null_blk profile unless told otherwise: the completion
/// delay of irqmode=2 (`null_handle_cmd` → `hrtimer_start(..., completion_nsec)`) and the
/// softirq completion latency of irqmode=1, the two times a measurement of the device sees.
pub const NULL_BLK_CALIBRATE: &[&str] = &["completion_nsec", "softirq_nsec"];

/// The null_blk parameters (module parameters and configfs attributes), the one place they
/// are defined. Keys are the kernel's names.
pub const NULL_BLK_PARAMS: &[ParamDef] = &[
    ParamDef::choice("queue_mode", "enum:0|2", "2", "0=bio (converted to 2), 2=multi-queue; 1=rq is rejected by recent kernels", "null_blk/main.c queue_mode"),
    ParamDef::new("submit_queues", "count", "1", 1, 4096, "number of hardware queues", "null_blk/main.c submit_queues (nr_cpu_ids at most; blksim: 4096)"),
    ParamDef::new("hw_queue_depth", "tags", "64", 1, BLK_MQ_MAX_DEPTH, "driver tags per hardware queue (tag_set.queue_depth)", "null_blk/main.c hw_queue_depth; BLK_MQ_MAX_DEPTH (10240)"),
    ParamDef::choice("irqmode", "enum:0|1|2", "1", "0=complete inline in queue_rq, 1=softirq, 2=timer after completion_nsec", "null_blk/main.c irqmode"),
    ParamDef::new("completion_nsec", "ns", "10000", 0, MAX_DEVICE_LATENCY_NS, "completion delay for irqmode=2", "null_blk/main.c completion_nsec; blksim bound: one hour"),
    ParamDef::new("blocksize", "bytes", "512", 512, 4096, "logical block size (a power of two)", "null_blk/main.c bs"),
    ParamDef::new("size", "MiB", "256000", 1, 1 << 30, "capacity (configfs size; module gb=250)", "null_blk/main.c gb/size; blksim bound: 1 PiB"),
    ParamDef::new("mbps", "MiB/s", "0", 0, 40960, "bandwidth cap, 0 = off", "null_blk/main.c mbps, null_handle_throttled"),
    ParamDef::choice("memory_backed", "bool", "false", "store data (forces blocking); no timing effect modelled", "null_blk/main.c memory_backed"),
    ParamDef::choice("blocking", "bool", "false", "BLK_MQ_F_BLOCKING", "null_blk/main.c blocking"),
    ParamDef::choice("shared_tag_bitmap", "bool", "false", "BLK_MQ_F_TAG_HCTX_SHARED: one tag space of hw_queue_depth for all submit_queues", "null_blk/main.c shared_tag_bitmap"),
    ParamDef::new("max_sectors", "sectors", "0", 0, 1 << 22, "max request size, 0 = default limit (BLK_DEF_MAX_SECTORS 2560)", "null_blk/main.c max_sectors"),
    ParamDef::new("cache_size", "MiB", "0", 0, 1 << 20, "volatile write cache; with memory_backed=1 the device declares a write cache and flushes reach it (null_validate_conf clears it otherwise)", "null_blk/main.c cache_size, null_add_dev"),
    ParamDef::choice("fua", "bool", "true", "with a cache: the device honours FUA itself (BLK_FEAT_FUA); false makes the block layer follow FUA writes with a flush", "null_blk/main.c fua"),
    ParamDef::new("softirq_nsec", "ns", "0", 0, MAX_STEP_NS, "model parameter: latency of the softirq completion for irqmode=1 (0 on the ideal platform)", "blksim model (not a kernel parameter)"),
];

/// `BLK_MQ_MAX_DEPTH` (`include/linux/blk-mq.h`).
pub const BLK_MQ_MAX_DEPTH: u64 = 10240;
/// The longest simulated device latency blksim accepts (one hour): far beyond any device,
/// and small enough that no sum of latencies reaches the end of the 64-bit ns clock.
pub const MAX_DEVICE_LATENCY_NS: u64 = 3600 * NSEC_PER_SEC;

fn def(key: &str) -> &'static ParamDef {
    NULL_BLK_PARAMS
        .iter()
        .find(|d| d.key == key)
        .unwrap_or_else(|| panic!("null_blk parameter {key} is not in the table"))
}

#[derive(Clone, Debug, PartialEq)]
pub struct NullBlkConfig {
    pub submit_queues: u16,
    pub hw_queue_depth: u32,
    pub irqmode: u8,
    pub completion_nsec: Ns,
    pub blocksize: u32,
    /// Capacity in MiB.
    pub size_mib: u64,
    pub mbps: u64,
    pub memory_backed: bool,
    pub blocking: bool,
    pub shared_tag_bitmap: bool,
    pub max_sectors: u32,
    pub softirq_nsec: Ns,
    /// `cache_size` in MiB (0 unless `memory_backed`, as `null_validate_conf` makes it).
    pub cache_size_mib: u64,
    pub fua: bool,
}

impl Default for NullBlkConfig {
    fn default() -> Self {
        NullBlkConfig {
            submit_queues: 1,
            hw_queue_depth: 64,
            irqmode: 1,
            completion_nsec: 10_000,
            blocksize: 512,
            size_mib: 256_000,
            mbps: 0,
            memory_backed: false,
            blocking: false,
            shared_tag_bitmap: false,
            max_sectors: 0,
            softirq_nsec: 0,
            cache_size_mib: 0,
            fua: true,
        }
    }
}

impl NullBlkConfig {
    /// Build from `key → value` strings (profile + `--set`), validating each.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut c = NullBlkConfig::default();
        // Every value goes through the table's parser and bounds; errors start with the key.
        let num = |key: &str| -> Result<Option<u64>, String> {
            get(key).map(|v| def(key).parse_u64(&v)).transpose()
        };
        let flag = |key: &str| -> Result<Option<bool>, String> {
            get(key).map(|v| def(key).parse_bool(&v)).transpose()
        };
        if let Some(v) = get("queue_mode") {
            if v.trim() == "1" {
                return Err(
                    "queue_mode: 1 (NULL_Q_RQ) is rejected by recent kernels; use 2".into(),
                );
            }
            def("queue_mode").parse_enum(&v)?;
        }
        if let Some(n) = num("submit_queues")? {
            c.submit_queues = n as u16;
        }
        if let Some(n) = num("hw_queue_depth")? {
            c.hw_queue_depth = n as u32;
        }
        if let Some(v) = get("irqmode") {
            c.irqmode = def("irqmode").parse_enum(&v)?.parse().unwrap_or(1);
        }
        if let Some(n) = num("completion_nsec")? {
            c.completion_nsec = n;
        }
        if let Some(n) = num("blocksize")? {
            if !n.is_power_of_two() {
                return Err(format!(
                    "blocksize: expected 512, 1024, 2048 or 4096, got {n}"
                ));
            }
            c.blocksize = n as u32;
        }
        if let Some(n) = num("size")? {
            c.size_mib = n;
        }
        if let Some(n) = num("mbps")? {
            c.mbps = n;
        }
        if let Some(b) = flag("memory_backed")? {
            c.memory_backed = b;
        }
        if let Some(b) = flag("blocking")? {
            c.blocking = b;
        }
        if let Some(b) = flag("shared_tag_bitmap")? {
            c.shared_tag_bitmap = b;
        }
        if let Some(n) = num("max_sectors")? {
            c.max_sectors = n as u32;
        }
        if let Some(n) = num("softirq_nsec")? {
            c.softirq_nsec = n;
        }
        if let Some(n) = num("cache_size")? {
            c.cache_size_mib = n;
        }
        if let Some(b) = flag("fua")? {
            c.fua = b;
        }
        // `null_validate_conf`: "cache is meaningless" without memory backing.
        if !c.memory_backed {
            c.cache_size_mib = 0;
        }
        Ok(c)
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.size_mib << 20
    }
}

const EV_COMPLETE: u64 = 0;
const EV_THROTTLE_TIMER: u64 = 1;

pub struct NullBlk {
    cfg: NullBlkConfig,
    /// Bytes left in this throttle tick (`cur_bytes`).
    cur_bytes: i64,
    throttle_timer_armed: bool,
    stopped: bool,
    in_flight: u32,
    completed: u64,
    throttled: u64,
}

impl NullBlk {
    pub fn new(cfg: NullBlkConfig) -> Self {
        let mb = Self::mb_per_tick(cfg.mbps);
        NullBlk {
            cfg,
            cur_bytes: mb,
            throttle_timer_armed: false,
            stopped: false,
            in_flight: 0,
            completed: 0,
            throttled: 0,
        }
    }

    fn mb_per_tick(mbps: u64) -> i64 {
        ((1u64 << 20) / TICKS_PER_SEC * mbps) as i64
    }

    pub fn config(&self) -> &NullBlkConfig {
        &self.cfg
    }
}

impl Driver for NullBlk {
    fn name(&self) -> &str {
        "null_blk"
    }

    fn nr_hw_queues(&self) -> u16 {
        self.cfg.submit_queues
    }

    fn queue_depth(&self) -> u32 {
        self.cfg.hw_queue_depth
    }

    fn shared_tags(&self) -> bool {
        self.cfg.shared_tag_bitmap
    }

    fn blocking(&self) -> bool {
        self.cfg.blocking || self.cfg.memory_backed
    }

    fn capacity_sectors(&self) -> u64 {
        self.cfg.capacity_bytes() >> 9
    }

    /// `null_add_dev`: a cache makes it `BLK_FEAT_WRITE_CACHE`, with `BLK_FEAT_FUA` if `fua`.
    /// Flushes then reach `null_handle_flush`, which costs no time on the ideal platform.
    fn write_cache(&self) -> bool {
        self.cfg.cache_size_mib > 0
    }

    fn fua(&self) -> bool {
        self.write_cache() && self.cfg.fua
    }

    fn apply_limits(&self, lim: &mut blksim_block::QueueLimits) {
        // `null_add_dev`: max_sectors module parameter, else BLK_DEF_MAX_SECTORS.
        if self.cfg.max_sectors > 0 {
            lim.max_hw_sectors_kb = self.cfg.max_sectors / 2;
        }
        lim.logical_block_size = self.cfg.blocksize;
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
        // `null_handle_throttled`.
        if self.cfg.mbps > 0 {
            if !self.throttle_timer_armed {
                self.throttle_timer_armed = true;
                out.events
                    .push((now + TIMER_INTERVAL_NS, EV_THROTTLE_TIMER << 32));
            }
            if self.cur_bytes <= 0 {
                self.throttled += 1;
                if !self.stopped {
                    self.stopped = true;
                    out.stop_queues = true;
                }
                return BlkStatus::DevResource;
            }
            self.cur_bytes -= pool.get(rq).bytes() as i64;
        }
        self.in_flight += 1;
        match self.cfg.irqmode {
            0 => {
                self.in_flight -= 1;
                self.completed += 1;
                out.completions.push((rq, BlkStatus::Ok));
            }
            1 => out
                .events
                .push((now + self.cfg.softirq_nsec, (EV_COMPLETE << 32) | rq as u64)),
            _ => out.events.push((
                now + self.cfg.completion_nsec,
                (EV_COMPLETE << 32) | rq as u64,
            )),
        }
        BlkStatus::Ok
    }

    fn on_event(&mut self, payload: u64, _pool: &RqPool, now: Ns, out: &mut DriverOut) {
        match payload >> 32 {
            EV_COMPLETE => {
                let rq = (payload & 0xffff_ffff) as RqId;
                self.in_flight -= 1;
                self.completed += 1;
                out.completions.push((rq, BlkStatus::Ok));
            }
            EV_THROTTLE_TIMER => {
                // `nullb_bwtimer_fn`: refill and restart stopped queues; the timer keeps
                // running while the device is in use.
                self.cur_bytes = Self::mb_per_tick(self.cfg.mbps);
                let was_stopped = self.stopped;
                if self.stopped {
                    self.stopped = false;
                    out.start_queues.push(now);
                }
                if self.in_flight > 0 || was_stopped {
                    out.events
                        .push((now + TIMER_INTERVAL_NS, EV_THROTTLE_TIMER << 32));
                } else {
                    self.throttle_timer_armed = false;
                }
            }
            k => panic!("null_blk: unknown event kind {k}"),
        }
    }

    fn stats(&self) -> DriverStats {
        DriverStats {
            entries: vec![
                ("completed".into(), self.completed),
                ("throttled".into(), self.throttled),
            ],
            faults: Vec::new(),
        }
    }

    fn check_invariants(&self) {
        let queues = if self.cfg.shared_tag_bitmap {
            1
        } else {
            self.cfg.submit_queues as u32
        };
        assert!(self.in_flight <= self.cfg.hw_queue_depth * queues);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kv: &[(&str, &str)]) -> Result<NullBlkConfig, String> {
        NullBlkConfig::from_lookup(&blksim_core::param::lookup_pairs(kv))
    }

    #[test]
    fn table_is_consistent_and_defaults_match_the_config() {
        blksim_core::param::check_table(NULL_BLK_PARAMS).unwrap();
        // The table's defaults are what an empty profile builds.
        let all: Vec<(&str, &str)> = NULL_BLK_PARAMS.iter().map(|d| (d.key, d.default)).collect();
        assert_eq!(cfg(&all).unwrap(), NullBlkConfig::default());
    }

    #[test]
    fn values_use_the_shared_syntax_and_bounds() {
        assert_eq!(
            cfg(&[("completion_nsec", "20us")]).unwrap().completion_nsec,
            20_000
        );
        assert_eq!(
            cfg(&[("completion_nsec", "20000")])
                .unwrap()
                .completion_nsec,
            20_000
        );
        let e = cfg(&[("completion_nsec", "2h")]).unwrap_err();
        assert!(
            e.starts_with("completion_nsec:") && e.contains("3600000000000"),
            "{e}"
        );
        assert!(cfg(&[("hw_queue_depth", "0")])
            .unwrap_err()
            .starts_with("hw_queue_depth:"));
        assert!(cfg(&[("irqmode", "3")])
            .unwrap_err()
            .starts_with("irqmode:"));
        assert!(cfg(&[("queue_mode", "1")])
            .unwrap_err()
            .contains("rejected"));
        assert!(cfg(&[("blocksize", "1536")])
            .unwrap_err()
            .starts_with("blocksize:"));
        assert_eq!(cfg(&[("irqmode", "2")]).unwrap().irqmode, 2);
    }

    fn rq(pool: &mut RqPool, sector: u64, nr: u32) -> RqId {
        pool.alloc_rq(blksim_block::Request {
            op: blksim_block::Op::Read,
            sector,
            nr_sectors: nr,
            ..Default::default()
        })
    }

    /// irqmode 0 completes inside `queue_rq`; 1 after the softirq latency; 2 after
    /// `completion_nsec`, from the timer event.
    #[test]
    fn irqmodes_complete_when_the_kernel_does() {
        let ctx = CallCtx { id: 0, cpu: 0 };
        for (mode, want) in [(0u8, None), (1, Some(700)), (2, Some(20_000))] {
            let mut pool = RqPool::default();
            let r = rq(&mut pool, 0, 8);
            let mut d = NullBlk::new(NullBlkConfig {
                irqmode: mode,
                completion_nsec: 20_000,
                softirq_nsec: 700,
                ..NullBlkConfig::default()
            });
            let mut out = DriverOut::default();
            assert_eq!(
                d.queue_rq(&pool, r, 0, true, ctx, 1000, &mut out),
                BlkStatus::Ok
            );
            match want {
                None => {
                    assert_eq!(out.completions, vec![(r, BlkStatus::Ok)]);
                    assert!(out.events.is_empty());
                }
                Some(lat) => {
                    assert!(out.completions.is_empty());
                    assert_eq!(out.events.len(), 1);
                    let (at, p) = out.events[0];
                    assert_eq!(at, 1000 + lat);
                    let mut o2 = DriverOut::default();
                    d.on_event(p, &pool, at, &mut o2);
                    assert_eq!(o2.completions, vec![(r, BlkStatus::Ok)]);
                }
            }
            d.check_invariants();
        }
    }

    /// `mbps`: a tick's budget is mbps MiB / 50; past it the queues stop and the request gets
    /// BLK_STS_DEV_RESOURCE, and the 20 ms timer refills the budget and restarts them.
    #[test]
    fn mbps_throttle_stops_and_restarts_the_queues() {
        let ctx = CallCtx { id: 0, cpu: 0 };
        let mut pool = RqPool::default();
        // 50 MiB/s: 1 MiB per 20 ms tick, i.e. two 512 KiB requests.
        let mut d = NullBlk::new(NullBlkConfig {
            irqmode: 0,
            mbps: 50,
            ..NullBlkConfig::default()
        });
        let mut out = DriverOut::default();
        let rqs: Vec<RqId> = (0..3).map(|i| rq(&mut pool, i * 1024, 1024)).collect();
        assert_eq!(
            d.queue_rq(&pool, rqs[0], 0, true, ctx, 0, &mut out),
            BlkStatus::Ok
        );
        assert_eq!(
            d.queue_rq(&pool, rqs[1], 0, true, ctx, 0, &mut out),
            BlkStatus::Ok
        );
        assert_eq!(
            d.queue_rq(&pool, rqs[2], 0, true, ctx, 0, &mut out),
            BlkStatus::DevResource
        );
        assert!(out.stop_queues);
        let timer = *out.events.first().expect("the throttle timer");
        assert_eq!(timer.0, TIMER_INTERVAL_NS);
        let mut o2 = DriverOut::default();
        d.on_event(timer.1, &pool, timer.0, &mut o2);
        assert_eq!(o2.start_queues, vec![TIMER_INTERVAL_NS]);
        assert_eq!(
            d.queue_rq(&pool, rqs[2], 0, true, ctx, timer.0, &mut o2),
            BlkStatus::Ok
        );
        assert_eq!(d.stats().entries[1], ("throttled".into(), 1));
    }
}
