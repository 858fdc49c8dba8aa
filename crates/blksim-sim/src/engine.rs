//! The event loop and the fio job tasks.
//!
//! A task is one fio job clone. It follows fio's `do_io` loop (`backend.c`): fill the queue
//! with io_units, committing every `iodepth_batch_submit`; when the queue is full, reap at
//! least `iodepth_batch_complete_min` completions and keep reaping while the depth is above
//! `iodepth_low` (`wait_for_completions`); sync engines keep one I/O in flight whatever
//! `iodepth` says. All CPU work is instantaneous on the ideal platform.

mod cmdprio;
mod do_io;
pub mod explain;
mod iolog;
mod lat_target;
mod logs;
mod min_rate;
mod steadystate;
mod sync;
mod task;

use crate::error::RunError;
use crate::platform::Platform;
use blksim_block::cpu::CpuModel;
use blksim_block::queue::{BlkOut, BlkStats, BlkTraceRec, Submit};
use blksim_block::request::{flags, IoPrio};
use blksim_block::stage::Stage;
use blksim_block::{Bio, BlkStatus, Driver, DriverOut, Op, RequestQueue};
use blksim_core::{Digest, EventQueue, Ns, RngStreams, Slab, NSEC_PER_SEC, NS_HORIZON};
use blksim_job::{Ddir, ExitWhat, JobSpec, ParseError};
use blksim_report::depth::DepthTimeline;
use blksim_report::stats::{JobStats, StatsOptions};
use blksim_workload::{IoGen, IoU, Region};
use lat_target::Next as LatNext;
use task::{InSyscall, IoUnit, SubmitPath, SyncKind, Task, TaskState, Wait, SQ_THREAD_IDLE_NS};

/// Events are small plain values naming a component and an id.
/// `repr(u64)`: every variant's payload then sits at a fixed 8-byte-aligned offset, and the
/// event queue moves events as whole words (the default layout was copied with overlapping
/// unaligned moves that stalled store forwarding on every pop; null bench +4 %).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
enum Ev {
    /// A task starts (after `startdelay`, or when the jobs it waits for are done).
    TaskStart(u32),
    /// A task wakes from thinktime or a rate wait.
    TaskWake(u32),
    /// A task reaps the completions gathered at this instant (`io_u_queued_complete`).
    TaskReap(u32),
    /// A task woken from a tag wait retries its allocation.
    TaskTagResume(u32),
    /// kblockd runs a hardware queue (the `Ns` is when it was scheduled for, to drop stale
    /// runs that were moved earlier).
    HwRun(u16, Ns),
    /// A driver timer.
    Driver(u64),
    /// A dispatch context blocked in `queue_rq` is woken.
    DispatchResume(u32),
    /// The elevator's timer.
    ElvTimer(Ns),
    /// Stopped hardware queues restart (null_blk throttle).
    StartQueues,
    /// A task's runtime is up.
    TaskDeadline(u32),
    /// A task's submission goes on after yielding the CPU model's clock (between bios of
    /// one `io_submit`, or after the dispatch run inside its syscall ended).
    TaskSubmitCont(u32),
    /// fio's helper thread checks the jobs' steady state (once a second).
    SteadyStateCheck,
}

/// The CPU clone `i` (fio's `thread_number - 1`, counted over all jobs) runs on. Without an
/// affinity, clone i on CPU i mod nr_cpus. With `cpus_allowed`/`cpumask`, `split` is fio's
/// `fio_cpus_split`: the set's CPU number `i % count`. With `shared` the scheduler chooses
/// within the set; the model does not migrate tasks and places clone i where load balancing
/// spreads threads over the set, which is the same CPU.
fn job_cpu(spec: &JobSpec, i: usize, nr_cpus: u16) -> Result<u16, ParseError> {
    let nr_cpus = nr_cpus.max(1);
    let Some(set) = &spec.cpus_allowed else {
        return Ok((i % nr_cpus as usize) as u16);
    };
    // fio: "CPU %d too large (max=%ld)" against the CPUs configured; here the platform's.
    if let Some(&c) = set.iter().find(|&&c| c >= nr_cpus as u32) {
        return Err(spec.error_at(
            &["cpus_allowed", "cpumask"],
            format!(
                "CPU {c} too large (max={}): the platform has {nr_cpus} CPUs (platform.nr_cpus)",
                nr_cpus - 1
            ),
        ));
    }
    Ok(set[i % set.len()] as u16)
}

/// The CPU of a job's io_uring SQ thread (`sqthread_poll`), where its submissions run:
/// `sqthread_poll_cpu` (`IORING_SETUP_SQ_AFF`), else the CPU after the job's own. Unpinned,
/// the kernel thread starts where fio created it and the load balancer moves it off the CPU
/// that fio spins on; which CPU it settles on is the scheduler's choice [assumed: the next].
fn sq_thread_cpu(spec: &JobSpec, i: usize, nr_cpus: u16) -> Result<u16, ParseError> {
    let nr_cpus = nr_cpus.max(1);
    match spec.io_uring.sqthread_poll_cpu {
        // The kernel: "if (cpu >= nr_cpu_ids || !cpu_online(cpu)) return -EINVAL".
        Some(c) if c >= nr_cpus => Err(spec.error_at(
            &["sqthread_poll_cpu"],
            format!(
                "CPU {c} is not one of the platform's {nr_cpus} CPUs (platform.nr_cpus); io_uring_setup would fail with EINVAL"
            ),
        )),
        Some(c) => Ok(c),
        None => Ok((job_cpu(spec, i, nr_cpus)? + 1) % nr_cpus),
    }
}

/// What the kernel does per I/O for this job's engine and io_uring options.
fn submit_path(spec: &JobSpec, platform: &Platform) -> SubmitPath {
    let takes_ref = spec.ioengine.file_ref_per_io() && !spec.io_uring.files_registered();
    // The null engine makes no syscall; registered buffers are pinned once, at setup.
    let pins = !matches!(spec.ioengine, blksim_job::IoEngine::Null) && !spec.io_uring.fixedbufs;
    SubmitPath {
        fget_ns: if takes_ref { platform.fget_ns } else { 0 },
        pin_ns: if pins { platform.iov_pin_ns } else { 0 },
        pin_page_ns: if pins { platform.iov_pin_page_ns } else { 0 },
        sqpoll: spec.io_uring.sqthread_poll,
    }
}

impl Ev {
    fn digest_words(self) -> (u64, u64) {
        match self {
            Ev::TaskStart(t) => (1, t as u64),
            Ev::TaskWake(t) => (2, t as u64),
            Ev::TaskReap(t) => (3, t as u64),
            Ev::TaskTagResume(t) => (4, t as u64),
            Ev::HwRun(h, at) => (5, (h as u64) << 48 ^ at),
            Ev::Driver(p) => (6, p),
            Ev::DispatchResume(i) => (7, i as u64),
            Ev::ElvTimer(t) => (8, t),
            Ev::StartQueues => (9, 0),
            Ev::TaskDeadline(t) => (10, t as u64),
            Ev::TaskSubmitCont(t) => (11, t as u64),
            Ev::SteadyStateCheck => (12, 0),
        }
    }
}

