//! Case generation from the tables, not from hand lists.
//!
//! * Job options come from fio's option table (`blksim_job::OPTIONS`): every modelled option
//!   can be drawn, enumerated ones from their `values`, the others by their `kind` in ranges
//!   that suit a short run (a few options with a known meaning get a drawer of their own, e.g.
//!   `random_distribution` with its parameters). Accepted-but-ignored options are drawn now and
//!   then too (they must only add a note).
//! * The device is any bundled profile (`blksim_sim::profile::BUNDLED`), the elevator any of
//!   `blksim_sched::ELEVATOR_NAMES` (by `--set=queue.scheduler` or fio's `ioscheduler`), the
//!   MMC host path any value of `host.queue` / `host.hsq_next_tag`.
//! * `--set` keys come from the parameter tables of the device's layers (`NULL_BLK_PARAMS`,
//!   `QUEUE_PARAMS`, `PLATFORM_PARAMS`, `CARD_PARAMS`/`HOST_PARAMS`, and the chosen elevator's
//!   tunables), values within each parameter's `[min, max]`, biased toward the default's
//!   neighbourhood and the edges, log-uniform across wide ranges. A parameter added to a table
//!   is drawn without any change here.
//!
//! Every case is small: each job's region, `io_size`, `loops` and `number_ios` are drawn from a
//! per-job share of the case's I/O budget, and the case is then parsed with the simulator's own
//! job parser and its I/O count bounded ([`estimate`]); a job over its share gets a
//! `number_ios` (and a smaller region when a verify phase reads it back). The simulator's cost
//! is proportional to events, not simulated time, so time values are drawn over their whole
//! range.
//!
//! Determinism: case `i` under fuzzer seed `s` comes from the named stream `case{i}` of
//! `RngStreams::new(s)` and nothing else (no wall clock, no other case). Within a case each
//! decision has a stream named by what it decides (`device`, `set.card.t_r_ns`,
//! `job1.thinktime`, ...), so a parameter or option added to a table adds draws without
//! changing what the others draw.

use super::case::{Case, Section};
use blksim_core::{ParamDef, Rng, RngStreams};
use blksim_job::options::{OptType, OptionDesc, Support, OPTIONS};
use blksim_job::{JobSet, JobSpec, RwPattern, SizeOrPct};
use blksim_sim::profile::{Profile, BUNDLED};

/// Case size limits.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// fio I/Os per case (all jobs and clones, syncs and the verify phase included).
    pub max_ios: u64,
    /// Bytes moved per case.
    pub max_bytes: u64,
    /// Test only: `--debug-drop-completion=N` on every run.
    pub debug_drop_completion: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_ios: 2000,
            max_bytes: 64 << 20,
            debug_drop_completion: 0,
        }
    }
}

/// Events allowed per unit of work (an I/O, a 4 KiB page moved): far above what any
/// configuration needs (a few to ~50 on the bundled profiles), so only a runaway loop of events
/// reaches the bound.
pub const EVENTS_PER_UNIT: u64 = 1000;
/// Events allowed whatever the case's size (timers, job start and end).
pub const EVENTS_BASE: u64 = 100_000;
/// `--max-events` of a case whose size is unknown (its job file does not parse: it is
/// rejected long before any event).
pub const EVENTS_UNKNOWN: u64 = 5_000_000;

/// Options the generator never draws: names and paths mean nothing to a simulated run.
const NOT_DRAWN: &[&str] = &[
    "name",
    "description",
    "filename",
    "directory",
    // A job's name, drawn per job below (an earlier job's, as fio requires).
    "wait_for",
];
/// Options drawn per job from its share of the budget (never in `[global]`).
const SIZING: &[&str] = &[
    "size",
    "io_size",
    "number_ios",
    "numjobs",
    "loops",
    "offset",
    "offset_increment",
    "filesize",
    "nrfiles",
];
/// Chance (per mille) of each key of the device's parameter space in a case that draws
/// `--set`s at random (about 5 keys of an MMC device's 100, 3 of null_blk's 55).
const SET_PER_MILLE: u64 = 50;
/// Chance (per mille) of each drawable option in a job section (about 2.5 of 60) and in
/// `[global]`.
const JOB_OPTION_PER_MILLE: u64 = 40;
const GLOBAL_OPTION_PER_MILLE: u64 = 12;
/// Options every job draws first (the rest are drawn at random from the table).
const CORE: &[&str] = &["rw", "ioengine", "iodepth", "bs", "bsrange", "bssplit"];

fn chance(r: &mut Rng, pct: u32) -> bool {
    r.percent(pct)
}

fn pick<'a, T>(r: &mut Rng, xs: &'a [T]) -> &'a T {
    &xs[r.below(xs.len() as u64) as usize]
}

/// Log-uniform in `[lo, hi]` (with `lo` 0 drawn now and then).
fn log_uniform(r: &mut Rng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    if lo == 0 && chance(r, 10) {
        return 0;
    }
    let lo1 = lo.max(1) as f64;
    let x = (lo1.ln() + r.f64() * ((hi as f64).ln() - lo1.ln())).exp();
    (x as u64).clamp(lo.max(1), hi)
}

/// The longest time parameter the generator draws, in ns, unless twice the parameter's
/// default is longer. Huge times cost nothing by themselves, but blk-mq re-runs a hardware
/// queue every 3 ms while the driver answers `BLK_STS_RESOURCE` (`BLK_MQ_RESOURCE_DELAY`) or
/// the elevator holds requests back (bfq idling: `BLK_MQ_BUDGET_DELAY`), as the kernel does,
/// so the events of a case grow with its busy and idle time: a 60 s DMA unmap per segment
/// turned 30 I/Os into 2.5 million queue runs, a 24-day `slice_idle` anything up to the
/// event bound.
pub const TIME_CAP_NS: u64 = 20_000_000;

/// The lowest clock frequency the generator draws (`Hz` parameters, 0 = "the mode's own"
/// stays possible): 400 kHz, the MMC identification clock (`mmc_power_up`'s `f_init`). A 1 Hz
/// bus takes minutes per block and, for the same reason as [`DEVICE_STEP_CAP_NS`], turns
/// busy time into millions of queue runs.
pub const MIN_CLOCK_HZ: u64 = 400_000;

