//! From parsed jobs and a device profile to a running simulation, and from its output to
//! fio's report model.

use crate::engine::{Sim, SimOutput};
use crate::error::RunError;
use crate::platform::Platform;
use crate::profile::Profile;
use blksim_block::elevator::ElvParams;
use blksim_block::{Driver, QueueLimits, RequestQueue};
use blksim_core::output::{Disk, OutputFiles};
use blksim_core::{ParamDef, RngStreams};
use blksim_job::{JobSet, JobSpec, ParseError};
use blksim_report::json::JsonValue;
use blksim_report::report::{DiskUtil, JobHeader, JobReport, RunReport, UnitBase};
use std::path::PathBuf;
use std::sync::Arc;

/// Options in the order fio prints them in the JSON's "global options" and "job options":
/// fio sorts a section's options by priority before it applies them (`sort_options`:
/// `kb_base`, `unit_base` first, `filename` last), and lists them in that order; equal
/// priorities keep the order written.
fn fio_order(opts: &[(String, String)]) -> Vec<(String, String)> {
    let prio = |k: &str| blksim_job::find_option(k).map_or(0, |o| o.prio);
    let mut v = opts.to_vec();
    v.sort_by_key(|(k, _)| std::cmp::Reverse(prio(k)));
    v
}

/// The default root seed (`--seed`), fixed so runs repeat unless asked otherwise.
pub const DEFAULT_SEED: u64 = 0x62_6c_6b_73_69_6d; // "blksim"

/// What a run reports to a progress display as it goes (simulated time and I/Os done).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub now_ns: u64,
    pub ios_done: u64,
    /// Where the run will end if every job is time-based (`runtime` set), else None.
    pub end_ns: Option<u64>,
    pub finished: bool,
}

/// Called every few hundred thousand events, and once at the end. The results never depend
/// on it: it is called at fixed event counts, and what it does (reading a clock, drawing)
/// stays outside the simulation.
pub type ProgressHook = std::sync::Arc<dyn Fn(&Progress) + Send + Sync>;

#[derive(Clone)]
pub struct RunOptions {
    pub seed: u64,
    pub blktrace: Option<PathBuf>,
    pub max_events: Option<u64>,
    /// Test only (`blksim run --debug-drop-completion=N`): lose the N-th bio completion, a
    /// bug injected so the fuzzer's test can see it caught; 0 = off.
    pub debug_drop_completion: u64,
    /// A progress display (`blksim run` draws a bar on a terminal).
    pub progress: Option<ProgressHook>,
    /// `--explain=N`: keep the paths of the N slowest I/Os (0 = off).
    pub explain: usize,
    /// Print every event on stderr (a debugging aid; the binary sets it from
    /// `BLKSIM_DEBUG_EVENTS`, the library never reads the environment).
    pub debug_events: bool,
    /// Where log files, `write_iolog` and the blktrace files go (default: the file system).
    pub files: Arc<dyn OutputFiles>,
    /// Keep each job's completions over time (the HTML report's IOPS and bandwidth charts).
    pub timeline: bool,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("seed", &self.seed)
            .field("blktrace", &self.blktrace)
            .field("max_events", &self.max_events)
            .field("progress", &self.progress.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: DEFAULT_SEED,
            blktrace: None,
            max_events: None,
            debug_drop_completion: 0,
            progress: None,
            explain: 0,
            debug_events: false,
            files: Arc::new(Disk),
            timeline: false,
        }
    }
}

/// Sysfs queue settings (`queue.*`), named as `/sys/block/<dev>/queue/*`. Values come from
/// the profile and `--set`; the defaults are [`QueueLimits::default`] after the driver's
/// limits (`Driver::apply_limits`).
pub const QUEUE_PARAMS: &[ParamDef] = &[
    ParamDef::choice("scheduler", "enum:none|mq-deadline|deadline|kyber|bfq|eraseblock", "none", "the elevator (fio's ioscheduler= wins; deadline is the kernel's alias of mq-deadline)", "block/elevator.c elv_iosched_store"),
    ParamDef::new("nr_requests", "requests", "auto", 4, 2048, "scheduler tags per hardware queue (for all of them when the driver shares its tags); auto = 2 x min(queue_depth, 128)", "block/blk-mq-sched.c blk_mq_init_sched; bounds: blk-sysfs.c queue_requests_store (BLKDEV_MIN_RQ 4; with an elevator at most MAX_SCHED_RQ = 16 x BLKDEV_DEFAULT_RQ = 2048, else EINVAL)"),
    ParamDef::new("max_sectors_kb", "KiB", "1280", 1, 1 << 22, "largest request (capped by max_hw_sectors_kb)", "BLK_DEF_MAX_SECTORS (2560 sectors); blk-sysfs.c queue_max_sectors_store"),
    ParamDef::new("max_segments", "count", "128", 1, 65535, "segments per request", "BLK_MAX_SEGMENTS; drivers override (mmc_setup_queue)"),
    ParamDef::choice("nomerges", "enum:0|1|2", "0", "0 all merges, 1 one-hit cache only, 2 none", "block/blk-sysfs.c queue_nomerges_store"),
    ParamDef::choice("rotational", "bool", "false", "rotational device (bfq and mq-deadline heuristics)", "block/blk-sysfs.c"),
    ParamDef::choice("rq_affinity", "enum:0|1|2", "1", "completion CPU: 0 the IRQ CPU, 1 the submitter's unless they share a cache, 2 always the submitter's", "block/blk-sysfs.c queue_rq_affinity_store, blk_mq_complete_need_ipi"),
    ParamDef::new("sched_batch_dispatch", "requests", "0", 0, 65536, "batch dispatch under one elevator lock (unmerged 2025 series); 0 = mainline", "Yu Kuai, blk-mq-sched: support request batch dispatching for sq elevator (v1-v4, 2025)"),
];

