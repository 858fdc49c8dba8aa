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
use blksim_core::{Ns, NSEC_PER_SEC};

/// `TICKS_PER_SEC` in null_blk.
const TICKS_PER_SEC: u64 = 50;
/// Throttle timer period: 1 s / TICKS_PER_SEC = 20 ms.
const TIMER_INTERVAL_NS: Ns = NSEC_PER_SEC / TICKS_PER_SEC;

pub use blksim_core::ParamDef;

/// The null_blk parameters (module parameters and configfs attributes), the one place they
/// are defined. Keys are the kernel's names.
pub const NULL_BLK_PARAMS: &[ParamDef] = &[
    ParamDef { key: "queue_mode", unit: "enum", default: "2", doc: "0=bio (converted to 2), 1=rq (rejected), 2=multi-queue", source: "null_blk/main.c queue_mode" },
    ParamDef { key: "submit_queues", unit: "count", default: "1", doc: "number of hardware queues", source: "null_blk/main.c submit_queues" },
    ParamDef { key: "hw_queue_depth", unit: "tags", default: "64", doc: "driver tags per hardware queue (tag_set.queue_depth)", source: "null_blk/main.c hw_queue_depth" },
    ParamDef { key: "irqmode", unit: "enum", default: "1", doc: "0=complete inline in queue_rq, 1=softirq, 2=timer after completion_nsec", source: "null_blk/main.c irqmode" },
    ParamDef { key: "completion_nsec", unit: "ns", default: "10000", doc: "completion delay for irqmode=2", source: "null_blk/main.c completion_nsec" },
    ParamDef { key: "blocksize", unit: "bytes", default: "512", doc: "logical block size", source: "null_blk/main.c bs" },
    ParamDef { key: "size", unit: "MiB", default: "256000", doc: "capacity (configfs size; module gb=250)", source: "null_blk/main.c gb/size" },
    ParamDef { key: "mbps", unit: "MiB/s", default: "0", doc: "bandwidth cap, 0 = off", source: "null_blk/main.c mbps, null_handle_throttled" },
    ParamDef { key: "memory_backed", unit: "bool", default: "false", doc: "store data (forces blocking); no timing effect modelled", source: "null_blk/main.c memory_backed" },
    ParamDef { key: "blocking", unit: "bool", default: "false", doc: "BLK_MQ_F_BLOCKING", source: "null_blk/main.c blocking" },
    ParamDef { key: "max_sectors", unit: "sectors", default: "0", doc: "max request size, 0 = default limit (BLK_DEF_MAX_SECTORS 2560)", source: "null_blk/main.c max_sectors" },
    ParamDef { key: "softirq_nsec", unit: "ns", default: "0", doc: "model parameter: latency of the softirq completion for irqmode=1 (0 on the ideal platform)", source: "blksim model (not a kernel parameter)" },
];

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
    pub max_sectors: u32,
    pub softirq_nsec: Ns,
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
            max_sectors: 0,
            softirq_nsec: 0,
        }
    }
}

impl NullBlkConfig {
    /// Build from `key → value` strings (profile + `--set`), validating each.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut c = NullBlkConfig::default();
        fn num<T: std::str::FromStr>(key: &str, v: &str, unit: &str) -> Result<T, String> {
            v.trim()
                .parse::<T>()
                .map_err(|_| format!("'{key}': expected a whole number ({unit}), got '{v}'"))
        }
        fn boolean(key: &str, v: &str) -> Result<bool, String> {
            match v.trim() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" => Ok(false),
                _ => Err(format!("'{key}': expected true/false, got '{v}'")),
            }
        }
        if let Some(v) = get("queue_mode") {
            match v.trim() {
                "0" | "2" => {}
                "1" => {
                    return Err(
                        "'queue_mode': 1 (NULL_Q_RQ) is rejected by recent kernels; use 2".into(),
                    )
                }
                _ => return Err(format!("'queue_mode': expected 0 or 2, got '{v}'")),
            }
        }
        if let Some(v) = get("submit_queues") {
            c.submit_queues = num("submit_queues", &v, "count")?;
            if c.submit_queues == 0 {
                c.submit_queues = 1; // the kernel clamps to at least 1
            }
        }
        if let Some(v) = get("hw_queue_depth") {
            c.hw_queue_depth = num("hw_queue_depth", &v, "tags")?;
            if c.hw_queue_depth == 0 {
                return Err("'hw_queue_depth': must be at least 1".into());
            }
        }
        if let Some(v) = get("irqmode") {
            c.irqmode = num("irqmode", &v, "0, 1 or 2")?;
            if c.irqmode > 2 {
                return Err(format!("'irqmode': expected 0, 1 or 2, got '{v}'"));
            }
        }
        if let Some(v) = get("completion_nsec") {
            c.completion_nsec = num("completion_nsec", &v, "ns")?;
        }
        if let Some(v) = get("blocksize") {
            c.blocksize = num("blocksize", &v, "bytes")?;
            if !c.blocksize.is_power_of_two() || !(512..=4096).contains(&c.blocksize) {
                return Err(format!(
                    "'blocksize': expected 512, 1024, 2048 or 4096, got '{v}'"
                ));
            }
        }
        if let Some(v) = get("size") {
            c.size_mib = num("size", &v, "MiB")?;
            if c.size_mib == 0 {
                return Err("'size': must be at least 1 MiB".into());
            }
        }
        if let Some(v) = get("mbps") {
            c.mbps = num::<u64>("mbps", &v, "MiB/s")?.min(40960);
        }
        if let Some(v) = get("memory_backed") {
            c.memory_backed = boolean("memory_backed", &v)?;
        }
        if let Some(v) = get("blocking") {
            c.blocking = boolean("blocking", &v)?;
        }
        if let Some(v) = get("max_sectors") {
            c.max_sectors = num("max_sectors", &v, "sectors")?;
        }
        if let Some(v) = get("softirq_nsec") {
            c.softirq_nsec = num("softirq_nsec", &v, "ns")?;
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

    fn blocking(&self) -> bool {
        self.cfg.blocking || self.cfg.memory_backed
    }

    fn capacity_sectors(&self) -> u64 {
        self.cfg.capacity_bytes() >> 9
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
        }
    }

    fn check_invariants(&self) {
        assert!(self.in_flight <= self.cfg.hw_queue_depth * self.cfg.submit_queues as u32);
    }
}