/// Sizes that multiply the device's busy time per I/O, capped when drawn for the same reason
/// as [`TIME_CAP_NS`] (4 x their defaults): an allocation-unit FTL merge copies a whole unit
/// (a 1 GiB `card.au_kib` kept the card busy for over an hour of simulated time for 600
/// writes), page-FTL garbage collection a whole erase block.
const WORK_CAPS: &[(&str, u64)] = &[("card.au_kib", 16 << 10), ("card.pages_per_block", 1024)];

/// The bound of a `--set` key as drawn: time parameters are capped at [`TIME_CAP_NS`] (or
/// twice their default), clocks kept at or above [`MIN_CLOCK_HZ`], the sizes of
/// [`WORK_CAPS`] capped; the rest keep their table bounds.
pub fn draw_set(r: &mut Rng, k: &SetKey) -> String {
    if let Some((_, cap)) = WORK_CAPS.iter().find(|(key, _)| *key == k.key()) {
        let mut capped = *k.def;
        capped.max = capped.max.min((*cap).max(capped.min));
        return draw_param(r, &capped);
    }
    if k.def.unit == "Hz" && k.def.max >= MIN_CLOCK_HZ {
        let mut floor = *k.def;
        floor.min = floor.min.max(MIN_CLOCK_HZ);
        if k.def.min == 0 && chance(r, 20) {
            return "0".to_string();
        }
        return draw_param(r, &floor);
    }
    let per_unit = match k.def.unit {
        "ns" => Some(1),
        "us" => Some(1_000),
        "ms" => Some(1_000_000),
        _ => None,
    };
    if let Some(per_unit) = per_unit {
        let twice_default = k
            .def
            .parse_u64(k.def.default)
            .unwrap_or(0)
            .saturating_mul(2);
        let cap = (TIME_CAP_NS / per_unit).max(twice_default);
        let mut capped = *k.def;
        capped.max = capped.max.min(cap.max(capped.min));
        return draw_param(r, &capped);
    }
    draw_param(r, k.def)
}

/// A value for one model parameter, inside its bounds: the default's neighbourhood, the
/// default itself, the edges, or anywhere (log-uniform for wide ranges).
pub fn draw_param(r: &mut Rng, def: &ParamDef) -> String {
    if def.unit == "bool" {
        return (if chance(r, 50) { "true" } else { "false" }).to_string();
    }
    if let Some(choices) = def.unit.strip_prefix("enum:") {
        let c: Vec<&str> = choices.split('|').collect();
        return pick(r, &c).to_string();
    }
    let (lo, hi) = (def.min, def.max);
    let dv = def.parse_u64(def.default).ok();
    let roll = r.below(100);
    let v = match (roll, dv) {
        (0..=34, Some(d)) => {
            // Within a factor of 8 of the default (or small values around a zero default).
            if d == 0 {
                log_uniform(r, 0, hi.min(1000))
            } else {
                let f = 2f64.powf(r.f64() * 6.0 - 3.0);
                ((d as f64 * f) as u64).clamp(lo, hi)
            }
        }
        (35..=44, Some(d)) => d,
        (45..=54, _) => lo,
        (55..=64, _) => hi,
        (65..=69, _) => (lo + 1).min(hi),
        (70..=74, _) => hi.saturating_sub(1).max(lo),
        _ if hi - lo <= 64 => r.range_inclusive(lo, hi),
        _ => log_uniform(r, lo, hi),
    };
    v.to_string()
}

/// A `--set` key and the table definition it is checked against.
#[derive(Clone, Copy)]
pub struct SetKey {
    pub prefix: &'static str,
    pub def: &'static ParamDef,
}

impl SetKey {
    pub fn key(&self) -> String {
        format!("{}{}", self.prefix, self.def.key)
    }
}

/// The tables' test-only switches (`debug_*` keys, "test only" docs): bugs injected on
/// purpose, never part of a case.
fn test_only(def: &ParamDef) -> bool {
    let name = def.key.rsplit('.').next().unwrap_or(def.key);
    name.starts_with("debug_") || def.doc.to_ascii_lowercase().starts_with("test only")
}

/// Every `--set` key of a device with driver `driver` and elevator `elevator`, from the
/// tables.
pub fn param_space(driver: &str, elevator: &str) -> Vec<SetKey> {
    let mut v = Vec::new();
    let mut add = |prefix: &'static str, table: &'static [ParamDef]| {
        for def in table {
            if !test_only(def) {
                v.push(SetKey { prefix, def });
            }
        }
    };
    match driver {
        "null_blk" => add("", blksim_nullblk::NULL_BLK_PARAMS),
        "loop" => add("", blksim_loop::LOOP_PARAMS),
        "nvme" => {
            add("", blksim_nvme::NVME_PARAMS);
            add("", blksim_device::ssd::SSD_PARAMS);
        }
        "ufs" => {
            add("", blksim_ufs::UFS_PARAMS);
            add("", blksim_device::ssd::SSD_PARAMS);
        }
        _ => {
            add("", blksim_device::emmc::CARD_PARAMS);
            add("", blksim_device::emmc::HOST_PARAMS);
        }
    }
    add("queue.", blksim_sim::setup::QUEUE_PARAMS);
    add("platform.", blksim_sim::platform::PLATFORM_PARAMS);
    v.retain(|k| k.key() != "queue.scheduler");
    if driver == "ufs" {
        // A UFS device's state and SLC buffer are ufs.state and ufs.wb_buffer_gib.
        v.retain(|k| !["ssd.state", "ssd.slc_cache_gib"].contains(&k.key().as_str()));
    }
    for def in elevator_tunables(elevator) {
        if !test_only(def) {
            v.push(SetKey {
                prefix: "queue.iosched.",
                def,
            });
        }
    }
    v
}