/// What one task reports.
pub struct TaskResult {
    pub spec: usize,
    pub name: String,
    pub groupid: u32,
    pub stats: JobStats,
    pub start_ns: Ns,
    pub end_ns: Ns,
    /// fio's error state at the end (`td->error`, `total_err_count`, `first_error`).
    pub error: i32,
    /// Where fio's `td_verror` set `error`: [`VERROR_IO_U`] or [`VERROR_QUEUE`].
    pub error_site: &'static str,
    pub total_err_count: u64,
    pub first_error: i32,
    /// The queue depth `latency_target` settled on (`td->latency_qd`), None without it.
    pub latency_depth: Option<u32>,
    /// fio's messages for `rate_min` or `rate_iops_min` not met (`__check_min_rate`).
    pub rate_failures: Vec<String>,
    /// Malformed trace lines passed over with `replay_skip_bad`, and the first one's error.
    pub replay_skipped: (u64, Option<String>),
    /// What the replay left out as fio does (`IologReader::notes`), for stderr.
    pub replay_notes: Vec<String>,
    /// The steady-state check's window and verdict (`steadystate_duration` set).
    pub steadystate: Option<blksim_report::SteadyStateReport>,
    /// fio's message for a job it could not set up, which ran without I/O.
    pub setup_failure: Option<String>,
    /// fio failed the job's setup (`setup_files`): the run exits with an error.
    pub setup_failed: bool,
    /// fio's message for offset draws that failed (a `zoned_abs` zone past the file), and
    /// how many did: fio prints it for each.
    pub draw_failure: Option<(&'static str, u32)>,
}

impl TaskResult {
    /// fio's `td_verror` text for the job's error: where it was set and `strerror`, as the
    /// report's `err=` and the thread's exit line print it.
    pub fn verror(&self) -> String {
        format!(
            "{}, error={}",
            self.error_site,
            blksim_report::report::strerror(self.error)
        )
    }
}

/// An I/O that failed fatally (fio's `io_u_log_error`): task, direction, offset, length.
#[derive(Clone, Debug, PartialEq)]
pub struct IoErrorRecord {
    /// An I/O that took longer than `max_latency` or, at depth 1, `latency_target`
    /// (`lat_fatal`): its latency and the limit, both in ns. fio prints its own line then.
    pub exceeded: Option<(Ns, Ns)>,
    pub task: usize,
    pub ddir: Ddir,
    pub sync: bool,
    pub offset: u64,
    pub len: u64,
    /// The io_u's errno.
    pub errno: i32,
    /// fio prints its `io_u error` line: not for an error its queue call returned
    /// ([`VERROR_QUEUE`]).
    pub logged: bool,
    /// fio adds "first direct IO errored" (`td_io_queue`): the job's first I/O, refused with
    /// EINVAL at its queue call under O_DIRECT.
    pub first_direct: bool,
}

/// errno of every I/O error the block layer reports to a submitter (BLK_STS_IOERR → EIO).
pub const EIO: i32 = 5;
/// errno of an I/O a syscall refuses before any bio: O_DIRECT out of the device's logical
/// block alignment (`blkdev_dio_unaligned`), a discard range out of it (`blk_ioctl_discard`).
pub const EINVAL: i32 = 22;
/// fio's other non-fatal errno (`__NON_FATAL_ERR`).
pub const EILSEQ: i32 = 84;
/// `ETIMEDOUT`: an I/O over `max_latency` (fio's `lat_fatal`).
pub const ETIMEDOUT: i32 = 110;
/// `td_verror`'s place for an io_u error fio logs when it completes the io_u
/// (`__io_u_log_error`, io_u.c in 3.33).
pub const VERROR_IO_U: &str = "file:io_u.c:1876, func=io_u error";
/// `td_verror`'s place for an error the engine's queue call returned, which fio does not log
/// as an io_u error: a trim (every engine issues it synchronously, `do_io_u_trim`) or a sync
/// other than io_uring's (`do_io_u_sync`).
pub const VERROR_QUEUE: &str = "file:ioengines.c:399, func=td_io_queue";
/// `td_verror` after `check_min_rate` (backend.c in fio 3.33).
pub const VERROR_MIN_RATE: &str = "file:backend.c:1131, func=check_min_rate";
/// `td_verror` in fio's `lat_fatal` (io_u.c in fio 3.33).
pub const VERROR_MAX_LATENCY: &str = "file:io_u.c:1432, func=max latency exceeded";

/// Everything a run produced.
pub struct SimOutput {
    pub tasks: Vec<TaskResult>,
    /// `--explain=N`: the slowest I/Os, slowest first.
    pub explain: Vec<explain::ExplainRec>,
    pub blk: BlkStats,
    pub elevator: String,
    pub driver: String,
    /// How `--explain` names the driver's steps.
    pub trail_labels: blksim_block::driver::TrailLabels,
    pub driver_stats: Vec<(String, u64)>,
    /// The driver's fault counters (`blksim.faults`), if it models faults.
    pub fault_stats: Vec<(&'static str, u64)>,
    pub elevator_stats: Vec<(&'static str, u64)>,
    pub digest: String,
    pub events: u64,
    /// Bios the tasks handed to the block layer, and completions that came back.
    pub bios_submitted: u64,
    pub bios_completed: u64,
    pub end_ns: Ns,
    /// Peak slots of the request and bio slabs (memory does not grow with I/O count).
    pub peak_requests: usize,
    pub peak_bios: usize,
    pub capacity_bytes: u64,
    /// Data-integrity oracle: user read bios checked, mismatches found.
    pub integrity_reads_checked: u64,
    /// CPU model figures (empty on the ideal platform): lock acquisitions, hand-offs, spin
    /// time, CPU busy time.
    pub cpu_stats: Vec<(&'static str, u64)>,
    pub integrity_mismatches: u64,
    /// The oracle checked one 1 MiB stripe in this many (1 = all; see `integrity.rs`).
    pub integrity_tracked_one_in: u64,
    /// The queue's write-cache and FUA features (`blk_queue_write_cache`).
    pub write_cache: bool,
    pub fua: bool,
    /// The modelled power cut, if one happened: when, sectors that lost or tore data, and
    /// the I/Os in flight it ended (not reported as fio errors: the job "crashed" there and
    /// goes on with its read-back, as fio's verify after a crash would).
    pub power_cut: Option<PowerCutFacts>,
    /// Sectors a power cut took as FLUSH/FUA allow, and sectors where it broke their promise.
    pub integrity_lost_allowed: u64,
    pub integrity_violations: u64,
    pub integrity_first_violation: Option<String>,
    /// I/Os that ended with an error outside a power cut.
    pub io_errors: u64,
    /// The io_us that ended with an error fio does not ignore, for its `io_u error` lines
    /// (the first of a job stopped it).
    pub fatal_errors: Vec<IoErrorRecord>,
    /// Queue depth at each stage and driver busy over time (with the timeline on).
    pub depth: Option<DepthTimeline>,
}

/// What a power cut did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PowerCutFacts {
    pub at_ns: Ns,
    pub changed_sectors: u64,
    pub aborted_ios: u64,
}

pub struct Sim {
    evq: EventQueue<Ev>,
    queue: RequestQueue,
    /// The CPU/lock model: owned here, lent to the block layer and the drivers per call.
    cpus: CpuModel,
    driver: Box<dyn Driver>,
    out: BlkOut,
    tasks: Vec<Task>,
    platform: Platform,
    digest: Digest,
    elv_timer_at: Option<Ns>,
    /// The elevator timer's expiry as last seen, and the CPU of the context that set it,
    /// where it fires.
    elv_timer_armed: Option<Ns>,
    elv_timer_cpu: u16,
    trace: Option<blksim_trace::BlktraceWriter>,
    /// A blktrace or log file write failed: the run stops with it.
    trace_error: Option<String>,
    capacity_bytes: u64,
    /// The device's logical block size in bytes (`queue/logical_block_size`).
    lbs: u64,
    max_events: u64,
    /// fio I/Os issued so far; the instant of the last event and the count when it began,
    /// and how many may be issued at one instant ([`STILL_IOS`]).
    ios_issued: u64,
    still_at: Ns,
    still_from: u64,
    still_limit: u64,
    still_error: Option<String>,
    progress: Option<crate::setup::ProgressHook>,
    /// `--explain=N`: the slowest I/Os' paths.
    explain: Option<explain::Explain>,
    /// Queue depth at each stage over time (the HTML report).
    depth: Option<DepthTimeline>,
    /// `BLKSIM_DEBUG_EVENTS=1` prints every event to stderr (developer aid).
    debug_events: bool,
    /// The power cut, once it happened.
    power_cut: Option<PowerCutFacts>,
    io_errors: u64,
    fatal_errors: Vec<IoErrorRecord>,
    /// Stream for the platform's scheduling jitter (`platform.kblockd_jitter_ns`).
    jitter_rng: blksim_core::Rng,
    /// Last data version handed to a user write (the integrity oracle's global counter).
    last_version: u64,
    /// Local clock of the task context being run (CPU model): the event time plus the CPU
    /// time spent so far; equal to the event time on the ideal platform.
    clk: Ns,
    /// Event time and start of the running task context, and its CPU.
    ctx_ev: Ns,
    ctx_start: Ns,
    ctx_cpu: u16,
    /// The task whose context runs (for its CPU time, fio's `sys` share).
    ctx_task: usize,
    /// Bios submitted and completed (`blksim.bios`; every bio must complete exactly once).
    bios: [u64; 2],
    /// Test only (`--debug-drop-completion=N`, for the fuzzer's own test): lose the N-th bio
    /// completion; 0 = off.
    drop_completion: u64,
    /// Each task's job has `group_reporting` (the steady-state check judges a group's sums).
    group_reporting: Vec<bool>,
    /// fio's global `exitall_on_terminate`: some job has `exitall`.
    exitall_on_terminate: bool,
}

const TOKEN_SHIFT: u32 = 32;

/// fio I/Os issued at one instant, beyond four times the sum of the jobs' depths, after
/// which a run with a time-based job still running is stopped: at one instant a job can issue its depth and then only what completes
/// at that same instant, so this many means its I/Os take no time and it would never reach
/// its runtime. A few seconds of such a run.
const STILL_IOS: u64 = 1 << 20;

impl Sim {
    /// Build a simulation. `jobs` are the expanded job specs (numjobs → clones) with their
    /// group ids and stonewall dependencies already resolved by [`crate::setup`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        specs: &[JobSpec],
        clones: &[(usize, u32, u32, Vec<u32>)],
        queue: RequestQueue,
        cpus: CpuModel,
        driver: Box<dyn Driver>,
        platform: Platform,
        seed: u64,
        trace: Option<blksim_trace::BlktraceWriter>,
        files: std::sync::Arc<dyn blksim_core::output::OutputFiles>,
    ) -> Result<Sim, RunError> {
        let capacity_bytes = driver.capacity_sectors() << 9;
        let lbs = u64::from(queue.lim.logical_block_size.max(1));
        // The drivers refuse any other (`blk_validate_block_size`); the submit path masks.
        if !lbs.is_power_of_two() {
            return Err(RunError::Profile(format!(
                "logical block size {lbs} is not a power of two"
            )));
        }
        if capacity_bytes == 0 {
            return Err(RunError::Profile("device has zero capacity".into()));
        }
        let mut tasks = Vec::with_capacity(clones.len());
        let mut shared_logs = logs::RunFiles::new(files.clone());
        let mut iologs_made = logs::RunFiles::new(files);
        for (i, (spec_idx, clone, groupid, wait_for)) in clones.iter().enumerate() {
            let spec = &specs[*spec_idx];
            // fio's `subjob_number`: `add_job` makes the clones in a countdown
            // (`while (--numjobs) ... td_new->subjob_number = numjobs`), so the second
            // thread of a job is its last subjob. It places the clone's region
            // (`offset_increment`) and names its file (`jobname.N.0`).
            let subjob = match *clone {
                0 => 0,
                c => spec.numjobs.max(1) - c,
            };
            // Semantic errors name the job file line (or command-line option) they concern.
            // A job fio fails alone (`setup_files`) runs without I/O, as there; its region is a
            // placeholder its generator never draws from.
            let (region, job_failure) = match Region::resolve_in_run(spec, subjob, capacity_bytes)?
            {
                Ok(r) => (r, None),
                Err(f) => {
                    let len = spec.bs.iter().map(|b| b.max).max().unwrap_or(4096).max(1);
                    let r = Region {
                        start: 0,
                        run_start: 0,
                        len,
                        bytes: len,
                        device_bytes: capacity_bytes.max(len),
                    };
                    (r, Some(f))
                }
            };
            // fio's seeds for this job (its `thread_number` is its 1-based place among the
            // jobs and clones); a `--seed` other than the default mixes into them.
            let seeds = blksim_workload::clone_seeds(
                spec,
                *clone,
                i as u64 + 1,
                seed ^ crate::setup::DEFAULT_SEED,
            );
            // The draws fio makes from streams blksim does not reproduce (startdelay ranges,
            // Poisson rate) come from blksim's own streams, rooted in the job's seeds.
            let streams = RngStreams::new(
                seeds.seeds[blksim_workload::frand::off::BLOCK]
                    ^ seeds.seeds[blksim_workload::frand::off::MIX].rotate_left(17),
            );
            let null_engine = matches!(spec.ioengine, blksim_job::IoEngine::Null);
            let mut gen = match (IoGen::try_new(spec, region, &seeds), &job_failure) {
                (Ok(g), _) => g,
                // The placeholder does not suit the job: refuse the run as fio's first error.
                (Err(_), Some(f)) => return Err(f.detail.clone().into()),
                (Err(e), None) => return Err(e.into()),
            };
            if job_failure.is_some() {
                gen.fail_setup();
            }
            let verify_log = crate::verify::VerifyLog::new(spec, &gen);
            let verifies = verify_log.is_some();
            // Each pass (`loops`, or `io_size` past `size`) is one `do_io` in fio, which
            // drains its I/O and runs `end_fsync` before `keep_running` starts the next, and
            // a verifying job reads back after each.
            if !spec.time_based {
                gen.stop_at_pass_ends();
            }
            let depth = spec.effective_depth();
            let batch_submit = if spec.iodepth_batch_submit == 0 {
                depth
            } else {
                spec.iodepth_batch_submit.min(depth)
            };
            let complete_min = spec.iodepth_batch_complete_min.min(depth);
            // `fixup_options`: 0 (or more than iodepth) means iodepth.
            let iodepth_low = spec.effective_iodepth_low().min(depth);
            // fio's null engine is FIO_SYNCIO at iodepth=1 (`null_init`): no slat either.
            let is_sync_engine = spec.ioengine.completes_in_queue(spec.iodepth);
            let samp = logs::sampling(spec);
            let opts = StatsOptions {
                percentile_list: spec.percentile_list.clone(),
                clat_percentiles: spec.clat_percentiles,
                lat_percentiles: spec.lat_percentiles,
                slat_percentiles: spec.slat_percentiles,
                record_slat: !is_sync_engine && !spec.disable_slat,
                disable_clat: spec.disable_clat,
                disable_lat: spec.disable_lat,
                disable_bw: spec.disable_bw,
                stats: spec.stats,
                // io_u.c's `gtod_reduce()`: the option, or the three it implies.
                gtod_reduce: spec.gtod_reduce
                    || (spec.disable_clat && spec.disable_slat && spec.disable_bw),
                ramp_ns: spec.ramp_time_ns,
                bwavgtime_ms: samp.bwavgtime_ms,
                iopsavgtime_ms: samp.iopsavgtime_ms,
                bw_per_io: samp.bw_per_io,
                iops_per_io: samp.iops_per_io,
                keep_windows: (spec.logs.bw.is_some() && !samp.bw_per_io)
                    || (spec.logs.iops.is_some() && !samp.iops_per_io),
                ..StatsOptions::default()
            };
            // fio's `run_threads` drops a job whose setup failed before any starts: no logs,
            // no start delay holding back the jobs after it.
            let task_logs = if job_failure.is_some() {
                None
            } else {
                logs::TaskLogs::open(spec, i + 1, &samp, &mut shared_logs)?
            };
            let replay = match &spec.replay.file {
                Some(_) => {
                    let rd = blksim_workload::iolog::IologReader::open_job(&spec.replay)
                        .map_err(|e| spec.error_at(&["read_iolog"], e))?;
                    Some(Box::new(rd))
                }
                None => None,
            };
            // fio opens the log once `setup_files` succeeded (`init_iolog`): none for a job
            // that failed there.
            let iolog = match &spec.write_iolog {
                Some(path) if job_failure.is_none() => {
                    let file = spec
                        .filename
                        .clone()
                        .unwrap_or_else(|| format!("{}.{subjob}.0", spec.name));
                    let w = iolog::IoLogWriter::create(
                        path,
                        file,
                        *clone,
                        spec.numjobs > 1,
                        &mut iologs_made,
                    )
                    .map_err(|e| {
                        spec.error_at(&["write_iolog"], format!("cannot write {path}: {e}"))
                    })?;
                    Some(Box::new(w))
                }
                _ => None,
            };
            let mut delay_rng = streams.stream(&format!("job{i}.startdelay"));
            let (lo, hi) = spec.startdelay_ns;
            let start_delay = if job_failure.is_some() {
                0
            } else if hi > lo {
                delay_rng.range_inclusive(lo, hi)
            } else {
                lo
            };
            let mut stats = JobStats::new(0, &opts);
            stats.ioprio = spec.ioprio_value();
            let cmdprio = cmdprio::CmdPrio::new(
                spec,
                seeds.seeds[blksim_workload::frand::off::PRIO_CMDS],
                stats.ioprio,
            )
            .map(|(c, lists)| {
                for (d, list) in lists.iter().enumerate() {
                    stats.set_prios(d, list.get(1..).unwrap_or(&[]));
                }
                Box::new(c)
            });
            tasks.push(Task {
                setup_failure: match &job_failure {
                    // fio's lines, then blksim's, which names the job file line.
                    Some(f) => Some(format!("{}\nblksim: {}", f.fio_lines.join("\n"), f.detail)),
                    None => gen.setup_failure().map(String::from),
                },
                setup_failed: job_failure.is_some(),
                draw_failure: None,
                terminated: false,
                sleep: (0, 0),
                ss: steadystate::SsData::new(&spec.steadystate),
                ss_ios: 0,
                ss_bytes: 0,
                spec: *spec_idx,
                name: spec.name.clone(),
                groupid: *groupid,
                cpu: if spec.io_uring.sqthread_poll {
                    sq_thread_cpu(spec, i, platform.nr_cpus)?
                } else {
                    job_cpu(spec, i, platform.nr_cpus)?
                },
                path: submit_path(spec, &platform),
                sq_last: 0,
                rusage: Default::default(),
                spin_from: 0,
                logs: task_logs.map(Box::new),
                iolog,
                replay,
                replay_due: None,
                replay_sync: None,
                last_issue: 0,
                gen: Some(gen),
                depth,
                batch_submit: batch_submit.max(1),
                complete_min,
                complete_max: spec.effective_iodepth_batch_complete_max().clamp(1, depth),
                iodepth_low,
                stats,
                stats_opts: opts,
                state: TaskState::Waiting,
                wait_for: wait_for.clone(),
                start_delay,
                start_ns: 0,
                end_ns: 0,
                deadline: None,
                deadline_hit: false,
                time_based: false,
                in_flight: 0,
                completed: Vec::with_capacity(depth as usize),
                reap_scheduled: false,
                pending: Vec::with_capacity(depth as usize),
                submit_cursor: None,
                commit_batch: Vec::with_capacity(depth as usize),
                in_syscall: InSyscall::No,
                plugging: false,
                wait: Wait::None,
                held: None,
                held_behind_sync: false,
                gen_done: false,
                ious: Slab::new(),
                think_done: 0,
                think_issued: 0,
                think_issue: spec.thinktime_blocks_issue,
                think_last: 0,
                think_pending: false,
                done_in_ramp: 0,
                ramp_over: false,
                fsync_blocks: spec.fsync,
                fdatasync_blocks: spec.fdatasync,
                writes_issued: 0,
                last_was_sync: false,
                rw_syncs: !matches!(
                    spec.rw,
                    blksim_job::RwPattern::Read
                        | blksim_job::RwPattern::RandRead
                        | blksim_job::RwPattern::Trim
                        | blksim_job::RwPattern::RandTrim
                        | blksim_job::RwPattern::TrimWrite
                        | blksim_job::RwPattern::RandTrimWrite
                ),
                syncs_out: 0,
                number_ios_by_syncs: false,
                sync_io: spec.sync_io,
                async_fsync: spec.ioengine.queues_fsync(),
                end_fsync: spec.end_fsync,
                end_fsync_done: false,
                pass_seen: 1,
                io_pass: 1,
                submit_offload: spec.io_submit_offload,
                rate_wait: None,
                wrote: false,
                thinktime_ns: spec.thinktime_ns,
                thinktime_blocks: spec.thinktime_blocks.max(1),
                thinktime_iotime: spec.thinktime_iotime_ns,
                thinktime_blocks_set: spec.thinktime_blocks_set,
                last_thinktime: 0,
                queued_at: 0,
                queued_ddir: Ddir::Read,
                rate_ign_think: spec.rate_ignore_thinktime,
                rate_bps: Ddir::ALL.map(|d| {
                    let i = d.idx();
                    if spec.rate[i] > 0 {
                        spec.rate[i]
                    } else {
                        spec.rate_iops[i].saturating_mul(spec.min_bs(d).max(1))
                    }
                }),
                rate_min_bs: Ddir::ALL.map(|d| spec.min_bs(d).max(1)),
                rate_issued_bytes: [0; 3],
                rate_next: [0; 3],
                rate_poisson: spec.rate_poisson,
                rate_last: [0; 3],
                rate_epoch: None,
                rate_rng: streams.stream(&format!("job{i}.rate")),
                number_ios: spec.effective_number_ios(),
                number_ios_cfg: spec.effective_number_ios(),
                issued: 0,
                issued_dir: [0; 3],
                sync_trim: None,
                trim_drains: spec.ioengine.trim_waits_for_reaps(),
                dio_align: if spec.direct { lbs } else { 0 },
                null_engine,
                null_queued: null_engine && spec.iodepth > 1,
                is_sync_engine,
                // The job file accepts hipri only for engines that poll (io_uring, pvsync2).
                // Departure: without poll queues the kernel clears REQ_POLLED
                // (`submit_bio_noacct`) and the bio completes by interrupt, but an io_uring
                // IOPOLL ring still reaps by spinning (`io_iopoll_check`); here the task
                // sleeps as without hipri.
                polled: spec.hipri && driver.poll_queues() > 0,
                ctx_end: 0,
                verify_log,
                verifies,
                verify_reads: None,
                verify_ios: 0,
                verify_bytes: 0,
                crashed: false,
                in_verify: false,
                ioprio: IoPrio(spec.ioprio_value() as u16),
                cmdprio,
                lat_target: lat_target::LatTarget::new(spec, depth).map(Box::new),
                lat_quiesce: None,
                max_latency: spec.max_latency_ns,
                rw_done: 0,
                min_rate: min_rate::MinRate::new(spec).map(Box::new),
                thinktime_spin_ns: spec.thinktime_spin_ns,
                loop_checks: spec.latency_target_ns > 0
                    || (0..3).any(|d| spec.rate_min[d] > 0 || spec.rate_iops_min[d] > 0),
                latency_checks: spec.latency_target_ns > 0
                    || spec.max_latency_ns.iter().any(|&m| m > 0),
                // The search's depth once the job starts (`lat_target_init` in `task_start`).
                qd_limit: depth,
                rate_failures: Vec::new(),
                serialize_overlap: spec.effective_serialize_overlap(),
                exit_what: spec.exit_what,
                exitall_on_error: spec.exitall_on_error,
                verify_backlog: spec.verify_backlog,
                verify_backlog_batch: spec.verify_backlog_batch,
                verify_batch: 0,
                last_ddir: Ddir::Read,
                continue_on_error: spec.continue_on_error,
                ignore_error: [spec.ignore_error[0].clone(), spec.ignore_error[1].clone()],
                error: job_failure.as_ref().map_or(0, |f| f.errno),
                error_site: VERROR_IO_U,
                total_err_count: 0,
                first_error: 0,
            });
        }
        let depths: u64 = tasks.iter().map(|t: &Task| t.depth as u64).sum();
        let still_limit = STILL_IOS + 4 * depths;
        let out = BlkOut {
            tracing: trace.is_some(),
            drv: DriverOut {
                tracing: trace.is_some(),
                ..Default::default()
            },
            ..Default::default()
        };
        // `td_steadystate_init`: "steadystate options must be consistent within reporting
        // groups", checked against every job with the same group id (the first one stands
        // for them all).
        let mut first_in_group = std::collections::BTreeMap::new();
        for (s, _, g, _) in clones {
            let ss = specs[*s].steadystate.effective();
            if *first_in_group.entry(*g).or_insert(ss) != ss {
                return Err(specs[*s]
                    .error_at(
                        &["steadystate", "steadystate_duration", "steadystate_ramp_time"],
                        "job rejected: steadystate options must be consistent within reporting groups",
                    )
                    .into());
            }
        }
        let group_reporting = clones
            .iter()
            .map(|(s, ..)| specs[*s].group_reporting)
            .collect();
        let mut sim = Sim {
            evq: EventQueue::new(),
            queue,
            cpus,
            driver,
            out,
            tasks,
            platform,
            digest: Digest::default(),
            elv_timer_at: None,
            elv_timer_armed: None,
            elv_timer_cpu: 0,
            trace,
            trace_error: None,
            capacity_bytes,
            lbs,
            max_events: u64::MAX,
            ios_issued: 0,
            still_at: 0,
            still_from: 0,
            still_limit,
            still_error: None,
            progress: None,
            explain: None,
            depth: None,
            debug_events: false,
            jitter_rng: RngStreams::new(seed).stream("platform.jitter"),
            power_cut: None,
            io_errors: 0,
            fatal_errors: Vec::new(),
            last_version: 0,
            clk: 0,
            ctx_ev: 0,
            ctx_start: 0,
            ctx_cpu: 0,
            ctx_task: 0,
            bios: [0; 2],
            drop_completion: 0,
            group_reporting,
            exitall_on_terminate: specs.iter().any(|s| s.exitall),
        };
        if sim.driver.power_cut_planned() {
            let wc = sim.queue.lim.write_cache;
            sim.queue.integrity.track_durability(wc);
        }
        let driver_seed = RngStreams::new(seed).stream("driver").next_u64();
        sim.driver.init(driver_seed, &mut sim.out.drv);
        sim.steadystate_setup();
        for t in 0..sim.tasks.len() {
            if sim.tasks[t].wait_for.is_empty() {
                let d = sim.tasks[t].start_delay;
                sim.evq.push(d, Ev::TaskStart(t as u32));
            }
        }
        Ok(sim)
    }

    /// Keep each job's completions over time (the HTML report's IOPS and bandwidth charts).
    pub fn set_timeline(&mut self, on: bool) {
        for t in &mut self.tasks {
            t.stats_opts.timeline = on;
        }
        // And where requests spend their time, stage by stage (queue depth over time).
        self.out.spans.on = on;
        self.out.drv.spans.on = on;
        self.depth = on.then(|| {
            let names: Vec<&'static str> = Stage::ALL.iter().map(|s| s.label()).collect();
            DepthTimeline::new(0, &names)
        });
    }

    /// Print every event on stderr as it is handled (`BLKSIM_DEBUG_EVENTS` in the binary).
    pub fn set_debug_events(&mut self, on: bool) {
        self.debug_events = on;
    }

    /// Stop after this many events (a guard for runaway configurations in tests).
    pub fn set_max_events(&mut self, n: u64) {
        self.max_events = n;
    }

    /// Keep the paths of the `n` slowest I/Os (`blksim run --explain=N`).
    pub fn set_explain(&mut self, n: usize) {
        if n > 0 {
            self.explain = Some(explain::Explain::new(n));
            self.out.explain = true;
            self.out.drv.explain = true;
        }
    }

    /// A progress display, told of the run every 2^18 events and at the end.
    pub fn set_progress(&mut self, p: Option<crate::setup::ProgressHook>) {
        self.progress = p;
    }

    fn report_progress(&self, now: Ns, finished: bool) {
        let Some(p) = &self.progress else { return };
        let ios_done = self.tasks.iter().map(|t| t.stats.total_rw_ios()).sum();
        // Time-based jobs end at their deadlines; otherwise the end is not known ahead.
        let end_ns = self
            .tasks
            .iter()
            .try_fold(0u64, |m, t| match (t.state, t.deadline) {
                (TaskState::Waiting, _) | (_, None) => None,
                (_, Some(d)) => Some(m.max(t.start_ns.saturating_add(d))),
            });
        p(&crate::setup::Progress {
            now_ns: now,
            ios_done,
            end_ns: end_ns.filter(|&e| e > 0),
            finished,
        });
    }

    /// Test only: lose the `n`-th bio completion (an injected bug the run must report).
    pub fn set_debug_drop_completion(&mut self, n: u64) {
        self.drop_completion = n;
    }

    /// A kblockd run of hardware queue `h` was asked for (`kblockd_mod_delayed_work_on`), due
    /// at `(due, seq)`, for the time `at` blk-mq scheduled it for. `hctx->run_work` has one
    /// timer, which each request moves: the queue keeps one run pending, a timer of the event
    /// queue. Runs that were moved are not events: on the eMMC path with the host software
    /// queue two of every eight events were runs armed 3 ms out by a `BLK_STS_RESOURCE`
    /// bounce and then moved by an immediate run, popped only to be dropped.
    ///
    /// Asked again for the time of the run still pending, the run keeps the earlier of the
    /// two (the same time without `platform.kblockd_jitter_ns` or a tail), as when every
    /// request was an event and the first to fire ran. One difference from then remains: a
    /// run moved to another time and back to the first (A → B → A, to the nanosecond) runs
    /// at the last request, where the first A's event would have run; the kernel's timer
    /// also fires for the last request.
    fn set_run_timer(&mut self, h: u16, due: Ns, seq: u64, at: Ns) {
        if self.queue.pending_run_at(h) != Some(at) {
            // No run pending (the drain names the pending run's time): nothing to time.
            self.evq.cancel_timer(h as u32);
            return;
        }
        let key = match self.evq.timer(h as u32) {
            Some((k0, Ev::HwRun(_, at0))) if at0 == at => k0.min((due, seq)),
            _ => (due, seq),
        };
        self.evq.set_timer(h as u32, key.0, key.1, Ev::HwRun(h, at));
    }

    /// Whether simulated time stands still for a time-based job: more I/Os issued at `now`
    /// than the jobs' depths allow unless they take no time ([`STILL_IOS`]). Then the run
    /// stops with an error (`still_error`), which the event loop returns.
    #[inline]
    pub(crate) fn stands_still(&mut self, now: Ns) -> bool {
        if now != self.still_at {
            self.still_at = now;
            self.still_from = self.ios_issued;
            return false;
        }
        let n = self.ios_issued - self.still_from;
        if n <= self.still_limit {
            return self.still_error.is_some();
        }
        self.stands_still_past_limit(now, n)
    }

    #[cold]
    fn stands_still_past_limit(&mut self, now: Ns, n: u64) -> bool {
        let time_based = self
            .tasks
            .iter()
            .any(|t| t.time_based && t.state != TaskState::Done && !t.deadline_hit);
        if !time_based {
            self.still_from = self.ios_issued;
            return false;
        }
        self.still_error = Some(format!(
            "simulated time stands still at t={now} ns: {n} I/Os issued without it advancing, so a time-based job would never reach its runtime. Every I/O here takes no time (the ideal platform has no CPU costs; null_blk completes at once with irqmode=0, or 1 with softirq_nsec=0, and so does fio's null engine): give the I/Os a time (null_blk irqmode=2 with completion_nsec, softirq_nsec, a profile whose platform has costs) or bound the job by size or number_ios"
        ));
        true
    }

    /// Run to completion.
    pub fn run(mut self) -> Result<SimOutput, String> {
        let mut handled: u64 = 0;
        while let Some((now, ev)) = self.evq.pop() {
            if now >= NS_HORIZON {
                return Err(format!(
                    "simulated time would pass {NS_HORIZON} ns (about 146 years), the end of blksim's virtual clock; shorten the job's time options (thinktime, rate, runtime), a replayed trace's gaps (replay_time_scale, replay_no_stall) or the device's latencies"
                ));
            }
            handled += 1;
            if handled & ((1 << 18) - 1) == 0 {
                self.report_progress(now, false);
            }
            if self.stands_still(now) {
                return Err(self.still_error.take().unwrap_or_default());
            }
            if handled > self.max_events {
                return Err(format!(
                    "stopped after {} events at t={now} ns (--max-events)",
                    self.max_events
                ));
            }
            if self.debug_events {
                eprintln!("{now:>14} {ev:?}");
            }
            let (k, id) = ev.digest_words();
            self.digest.event(now, k, id);
            self.handle(now, ev);
            self.drain(now);
            if let Some(e) = self.trace_error.take().or(self.still_error.take()) {
                return Err(e);
            }
            if let Some(m) = &self.queue.integrity.first_mismatch {
                return Err(format!("{m}, at t={now} ns"));
            }
        }
        let end = self.evq.now();
        self.report_progress(end, true);
        self.queue.account_until(end, &mut self.out.spans);
        self.take_spans();
        if let Some(d) = self.depth.as_mut() {
            d.finish(end);
        }
        // Nothing may be lost: every request completed, every task finished.
        for (i, t) in self.tasks.iter().enumerate() {
            if t.state != TaskState::Done {
                return Err(format!(
                    "internal error: job '{}' (task {i}) never finished (in_flight={}, in_syscall={:?}, wait={:?}): the simulated path lost a request",
                    t.name, t.in_flight, t.in_syscall, t.wait
                ));
            }
        }
        if !self.queue.quiescent() {
            return Err(format!(
                "internal error: block layer not quiescent at end (live rq/bio {:?})",
                self.queue.pool.live()
            ));
        }
        self.driver.check_invariants();
        if let Some(w) = self.trace.take() {
            w.finish().map_err(|e| format!("blktrace: {e}"))?;
        }
        let explain_top = self.explain.take().map(|e| e.top).unwrap_or_default();
        let (peak_requests, peak_bios) = self.queue.pool.capacity_used();
        let elevator = self.queue.elevator_name().to_string();
        let elevator_stats = self.queue.elevator().map(|e| e.stats()).unwrap_or_default();
        let tasks = self
            .tasks
            .into_iter()
            .map(|t| TaskResult {
                replay_skipped: t
                    .replay
                    .as_ref()
                    .map(|r| {
                        let (n, e) = r.skipped();
                        (n, e.map(String::from))
                    })
                    .unwrap_or_default(),
                replay_notes: t.replay.as_ref().map(|r| r.notes()).unwrap_or_default(),
                steadystate: t.ss.as_ref().map(|s| s.report()),
                draw_failure: t.draw_failure,
                setup_failure: t.setup_failure,
                setup_failed: t.setup_failed,
                error: t.error,
                error_site: t.error_site,
                latency_depth: t.lat_target.as_ref().map(|l| l.qd),
                rate_failures: t.rate_failures.clone(),
                total_err_count: t.total_err_count,
                first_error: t.first_error,
                spec: t.spec,
                name: t.name,
                groupid: t.groupid,
                stats: t.stats,
                start_ns: t.start_ns,
                end_ns: t.end_ns,
            })
            .collect();
        Ok(SimOutput {
            tasks,
            explain: explain_top,
            blk: self.queue.stats.clone(),
            elevator,
            driver: self.driver.name().to_string(),
            trail_labels: self.driver.trail_labels(),
            driver_stats: self.driver.stats().entries,
            fault_stats: self.driver.stats().faults,
            elevator_stats,
            digest: self.digest.hex(),
            events: handled,
            bios_submitted: self.bios[0],
            bios_completed: self.bios[1],
            end_ns: end,
            peak_requests,
            peak_bios,
            capacity_bytes: self.capacity_bytes,
            integrity_reads_checked: self.queue.integrity.reads_checked,
            cpu_stats: self.cpus.stats(),
            integrity_mismatches: self.queue.integrity.mismatches,
            integrity_tracked_one_in: self.queue.integrity.tracked_one_in(),
            write_cache: self.queue.lim.write_cache,
            fua: self.queue.lim.fua,
            power_cut: self.power_cut.clone(),
            integrity_lost_allowed: self.queue.integrity.lost_allowed(),
            integrity_violations: self.queue.integrity.violations(),
            integrity_first_violation: self
                .queue
                .integrity
                .durability
                .as_ref()
                .and_then(|d| d.first_violation.clone()),
            io_errors: self.io_errors,
            fatal_errors: std::mem::take(&mut self.fatal_errors),
            depth: self.depth.take(),
        })
    }

    /// Start a task context (CPU model): the task runs on its CPU from when that CPU is
    /// free; `switch_in` adds a context switch (the task was asleep).
    fn task_begin(&mut self, t: usize, now: Ns, switch_in: bool) -> Ns {
        let cpu = self.tasks[t].cpu;
        let start = self.cpus.begin(cpu, now);
        self.cpus.set_current_task(Some(t as u32));
        self.ctx_ev = now;
        self.ctx_start = start;
        self.ctx_cpu = cpu;
        self.ctx_task = t;
        self.clk = start;
        if switch_in && self.cpus.is_on() {
            self.clk += self.platform.ctxsw_ns;
            // fio's `ctx` (getrusage's voluntary and involuntary switches): the task slept
            // and runs again. fio clears its rusage at the end of the ramp
            // (`reset_all_stats` → `clear_rusage_stat`).
            let task = &mut self.tasks[t];
            if !task.path.sqpoll {
                task.rusage.switch(self.clk, task.stats.start_ns);
            }
        }
        self.clk
    }

    fn task_end(&mut self) {
        let end = self.clk.max(self.ctx_start);
        self.cpus.end(self.ctx_cpu, self.ctx_start, end);
        // The CPU time the task's own contexts used: its syscalls and the block layer work
        // done in them, fio's `sys` (getrusage's ru_stime).
        // With `sqthread_poll` the contexts are the SQ thread's, a kernel thread of its own
        // that fio's per-thread rusage (RUSAGE_THREAD) does not count.
        if self.cpus.is_on() && !self.tasks[self.ctx_task].path.sqpoll {
            let task = &mut self.tasks[self.ctx_task];
            task.rusage.sys(self.ctx_start, end, task.stats.start_ns);
        }
        self.tasks[self.ctx_task].ctx_end = end;
        self.cpus.leave_task();
    }

    fn handle(&mut self, now: Ns, ev: Ev) {
        match ev {
            Ev::TaskStart(t) => {
                let clk = self.task_begin(t as usize, now, false);
                self.task_start(t as usize, clk);
                self.task_end();
            }
            Ev::TaskWake(t) => {
                let task = &mut self.tasks[t as usize];
                if task.state == TaskState::Running && task.wait == Wait::Sleeping {
                    task.wait = Wait::None;
                    // Terminated while asleep: `usec_sleep` returns and the loop stops.
                    if task.terminated {
                        task.deadline_hit = true;
                    }
                    // It slept (thinktime, rate): no spinning meanwhile.
                    task.spin_from = now;
                    let clk = if task.path.sqpoll {
                        // fio itself slept and is switched back in on its own CPU, which the
                        // model leaves free (it spins there): the switch delays what it
                        // queues next, and the SQ thread's CPU does not pay for it.
                        let mut at = now;
                        if self.cpus.is_on() {
                            at += self.platform.ctxsw_ns;
                            task.rusage.switch(at, task.stats.start_ns);
                        }
                        self.task_begin(t as usize, at, false)
                    } else {
                        self.task_begin(t as usize, now, true)
                    };
                    self.pump(t as usize, clk);
                    self.task_end();
                }
            }
            Ev::TaskReap(t) => {
                // A task asleep in getevents is switched in only once enough completions
                // are there (`iodepth_batch_complete_min`); otherwise it reaps in passing.
                let task = &self.tasks[t as usize];
                let min_evts = task.complete_min.max(1).min(task.in_flight) as usize;
                // A polling task (hipri, or fio on an SQPOLL ring) never slept: it finds the
                // completions itself.
                // One asleep in a synchronous fsync or trim is switched in when it returns.
                let returns = task.wait == Wait::SyncInFlight
                    && match task.sync_trim {
                        Some(id) => task.completed.contains(&id),
                        None => task.completed.iter().any(|&id| task.ious.get(id).is_sync()),
                    };
                let wakes = (task.wait == Wait::QueueFull && task.completed.len() >= min_evts
                    || returns)
                    && task.in_syscall == InSyscall::No
                    && !task.polled
                    && !task.path.sqpoll;
                // The time it spun is its own CPU time: fio's sys when it polls the device in
                // the kernel (hipri), its usr when it polls the completion ring (SQPOLL).
                // Departure: the spin does not hold the CPU's timeline, so other work on that
                // CPU is not delayed by it.
                let task = &mut self.tasks[t as usize];
                if self.cpus.is_on() && task.path.sqpoll {
                    // fio spins on its CPU all along; the submissions run on the SQ thread's.
                    task.rusage.usr(task.spin_from, now, task.stats.start_ns);
                    task.spin_from = now;
                    // The completions' task_work is the SQ thread's work too, which restarts
                    // its idle time (`io_sq_thread`).
                    task.sq_last = task.sq_last.max(now);
                } else if self.cpus.is_on() && task.polled && task.in_flight > 0 {
                    task.rusage.sys(task.ctx_end, now, task.stats.start_ns);
                }
                let clk = self.task_begin(t as usize, now, wakes);
                self.reap(t as usize, clk);
                self.task_end();
            }
            Ev::TaskTagResume(t) => {
                let clk = self.task_begin(t as usize, now, true);
                self.tag_resume(t as usize, clk);
                self.task_end();
            }
            Ev::TaskSubmitCont(t) => {
                let t = t as usize;
                if self.tasks[t].in_syscall == InSyscall::Yielded {
                    self.tasks[t].in_syscall = InSyscall::No;
                    let clk = self.task_begin(t, now, false);
                    self.continue_submit(t, clk);
                    if self.tasks[t].in_syscall == InSyscall::No {
                        let clk = self.clk;
                        self.pump(t, clk);
                    }
                    self.task_end();
                }
            }
            Ev::HwRun(h, at) => {
                // The block layer chose the CPU when it queued the work
                // (`blk_mq_hctx_next_cpu`).
                let cpu = self.queue.run_cpu(h);
                self.queue.run_work(
                    &mut self.cpus,
                    h,
                    at,
                    cpu,
                    &mut *self.driver,
                    now,
                    &mut self.out,
                );
            }
            Ev::Driver(p) => {
                self.driver.on_event_cpu(
                    p,
                    &self.queue.pool,
                    now,
                    &mut self.cpus,
                    &mut self.out.drv,
                );
                self.queue.drain_driver_completions(
                    &mut self.cpus,
                    &mut *self.driver,
                    now,
                    &mut self.out,
                );
            }
            Ev::DispatchResume(id) => {
                self.queue
                    .resume_run(&mut self.cpus, id, &mut *self.driver, now, &mut self.out)
            }
            Ev::ElvTimer(at) => {
                if self.elv_timer_at == Some(at) {
                    self.elv_timer_at = None;
                    self.queue
                        .elevator_timer(now, self.elv_timer_cpu, &mut self.out);
                }
            }
            Ev::StartQueues => self
                .queue
                .start_stopped_hw_queues(&mut { now }, &mut self.out),
            Ev::SteadyStateCheck => self.steadystate_check(now),
            Ev::TaskDeadline(t) => {
                let task = &mut self.tasks[t as usize];
                if task.state == TaskState::Running {
                    task.deadline_hit = true;
                    if task.wait == Wait::Sleeping {
                        task.wait = Wait::None;
                    }
                    let clk = self.task_begin(t as usize, now, false);
                    self.pump(t as usize, clk);
                    self.task_end();
                }
            }
        }
    }

    /// Turn what the layers asked for into events, until nothing is left.
    fn drain(&mut self, now: Ns) {
        loop {
            let mut progress = false;
            // Driver requests.
            if !self.out.drv.events.is_empty() {
                progress = true;
                for i in 0..self.out.drv.events.len() {
                    let (at, p) = self.out.drv.events[i];
                    self.evq.push(at.max(now), Ev::Driver(p));
                }
                self.out.drv.events.clear();
            }
            if !self.out.drv.unblock.is_empty() {
                progress = true;
                for i in 0..self.out.drv.unblock.len() {
                    let (id, at) = self.out.drv.unblock[i];
                    self.evq.push(at.max(now), Ev::DispatchResume(id));
                }
                self.out.drv.unblock.clear();
            }
            if !self.out.drv.run_queues.is_empty() {
                progress = true;
                let runs = std::mem::take(&mut self.out.drv.run_queues);
                for (h, at) in &runs {
                    self.queue.delay_run_hw_queue(
                        *h,
                        at.saturating_sub(now),
                        &mut { now },
                        &mut self.out,
                    );
                }
                self.out.drv.run_queues = runs;
                self.out.drv.run_queues.clear();
            }
            if let Some((at, changed)) = self.out.drv.power_cut.take() {
                progress = true;
                self.on_power_cut(at, &changed);
            }
            if self.out.drv.stop_queues {
                progress = true;
                self.out.drv.stop_queues = false;
                self.queue.stop_hw_queues();
            }
            if !self.out.drv.start_queues.is_empty() {
                progress = true;
                for i in 0..self.out.drv.start_queues.len() {
                    let at = self.out.drv.start_queues[i];
                    self.evq.push(at.max(now), Ev::StartQueues);
                }
                self.out.drv.start_queues.clear();
            }
            if !self.out.drv.completions.is_empty() {
                progress = true;
                self.queue.drain_driver_completions(
                    &mut self.cpus,
                    &mut *self.driver,
                    now,
                    &mut self.out,
                );
            }
            if !self.out.drv.requeues.is_empty() {
                progress = true;
                self.queue.drain_driver_requeues(now, &mut self.out);
            }
            // Block-layer requests.
            if !self.out.hw_runs.is_empty() {
                progress = true;
                for i in 0..self.out.hw_runs.len() {
                    let (h, delay) = self.out.hw_runs[i];
                    // The queue records when the run is due on the requesting context's
                    // local clock (CPU model); on the ideal platform that is now + delay.
                    let at = self.queue.pending_run_at(h).unwrap_or(now + delay);
                    // The run is identified by the time blk-mq scheduled it for; the
                    // kblockd wake-up latency comes on top.
                    // Workqueue scheduling latency varies; the spread decides which context
                    // reaches the driver first, and so which CPU's tag hint is used.
                    let j = self.platform.kblockd_jitter_ns;
                    let mut jitter = if j > 0 {
                        self.jitter_rng.below(j.saturating_add(1))
                    } else {
                        0
                    };
                    // The rare long hold-off (`platform.kblockd_tail_*`). Draws come from
                    // the same stream only when the tail is on, so other runs are unchanged.
                    // On the MMC host software queue with the old next-tag scan this is what
                    // ends a starvation episode: a refill later than one transfer leaves the
                    // bypassed slot the lowest one (see repro/README.md, section 5).
                    let (ppm, tail) = (
                        self.platform.kblockd_tail_ppm,
                        self.platform.kblockd_tail_ns,
                    );
                    if ppm > 0 && tail > 0 && self.jitter_rng.below(1_000_000) < ppm {
                        jitter = jitter.saturating_add(
                            self.jitter_rng
                                .below(tail.saturating_mul(2).saturating_add(1)),
                        );
                    }
                    let due = at
                        .saturating_add(self.platform.kblockd_wakeup_ns)
                        .saturating_add(jitter);
                    let seq = self.evq.reserve_seq();
                    self.set_run_timer(h, due, seq, at);
                }
                self.out.hw_runs.clear();
            }
            if !self.out.bio_done.is_empty() {
                progress = true;
                let done = std::mem::take(&mut self.out.bio_done);
                let at = std::mem::take(&mut self.out.bio_done_at);
                let trails = std::mem::take(&mut self.out.bio_trail);
                for (i, &(token, st)) in done.iter().enumerate() {
                    if let (Some(ex), Some(tr)) = (self.explain.as_mut(), trails.get(i)) {
                        let (task, id) = ((token >> TOKEN_SHIFT) as u32, token as u32);
                        ex.trail(task, id, *tr);
                    }
                    // With the CPU model the completion was posted at its context's local
                    // time; the woken task runs after the wake-up latency.
                    let t = at.get(i).copied().unwrap_or(now).max(now);
                    self.bio_done(token, st, t);
                }
                self.out.bio_trail = trails;
                self.out.bio_trail.clear();
                self.out.bio_done = done;
                self.out.bio_done.clear();
                self.out.bio_done_at = at;
                self.out.bio_done_at.clear();
            }
            if !self.out.task_resume.is_empty() {
                progress = true;
                for i in 0..self.out.task_resume.len() {
                    let (t, at) = self.out.task_resume[i];
                    self.evq.push(at.max(now), Ev::TaskSubmitCont(t));
                }
                self.out.task_resume.clear();
            }
            if !self.out.task_unblocked.is_empty() {
                progress = true;
                for i in 0..self.out.task_unblocked.len() {
                    let t = self.out.task_unblocked[i];
                    self.evq.push(
                        now.max(self.clk) + self.platform.task_wakeup_ns,
                        Ev::TaskTagResume(t),
                    );
                }
                self.out.task_unblocked.clear();
            }
            if !self.out.trace.is_empty() || !self.out.drv.notes.is_empty() {
                self.flush_trace(now);
            }
            if !self.out.spans.is_empty() || !self.out.drv.spans.is_empty() {
                self.take_spans();
            }
            if !progress {
                break;
            }
        }
        // Elevator timer.
        let next = self.queue.elevator_next_timer();
        if next != self.elv_timer_armed {
            // (Re)armed in the event that just ran: the timer fires on the CPU of its last
            // context (bfq's idle timer is started at a completion, `bfq_arm_slice_timer`, and
            // `hrtimer_start` keeps it there unless `get_nohz_timer_target` moves it off an
            // idle CPU, which the model does not do). A re-arm to the same expiry from
            // another CPU is not seen.
            self.elv_timer_armed = next;
            self.elv_timer_cpu = self.queue.ctx_cpu();
        }
        if let Some(t) = next {
            if self.elv_timer_at.map(|cur| t < cur).unwrap_or(true) {
                let at = t.max(now);
                self.elv_timer_at = Some(at);
                self.evq.push(at, Ev::ElvTimer(at));
            }
        }
    }

    /// Move the stage intervals the layers reported into the depth timeline.
    fn take_spans(&mut self) {
        let Some(d) = self.depth.as_mut() else {
            return;
        };
        for sp in [&mut self.out.spans, &mut self.out.drv.spans] {
            for &(stage, from, to) in &sp.stages {
                d.add(stage.index(), from, to);
            }
            for &(from, to) in &sp.busy {
                d.add_busy(from, to);
            }
            sp.stages.clear();
            sp.busy.clear();
        }
    }

    /// Hand the records of the event at `now` to the writer. Every later event's records
    /// are at `now` or later (a context starts at its event time or when its CPU is free),
    /// so the writer may write what it holds up to `now`.
    fn flush_trace(&mut self, now: Ns) {
        let recs = std::mem::take(&mut self.out.trace);
        let notes = std::mem::take(&mut self.out.drv.notes);
        if let Some(w) = self.trace.as_mut() {
            for r in &recs {
                if let Err(e) = w.write(&to_trace_event(r)) {
                    self.trace_error = Some(format!("blktrace: {e}"));
                }
            }
            for (t, text) in &notes {
                if let Err(e) = w.message(*t, 0, 0, text) {
                    self.trace_error = Some(format!("blktrace: {e}"));
                }
            }
            if let Err(e) = w.settle(now) {
                self.trace_error = Some(format!("blktrace: {e}"));
            }
        }
        self.out.trace = recs;
        self.out.trace.clear();
    }

    // ----------------------------------------------------------------------------------
    // Tasks
    // ----------------------------------------------------------------------------------

    /// The device lost power at `at`: the oracle judges what it kept, and every running job
    /// ends its write phase there (no end_fsync: the host "crashed") and goes on to its
    /// read-back once its in-flight I/O has ended.
    fn on_power_cut(&mut self, at: Ns, changed: &[(u64, u64, u64)]) {
        self.queue.integrity.power_cut(changed);
        let mut clk = at;
        self.queue.power_cut_flush_waiters(
            &mut self.cpus,
            &mut *self.driver,
            &mut clk,
            &mut self.out,
        );
        self.power_cut = Some(PowerCutFacts {
            at_ns: at,
            changed_sectors: changed.iter().map(|&(s, e, _)| e - s).sum(),
            aborted_ios: 0,
        });
        for t in 0..self.tasks.len() {
            let task = &mut self.tasks[t];
            if task.state == TaskState::Running && task.verify_phase_started() {
                continue;
            }
            task.end_fsync_done = true;
            if task.state == TaskState::Running {
                // No new I/O from now; a sleeping task wakes to drain and read back.
                task.deadline_hit = true;
                task.crashed = true;
                if task.wait == Wait::Sleeping {
                    self.evq.push(at, Ev::TaskDeadline(t as u32));
                }
            }
        }
    }
}

fn to_trace_event(r: &BlkTraceRec) -> blksim_trace::TraceEvent {
    use blksim_trace::{Action, Op as TOp, ReqFlags};
    let action = match r.action {
        b'Q' => Action::Queue,
        b'G' => Action::GetRq,
        b'I' => Action::Insert,
        b'D' => Action::Issue,
        b'C' => Action::Complete,
        b'M' => Action::BackMerge,
        b'F' => Action::FrontMerge,
        b'P' => Action::Plug,
        b'U' => Action::Unplug,
        b'R' => Action::Requeue,
        _ => Action::Queue,
    };
    let op = match r.op {
        Op::Read => TOp::Read,
        Op::Write => TOp::Write,
        Op::Flush => TOp::Flush,
        Op::Discard => TOp::Discard,
    };
    let mut fl = ReqFlags::default();
    if r.flags & flags::REQ_SYNC != 0 {
        fl |= ReqFlags::SYNC;
    }
    if r.flags & flags::REQ_FUA != 0 {
        fl |= ReqFlags::FUA;
    }
    if r.flags & flags::REQ_PREFLUSH != 0 {
        fl |= ReqFlags::PREFLUSH;
    }
    let mut ev = blksim_trace::TraceEvent::new(r.time, action, op, r.sector, r.nr_sectors << 9);
    ev.flags = fl;
    ev.pid = 1000 + r.task;
    ev.cpu = r.cpu as u32;
    match r.action {
        b'U' => ev.pdu = r.extra as u64,
        // `blk_add_trace_rq_complete`: the negative errno of the status.
        b'C' => ev.error = -(r.extra as i16),
        _ => {}
    }
    ev
}