/// A key of another driver's table (`host.*`/`card.*` are MMC's, `nvme.*`/`ssd.*` NVMe's) is
/// an error naming where it was set, not a value silently ignored.
fn reject_other_tables(p: &Profile, driver: &str, tables: &[&str]) -> Result<(), String> {
    for top in tables {
        if let Some((k, v)) = p.with_prefix(top).first() {
            let owner = match *top {
                "host" | "card" => "MMC",
                "ufs" => "UFS",
                "nvme" => "NVMe",
                _ => "NVMe and UFS",
            };
            return Err(format!(
                "{}: '{top}.{k}' applies to {owner} devices, not {driver}",
                v.origin
            ));
        }
    }
    Ok(())
}

/// A driver with table-prefixed keys takes no bare `[device]` keys.
fn no_bare_keys(p: &Profile, what: &str, tables: &str) -> Result<(), String> {
    match p.device_keys().first() {
        Some((k, v)) => Err(format!(
            "{}: '{k}': {what} profiles take {tables} keys, not bare device keys",
            v.origin
        )),
        None => Ok(()),
    }
}

/// Every key of the driver's `tables` (`""`: the bare `[device]` keys) is one its parameter
/// tables define: otherwise an error naming where it was set and the nearest known key.
fn known_keys(
    p: &Profile,
    what: &str,
    tables: &[&str],
    defs: &[&'static [ParamDef]],
) -> Result<(), String> {
    let known = || defs.iter().flat_map(|t| t.iter().map(|d| d.key));
    for k in p.values.keys() {
        let table = k.split_once('.').map_or("", |(t, _)| t);
        if tables.contains(&table) && !known().any(|d| d == k) {
            let hint = crate::profile::nearest(k, known())
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            return Err(format!(
                "{}: unknown {what} parameter '{k}'{hint}",
                p.origin(k)
            ));
        }
    }
    Ok(())
}

/// Build the driver a profile describes, on its platform (drivers with a queue per CPU
/// size their queues from `platform.nr_cpus`).
pub fn build_driver(p: &Profile, platform: &Platform) -> Result<Box<dyn Driver>, String> {
    match p.driver.as_str() {
        "null_blk" => {
            known_keys(p, "null_blk", &[""], &[blksim_nullblk::NULL_BLK_PARAMS])?;
            reject_other_tables(p, "null_blk", &["host", "card", "nvme", "ufs", "ssd"])?;
            let cfg = blksim_nullblk::NullBlkConfig::from_lookup(&|k| p.get(k))
                .map_err(|e| locate(p, &e))?;
            Ok(Box::new(blksim_nullblk::NullBlk::new(cfg)))
        }
        "loop" => {
            known_keys(p, "loop", &[""], &[blksim_loop::LOOP_PARAMS])?;
            reject_other_tables(p, "loop", &["host", "card", "nvme", "ufs", "ssd"])?;
            let cfg =
                blksim_loop::LoopConfig::from_lookup(&|k| p.get(k)).map_err(|e| locate(p, &e))?;
            Ok(Box::new(blksim_loop::Loop::new(cfg)))
        }
        "mmc" => {
            no_bare_keys(p, "MMC", "host.* and card.*")?;
            reject_other_tables(p, "mmc", &["nvme", "ufs", "ssd"])?;
            let tables: [&[ParamDef]; 2] = [
                blksim_device::emmc::CARD_PARAMS,
                blksim_device::emmc::HOST_PARAMS,
            ];
            known_keys(p, "MMC", &["host", "card"], &tables)?;
            blksim_mmc::build_mmc_driver(&MmcLookup(p)).map_err(|e| locate(p, &e))
        }
        "nvme" => {
            no_bare_keys(p, "NVMe", "nvme.* and ssd.*")?;
            reject_other_tables(p, "nvme", &["host", "card", "ufs"])?;
            let tables = [blksim_nvme::NVME_PARAMS, blksim_device::ssd::SSD_PARAMS];
            known_keys(p, "NVMe", &["nvme", "ssd"], &tables)?;
            let cfg = blksim_nvme::NvmeConfig::from_lookup(&|k| p.get(k), platform.nr_cpus)
                .map_err(|e| locate(p, &e))?;
            let ssd = blksim_device::ssd::SsdConfig::from_lookup(&|k| p.get(k))
                .map_err(|e| locate(p, &e))?;
            Ok(Box::new(
                blksim_nvme::Nvme::new(cfg, ssd).map_err(|e| locate(p, &e))?,
            ))
        }
        "ufs" => {
            no_bare_keys(p, "UFS", "ufs.* and ssd.*")?;
            reject_other_tables(p, "ufs", &["host", "card", "nvme"])?;
            // A UFS device names its state and its SLC buffer its own way.
            for (ssd_key, ufs_key) in [
                ("ssd.state", "ufs.state"),
                ("ssd.slc_cache_gib", "ufs.wb_buffer_gib"),
            ] {
                if p.values.contains_key(ssd_key) {
                    return Err(format!(
                        "{}: '{ssd_key}': a UFS device takes '{ufs_key}'",
                        p.origin(ssd_key)
                    ));
                }
            }
            let tables = [blksim_ufs::UFS_PARAMS, blksim_device::ssd::SSD_PARAMS];
            known_keys(p, "UFS", &["ufs", "ssd"], &tables)?;
            let cfg = blksim_ufs::UfsConfig::from_lookup(&|k| p.get(k), platform.nr_cpus)
                .map_err(|e| locate(p, &e))?;
            let dev = blksim_ufs::UfsConfig::device(&|k| p.get(k)).map_err(|e| locate(p, &e))?;
            Ok(Box::new(
                blksim_ufs::Ufs::new(cfg, dev).map_err(|e| locate(p, &e))?,
            ))
        }
        other => Err(format!(
            "{}: driver '{other}' is not available in this build",
            p.file
        )),
    }
}

/// Queue limits from the profile's `queue.*` keys over the driver's limits.
pub fn build_limits(p: &Profile, drv: &dyn Driver) -> Result<QueueLimits, String> {
    let mut lim = QueueLimits::default();
    drv.apply_limits(&mut lim);
    // `blk_queue_write_cache(q, wc, fua)`: what the flush machinery sequences.
    lim.write_cache = drv.write_cache();
    lim.fua = lim.write_cache && drv.fua();
    // Kernel default: nr_requests = 2 × min(queue_depth, BLKDEV_DEFAULT_RQ=128)
    // (`blk_mq_init_sched`).
    lim.nr_requests = 2 * drv.queue_depth().min(128);
    for (k, v) in p.with_prefix("queue") {
        if k.starts_with("iosched.") {
            continue;
        }
        let Some(def) = QUEUE_PARAMS.iter().find(|d| d.key == k) else {
            let hint = crate::profile::nearest(&k, QUEUE_PARAMS.iter().map(|q| q.key))
                .map(|s| format!(" (did you mean 'queue.{s}'?)"))
                .unwrap_or_default();
            return Err(format!(
                "{}: unknown queue setting 'queue.{k}'{hint}",
                v.origin
            ));
        };
        let at = |e: String| format!("{}: queue.{e}", v.origin);
        let num = || def.parse_u64(&v.value).map_err(at);
        let choice = || -> Result<u8, String> {
            Ok(def.parse_enum(&v.value).map_err(at)?.parse().unwrap_or(0))
        };
        match k.as_str() {
            "scheduler" => lim.scheduler = def.parse_enum(&v.value).map_err(at)?.to_string(),
            "nr_requests" => lim.nr_requests = num()? as u32,
            "max_sectors_kb" => {
                let n = num()?;
                if n < (lim.logical_block_size as u64 / 1024).max(1) {
                    return Err(format!(
                        "{}: queue.max_sectors_kb: must be at least one logical block",
                        v.origin
                    ));
                }
                lim.max_sectors_kb = (n as u32).min(lim.max_hw_sectors_kb);
            }
            "max_segments" => lim.max_segments = num()? as u16,
            "nomerges" => lim.nomerges = choice()?,
            "rotational" => lim.rotational = def.parse_bool(&v.value).map_err(at)?,
            "sched_batch_dispatch" => lim.sched_batch_dispatch = num()? as u32,
            "rq_affinity" => lim.rq_affinity = choice()?,
            _ => unreachable!("queue.{k} is in QUEUE_PARAMS but not applied"),
        }
    }
    Ok(lim)
}

/// Expand jobs into tasks: (spec index, clone index, group id, tasks to wait for).
pub fn expand_jobs(jobs: &[JobSpec]) -> Vec<(usize, u32, u32, Vec<u32>)> {
    let mut out = Vec::new();
    let mut groupid = 0u32;
    let mut task_idx = 0u32;
    for (i, j) in jobs.iter().enumerate() {
        if i > 0 && (j.stonewall || j.new_group) {
            groupid += 1;
        }
        let wait: Vec<u32> = if j.stonewall {
            (0..task_idx).collect()
        } else {
            Vec::new()
        };
        // A job without stonewall still waits for whatever an earlier stonewall waited for:
        // fio starts jobs in order and a stonewall holds everything after it.
        let mut wait = if wait.is_empty() {
            out.iter()
                .rev()
                .find(|(s, _, _, _): &&(usize, u32, u32, Vec<u32>)| jobs[*s].stonewall)
                .map(|x| x.3.clone())
                .unwrap_or_default()
        } else {
            wait
        };
        // `wait_for`: every clone of the named job (`waitee_running`), which
        // [`check_wait_for`] found once among the earlier jobs.
        if let Some(name) = j.wait_for.as_deref() {
            for (t, (s, _, _, _)) in out.iter().enumerate() {
                if jobs[*s].name == name && !wait.contains(&(t as u32)) {
                    wait.push(t as u32);
                }
            }
            wait.sort_unstable();
        }
        for c in 0..j.numjobs.max(1) {
            out.push((i, c, groupid, wait.clone()));
            task_idx += 1;
        }
    }
    out
}

/// `wait_for` as fio's `wait_for_ok` checks it when it adds the job: not the job itself, and
/// exactly one earlier job of that name.
fn check_wait_for(jobs: &[JobSpec]) -> Result<(), ParseError> {
    for (i, j) in jobs.iter().enumerate() {
        let Some(name) = j.wait_for.as_deref() else {
            continue;
        };
        let n = jobs[..i].iter().filter(|w| w.name == name).count();
        let msg = if name == j.name {
            format!("a job cannot wait for itself (wait_for={name})")
        } else if n == 0 {
            format!("waitee job {name} unknown (it must come before this job)")
        } else if n > 1 {
            format!(
                "multiple waitees {name} found, please avoid duplicates when using wait_for option"
            )
        } else {
            continue;
        };
        return Err(j.error_at(&["wait_for"], msg));
    }
    Ok(())
}

/// The elevator for the run: fio's `ioscheduler=` wins over the profile. An unknown name, or
/// two jobs asking for different ones, is an error at the job file line that asked.
fn elevator_name(jobs: &[JobSpec], lim: &QueueLimits) -> Result<String, ParseError> {
    let mut chosen: Option<(&str, &JobSpec)> = None;
    for j in jobs {
        if let Some(s) = j.ioscheduler.as_deref() {
            if blksim_sched::canonical_name(s).is_none() {
                return Err(j.error_at(
                    &["ioscheduler"],
                    format!(
                        "unknown I/O scheduler '{s}' (known: {})",
                        blksim_sched::ELEVATOR_NAMES.join(", ")
                    ),
                ));
            }
            if let Some((c, _)) = chosen {
                if blksim_sched::canonical_name(c) != blksim_sched::canonical_name(s) {
                    return Err(j.error_at(
                        &["ioscheduler"],
                        format!("this job asks for I/O scheduler '{s}', an earlier job for '{c}'; blksim simulates one device queue"),
                    ));
                }
            }
            chosen = Some((s, j));
        }
    }
    Ok(chosen.map(|(s, _)| s).unwrap_or(&lim.scheduler).to_string())
}

/// fio's `read_blktrace`: a job replaying blktrace binary files without an `iodepth` of its
/// own takes the depth probed from the trace (and `iodepth_low` with it), before the run and
/// its report.
pub fn prepare_replay(jobs: &mut JobSet) -> Result<(), ParseError> {
    for j in &mut jobs.jobs {
        if j.iodepth_set {
            continue;
        }
        let probed = blksim_workload::iolog::probed_iodepth(&j.replay)
            .map_err(|e| j.error_at(&["read_iolog"], e))?;
        if let Some(d) = probed {
            j.iodepth_shown = Some(j.iodepth);
            j.iodepth = d;
            j.iodepth_low = Some(d);
        }
    }
    Ok(())
}

/// Build and run a simulation.
pub fn run(jobs: &JobSet, profile: &Profile, opts: &RunOptions) -> Result<SimOutput, RunError> {
    if jobs.jobs.is_empty() {
        return Err(RunError::Run("no jobs to run".into()));
    }
    let platform = Platform::from_profile(profile).map_err(RunError::Profile)?;
    let driver = build_driver(profile, &platform).map_err(RunError::Profile)?;
    let mut lim = build_limits(profile, &*driver).map_err(RunError::Profile)?;
    let elv_name = elevator_name(&jobs.jobs, &lim)?;
    check_wait_for(&jobs.jobs)?;
    lim.scheduler = elv_name.clone();
    let streams = RngStreams::new(opts.seed);
    let params = ElvParams {
        nr_requests: lim.nr_requests,
        queue_depth: driver.queue_depth(),
        rotational: lim.rotational,
        erase_block_bytes: erase_block_bytes(profile),
        seed: streams.stream("elevator").next_u64(),
    };
    let mut elevator = blksim_sched::make_elevator_with_limits(&elv_name, &params, &lim)
        .map_err(RunError::Profile)?;
    if let Some(e) = elevator.as_mut() {
        e.set_capacity(driver.capacity_sectors());
    }
    if let Some(e) = elevator.as_mut() {
        for (k, v) in profile.with_prefix("queue.iosched") {
            e.set_tunable(&k, &v.value).map_err(|err| {
                RunError::Profile(format!("{}: queue.iosched.{k}: {err}", v.origin))
            })?;
        }
    } else if let Some((k, v)) = profile.with_prefix("queue.iosched").first() {
        return Err(RunError::Profile(format!(
            "{}: queue.iosched.{k}: the 'none' scheduler has no tunables",
            v.origin
        )));
    }
    let mut tag_rng = streams.stream("tags");
    let mut queue = RequestQueue::with_tag_set(
        lim,
        elevator,
        driver.nr_hw_queues(),
        driver.queue_depth(),
        driver.shared_tags(),
        platform.nr_cpus as usize,
        &mut tag_rng,
    );
    // Where completions run (`blk_mq_complete_request`): the IRQ CPU for hardware-interrupt
    // drivers, otherwise the submitting CPU.
    queue.set_completion_topology(
        driver.hw_irq().then_some(platform.irq_cpu),
        platform.llc_cpus,
    );
    // CPUs and locks, a service the simulation owns and lends to the block layer and the
    // drivers; the ideal platform leaves the model off entirely.
    queue.apply_elevator_footprint();
    let mut cpus = blksim_block::cpu::CpuModel::default();
    if !platform.is_ideal() {
        let elv = queue.elevator().map(|e| (e.name(), e.cpu_footprint()));
        let costs = platform.cpu_costs(elv);
        cpus = blksim_block::cpu::CpuModel::new(
            costs,
            platform.nr_cpus as usize,
            driver.nr_hw_queues() as usize,
        );
        cpus.set_on(true);
    }
    let trace = match &opts.blktrace {
        Some(dir) => {
            let mut w = blksim_trace::BlktraceWriter::create_in(
                opts.files.clone(),
                dir,
                &devname(profile),
                (259, 0),
            )
            .map_err(|e| RunError::Run(format!("--blktrace={}: {e}", dir.display())))?;
            // One process name per task (job clone): the trace's pid is 1000 + task index.
            let tasks: usize = jobs.jobs.iter().map(|j| j.numjobs.max(1) as usize).sum();
            for i in 0..tasks {
                w.set_comm(1000 + i as u32, "fio");
            }
            Some(w)
        }
        None => None,
    };
    let clones = expand_jobs(&jobs.jobs);
    let mut sim = Sim::new(
        &jobs.jobs,
        &clones,
        queue,
        cpus,
        driver,
        platform,
        opts.seed,
        trace,
        opts.files.clone(),
    )?;
    sim.set_deadlines(&jobs.jobs);
    if let Some(m) = opts.max_events {
        sim.set_max_events(m);
    }
    sim.set_debug_drop_completion(opts.debug_drop_completion);
    sim.set_progress(opts.progress.clone());
    sim.set_explain(opts.explain);
    sim.set_debug_events(opts.debug_events);
    sim.set_timeline(opts.timeline);
    sim.run().map_err(RunError::Run)
}

/// The device's erase block as the `eraseblock` scheduler should see it: an eMMC card's
/// allocation unit (`card.au_kib`, the `preferred_erase_size` Linux reads from the card) with
/// the allocation-unit FTL, else its NAND erase block (`card.page_kib` × `card.pages_per_block`).
/// None for devices without one (the scheduler then assumes 512 KiB).
fn erase_block_bytes(p: &Profile) -> Option<u64> {
    use blksim_device::emmc::params::{get_enum, get_u64};
    if p.driver != "mmc" {
        return None;
    }
    let l = MmcLookup(p);
    match get_enum(&l, "card.ftl").ok()? {
        "au" => get_u64(&l, "card.au_kib").ok().map(|k| k * 1024),
        _ => Some(
            get_u64(&l, "card.page_kib").ok()? * get_u64(&l, "card.pages_per_block").ok()? * 1024,
        ),
    }
}

/// The simulated block device's name (for disk stats and blktrace files).
pub fn devname(p: &Profile) -> String {
    match p.driver.as_str() {
        "null_blk" => "nullb0".into(),
        "loop" => "loop0".into(),
        "nvme" => "nvme0n1".into(),
        "ufs" => "sda".into(),
        _ => "mmcblk0".into(),
    }
}

/// Wall-clock stamps for the report (the only fields allowed to differ between runs).
#[derive(Clone, Debug, Default)]
pub struct WallClock {
    pub timestamp: u64,
    pub timestamp_ms: u64,
    pub ctime: String,
}

/// fio's report model from a simulation's output.
pub fn build_report(
    jobs: &JobSet,
    profile: &Profile,
    opts: &RunOptions,
    out: &SimOutput,
    wall: &WallClock,
) -> RunReport {
    let mut r = RunReport {
        timestamp: wall.timestamp,
        timestamp_ms: wall.timestamp_ms,
        time: wall.ctime.clone(),
        global_options: fio_order(&jobs.global_options),
        depth: out.depth.clone(),
        ..RunReport::default()
    };
    // Headers: one per job section, groups as expanded.
    let clones = expand_jobs(&jobs.jobs);
    for (i, j) in jobs.jobs.iter().enumerate() {
        let gid = clones.iter().find(|c| c.0 == i).map(|c| c.2).unwrap_or(0);
        let mut h = JobHeader::new(
            &j.name,
            &rw_text(j),
            j.bs[0].min,
            j.ioengine.name(),
            j.iodepth_shown.unwrap_or(j.iodepth),
        );
        h.groupid = gid;
        for d in 0..3 {
            h.bs[d] = (j.bs[d].min, j.bs[d].max);
            if !j.bs[d].split.is_empty() {
                let mn = j.bs[d]
                    .split
                    .iter()
                    .map(|s| s.bs)
                    .min()
                    .unwrap_or(j.bs[d].min);
                let mx = j.bs[d]
                    .split
                    .iter()
                    .map(|s| s.bs)
                    .max()
                    .unwrap_or(j.bs[d].max);
                h.bs[d] = (mn, mx);
            }
        }
        h.numjobs = j.numjobs;
        h.thread = j.thread;
        h.kb_base = j.kb_base;
        r.headers.push(h);
    }
    // Job reports, folded per group where group_reporting is set.
    let mut reports: Vec<JobReport> = Vec::new();
    // eta.c `calc_thread_status`, called when the report is printed: `elapsed` is the whole
    // run's, in seconds rounded up from ms (`(mtime_since_genesis() + 999) / 1000`), the same
    // for every job whatever its group; `eta` is INT_MAX while that is under 3 s, and 0 once
    // every job has finished.
    let run_ms = out.tasks.iter().map(|t| t.end_ns).max().unwrap_or(0) / 1_000_000;
    let elapsed_sec = run_ms.div_ceil(1000);
    let eta = if elapsed_sec >= 3 { 0 } else { i32::MAX as i64 };
    for (i, t) in out.tasks.iter().enumerate() {
        let spec = &jobs.jobs[t.spec];
        let mut jr = JobReport::new(&t.name, t.groupid, i as u32, spec.iodepth, t.stats.clone());
        jr.ctime = wall.ctime.clone();
        jr.job_options = fio_order(&spec.raw_options);
        // Bare keys print no member, but make the object (`json_add_job_opts`).
        if jr.job_options.is_empty() && !spec.bare_options.is_empty() {
            jr.job_options = spec
                .bare_options
                .iter()
                .map(|k| (k.clone(), String::new()))
                .collect();
        }
        jr.kb_base = spec.kb_base;
        jr.sig_figs = spec.sig_figs;
        jr.unit_base = if spec.unit_base == 1 {
            UnitBase::Bits
        } else {
            UnitBase::Bytes
        };
        jr.elapsed_sec = elapsed_sec;
        jr.eta = eta;
        jr.steadystate = t.steadystate.clone();
        // `latency   : target=..., window=..., percentile=..., depth=...`: the options as
        // fio keeps them (ns, µs, %) and the depth the search settled on (`latency_qd`).
        jr.latency_target = spec.latency_target_ns;
        jr.latency_window = spec.latency_window_us;
        jr.latency_percentile = spec.latency_percentile;
        if let Some(qd) = t.latency_depth {
            jr.latency_depth = qd;
        }
        // fio's `__show_run_stats`: a fatal error with the `td_verror` text of where it was
        // set (`io_u error`, io_u.c:1876 in 3.33, or `td_io_queue`, ioengines.c:399), or,
        // with continue_on_error, the first counted error and the empty `verror` a non-fatal
        // error leaves.
        jr.continue_on_error = spec.continue_on_error != 0;
        jr.total_err_count = t.total_err_count;
        jr.first_error = t.first_error;
        if t.error != 0 {
            jr.error = t.error;
            jr.verror = t.verror();
        } else if jr.continue_on_error && t.first_error != 0 {
            jr.error = t.first_error;
        }
        reports.push(jr);
    }
    // `__show_run_stats`: a job joins the report before it when it has `group_reporting`
    // and the same group id; any other job starts a report of its own. So a job without
    // `group_reporting` after a reporting group stands alone, and one with it joins the
    // job before it of its group, even a job without it. (fio 3.33 then also prints an
    // empty report, which its count of reports expected: not copied.)
    let mut folded: Vec<JobReport> = Vec::new();
    let mut start = 0;
    for i in 1..=reports.len() {
        let joins = i < reports.len()
            && jobs.jobs[out.tasks[i].spec].group_reporting
            && reports[i].groupid == reports[i - 1].groupid;
        if joins {
            continue;
        }
        let m = if i - start == 1 {
            reports[start].clone()
        } else {
            JobReport::merge_group(&reports[start..i]).expect("a report per group")
        };
        folded.push(m);
        start = i;
    }
    r.jobs = folded;
    r.compute_groups();
    // Disk stats from the simulated device's block queue.
    let b = &out.blk;
    let end_ms = out.end_ns / 1_000_000;
    r.disk_util.push(DiskUtil {
        name: devname(profile),
        ios: b.ios,
        merges: b.merges,
        sectors: b.sectors,
        ticks: [b.ticks_ns[0] / 1_000_000, b.ticks_ns[1] / 1_000_000],
        // diskstats `time_in_queue`: the read, write, discard and flush nsecs together.
        in_queue: (b.ticks_ns[0] + b.ticks_ns[1] + b.discard_ticks_ns + b.flush_ticks_ns)
            / 1_000_000,
        io_ticks: b.busy_ns / 1_000_000,
        msec: end_ms,
    });
    r.blksim = Some(blksim_json(profile, opts, out));
    r
}

fn rw_text(j: &JobSpec) -> String {
    j.rw.fio_name().to_string()
}

fn blksim_json(profile: &Profile, opts: &RunOptions, out: &SimOutput) -> JsonValue {
    let mut o = JsonValue::object();
    o.push(
        "version",
        JsonValue::Str(env!("CARGO_PKG_VERSION").to_string()),
    );
    o.push("device", JsonValue::Str(profile.name.clone()));
    o.push("driver", JsonValue::Str(out.driver.clone()));
    o.push("scheduler", JsonValue::Str(out.elevator.clone()));
    o.push("seed", JsonValue::UInt(opts.seed));
    o.push("capacity_bytes", JsonValue::UInt(out.capacity_bytes));
    o.push("sim_time_ns", JsonValue::UInt(out.end_ns));
    o.push("events", JsonValue::UInt(out.events));
    o.push("event_digest", JsonValue::Str(out.digest.clone()));
    let mut bios = JsonValue::object();
    bios.push("submitted", JsonValue::UInt(out.bios_submitted));
    bios.push("completed", JsonValue::UInt(out.bios_completed));
    o.push("bios", bios);
    let b = &out.blk;
    let mut blk = JsonValue::object();
    blk.push("requests_completed", JsonValue::UInt(b.ios[0] + b.ios[1]));
    blk.push("plug_merges", JsonValue::UInt(b.plug_merges));
    blk.push("elevator_merges", JsonValue::UInt(b.elv_merges));
    blk.push("request_merges", JsonValue::UInt(b.rq_merges));
    blk.push("queue_rq_calls", JsonValue::UInt(b.queue_rq_calls));
    blk.push("queue_rq_resource", JsonValue::UInt(b.queue_rq_resource));
    blk.push("hw_queue_runs", JsonValue::UInt(b.hw_runs));
    blk.push("tag_waits", JsonValue::UInt(b.tag_waits));
    blk.push("max_in_flight", JsonValue::UInt(b.max_in_flight as u64));
    blk.push("block_wait_ns", JsonValue::UInt(b.blk_wait_ns));
    blk.push(
        "peak_request_slots",
        JsonValue::UInt(out.peak_requests as u64),
    );
    o.push("block", blk);
    // The diskstats fields fio's disk_util does not print (/proc/diskstats 12-17).
    let mut ds = JsonValue::object();
    ds.push("discard_ios", JsonValue::UInt(b.discard_ios));
    ds.push("discard_sectors", JsonValue::UInt(b.discard_sectors));
    ds.push(
        "discard_ticks",
        JsonValue::UInt(b.discard_ticks_ns / 1_000_000),
    );
    ds.push("flush_ios", JsonValue::UInt(b.flush_ios));
    ds.push("flush_ticks", JsonValue::UInt(b.flush_ticks_ns / 1_000_000));
    o.push("diskstats", ds);
    // The flush machinery (blk-flush.c): flush requests issued, PREFLUSH/POSTFLUSH steps
    // served by a flush another request started, empty flushes with no cache to flush.
    let mut fl = JsonValue::object();
    fl.push("write_cache", JsonValue::Bool(out.write_cache));
    fl.push("fua", JsonValue::Bool(out.fua));
    fl.push("flush_requests", JsonValue::UInt(b.flush_rqs_issued));
    fl.push("merged", JsonValue::UInt(b.flushes_merged));
    fl.push("elided", JsonValue::UInt(b.flushes_elided));
    o.push("flush", fl);
    o.push(
        "dispatch_inversions",
        JsonValue::UInt(b.dispatch_inversions),
    );
    let mut drv = JsonValue::object();
    for (k, v) in &out.driver_stats {
        drv.push(k.clone(), JsonValue::UInt(*v));
    }
    o.push("driver_stats", drv);
    let mut elv = JsonValue::object();
    for (k, v) in &out.elevator_stats {
        elv.push(*k, JsonValue::UInt(*v));
    }
    o.push("elevator_stats", elv);
    let mut integ = JsonValue::object();
    integ.push(
        "reads_checked",
        JsonValue::UInt(out.integrity_reads_checked),
    );
    integ.push("mismatches", JsonValue::UInt(out.integrity_mismatches));
    integ.push(
        "tracked_one_in",
        JsonValue::UInt(out.integrity_tracked_one_in),
    );
    // Power cuts: sectors lost as FLUSH/FUA allow (never made durable), and sectors where
    // durable data was lost or data never written appeared.
    integ.push("lost_allowed", JsonValue::UInt(out.integrity_lost_allowed));
    integ.push("violations", JsonValue::UInt(out.integrity_violations));
    o.push("integrity", integ);
    if let Some(pc) = &out.power_cut {
        let mut p = JsonValue::object();
        p.push("at_ns", JsonValue::UInt(pc.at_ns));
        p.push("changed_sectors", JsonValue::UInt(pc.changed_sectors));
        p.push("aborted_ios", JsonValue::UInt(pc.aborted_ios));
        o.push("power_cut", p);
    }
    o.push("io_errors", JsonValue::UInt(out.io_errors));
    if !out.fault_stats.is_empty() {
        // Injected faults and the driver's recovery (`mmc_blk_mq_rw_recovery`, the hsq and CQE
        // recovery work): retries, resets, single-sector re-reads, I/Os failed to the job.
        let mut f = JsonValue::object();
        for (k, v) in &out.fault_stats {
            f.push(*k, JsonValue::UInt(*v));
        }
        o.push("faults", f);
    }
    if !out.cpu_stats.is_empty() {
        let mut cpu = JsonValue::object();
        for (k, v) in &out.cpu_stats {
            cpu.push(*k, JsonValue::UInt(*v));
        }
        o.push("cpu", cpu);
    }
    o
}

/// Prefix a builder's error with where the key it names was set (`file:line` or `--set=...`).
fn locate(p: &Profile, e: &str) -> String {
    // Layers start their messages with the key they reject (`completion_nsec: ...`,
    // `card.t_r_ns: ...`); name where the profile or `--set` gave it.
    let named = e
        .split(|c: char| c.is_whitespace() || c == ':' || c == '\'')
        .find(|w| !w.is_empty() && p.values.contains_key(*w));
    match named {
        Some(k) => format!("{}: {e}", p.origin(k)),
        None => format!("{}: {e}", p.file),
    }
}

/// `host.*` and `card.*` keys of a profile, for the MMC driver and card builders.
struct MmcLookup<'a>(&'a Profile);

impl blksim_device::emmc::params::ParamLookup for MmcLookup<'_> {
    fn get(&self, key: &str) -> Option<String> {
        self.0.get(key)
    }
    fn keys(&self) -> Vec<String> {
        self.0
            .values
            .keys()
            .filter(|k| k.starts_with("host.") || k.starts_with("card."))
            .cloned()
            .collect()
    }
}