/// The elevator's sysfs tunables (`queue.iosched.*`), as `blksim params` lists them.
fn elevator_tunables(name: &str) -> Vec<&'static ParamDef> {
    let ep = blksim_block::elevator::ElvParams {
        nr_requests: 128,
        queue_depth: 64,
        rotational: false,
        erase_block_bytes: None,
        seed: 0,
    };
    match blksim_sched::make_elevator(name, &ep) {
        Ok(Some(e)) => e.tunables().iter().map(|t| t.def).collect(),
        _ => Vec::new(),
    }
}

/// What a job's options are drawn against.
struct JobCtx {
    min_bs: u64,
    max_bs: u64,
    depth: u64,
    /// This job's share of the case's I/Os, per clone.
    quota: u64,
    size: u64,
    scheduler: String,
    engine: String,
}

/// Generate case `index` under fuzzer seed `seed`.
pub fn generate(seed: u64, index: u64, cfg: &GenConfig) -> Case {
    let mut root = RngStreams::new(seed).stream(&format!("case{index}"));
    let streams = RngStreams::new(root.next_u64());
    let mut r = streams.stream("device");
    let b = pick(&mut r, BUNDLED);
    let profile = Profile::parse(b.toml, b.name).expect("bundled profiles parse");
    let mut case = Case {
        index,
        seed: if chance(&mut r, 20) {
            r.below(100)
        } else {
            r.next_u64()
        },
        device: b.name.to_string(),
        sets: Vec::new(),
        sections: Vec::new(),
        json_plus: chance(&mut r, 30),
        max_events: EVENTS_UNKNOWN,
        max_ios: u64::MAX,
        debug_drop_completion: cfg.debug_drop_completion,
    };

    // The elevator: by --set, by fio's ioscheduler=, or the profile's own.
    let mut r = streams.stream("scheduler");
    let mut names: Vec<&str> = blksim_sched::ELEVATOR_NAMES.to_vec();
    names.push("deadline");
    let chosen = pick(&mut r, &names).to_string();
    let how = r.below(100);
    let scheduler = match how {
        0..=59 => {
            case.sets.push(("queue.scheduler".into(), chosen.clone()));
            chosen.clone()
        }
        60..=84 => chosen.clone(),
        _ => profile
            .get("queue.scheduler")
            .unwrap_or_else(|| "none".into()),
    };
    let fio_ioscheduler = (60..=84).contains(&how);
    let canonical = blksim_sched::canonical_name(&scheduler)
        .unwrap_or("none")
        .to_string();

    // --set keys from the tables: each key decides on its own stream, so a parameter added
    // to a table adds draws without changing the others.
    let random_sets = chance(&mut streams.stream("sets"), 75);
    for k in param_space(&profile.driver, &canonical) {
        let key = k.key();
        let mut r = streams.stream(&format!("set.{key}"));
        // The host paths are what the MMC model is about: drawn more often than the rest.
        let per_mille = match key.as_str() {
            "host.queue" | "host.hsq_next_tag" => 700,
            _ if random_sets => SET_PER_MILLE,
            _ => 0,
        };
        if r.below(1000) < per_mille {
            case.sets.push((key, draw_set(&mut r, &k)));
        }
    }
    sd_consistent(&mut case.sets, &profile, &mut streams.stream("sd"));

    // The job file. Options from the table decide on streams named by the option, so an
    // option added to the table does not change what the others draw.
    let mut r = streams.stream("jobs");
    let n_jobs = *pick(&mut r, &[1, 1, 1, 1, 2, 2, 2, 3, 3, 4]);
    let numjobs: Vec<u64> = (0..n_jobs)
        .map(|_| {
            if chance(&mut r, 25) {
                2 + r.below(3)
            } else {
                1
            }
        })
        .collect();
    let tasks: u64 = numjobs.iter().sum();
    let mut global = Section::new("global");
    let cx = JobCtx {
        min_bs: 4096,
        max_bs: 4096,
        depth: 8,
        quota: 1,
        size: 1 << 20,
        scheduler: scheduler.clone(),
        // The jobs choose the engine, so no engine's own options in [global].
        engine: "psync".into(),
    };
    for o in OPTIONS
        .iter()
        .filter(|o| drawable(o) && !SIZING.contains(&o.name))
    {
        let mut r = streams.stream(&format!("global.{}", o.name));
        if r.below(1000) < GLOBAL_OPTION_PER_MILLE {
            if let Some(v) = draw_option(&mut r, o, &cx) {
                global.set(o.name, v);
            }
        }
    }
    if fio_ioscheduler && chance(&mut r, 50) {
        global.set("ioscheduler", Some(scheduler.clone()));
    }
    if !global.opts.is_empty() {
        case.sections.push(global);
    }
    for (i, nj) in numjobs.iter().enumerate() {
        let quota = (cfg.max_ios / tasks).max(1);
        let mut sec = gen_job(&streams, i, *nj, quota, cfg, tasks, &scheduler);
        if fio_ioscheduler && i == 0 && !case.sections.iter().any(|s| s.has("ioscheduler")) {
            sec.set("ioscheduler", Some(scheduler.clone()));
        }
        case.sections.push(sec);
    }
    // fio wants the steady-state options equal within a reporting group: with any drawn,
    // each job gets a group of its own (its clones share its options), so such cases run
    // instead of being refused.
    const STEADY: [&str; 3] = [
        "steadystate",
        "steadystate_duration",
        "steadystate_ramp_time",
    ];
    if case
        .sections
        .iter()
        .any(|s| STEADY.iter().any(|k| s.has(k)))
    {
        for sec in case.sections.iter_mut().filter(|s| s.name != "global") {
            sec.set("new_group", None);
        }
    }
    bound(&mut case, cfg);
    case
}

/// Whether the generator may draw option `o` at random.
fn drawable(o: &OptionDesc) -> bool {
    o.support == Support::Modelled && !NOT_DRAWN.contains(&o.name) && !CORE.contains(&o.name)
}

/// A block size: powers of two from 512 B to 1 MiB, mostly 4 KiB to 128 KiB, now and then a
/// multiple of 512 that is not a power of two.
fn draw_bs(r: &mut Rng) -> u64 {
    if chance(r, 8) {
        return 512 * (1 + r.below(64));
    }
    let shift = *pick(
        r,
        &[9, 10, 11, 12, 12, 12, 13, 13, 14, 15, 16, 17, 18, 19, 20],
    );
    1 << shift
}

/// Size text as fio reads it: plain bytes or an exact k/m/g suffix.
fn fmt_size(r: &mut Rng, b: u64) -> String {
    if b == 0 || chance(r, 25) {
        return b.to_string();
    }
    for (s, m) in [("g", 1u64 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if b.is_multiple_of(m) {
            return format!("{}{s}", b / m);
        }
    }
    b.to_string()
}

fn gen_job(
    streams: &RngStreams,
    i: usize,
    numjobs: u64,
    quota: u64,
    cfg: &GenConfig,
    tasks: u64,
    scheduler: &str,
) -> Section {
    let mut sec = Section::new(&format!("job{i}"));
    let r = &mut streams.stream(&format!("job{i}.core"));
    let opt = |name: &str| OPTIONS.iter().find(|o| o.name == name);
    // rw, from the table's values; `:N` now and then.
    let rw_values: Vec<&str> = opt("rw")
        .map(|o| o.values.iter().map(|(n, _)| *n).collect())
        .unwrap_or_default();
    if !rw_values.is_empty() && chance(r, 95) {
        let rw = pick(r, &rw_values).to_string();
        let random = rw.starts_with("rand");
        let v = if chance(r, 10) {
            if random {
                format!("{rw}:{}", 1 + r.below(8))
            } else {
                format!("{rw}:{}", 512 * r.below(16))
            }
        } else {
            rw
        };
        sec.set("rw", Some(v));
    }
    // ioengine, from the table's values (the engines blksim models: psync, libaio, io_uring, null).
    let engines: Vec<&str> = opt("ioengine")
        .map(|o| o.values.iter().map(|(n, _)| *n).collect())
        .unwrap_or_default();
    let engine = if chance(r, 75) {
        pick(r, &["psync", "libaio", "io_uring", "null"]).to_string()
    } else if !engines.is_empty() {
        pick(r, &engines).to_string()
    } else {
        "psync".to_string()
    };
    let is_async = matches!(engine.as_str(), "libaio" | "io_uring" | "posixaio" | "null");
    let engine_name = engine.clone();
    sec.set("ioengine", Some(engine));
    let mut depth = 1;
    if is_async || chance(r, 15) {
        depth = if chance(r, 5) {
            128 + r.below(129)
        } else {
            log_uniform(r, 1, 64)
        };
        sec.set("iodepth", Some(depth.to_string()));
    }
    // Block sizes: bs (sometimes per direction), bsrange, bssplit or the default.
    let (min_bs, max_bs);
    match r.below(100) {
        0..=54 => {
            let a = draw_bs(r);
            if chance(r, 15) {
                let b = draw_bs(r);
                sec.set("bs", Some(format!("{},{}", fmt_size(r, a), fmt_size(r, b))));
                (min_bs, max_bs) = (a.min(b), a.max(b));
            } else {
                sec.set("bs", Some(fmt_size(r, a)));
                (min_bs, max_bs) = (a, a);
            }
        }
        55..=69 => {
            let (a, b) = (draw_bs(r), draw_bs(r));
            let (lo, hi) = (a.min(b), a.max(b));
            sec.set(
                "bsrange",
                Some(format!("{}-{}", fmt_size(r, lo), fmt_size(r, hi))),
            );
            (min_bs, max_bs) = (lo, hi);
        }
        70..=84 => {
            let n = 1 + r.below(4);
            let mut left = 100;
            let mut parts = Vec::new();
            let (mut lo, mut hi) = (u64::MAX, 0);
            for k in 0..n {
                let b = draw_bs(r);
                lo = lo.min(b);
                hi = hi.max(b);
                let pct = if k + 1 == n { left } else { r.below(left + 1) };
                left -= pct;
                if chance(r, 15) {
                    parts.push(format!("{}/", fmt_size(r, b)));
                } else {
                    parts.push(format!("{}/{pct}", fmt_size(r, b)));
                }
            }
            sec.set("bssplit", Some(parts.join(":")));
            (min_bs, max_bs) = (lo, hi);
        }
        _ => (min_bs, max_bs) = (4096, 4096),
    }
    if numjobs > 1 {
        sec.set("numjobs", Some(numjobs.to_string()));
    }
    // The region: a share of the budget, at least one largest block.
    let quota = quota.min((cfg.max_bytes / tasks / max_bs).max(1));
    let blocks = log_uniform(r, 1, quota.max(1));
    let size = (min_bs * blocks).max(max_bs).div_ceil(512) * 512;
    sec.set("size", Some(fmt_size(r, size)));
    let cx = JobCtx {
        min_bs,
        max_bs,
        depth,
        quota,
        size,
        scheduler: scheduler.to_string(),
        engine: engine_name,
    };
    // Options from the table, each on its own stream; now and then under an alias.
    for o in OPTIONS
        .iter()
        .filter(|o| drawable(o) && !matches!(o.name, "size" | "numjobs"))
    {
        let mut r = streams.stream(&format!("job{i}.{}", o.name));
        if r.below(1000) >= JOB_OPTION_PER_MILLE {
            continue;
        }
        if let Some(v) = draw_option(&mut r, o, &cx) {
            let name = if !o.aliases.is_empty() && chance(&mut r, 10) {
                pick(&mut r, o.aliases).to_string()
            } else {
                o.name.to_string()
            };
            sec.set(&name, v);
        }
    }
    // `wait_for` names an earlier job.
    let r = &mut streams.stream(&format!("job{i}.wait_for"));
    if i > 0 && chance(r, 4) {
        sec.set("wait_for", Some(format!("job{}", r.below(i as u64))));
    }
    // An option fio has and blksim accepts with a note.
    let r = &mut streams.stream(&format!("job{i}.ignored"));
    if chance(r, 8) {
        let ignored: Vec<&OptionDesc> = OPTIONS
            .iter()
            .filter(|o| o.support != Support::Modelled)
            .collect();
        let o = pick(r, &ignored);
        if let Some(v) = draw_option(r, o, &cx) {
            sec.set(o.name, v);
        }
    }
    // A time-based job ends at its runtime; the budget needs an I/O count too.
    if sec.has("time_based") && !sec.has("number_ios") {
        sec.set("number_ios", Some(log_uniform(r, 1, quota).to_string()));
    }
    sec
}

/// A value for option `o` that fio's parser takes on its own (two tries; None: skip it;
/// Some(None): a bare key). The option's own setter is the judge, so a value syntax the
/// generic drawer gets wrong costs nothing but the option.
fn draw_option(r: &mut Rng, o: &OptionDesc, cx: &JobCtx) -> Option<Option<String>> {
    for _ in 0..2 {
        let v = draw_option_value(r, o, cx)?;
        let line = match &v {
            Some(v) => format!("{}={v}", o.name),
            None => o.name.to_string(),
        };
        // An engine's own options are only taken under that engine.
        let text = match o.category {
            blksim_job::options::Category::Engine => {
                format!("[check]\nioengine={}\n{line}\n", cx.engine)
            }
            _ => format!("[check]\n{line}\n"),
        };
        if blksim_job::jobfile::parse_job_str(&text, "check", &|_| None).is_ok() {
            return Some(v);
        }
    }
    None
}

fn draw_option_value(r: &mut Rng, o: &OptionDesc, cx: &JobCtx) -> Option<Option<String>> {
    let s = |x: String| Some(Some(x));
    let pct = |r: &mut Rng| -> u64 {
        match r.below(10) {
            0 => 0,
            1 => 100,
            _ => r.below(101),
        }
    };
    let ms = |r: &mut Rng, lo: u64, hi: u64| format!("{}ms", log_uniform(r, lo, hi));
    match o.name {
        "rwmixread" | "rwmixwrite" => s(pct(r).to_string()),
        "percentage_random" | "percentage_sequential" => {
            if chance(r, 20) {
                s(format!("{},{}", pct(r), pct(r)))
            } else {
                s(pct(r).to_string())
            }
        }
        "ba" => s(pick(r, &[512, 4096, cx.min_bs, cx.max_bs]).to_string()),
        "io_size" => s((cx.size / 2 * (1 + r.below(4))).max(cx.min_bs).to_string()),
        "offset" => match r.below(10) {
            0..=3 => s("0".into()),
            4..=6 => s(((1 + r.below(16384)) * 4096).to_string()),
            _ => s(format!("{}%", r.below(91))),
        },
        "offset_increment" => match r.below(3) {
            0 => s(cx.size.to_string()),
            1 => s(format!("{}%", 1 + r.below(20))),
            _ => s((cx.max_bs * (1 + r.below(8))).to_string()),
        },
        "number_ios" => s(log_uniform(r, 1, cx.quota).to_string()),
        "loops" => s((1 + r.below(3)).to_string()),
        "nrfiles" => s((1 + r.below(4)).to_string()),
        "filesize" => s((cx.size / (1 + r.below(2))).max(cx.max_bs).to_string()),
        "ioscheduler" => s(cx.scheduler.clone()),
        "iodepth_batch"
        | "iodepth_batch_complete_min"
        | "iodepth_batch_complete_max"
        | "iodepth_low" => s(match r.below(10) {
            0 => 0,
            1 => cx.depth + 1 + r.below(4),
            _ => r.range_inclusive(1, cx.depth.max(1)),
        }
        .to_string()),
        "randseed" => s(r.below(1 << 32).to_string()),
        "random_distribution" => draw_distribution(r, o, cx),
        "runtime" => s(ms(r, 1, 2000)),
        "ramp_time" => s(ms(r, 0, 200)),
        "startdelay" => {
            if chance(r, 25) {
                let (a, b) = (log_uniform(r, 0, 20), log_uniform(r, 0, 20));
                s(format!("{}ms-{}ms", a.min(b), a.max(b)))
            } else {
                s(ms(r, 0, 20))
            }
        }
        "rate" => {
            let mut v = || log_uniform(r, 64 << 10, 1 << 30);
            let (a, b) = (v(), v());
            if chance(r, 25) {
                s(format!("{a},{b}"))
            } else {
                s(a.to_string())
            }
        }
        "rate_iops" => s(log_uniform(r, 1, 200_000).to_string()),
        "thinktime" => s(format!("{}us", log_uniform(r, 0, 100_000))),
        "thinktime_blocks" => s(log_uniform(r, 1, 32).to_string()),
        "fsync" | "fdatasync" => s(log_uniform(r, 0, 32).to_string()),
        "verify_backlog" => s(log_uniform(r, 1, 64).to_string()),
        "verify_backlog_batch" => s(r.below(65).to_string()),
        "percentile_list" => {
            let n = 1 + r.below(8);
            let mut v: Vec<String> = (0..n)
                .map(|_| match r.below(4) {
                    0 => "99.99".to_string(),
                    1 => format!("{}", r.below(101)),
                    _ => format!("{}.{}", r.below(100), r.below(10)),
                })
                .collect();
            v.dedup();
            s(v.join(":"))
        }
        "cmdprio_percentage" => {
            if chance(r, 25) {
                s(format!("{},{}", pct(r), pct(r)))
            } else {
                s(pct(r).to_string())
            }
        }
        // `bs/perc[/class/level]` entries of the job's sizes, at most 100 % per size.
        "cmdprio_bssplit" => {
            let mut left = 100;
            let parts: Vec<String> = (0..1 + r.below(3))
                .map(|_| {
                    let bs = *pick(r, &[cx.min_bs, cx.max_bs]);
                    let p = r.below(left.min(60) + 1);
                    left -= p;
                    if chance(r, 30) {
                        format!("{bs}/{p}")
                    } else {
                        format!("{bs}/{p}/{}/{}", r.below(4), r.below(8))
                    }
                })
                .collect();
            s(parts.join(":"))
        }
        "kb_base" if chance(r, 70) => None,
        // Every platform has a CPU 0; the platform's size is not known here.
        "sqthread_poll_cpu" => s("0".into()),
        _ => draw_generic(r, o, cx),
    }
}

/// `random_distribution`: a name from the table's values, with parameters for the ones that
/// take them.
fn draw_distribution(r: &mut Rng, o: &OptionDesc, cx: &JobCtx) -> Option<Option<String>> {
    let (name, _) = *pick(r, o.values);
    let center = |r: &mut Rng| {
        if chance(r, 30) {
            format!(":{}", r.below(11) as f64 / 10.0)
        } else {
            String::new()
        }
    };
    let v = match name {
        "zipf" => {
            let t = [0.2, 0.5, 0.8, 1.1, 1.2, 1.5, 2.0][r.below(7) as usize];
            format!("zipf:{t}{}", center(r))
        }
        "pareto" => format!("pareto:{}{}", (1 + r.below(99)) as f64 / 100.0, center(r)),
        "normal" => format!("normal:{}{}", r.below(100), center(r)),
        "zoned" | "zoned_abs" => {
            let n = 1 + r.below(4);
            let mut left_p = 100;
            let mut left_r = 100;
            let mut zones = Vec::new();
            for k in 0..n {
                let last = k + 1 == n;
                let p = if last { left_p } else { r.below(left_p + 1) };
                left_p -= p;
                if name == "zoned" {
                    let rg = if last { left_r } else { r.below(left_r + 1) };
                    left_r -= rg;
                    zones.push(format!("{p}/{rg}"));
                } else {
                    // Well inside the file: nrfiles and offsets make it smaller than `size`.
                    let sz = (cx.size / n / 4 / 512 * 512).max(512);
                    zones.push(format!("{p}/{sz}"));
                }
            }
            format!("{name}:{}", zones.join(":"))
        }
        other => other.to_string(),
    };
    Some(Some(v))
}

/// Any other option, by its kind: picks up options added to the table later.
fn draw_generic(r: &mut Rng, o: &OptionDesc, cx: &JobCtx) -> Option<Option<String>> {
    if !o.values.is_empty() {
        return Some(Some(pick(r, o.values).0.to_string()));
    }
    Some(match o.kind {
        OptType::Flag => {
            if chance(r, 85) {
                None
            } else {
                Some(pick(r, &["0", "1"]).to_string())
            }
        }
        OptType::Bool => Some(pick(r, &["0", "1"]).to_string()),
        OptType::Int => Some(log_uniform(r, 0, 64).to_string()),
        OptType::Size => Some((cx.min_bs * (1 + r.below(8))).to_string()),
        OptType::Time => Some(format!("{}ms", log_uniform(r, 0, 10))),
        OptType::Range => {
            let (a, b) = (cx.min_bs, cx.max_bs);
            Some(format!("{a}-{b}"))
        }
        OptType::FloatList => Some("50:99".to_string()),
        // The log-file options write files where the case runs (tests run cases in-process,
        // in the test's directory); crates/blksim/tests/logs.rs covers them.
        OptType::OptStr => return None,
        // Accepted-but-ignored options take anything; a modelled free-text option needs a
        // drawer of its own.
        OptType::Str if o.support != Support::Modelled => Some("1".to_string()),
        OptType::Str => return None,
    })
}

/// The generator's bound on a parsed job set; None when a job has no bound (no `size`,
/// `time_based` without `number_ios`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Upper bound of fio's I/O count (syncs and verify reads included).
    pub ios: u64,
    /// The same with one sync per write at most: what the case typically does, for keeping
    /// it small.
    pub work: u64,
    /// Bytes moved at most.
    pub bytes: u64,
}

/// Bound one job clone, or None if unbounded.
fn job_bound(j: &JobSpec) -> Option<Estimate> {
    let dirs: Vec<usize> = [
        (j.rw.has_read(), 0),
        (j.rw.has_write(), 1),
        (j.rw.has_trim(), 2),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, d)| *d)
    .collect();
    // With `bs_is_seq_rand` every direction takes the read sizes (sequential I/O) or the
    // write sizes (random I/O).
    let size_dirs: &[usize] = if j.bs_is_seq_rand { &[0, 1] } else { &dirs };
    let min_bs = size_dirs.iter().map(|&d| j.bs[d].min).min()?.max(1);
    let max_bs = size_dirs.iter().map(|&d| j.bs[d].max).max()?.max(1);
    let loops = u64::from(j.loops.max(1));
    let region = match j.size {
        Some(SizeOrPct::Bytes(b)) => {
            Some(b.max(j.filesize.unwrap_or(0) * u64::from(j.nrfiles.max(1))))
        }
        _ => None,
    };
    let by_bytes = j
        .io_size
        .or(region)
        .map(|b| (b.saturating_mul(loops) / min_bs).saturating_add(loops + 1));
    // `exceeds_number_ios`: number_ios × loops.
    let by_count = (j.number_ios > 0).then_some(j.number_ios.saturating_mul(loops));
    let trimwrite = matches!(j.rw, RwPattern::TrimWrite | RwPattern::RandTrimWrite);
    // A sequential trimwrite job that skips (`rw=trimwrite:N`) can wrap onto a block it
    // wrote and trim it again and again, and only its writes move the bytes that end it, so
    // its region does not bound it: `number_ios` or its runtime does (fio 3.33 runs
    // `rw=trimwrite:5632 size=8k number_ios=9` as 17 trims and a write, as here; without
    // `number_ios`, until the runtime ends).
    let wraps = trimwrite && j.rw_seq_skip != 0;
    let mut ios = if j.time_based || wraps {
        by_count?
    } else {
        match (by_bytes, by_count) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        }
    };
    if trimwrite {
        ios = ios.saturating_mul(2);
    }
    let bytes = ios.saturating_mul(max_bs);
    let rw_ios = ios;
    // fio 3.33 decides on a sync by the last *completed* io_u (`should_fsync`), so while syncs
    // are in flight more may start: up to a queue's worth per write. And one more at each
    // pass's start: `clear_io_state` clears `last_was_sync`, so the sync after a pass's last
    // write is followed by another before the next pass's first I/O (fio 3.33 on a 1 MiB
    // loop device: `rw=write:7680 size=6048 io_size=36288 fsync=1` is 8 writes, 15 syncs).
    let mut work = ios;
    if j.fsync > 0 || j.fdatasync > 0 {
        let depth = u64::from(j.effective_depth());
        work = ios.saturating_mul(2).saturating_add(1);
        ios = ios
            .saturating_mul(depth + 1)
            .saturating_add(rw_ios)
            .saturating_add(1);
    }
    let mut extra = u64::from(j.end_fsync);
    let mut extra_bytes = 0;
    if blksim_sim::verify::has_verify_phase(j) {
        // Each pass's verify reads back at most the writes it logged. Under a ramp those
        // include the writes done before it ended, which `number_ios` does not count (fio's
        // `reset_all_stats` zeroes `io_blocks`): then only the region bounds them.
        let logged = if j.ramp_time_ns > 0 && by_count.is_some() {
            by_bytes?
        } else {
            rw_ios
        };
        extra += logged;
        extra_bytes = logged.saturating_mul(j.bs[1].max);
    }
    Some(Estimate {
        ios: ios.saturating_add(extra),
        work: work.saturating_add(extra),
        bytes: bytes.saturating_add(extra_bytes),
    })
}

/// Bound a whole job set (every clone of every job).
pub fn estimate(set: &JobSet) -> Option<Estimate> {
    let mut e = Estimate {
        ios: 0,
        work: 0,
        bytes: 0,
    };
    for j in &set.jobs {
        let b = job_bound(j)?;
        let n = u64::from(j.numjobs.max(1));
        e.ios = e.ios.saturating_add(b.ios.saturating_mul(n));
        e.work = e.work.saturating_add(b.work.saturating_mul(n));
        e.bytes = e.bytes.saturating_add(b.bytes.saturating_mul(n));
    }
    Some(e)
}

/// Parse a case's job file as the simulator will.
pub fn parse_case(case: &Case) -> Option<JobSet> {
    blksim_job::jobfile::parse_job_str(&case.job_text(), "fuzz.fio", &|_| None).ok()
}

/// `--max-events` for an estimate.
pub fn max_events_for(e: Option<Estimate>) -> u64 {
    match e {
        Some(e) => EVENTS_BASE
            .saturating_add(EVENTS_PER_UNIT.saturating_mul(e.ios.saturating_add(e.bytes / 4096))),
        None => EVENTS_UNKNOWN,
    }
}

/// Keep the case within the budget: jobs over their share get a `number_ios` (and a smaller
/// region when their verify phase would read too much back); then set the case's
/// `--max-events` and I/O bound from the estimate of the parsed job file.
fn bound(case: &mut Case, cfg: &GenConfig) {
    for _ in 0..4 {
        let Some(set) = parse_case(case) else {
            return;
        };
        let e = estimate(&set);
        if let Some(e) = e {
            if e.work <= cfg.max_ios && e.bytes <= cfg.max_bytes {
                break;
            }
        }
        let tasks: u64 = set.jobs.iter().map(|j| u64::from(j.numjobs.max(1))).sum();
        let jobs: Vec<usize> = (0..case.sections.len())
            .filter(|&i| case.sections[i].name != "global")
            .collect();
        for (j, &si) in set.jobs.iter().zip(&jobs) {
            let max_bs = j.bs.iter().map(|b| b.max).max().unwrap_or(4096).max(1);
            let share = (cfg.max_ios / tasks)
                .min(cfg.max_bytes / tasks / max_bs)
                .max(1);
            let sec = &mut case.sections[si];
            if job_bound(j).is_none_or(|b| b.work > share) {
                sec.set("number_ios", Some((share / 2).max(1).to_string()));
                if blksim_sim::verify::has_verify_phase(j) || j.size.is_none() {
                    let size = (share / 2).max(1) * j.bs[1].min.max(512);
                    sec.set("size", Some(size.max(max_bs).to_string()));
                    sec.remove("filesize");
                }
            }
        }
    }
    let e = parse_case(case).and_then(|s| estimate(&s));
    case.max_events = max_events_for(e);
    case.max_ios = e.map(|e| e.ios).unwrap_or(u64::MAX);
}

/// Recompute a case's I/O bound after the minimiser changed it (`--max-events` stays as it
/// was, so a minimised repro runs as the original did). Returns the new estimate.
pub fn rebound(case: &mut Case) -> Option<Estimate> {
    let e = parse_case(case).and_then(|s| estimate(&s));
    case.max_ios = e.map(|e| e.ios).unwrap_or(u64::MAX);
    e
}

/// An SD card (`card.kind=sd`) needs an SD bus mode on 4 lines and a host path other than
/// CQE; an SD bus mode needs an SD card. Drawn keys that disagree are brought into line (the
/// kind decides), so SD cases run instead of being rejected by the cross-key checks.
fn sd_consistent(sets: &mut Vec<(String, String)>, profile: &Profile, r: &mut Rng) {
    let get = |sets: &[(String, String)], k: &str| {
        sets.iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .or_else(|| profile.get(k))
    };
    let Some(mode) = get(sets, "host.bus_mode") else {
        return; // not an MMC device
    };
    let sd_mode = blksim_device::emmc::bus::BusMode::parse(&mode).is_ok_and(|m| m.is_sd());
    let sd = get(sets, "card.kind").as_deref() == Some("sd");
    let queue = get(sets, "host.queue");
    let set = |sets: &mut Vec<(String, String)>, k: &str, v: &str| {
        sets.push((k.to_string(), v.to_string()))
    };
    if sd && !sd_mode {
        let m = *pick(r, &["sd_hs", "sdr50", "sdr104", "ddr50"]);
        set(sets, "host.bus_mode", m);
    } else if !sd && sd_mode {
        set(sets, "card.kind", "sd");
    }
    if sd || sd_mode {
        set(sets, "host.bus_width", "4");
        if queue.as_deref() == Some("cqe") {
            let q = *pick(r, &["legacy", "hsq"]);
            set(sets, "host.queue", q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_cases_and_cases_are_independent() {
        let cfg = GenConfig::default();
        for i in 0..50 {
            assert_eq!(generate(7, i, &cfg), generate(7, i, &cfg));
        }
        let a: Vec<String> = (0..20).map(|i| generate(7, i, &cfg).job_text()).collect();
        let b: Vec<String> = (0..20).map(|i| generate(8, i, &cfg).job_text()).collect();
        assert_ne!(a, b);
    }

    /// A trimwrite job that skips is bounded by twice its `number_ios` even when its region
    /// is smaller, and not at all without it: offsets that wrap onto a written block trim it
    /// again without moving the bytes that end the job (the fuzzer flagged
    /// `rw=trimwrite:5632 size=8k number_ios=9`, which fio 3.33 runs as 17 trims and a
    /// write, against a bound of 8, and `rw=trimwrite:2560 bs=2k size=4k runtime=1ms`:
    /// 1188 trims against 8).
    #[test]
    fn a_trimwrite_job_that_skips_is_bounded_by_its_number_ios() {
        let parse = |t: &str| blksim_job::jobfile::parse_job_str(t, "t.fio", &|_| None).unwrap();
        let ios = |t: &str| estimate(&parse(t)).map(|e| e.ios);
        let base = "[j]\nrw=trimwrite:5632\nsize=8k\n";
        assert_eq!(ios(&format!("{base}number_ios=9\n")), Some(18));
        assert_eq!(ios(base), None);
        // Without the skip the region bounds it (each block trimmed and written once).
        assert_eq!(ios("[j]\nrw=trimwrite\nsize=8k\nnumber_ios=9\n"), Some(8));
        // A plain write job keeps the smaller of the two.
        assert_eq!(ios("[j]\nrw=write:5632\nsize=8k\nnumber_ios=9\n"), Some(4));
    }

    /// A verifying job under a ramp reads back the writes of the ramp too, which `number_ios`
    /// does not count: the bound is the region's, not twice `number_ios` (the fuzzer once
    /// flagged 3 writes read back for `number_ios=2`: the first had completed when the ramp
    /// ended, and fio's `reset_all_stats` zeroes the `io_blocks` that `number_ios` counts).
    #[test]
    fn a_ramp_widens_the_verify_bound_to_the_region() {
        let parse = |t: &str| blksim_job::jobfile::parse_job_str(t, "t.fio", &|_| None).unwrap();
        let base = "[j]\nrw=readwrite\nrwmixwrite=100\nverify=sha1\nnumber_ios=2\n";
        assert_eq!(estimate(&parse(base)).map(|e| e.ios), Some(4));
        let ramp = format!("{base}ramp_time=2ms\n");
        assert_eq!(estimate(&parse(&ramp)), None);
        let sized = format!("{ramp}size=64k\nbs=4k\n");
        // 2 counted I/Os, and 16 blocks read back with the bound's slack of loops + 1.
        assert_eq!(estimate(&parse(&sized)).map(|e| e.ios), Some(2 + 16 + 2));
    }

    /// With `bs_is_seq_rand` a sequential trim takes the read size: `bs=4k,1m` trims 1 MiB in
    /// 256 I/Os, as real fio 3.33 does, where the trim size alone would allow 1 (the fuzzer
    /// flagged it).
    #[test]
    fn bs_is_seq_rand_bounds_by_the_sizes_it_takes() {
        let parse = |t: &str| blksim_job::jobfile::parse_job_str(t, "t.fio", &|_| None).unwrap();
        let base = "[j]\nrw=trim\nbs=4k,1m\nsize=1m\n";
        let ios = |t: &str| estimate(&parse(t)).map(|e| e.ios).unwrap();
        assert!(ios(base) < 256, "{}", ios(base));
        assert!(ios(&format!("{base}bs_is_seq_rand=1\n")) >= 256);
    }

    #[test]
    fn cases_stay_within_the_budget() {
        let cfg = GenConfig::default();
        let mut bounded = 0;
        for i in 0..300 {
            let c = generate(11, i, &cfg);
            assert!(c.max_events >= EVENTS_BASE);
            if let Some(e) = parse_case(&c).and_then(|s| estimate(&s)) {
                bounded += 1;
                assert!(
                    e.work <= 4 * cfg.max_ios && e.bytes <= 4 * cfg.max_bytes,
                    "case {i}: {e:?}\n{}",
                    c.job_text()
                );
            }
        }
        assert!(
            bounded > 250,
            "{bounded} of 300 cases parse and are bounded"
        );
    }

    /// Every parameter of every table can be drawn, inside its bounds, and a parameter added
    /// to a table is in the space without any change here.
    #[test]
    fn every_table_parameter_is_drawn_within_bounds() {
        let mut r = Rng::from_seed(5);
        for (driver, elv) in [("null_blk", "bfq"), ("mmc", "kyber"), ("mmc", "eraseblock")] {
            let space = param_space(driver, elv);
            for k in &space {
                for _ in 0..50 {
                    let v = draw_param(&mut r, k.def);
                    let ok = if k.def.unit == "bool" {
                        k.def.parse_bool(&v).is_ok()
                    } else if k.def.unit.starts_with("enum:") {
                        k.def.parse_enum(&v).is_ok()
                    } else {
                        k.def.parse_u64(&v).is_ok()
                    };
                    assert!(ok, "{}={v}", k.key());
                }
            }
            let keys: Vec<String> = space.iter().map(|k| k.key()).collect();
            assert!(keys.iter().any(|k| k.starts_with("queue.iosched.")));
            assert!(keys.iter().any(|k| k.starts_with("platform.")));
            assert!(!keys.iter().any(|k| k.contains("debug_")));
        }
        // Prefixed keys (`card.debug_...`) and docs in any case are test-only switches too.
        let t = ParamDef::choice("card.debug_x", "bool", "false", "Test only: d", "s");
        assert!(test_only(&t));
        let t = ParamDef::choice("card.x", "bool", "false", "test only: d", "s");
        assert!(test_only(&t));
        let t = ParamDef::choice("card.x", "bool", "false", "a switch", "s");
        assert!(!test_only(&t));
        let mmc: Vec<String> = param_space("mmc", "none").iter().map(|k| k.key()).collect();
        for d in blksim_device::emmc::CARD_PARAMS
            .iter()
            .chain(blksim_device::emmc::HOST_PARAMS)
        {
            assert_eq!(mmc.contains(&d.key.to_string()), !test_only(d), "{}", d.key);
        }
    }
}
