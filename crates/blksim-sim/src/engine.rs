//! The event loop and the fio job tasks.
//!
//! A task is one fio job clone. It follows fio's `do_io` loop (`backend.c`): fill the queue
//! with io_units, committing every `iodepth_batch_submit`; when the queue is full, reap at
//! least `iodepth_batch_complete_min` completions and keep reaping while the depth is above
//! `iodepth_low` (`wait_for_completions`); sync engines keep one I/O in flight whatever
//! `iodepth` says. All CPU work is instantaneous on the ideal platform.

use crate::platform::Platform;
use blksim_block::queue::{BlkOut, BlkStats, BlkTraceRec, Submit};
use blksim_block::request::{flags, IoPrioClass};
use blksim_block::{Bio, BlkStatus, Driver, DriverOut, Op, RequestQueue};
use blksim_core::{Digest, EventQueue, Ns, RngStreams, Slab, NSEC_PER_SEC, NS_HORIZON};
use blksim_job::{Ddir, JobSpec};
use blksim_report::stats::{JobStats, StatsOptions};
use blksim_workload::{IoGen, IoU, Region};

/// Events are small plain values naming a component and an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskState {
    Waiting,
    Running,
    Done,
}

/// One fio io_u in flight.
#[derive(Clone, Copy, Debug)]
struct IoUnit {
    ddir: Ddir,
    offset: u64,
    len: u64,
    /// fio's `start_time` (io_u prepared) and `issue_time` (after submit).
    start: Ns,
    issue: Ns,
    parts_left: u32,
    /// A flush for fsync (`DDIR_SYNC`).
    sync: bool,
    /// `end_fsync`: fio's `fio_file_fsync` at the end of the job is a plain fsync(2), not an
    /// io_u, so it is not in the sync statistics.
    end_fsync: bool,
    /// An fdatasync (`DDIR_DATASYNC`): in the sync latency, not in `sync.total_ios`, which
    /// counts `DDIR_SYNC` only.
    datasync: bool,
    /// The block layer ended it with an error (EIO).
    error: bool,
    /// A write of a synchronous engine on an O_SYNC/O_DSYNC file whose data is done: the
    /// syscall goes on with `generic_write_sync` → `blkdev_fsync`, an empty PREFLUSH write,
    /// before it returns.
    dsync_flush: bool,
}

struct Task {
    spec: usize,
    name: String,
    groupid: u32,
    cpu: u16,
    gen: Option<IoGen>,
    depth: u32,
    batch_submit: u32,
    complete_min: u32,
    complete_max: u32,
    iodepth_low: u32,
    stats: JobStats,
    stats_opts: StatsOptions,
    state: TaskState,
    /// Jobs that must finish before this one starts (stonewall).
    wait_for: Vec<u32>,
    start_delay: Ns,
    start_ns: Ns,
    end_ns: Ns,
    deadline: Option<Ns>,
    deadline_hit: bool,
    /// io_units submitted and not yet reaped (`cur_depth`).
    in_flight: u32,
    /// Completed, waiting for the reap at this instant.
    completed: Vec<u32>,
    reap_scheduled: bool,
    /// Prepared, not yet committed (`io_u_queued`).
    pending: Vec<u32>,
    /// Bios not yet submitted because the task sleeps on a tag: (io_u, next part).
    submit_cursor: Option<(usize, u32)>,
    commit_batch: Vec<u32>,
    blocked_tag: bool,
    plugging: bool,
    /// Queue was full; reap down to `iodepth_low` before refilling.
    waiting_full: bool,
    sleeping: bool,
    held: Option<IoU>,
    gen_done: bool,
    ious: Slab<IoUnit>,
    think_count: u32,
    /// `fsync=`, `fdatasync=` (fio's `fsync_blocks`, `fdatasync_blocks`), `io_issues[DDIR_WRITE]`
    /// and `last_was_sync`: fio 3.33's `get_rw_ddir` turns the next io_u into a sync when the
    /// write count is a multiple of the block count and `should_fsync` (the job writes, and
    /// the last io_u that *completed* was not a sync, so an asynchronous fsync still in flight
    /// lets another one start).
    fsync_blocks: u32,
    fdatasync_blocks: u32,
    writes_issued: u64,
    last_was_sync: bool,
    /// `get_rw_ddir` may turn an io_u into a sync: the job writes (`td_write`), and its
    /// direction is not trimwrite's, whose `set_rw_ddir` overrides the sync with the trim or
    /// write of the block (so fio's trimwrite jobs never sync between I/Os).
    rw_syncs: bool,
    /// Syncs issued and not yet reaped, which fio's `exceeds_number_ios` counts with the
    /// I/Os queued and in flight (`io_u_queued + io_u_in_flight`).
    syncs_out: u64,
    /// The I/O phase stopped at `number_ios` only because syncs in flight were counted: fio's
    /// `keep_running` then finds fewer I/Os done than asked and starts another `do_io` pass,
    /// which (`last_was_sync` cleared by `clear_io_state`) begins with a sync and, having
    /// moved no bytes, ends the job.
    number_ios_by_syncs: bool,
    /// `sync=1`: writes are FUA (and flushed after, on a synchronous engine).
    sync_io: bool,
    /// io_uring queues fsync as an asynchronous request (`IORING_OP_FSYNC`); the other
    /// engines run it synchronously in the submitting task (libaio: `do_io_u_sync`).
    async_fsync: bool,
    end_fsync: bool,
    end_fsync_done: bool,
    wrote: bool,
    sync_in_flight: bool,
    thinktime_ns: Ns,
    thinktime_blocks: u32,
    rate_iops: [u64; 3],
    rate_bps: [u64; 3],
    rate_issued_ios: [u64; 3],
    rate_issued_bytes: [u64; 3],
    rate_poisson: bool,
    rate_next: [Ns; 3],
    rate_rng: blksim_core::Rng,
    /// `number_ios` × `loops` (`exceeds_number_ios`); 0 during a verify phase.
    number_ios: u64,
    number_ios_cfg: u64,
    issued: u64,
    null_engine: bool,
    /// fio's null engine at `iodepth` > 1 queues io_us (syncs too) until a commit completes
    /// them all, and answers FIO_Q_BUSY while those completions are unreaped (`null_queue`);
    /// at `iodepth=1` it is a synchronous engine (`null_init` sets FIO_SYNCIO).
    null_queued: bool,
    /// sync/psync/...: one I/O per syscall, issue time stamped before the call.
    is_sync_engine: bool,
    /// The task is inside a syscall that yielded the CPU model's clock (see
    /// [`Ev::TaskSubmitCont`]); it does nothing else until the submission goes on.
    submit_yield: bool,
    /// fio's verify phase (`verify=` + `do_verify`): after the write phase the job reads its
    /// region back (`do_verify`); the block layer's integrity oracle checks every read.
    verify_log: Option<crate::verify::VerifyLog>,
    verify_reads: Option<crate::verify::VerifyReads>,
    /// Reads and bytes of the current verify phase, which fio's `keep_running` counts.
    verify_ios: u64,
    verify_bytes: u64,
    /// A power cut ended the write phase: read back, then stop.
    crashed: bool,
    /// The read-back phase has started.
    in_verify: bool,
    /// `continue_on_error` bits and fio's error state: the first fatal error (`td->error`,
    /// errno) and the count of non-fatal ones (`total_err_count`, `first_error`).
    continue_on_error: u8,
    error: i32,
    total_err_count: u64,
    first_error: i32,
}

impl Task {
    fn verify_phase_started(&self) -> bool {
        self.in_verify
    }
}

/// Which flush an fio job asks for (`DDIR_SYNC`, `DDIR_DATASYNC`, or `end_fsync`'s fsync(2)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SyncKind {
    Fsync,
    Fdatasync,
    EndFsync,
}

impl SyncKind {
    fn from(datasync: bool) -> Self {
        if datasync {
            SyncKind::Fdatasync
        } else {
            SyncKind::Fsync
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
    pub total_err_count: u64,
    pub first_error: i32,
}

/// An I/O that failed fatally (fio's `io_u_log_error`): task, direction, offset, length.
#[derive(Clone, Debug, PartialEq)]
pub struct IoErrorRecord {
    pub task: usize,
    pub ddir: Ddir,
    pub sync: bool,
    pub offset: u64,
    pub len: u64,
}

/// errno of every I/O error the block layer reports to a submitter (BLK_STS_IOERR → EIO).
pub const EIO: i32 = 5;

/// Everything a run produced.
pub struct SimOutput {
    pub tasks: Vec<TaskResult>,
    pub blk: BlkStats,
    pub elevator: String,
    pub driver: String,
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
    /// The I/O errors that stopped a job, for fio's `io_u error` message.
    pub fatal_errors: Vec<IoErrorRecord>,
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
    driver: Box<dyn Driver>,
    out: BlkOut,
    tasks: Vec<Task>,
    platform: Platform,
    digest: Digest,
    elv_timer_at: Option<Ns>,
    kblockd_runs: u64,
    trace: Option<blksim_trace::BlktraceWriter>,
    trace_error: Option<String>,
    capacity_bytes: u64,
    max_events: u64,
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
    /// Bios submitted and completed (`blksim.bios`; every bio must complete exactly once).
    bios: [u64; 2],
    /// Test only (`--debug-drop-completion=N`, for the fuzzer's own test): lose the N-th bio
    /// completion; 0 = off.
    drop_completion: u64,
}

const TOKEN_SHIFT: u32 = 32;

impl Sim {
    /// Build a simulation. `jobs` are the expanded job specs (numjobs → clones) with their
    /// group ids and stonewall dependencies already resolved by [`crate::setup`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        specs: &[JobSpec],
        clones: &[(usize, u32, u32, Vec<u32>)],
        queue: RequestQueue,
        driver: Box<dyn Driver>,
        platform: Platform,
        seed: u64,
        trace: Option<blksim_trace::BlktraceWriter>,
    ) -> Result<Sim, String> {
        let capacity_bytes = driver.capacity_sectors() << 9;
        if capacity_bytes == 0 {
            return Err("device has zero capacity".into());
        }
        let mut tasks = Vec::with_capacity(clones.len());
        for (i, (spec_idx, clone, groupid, wait_for)) in clones.iter().enumerate() {
            let spec = &specs[*spec_idx];
            // Semantic errors name the job file line (or command-line option) they concern.
            let region =
                Region::resolve(spec, *clone, capacity_bytes).map_err(|e| e.to_string())?;
            let root = blksim_workload::workload_root_seed(spec, seed);
            let streams = RngStreams::new(root);
            let null_engine = matches!(spec.ioengine, blksim_job::IoEngine::Null);
            let mut gen = IoGen::try_new(spec, region, &streams, i).map_err(|e| e.to_string())?;
            let verify_log = crate::verify::VerifyLog::new(spec, &gen);
            if verify_log.is_some() && !spec.time_based {
                gen.stop_at_pass_ends();
            }
            let depth = spec.effective_depth();
            let batch_submit = if spec.iodepth_batch_submit == 0 {
                depth
            } else {
                spec.iodepth_batch_submit.min(depth)
            };
            let complete_min = spec.iodepth_batch_complete_min.min(depth);
            let iodepth_low = spec.iodepth_low.unwrap_or(depth).min(depth);
            // fio's null engine is FIO_SYNCIO at iodepth=1 (`null_init`): no slat either.
            let is_sync_engine = spec.ioengine.is_sync() || (null_engine && spec.iodepth <= 1);
            let opts = StatsOptions {
                percentile_list: spec.percentile_list.clone(),
                clat_percentiles: spec.clat_percentiles,
                lat_percentiles: spec.lat_percentiles,
                slat_percentiles: spec.slat_percentiles,
                record_slat: !is_sync_engine,
                gtod_reduce: spec.gtod_reduce,
                ramp_ns: spec.ramp_time_ns,
                ..StatsOptions::default()
            };
            let mut delay_rng = streams.stream(&format!("job{i}.startdelay"));
            let (lo, hi) = spec.startdelay_ns;
            let start_delay = if hi > lo {
                delay_rng.range_inclusive(lo, hi)
            } else {
                lo
            };
            tasks.push(Task {
                spec: *spec_idx,
                name: spec.name.clone(),
                groupid: *groupid,
                cpu: (i % platform.nr_cpus.max(1) as usize) as u16,
                gen: Some(gen),
                depth,
                batch_submit: batch_submit.max(1),
                complete_min,
                complete_max: spec.effective_iodepth_batch_complete_max().clamp(1, depth),
                iodepth_low,
                stats: JobStats::new(0, &opts),
                stats_opts: opts,
                state: TaskState::Waiting,
                wait_for: wait_for.clone(),
                start_delay,
                start_ns: 0,
                end_ns: 0,
                deadline: None,
                deadline_hit: false,
                in_flight: 0,
                completed: Vec::with_capacity(depth as usize),
                reap_scheduled: false,
                pending: Vec::with_capacity(depth as usize),
                submit_cursor: None,
                commit_batch: Vec::with_capacity(depth as usize),
                blocked_tag: false,
                plugging: false,
                waiting_full: false,
                sleeping: false,
                held: None,
                gen_done: false,
                ious: Slab::new(),
                think_count: 0,
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
                async_fsync: spec.ioengine.name() == "io_uring",
                end_fsync: spec.end_fsync,
                end_fsync_done: false,
                wrote: false,
                sync_in_flight: false,
                thinktime_ns: spec.thinktime_ns,
                thinktime_blocks: spec.thinktime_blocks.max(1),
                rate_iops: spec.rate_iops,
                rate_bps: spec.rate,
                rate_issued_ios: [0; 3],
                rate_issued_bytes: [0; 3],
                rate_poisson: spec.rate_poisson,
                rate_next: [0; 3],
                rate_rng: streams.stream(&format!("job{i}.rate")),
                number_ios: spec.number_ios.saturating_mul(spec.loops.max(1) as u64),
                number_ios_cfg: spec.number_ios.saturating_mul(spec.loops.max(1) as u64),
                issued: 0,
                null_engine,
                null_queued: null_engine && spec.iodepth > 1,
                is_sync_engine,
                submit_yield: false,
                verify_log,
                verify_reads: None,
                verify_ios: 0,
                verify_bytes: 0,
                crashed: false,
                in_verify: false,
                continue_on_error: spec.continue_on_error,
                error: 0,
                total_err_count: 0,
                first_error: 0,
            });
        }
        let out = BlkOut {
            tracing: trace.is_some(),
            drv: DriverOut {
                tracing: trace.is_some(),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut sim = Sim {
            evq: EventQueue::new(),
            queue,
            driver,
            out,
            tasks,
            platform,
            digest: Digest::default(),
            elv_timer_at: None,
            kblockd_runs: 0,
            trace,
            trace_error: None,
            capacity_bytes,
            max_events: u64::MAX,
            debug_events: std::env::var_os("BLKSIM_DEBUG_EVENTS").is_some(),
            jitter_rng: RngStreams::new(seed).stream("platform.jitter"),
            power_cut: None,
            io_errors: 0,
            fatal_errors: Vec::new(),
            last_version: 0,
            clk: 0,
            ctx_ev: 0,
            ctx_start: 0,
            ctx_cpu: 0,
            bios: [0; 2],
            drop_completion: 0,
        };
        if sim.driver.power_cut_planned() {
            let wc = sim.queue.lim.write_cache;
            sim.queue.integrity.track_durability(wc);
        }
        let driver_seed = RngStreams::new(seed).stream("driver").next_u64();
        sim.driver.init(driver_seed, &mut sim.out.drv);
        for t in 0..sim.tasks.len() {
            if sim.tasks[t].wait_for.is_empty() {
                let d = sim.tasks[t].start_delay;
                sim.evq.push(d, Ev::TaskStart(t as u32));
            }
        }
        Ok(sim)
    }

    /// Stop after this many events (a guard for runaway configurations in tests).
    pub fn set_max_events(&mut self, n: u64) {
        self.max_events = n;
    }

    /// Test only: lose the `n`-th bio completion (an injected bug the run must report).
    pub fn set_debug_drop_completion(&mut self, n: u64) {
        self.drop_completion = n;
    }

    /// Run to completion.
    pub fn run(mut self) -> Result<SimOutput, String> {
        let mut handled: u64 = 0;
        while let Some((now, ev)) = self.evq.pop() {
            if now >= NS_HORIZON {
                return Err(format!(
                    "simulated time would pass {NS_HORIZON} ns (about 146 years), the end of blksim's virtual clock; shorten the job's time options (thinktime, rate, runtime) or the device's latencies"
                ));
            }
            handled += 1;
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
            if let Some(e) = self.trace_error.take() {
                return Err(e);
            }
            if let Some(m) = &self.queue.integrity.first_mismatch {
                return Err(format!("{m}, at t={now} ns"));
            }
        }
        let end = self.evq.now();
        self.queue.account_until(end);
        // Nothing may be lost: every request completed, every task finished.
        for (i, t) in self.tasks.iter().enumerate() {
            if t.state != TaskState::Done {
                return Err(format!(
                    "internal error: job '{}' (task {i}) never finished (in_flight={}, blocked_tag={}, waiting_full={}): the simulated path lost a request",
                    t.name, t.in_flight, t.blocked_tag, t.waiting_full
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
        let (peak_requests, peak_bios) = self.queue.pool.capacity_used();
        let elevator = self.queue.elevator_name().to_string();
        let elevator_stats = self.queue.elevator().map(|e| e.stats()).unwrap_or_default();
        let tasks = self
            .tasks
            .into_iter()
            .map(|t| TaskResult {
                error: t.error,
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
            blk: self.queue.stats.clone(),
            elevator,
            driver: self.driver.name().to_string(),
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
            cpu_stats: self.queue.cpu_stats(),
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
        })
    }

    /// Start a task context (CPU model): the task runs on its CPU from when that CPU is
    /// free; `switch_in` adds a context switch (the task was asleep).
    fn task_begin(&mut self, t: usize, now: Ns, switch_in: bool) -> Ns {
        let cpu = self.tasks[t].cpu;
        let start = self.queue.cpu.begin(cpu, now);
        self.queue.cpu.cur_task = Some(t as u32);
        self.ctx_ev = now;
        self.ctx_start = start;
        self.ctx_cpu = cpu;
        self.clk = start;
        if switch_in && self.queue.cpu.on {
            self.clk += self.platform.ctxsw_ns;
        }
        self.clk
    }

    fn task_end(&mut self) {
        self.queue
            .cpu
            .end(self.ctx_cpu, self.ctx_start, self.clk.max(self.ctx_start));
        self.queue.cpu.cur_task = None;
        self.queue.cpu.task_parked = None;
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
                if task.state == TaskState::Running && task.sleeping {
                    task.sleeping = false;
                    let clk = self.task_begin(t as usize, now, true);
                    self.pump(t as usize, clk);
                    self.task_end();
                }
            }
            Ev::TaskReap(t) => {
                // A task asleep in getevents is switched in only once enough completions
                // are there (`iodepth_batch_complete_min`); otherwise it reaps in passing.
                let task = &self.tasks[t as usize];
                let min_evts = task.complete_min.max(1).min(task.in_flight) as usize;
                let wakes = task.waiting_full
                    && !task.blocked_tag
                    && !task.submit_yield
                    && task.completed.len() >= min_evts;
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
                if self.tasks[t].submit_yield {
                    self.tasks[t].submit_yield = false;
                    let clk = self.task_begin(t, now, false);
                    self.continue_submit(t, clk);
                    if !self.tasks[t].blocked_tag && !self.tasks[t].submit_yield {
                        let clk = self.clk;
                        self.pump(t, clk);
                    }
                    self.task_end();
                }
            }
            Ev::HwRun(h, at) => {
                self.kblockd_runs += 1;
                // The block layer chose the CPU when it queued the work
                // (`blk_mq_hctx_next_cpu`).
                let cpu = self.queue.run_cpu(h);
                self.queue
                    .run_work(h, at, cpu, &mut *self.driver, now, &mut self.out);
            }
            Ev::Driver(p) => {
                self.driver.on_event_cpu(
                    p,
                    &self.queue.pool,
                    now,
                    &mut self.queue.cpu,
                    &mut self.out.drv,
                );
                self.queue
                    .drain_driver_completions(&mut *self.driver, now, &mut self.out);
            }
            Ev::DispatchResume(id) => {
                self.queue
                    .resume_run(id, &mut *self.driver, now, &mut self.out)
            }
            Ev::ElvTimer(at) => {
                if self.elv_timer_at == Some(at) {
                    self.elv_timer_at = None;
                    self.queue.elevator_timer(now, &mut self.out);
                }
            }
            Ev::StartQueues => self
                .queue
                .start_stopped_hw_queues(&mut { now }, &mut self.out),
            Ev::TaskDeadline(t) => {
                let task = &mut self.tasks[t as usize];
                if task.state == TaskState::Running {
                    task.deadline_hit = true;
                    if task.sleeping {
                        task.sleeping = false;
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
                self.queue
                    .drain_driver_completions(&mut *self.driver, now, &mut self.out);
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
                    self.evq.push(
                        at.saturating_add(self.platform.kblockd_wakeup_ns)
                            .saturating_add(jitter),
                        Ev::HwRun(h, at),
                    );
                }
                self.out.hw_runs.clear();
            }
            if !self.out.bio_done.is_empty() {
                progress = true;
                let done = std::mem::take(&mut self.out.bio_done);
                let at = std::mem::take(&mut self.out.bio_done_at);
                for (i, &(token, st)) in done.iter().enumerate() {
                    // With the CPU model the completion was posted at its context's local
                    // time; the woken task runs after the wake-up latency.
                    let t = at.get(i).copied().unwrap_or(now).max(now);
                    self.bio_done(token, st, t);
                }
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
                self.flush_trace();
            }
            if !progress {
                break;
            }
        }
        // Elevator timer.
        if let Some(t) = self.queue.elevator_next_timer() {
            if self.elv_timer_at.map(|cur| t < cur).unwrap_or(true) {
                let at = t.max(now);
                self.elv_timer_at = Some(at);
                self.evq.push(at, Ev::ElvTimer(at));
            }
        }
    }

    fn flush_trace(&mut self) {
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
        }
        self.out.trace = recs;
        self.out.trace.clear();
    }

    // ----------------------------------------------------------------------------------
    // Tasks
    // ----------------------------------------------------------------------------------

    fn task_start(&mut self, t: usize, now: Ns) {
        let task = &mut self.tasks[t];
        if task.state != TaskState::Waiting {
            return;
        }
        task.state = TaskState::Running;
        task.start_ns = now;
        task.stats = JobStats::new(now, &task.stats_opts);
        self.pump(t, now);
    }

    /// Set the deadline when the task starts (runtime counts from the start, ramp included).
    pub fn set_deadlines(&mut self, specs: &[JobSpec]) {
        for t in &mut self.tasks {
            let s = &specs[t.spec];
            if s.runtime_ns > 0 {
                t.deadline = Some(s.runtime_ns + s.ramp_time_ns);
            } else if s.time_based {
                // time_based without runtime: fio would run forever; stop at ramp + 0.
                t.deadline = Some(s.ramp_time_ns.max(1));
            }
        }
    }

    /// fio's main loop for one task at `now`.
    fn pump(&mut self, t: usize, now: Ns) {
        loop {
            // The local clock moves as the task's syscalls spend CPU time (CPU model).
            let now = now.max(self.clk);
            let task = &mut self.tasks[t];
            if task.state != TaskState::Running
                || task.submit_yield
                || task.blocked_tag
                || task.sleeping
                || task.waiting_full
                || task.sync_in_flight
            {
                return;
            }
            if let Some(d) = task.deadline {
                if !task.deadline_hit && now >= task.start_ns + d {
                    task.deadline_hit = true;
                } else if !task.deadline_hit
                    && task.state == TaskState::Running
                    && task.issued == 0
                    && task.in_flight == 0
                    && task.pending.is_empty()
                {
                    // Arm the deadline event once, at the first pump.
                    self.evq.push(task.start_ns + d, Ev::TaskDeadline(t as u32));
                }
            }
            let task = &mut self.tasks[t];
            let stopping = task.deadline_hit || task.gen_done;
            // thinktime: after thinktime_blocks I/Os, wait for them, then stall.
            if task.thinktime_ns > 0 && task.think_count >= task.thinktime_blocks && !stopping {
                if !task.pending.is_empty() {
                    self.commit(t, now);
                    continue;
                }
                if task.in_flight > 0 {
                    return;
                }
                task.think_count = 0;
                task.sleeping = true;
                let at = now.saturating_add(task.thinktime_ns);
                self.evq.push(at, Ev::TaskWake(t as u32));
                return;
            }
            if stopping {
                if !task.pending.is_empty() {
                    self.commit(t, now);
                    continue;
                }
                if task.in_flight > 0 {
                    return;
                }
                // `should_fsync(td) && end_fsync`: not right after a sync.
                if task.end_fsync
                    && task.wrote
                    && !task.end_fsync_done
                    && !task.last_was_sync
                    && task.error == 0
                {
                    task.end_fsync_done = true;
                    self.issue_sync(t, now, SyncKind::EndFsync);
                    continue;
                }
                if task.number_ios_by_syncs && task.error == 0 && !task.in_verify {
                    task.number_ios_by_syncs = false;
                    let due = |blocks: u32| {
                        blocks > 0
                            && task.writes_issued > 0
                            && task.writes_issued.is_multiple_of(blocks as u64)
                    };
                    if task.rw_syncs && (due(task.fsync_blocks) || due(task.fdatasync_blocks)) {
                        let kind = SyncKind::from(!due(task.fsync_blocks));
                        task.last_was_sync = false;
                        if task.null_queued {
                            self.queue_null_sync(t, now, kind);
                        } else {
                            self.issue_sync(t, now, kind);
                        }
                        continue;
                    }
                }
                let go_on = task.error == 0 && !task.deadline_hit;
                // After a power cut the job reads back what it wrote, as a verify run after
                // a crash does, whatever time is left.
                if !task.in_verify && (go_on || (task.crashed && task.error == 0)) {
                    if let Some(log) = task.verify_log.take() {
                        // `do_verify` after the pass: read back what it logged
                        // (`clear_io_state` first).
                        if task.crashed {
                            task.deadline = None;
                            task.deadline_hit = false;
                        }
                        task.verify_reads = Some(log.into_reads());
                        task.held = None;
                        task.in_verify = true;
                        task.gen_done = false;
                        task.last_was_sync = false;
                        task.number_ios = 0;
                        task.verify_ios = 0;
                        task.verify_bytes = 0;
                        continue;
                    }
                }
                if task.in_verify {
                    task.in_verify = false;
                    task.verify_reads = None;
                    task.number_ios = task.number_ios_cfg;
                    if let Some(g) = task.gen.as_mut() {
                        g.verified(task.verify_ios, task.verify_bytes);
                    }
                }
                // `keep_running`: another pass (`clear_io_state`), with its own log.
                if let Some(g) = task
                    .gen
                    .as_mut()
                    .filter(|g| go_on && !task.crashed && g.at_pass_end())
                {
                    g.resume();
                    task.verify_log = Some(crate::verify::VerifyLog::for_pass(g));
                    task.gen_done = false;
                    task.end_fsync_done = false;
                    task.last_was_sync = false;
                    continue;
                }
                self.finish_task(t, now);
                return;
            }
            // Queue full: commit what is pending and wait for completions.
            if task.in_flight + task.pending.len() as u32 >= task.depth {
                if !task.pending.is_empty() {
                    self.commit(t, now);
                    continue;
                }
                task.waiting_full = true;
                // Completions that arrived while the task was busy elsewhere (asleep in
                // io_submit) are reaped now.
                if !task.completed.is_empty() && !task.reap_scheduled {
                    task.reap_scheduled = true;
                    self.evq.push(now, Ev::TaskReap(t as u32));
                }
                return;
            }
            if task.number_ios > 0 && task.issued + task.syncs_out >= task.number_ios {
                task.number_ios_by_syncs = task.issued < task.number_ios;
                task.gen_done = true;
                continue;
            }
            // Next io_u.
            let io = match task.held.take() {
                Some(io) => io,
                None => match if task.in_verify {
                    task.verify_reads.as_mut().and_then(|r| r.next())
                } else {
                    task.gen.as_mut().and_then(|g| g.next())
                } {
                    Some(io) => io,
                    None => {
                        task.gen_done = true;
                        continue;
                    }
                },
            };
            // `get_rw_ddir`: every `fsync_blocks` (`fdatasync_blocks`) writes the next io_u is
            // a sync, if there is a next one (the last writes of a job get none unless
            // `end_fsync`). libaio answers FIO_Q_BUSY while io_us are queued, so they are
            // committed first; in-flight I/O is not waited for.
            let due = |blocks: u32| {
                blocks > 0
                    && task.writes_issued > 0
                    && task.writes_issued.is_multiple_of(blocks as u64)
            };
            // The verify phase takes its io_us from the verify list (`do_verify`), never
            // from `get_rw_ddir`: no syncs there.
            let should_fsync = task.rw_syncs && !task.last_was_sync && !task.in_verify;
            if should_fsync && (due(task.fsync_blocks) || due(task.fdatasync_blocks)) {
                let datasync = !due(task.fsync_blocks);
                task.held = Some(io);
                if task.null_queued {
                    self.null_busy_reap(t, now);
                    self.queue_null_sync(t, now, SyncKind::from(datasync));
                    continue;
                }
                if !task.pending.is_empty() {
                    self.commit(t, now);
                    if self.tasks[t].blocked_tag || self.tasks[t].submit_yield {
                        // io_submit has not returned (asleep on a tag, or waiting for a
                        // dispatch it runs): the sync is issued when it does, from `held`.
                        continue;
                    }
                }
                let now = now.max(self.clk);
                self.issue_sync(t, now, SyncKind::from(datasync));
                continue;
            }
            // Rate limiting (`rate_iops`, `rate`): the issue time of the next I/O of this
            // direction follows the I/Os already issued (`usec_for_io`).
            let d = io.ddir.idx();
            if task.rate_iops[d] > 0 || task.rate_bps[d] > 0 {
                let next = task.rate_next[d];
                if now < next {
                    task.held = Some(io);
                    task.sleeping = true;
                    if !task.pending.is_empty() {
                        self.commit(t, now);
                    }
                    let task = &mut self.tasks[t];
                    let wake =
                        next.min(task.deadline.map(|d| task.start_ns + d).unwrap_or(Ns::MAX));
                    self.evq.push(wake.max(now), Ev::TaskWake(t as u32));
                    return;
                }
                let gap = NSEC_PER_SEC
                    .checked_div(task.rate_iops[d])
                    .unwrap_or_else(|| {
                        (io.len as u128 * NSEC_PER_SEC as u128 / task.rate_bps[d] as u128)
                            .min(NS_HORIZON as u128) as Ns
                    });
                let gap = if task.rate_poisson {
                    // Exponential inter-arrival times with the same mean (`rate_process=poisson`).
                    let u = task.rate_rng.f64();
                    (-(1.0 - u).ln() * gap as f64) as Ns
                } else {
                    gap
                };
                task.rate_next[d] = next.max(now.saturating_sub(gap)).saturating_add(gap);
                task.rate_issued_ios[d] += 1;
                task.rate_issued_bytes[d] += io.len;
            }
            if task.null_queued && !task.completed.is_empty() {
                self.null_busy_reap(t, now);
            }
            let task = &mut self.tasks[t];
            let id = task.ious.insert(IoUnit {
                ddir: io.ddir,
                offset: io.offset,
                len: io.len,
                start: now,
                issue: now,
                parts_left: 0,
                sync: false,
                end_fsync: false,
                datasync: false,
                dsync_flush: false,
                error: false,
            });
            task.pending.push(id);
            task.issued += 1;
            task.think_count += 1;
            if io.ddir == Ddir::Write {
                task.wrote = true;
                task.writes_issued += 1;
            }
            if let Some(log) = task.verify_log.as_mut() {
                log.logged(&io);
            }
            if task.in_verify {
                task.verify_ios += 1;
                task.verify_bytes += io.len;
            }
            let full = task.in_flight + task.pending.len() as u32 >= task.depth;
            if task.pending.len() as u32 >= task.batch_submit || full {
                self.commit(t, now);
            }
        }
    }

    /// `td_io_commit`: submit the pending io_units (one `io_submit` call). More than two
    /// I/Os in one call are plugged, as `io_submit` (AIO_PLUG_THRESHOLD) and io_uring do.
    fn commit(&mut self, t: usize, now: Ns) {
        // The submit syscall (`io_submit`, `io_uring_enter`): entry and exit.
        self.clk = self.clk.max(now) + self.platform.syscall_ns;
        let now = self.clk;
        let task = &mut self.tasks[t];
        debug_assert!(task.commit_batch.is_empty());
        std::mem::swap(&mut task.commit_batch, &mut task.pending);
        let n = task.commit_batch.len() as u32;
        if n == 0 {
            return;
        }
        task.stats.record_submit(n);
        task.in_flight += n;
        for i in 0..task.commit_batch.len() {
            let id = task.commit_batch[i];
            task.ious.get_mut(id).issue = now;
        }
        let depth_now = task.in_flight;
        task.stats.record_depth_n(depth_now, n);
        if task.null_engine {
            // fio's null engine completes at commit without touching a device.
            let batch = std::mem::take(&mut task.commit_batch);
            for &id in &batch {
                task.completed.push(id);
            }
            task.commit_batch = batch;
            task.commit_batch.clear();
            if !task.reap_scheduled {
                task.reap_scheduled = true;
                self.evq.push(now, Ev::TaskReap(t as u32));
            }
            return;
        }
        task.submit_cursor = Some((0, 0));
        self.continue_submit(t, now);
    }

    /// Submit bios from the commit batch until done or the task sleeps on a tag.
    fn continue_submit(&mut self, t: usize, now: Ns) {
        let max_part_sectors = {
            let lim = &self.queue.lim;
            lim.max_sectors().min(lim.max_segments as u32 * 8).max(1) as u64
        };
        let task_id = t as u32;
        let cpu = self.tasks[t].cpu;
        let nr = self.tasks[t].commit_batch.len();
        let plug = nr > 2 || self.tasks[t].plugging;
        if plug && !self.tasks[t].plugging {
            self.tasks[t].plugging = true;
            self.queue.start_plug(task_id);
        }
        while let Some((idx, part)) = self.tasks[t].submit_cursor {
            if idx >= nr {
                self.tasks[t].submit_cursor = None;
                break;
            }
            let id = self.tasks[t].commit_batch[idx];
            let io = *self.tasks[t].ious.get(id);
            let total_sectors = (io.len >> 9).max(1);
            let parts = total_sectors.div_ceil(max_part_sectors) as u32;
            if part == 0 {
                self.tasks[t].ious.get_mut(id).parts_left = parts;
                if parts > 1 && !self.tasks[t].plugging {
                    // Large direct I/O builds several bios under a plug (`__blkdev_direct_IO`).
                    self.tasks[t].plugging = true;
                    self.queue.start_plug(task_id);
                }
            }
            let sector0 = io.offset >> 9;
            let off = part as u64 * max_part_sectors;
            let nsec = (total_sectors - off).min(max_part_sectors) as u32;
            let op = match io.ddir {
                Ddir::Read => Op::Read,
                Ddir::Write => Op::Write,
                Ddir::Trim => Op::Discard,
            };
            let mut fl = 0;
            if op == Op::Write {
                // O_DIRECT writes are REQ_SYNC | REQ_IDLE, plus REQ_FUA on an O_SYNC/O_DSYNC
                // file (`dio_bio_write_op`, `iocb_is_dsync`); reads carry no flag (they are
                // sync by op, `op_is_sync`).
                fl |= flags::REQ_SYNC | flags::REQ_IDLE;
                if self.tasks[t].sync_io {
                    fl |= flags::REQ_FUA;
                }
            }
            // Every user write carries a fresh data version (the integrity oracle).
            let version = if op == Op::Write {
                self.last_version += 1;
                self.last_version
            } else {
                0
            };
            let bio = Bio {
                token: ((t as u64) << TOKEN_SHIFT) | id as u64,
                op,
                flags: fl,
                sector: sector0 + off,
                nr_sectors: nsec,
                nr_segments: ((nsec as u64 * 512).div_ceil(4096)).max(1) as u16,
                task: task_id,
                cpu,
                ioprio: IoPrioClass::Be,
                version,
                queue_time: now,
                next: blksim_block::request::NO_BIO,
            };
            // Advance the cursor first: the bio is handed over either way.
            let next = if part + 1 < parts {
                (idx, part + 1)
            } else {
                (idx + 1, 0)
            };
            self.tasks[t].submit_cursor = Some(next);
            // The digest covers what was asked of the device, not only when.
            self.digest.event(
                bio.sector,
                100 + op as u64,
                ((task_id as u64) << 32) | nsec as u64,
            );
            self.bios[0] += 1;
            let r = self
                .queue
                .submit_bio_at(bio, &mut *self.driver, &mut self.clk, &mut self.out);
            if r == Submit::WaitTag {
                self.tasks[t].blocked_tag = true;
                return;
            }
            if self.queue.cpu.task_parked.take() == Some(task_id) {
                // A dispatch run inside this syscall yielded; the task waits for it.
                self.tasks[t].submit_yield = true;
                return;
            }
            if self.queue.cpu.on
                && self.clk > self.ctx_ev
                && (self.tasks[t].submit_cursor.map(|c| c.0 < nr) == Some(true)
                    || self.tasks[t].plugging)
            {
                // Yield between bios so that other CPUs' lock acquisitions that come
                // earlier in time go first.
                self.tasks[t].submit_yield = true;
                self.evq.push(self.clk, Ev::TaskSubmitCont(task_id));
                return;
            }
        }
        if self.tasks[t].plugging {
            self.tasks[t].plugging = false;
            self.queue
                .finish_plug(task_id, &mut *self.driver, &mut self.clk, &mut self.out);
            if self.queue.cpu.task_parked.take() == Some(task_id) {
                self.end_commit(t);
                self.tasks[t].submit_yield = true;
                return;
            }
        }
        self.end_commit(t);
    }

    fn tag_resume(&mut self, t: usize, now: Ns) {
        self.clk = self.clk.max(now);
        let r =
            self.queue
                .resume_tag_waiter(t as u32, &mut *self.driver, &mut self.clk, &mut self.out);
        if r == Submit::WaitTag {
            return;
        }
        self.tasks[t].blocked_tag = false;
        if self.tasks[t].sync_in_flight && self.tasks[t].submit_cursor.is_none() {
            return;
        }
        self.continue_submit(t, now);
        if !self.tasks[t].blocked_tag && !self.tasks[t].submit_yield {
            let now = self.clk.max(now);
            self.pump(t, now);
        }
    }

    /// `io_submit` returned: fio's libaio/io_uring commit stamps `issue_time` on every io_u of
    /// the batch after the call (`fio_libaio_commit`), so slat includes any time the task
    /// slept in the block layer on a tag and clat starts here. Sync engines stamp it before
    /// the syscall (their clat is the whole call), so they keep the commit-time stamp.
    fn end_commit(&mut self, t: usize) {
        let now = self.clk;
        let task = &mut self.tasks[t];
        if !task.is_sync_engine {
            for i in 0..task.commit_batch.len() {
                let id = task.commit_batch[i];
                if let Some(io) = task.ious.try_get_mut(id) {
                    io.issue = io.issue.max(now);
                }
            }
        }
        task.commit_batch.clear();
    }

    /// An fsync (`DDIR_SYNC`): `blkdev_fsync` → `blkdev_issue_flush`, an empty
    /// `REQ_OP_WRITE | REQ_PREFLUSH` bio; the block layer's flush machinery decides what the
    /// device sees (nothing without a write cache). The task waits for it unless the engine
    /// queues fsync asynchronously (io_uring).
    fn issue_sync(&mut self, t: usize, now: Ns, kind: SyncKind) {
        let task = &mut self.tasks[t];
        let id = task.ious.insert(IoUnit {
            ddir: Ddir::Write,
            offset: 0,
            len: 0,
            start: now,
            issue: now,
            parts_left: 1,
            sync: true,
            end_fsync: kind == SyncKind::EndFsync,
            datasync: kind == SyncKind::Fdatasync,
            dsync_flush: false,
            error: false,
        });
        if kind != SyncKind::EndFsync {
            task.syncs_out += 1;
        }
        task.sync_in_flight = !task.async_fsync;
        task.in_flight += 1;
        if task.null_engine {
            // fio's null engine completes everything at once.
            task.completed.push(id);
            if !task.reap_scheduled {
                task.reap_scheduled = true;
                self.evq.push(now, Ev::TaskReap(t as u32));
            }
            return;
        }
        self.submit_flush(t, id, now);
    }

    /// Submit the empty PREFLUSH write of `blkdev_issue_flush` for io_u `id` of task `t`.
    fn submit_flush(&mut self, t: usize, id: u32, now: Ns) {
        let bio = Bio {
            token: ((t as u64) << TOKEN_SHIFT) | id as u64,
            op: Op::Write,
            flags: flags::REQ_SYNC | flags::REQ_PREFLUSH,
            sector: 0,
            nr_sectors: 0,
            nr_segments: 0,
            task: t as u32,
            cpu: self.tasks[t].cpu,
            ioprio: IoPrioClass::Be,
            version: 0,
            queue_time: now,
            next: blksim_block::request::NO_BIO,
        };
        self.clk = self.clk.max(now);
        self.bios[0] += 1;
        if self
            .queue
            .submit_bio_at(bio, &mut *self.driver, &mut self.clk, &mut self.out)
            == Submit::WaitTag
        {
            self.tasks[t].blocked_tag = true;
        }
    }

    fn bio_done(&mut self, token: u64, st: BlkStatus, now: Ns) {
        self.bios[1] += 1;
        if self.bios[1] == self.drop_completion {
            return;
        }
        let t = (token >> TOKEN_SHIFT) as usize;
        let id = (token & 0xffff_ffff) as u32;
        let task = &mut self.tasks[t];
        let io = task.ious.get_mut(id);
        debug_assert!(io.parts_left > 0, "bio completed twice");
        io.parts_left -= 1;
        if st != BlkStatus::Ok {
            io.error = true;
        }
        if io.parts_left == 0 {
            task.completed.push(id);
            if !task.reap_scheduled {
                task.reap_scheduled = true;
                self.evq.push(now, Ev::TaskReap(t as u32));
            }
        }
    }

    /// `wait_for_completions` → `io_u_queued_complete`. While the queue is full, each
    /// getevents call reaps at most `iodepth_batch_complete_max` of the completions available
    /// now and fio refills before it reaps again, so the depth it records stays at iodepth
    /// (fio's own runs show "IO depths : 16=100%"); while above `iodepth_low` it keeps
    /// reaping without refilling. When not full (draining at the end, before an fsync or a
    /// rate sleep, which `io_u_quiesce`s) everything available is reaped. A task asleep in
    /// `io_submit` on a tag cannot reap; its pump schedules the reap when it gets back.
    fn reap(&mut self, t: usize, now: Ns) {
        self.tasks[t].reap_scheduled = false;
        self.start_dsync_flushes(t, now);
        // A task inside a synchronous fsync returns from it before it reaps anything else.
        if self.tasks[t].sync_in_flight {
            let task = &mut self.tasks[t];
            let Some(pos) = task.completed.iter().position(|&id| task.ious.get(id).sync) else {
                return;
            };
            let id = task.completed.remove(pos);
            let io = task.ious.remove(id);
            task.sync_in_flight = false;
            task.in_flight -= 1;
            if !io.end_fsync {
                task.syncs_out -= 1;
            }
            if io.error {
                self.io_error(t, &io);
            } else {
                if !io.end_fsync {
                    task.stats
                        .record_sync(now, now.saturating_sub(io.start), !io.datasync);
                }
                task.last_was_sync = true;
            }
            self.pump(t, now);
        }
        loop {
            let task = &mut self.tasks[t];
            if task.completed.is_empty() || task.blocked_tag {
                return;
            }
            let avail = task.completed.len();
            // getevents(min, max) blocks until `iodepth_batch_complete_min` are in (0 = poll).
            let min_evts = task.complete_min.max(1).min(task.in_flight) as usize;
            if task.waiting_full && avail < min_evts {
                return;
            }
            let n = if task.waiting_full {
                avail.min(task.complete_max as usize)
            } else {
                avail
            };
            self.reap_n(t, now, n);
            let task = &mut self.tasks[t];
            if task.waiting_full && (task.in_flight <= task.iodepth_low || task.in_flight == 0) {
                task.waiting_full = false;
            }
            self.pump(t, now);
        }
    }

    /// `io_u_queued_complete` for the first `n` completions: account each (`io_completed`:
    /// a sync sets `last_was_sync`, any other io_u clears it) and end the failed ones.
    fn reap_n(&mut self, t: usize, now: Ns, n: usize) {
        let task = &mut self.tasks[t];
        let mut failed: Vec<IoUnit> = Vec::new();
        for i in 0..n {
            let id = task.completed[i];
            let io = task.ious.remove(id);
            if io.sync && !io.end_fsync {
                task.syncs_out -= 1;
            }
            if io.sync && !io.error {
                if !io.end_fsync {
                    task.stats
                        .record_sync(now, now.saturating_sub(io.start), !io.datasync);
                }
                task.last_was_sync = true;
                task.sync_in_flight = false;
            } else if io.error {
                if io.sync {
                    task.sync_in_flight = false;
                }
                failed.push(io);
            } else {
                let slat = io.issue.saturating_sub(io.start);
                let clat = now.saturating_sub(io.issue);
                task.stats.record_io(io.ddir.idx(), now, io.len, slat, clat);
                task.last_was_sync = false;
            }
        }
        task.completed.drain(..n);
        task.stats.record_complete(n as u32);
        task.in_flight -= n as u32;
        for io in &failed {
            self.io_error(t, io);
        }
    }

    /// fio's null engine at `iodepth` > 1 answers FIO_Q_BUSY while a committed batch is
    /// unreaped (`null_queue`); `do_io` then commits and waits for completions, and the
    /// null engine's getevents returns them all (`null_getevents`). The io_u fio had chosen
    /// (its direction, or a sync, decided before the attempt) is queued after.
    fn null_busy_reap(&mut self, t: usize, now: Ns) {
        let n = self.tasks[t].completed.len();
        if n > 0 {
            self.reap_n(t, now, n);
        }
    }

    /// A sync on fio's queued null engine is an io_u like any other: queued, completed by
    /// the commit, and counted as a sync when reaped.
    fn queue_null_sync(&mut self, t: usize, now: Ns, kind: SyncKind) {
        let task = &mut self.tasks[t];
        let id = task.ious.insert(IoUnit {
            ddir: Ddir::Write,
            offset: 0,
            len: 0,
            start: now,
            issue: now,
            parts_left: 1,
            sync: true,
            end_fsync: false,
            datasync: kind == SyncKind::Fdatasync,
            dsync_flush: false,
            error: false,
        });
        task.syncs_out += 1;
        task.pending.push(id);
        let full = task.in_flight + task.pending.len() as u32 >= task.depth;
        if task.pending.len() as u32 >= task.batch_submit || full {
            self.commit(t, now);
        }
    }

    /// A synchronous engine's write on an O_SYNC/O_DSYNC file returns only after
    /// `generic_write_sync` → `blkdev_fsync` flushed the device: its completed data goes on
    /// to that flush (an empty PREFLUSH write) instead of being reaped.
    fn start_dsync_flushes(&mut self, t: usize, now: Ns) {
        let task = &self.tasks[t];
        if !(task.sync_io && task.is_sync_engine) || task.null_engine {
            return;
        }
        let mut i = 0;
        while i < self.tasks[t].completed.len() {
            let task = &mut self.tasks[t];
            let id = task.completed[i];
            let io = task.ious.get_mut(id);
            if io.sync || io.dsync_flush || io.ddir != Ddir::Write {
                i += 1;
                continue;
            }
            io.dsync_flush = true;
            io.parts_left = 1;
            task.completed.remove(i);
            let now = now.max(self.clk);
            self.submit_flush(t, id, now);
        }
    }

    /// The device lost power at `at`: the oracle judges what it kept, and every running job
    /// ends its write phase there (no end_fsync: the host "crashed") and goes on to its
    /// read-back once its in-flight I/O has ended.
    fn on_power_cut(&mut self, at: Ns, changed: &[(u64, u64, u64)]) {
        self.queue.integrity.power_cut(changed);
        let mut clk = at;
        self.queue
            .power_cut_flush_waiters(&mut *self.driver, &mut clk, &mut self.out);
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
                if task.sleeping {
                    self.evq.push(at, Ev::TaskDeadline(t as u32));
                }
            }
        }
    }

    /// An io_u ended with EIO (`io_completed`): ended by a power cut (the job stops writing
    /// and reads back), or failed: `td_non_fatal_error` lets a job whose `continue_on_error`
    /// names the kind (read, or write for writes and syncs) count it and go on; any other
    /// error stops the job (`td_verror(td, io_u->error, "io_u error")`).
    fn io_error(&mut self, t: usize, io: &IoUnit) {
        if let Some(pc) = self.power_cut.as_mut() {
            pc.aborted_ios += 1;
            return;
        }
        self.io_errors += 1;
        let task = &mut self.tasks[t];
        let etype = if io.ddir == Ddir::Read && !io.sync {
            1
        } else {
            2
        };
        if task.continue_on_error & etype != 0 {
            task.total_err_count += 1;
            if task.total_err_count == 1 {
                task.first_error = EIO;
            }
            return;
        }
        if task.error == 0 {
            task.error = EIO;
            self.fatal_errors.push(IoErrorRecord {
                task: t,
                ddir: io.ddir,
                sync: io.sync,
                offset: io.offset,
                len: io.len,
            });
        }
        task.deadline_hit = true;
    }

    fn finish_task(&mut self, t: usize, now: Ns) {
        let task = &mut self.tasks[t];
        task.state = TaskState::Done;
        task.end_ns = now;
        task.stats.finish(now);
        task.gen = None;
        // Start the jobs that waited for this one (stonewall).
        for i in 0..self.tasks.len() {
            if self.tasks[i].state == TaskState::Waiting && !self.tasks[i].wait_for.is_empty() {
                let ready = self.tasks[i]
                    .wait_for
                    .iter()
                    .all(|&w| self.tasks[w as usize].state == TaskState::Done);
                if ready {
                    self.tasks[i].wait_for.clear();
                    let d = self.tasks[i].start_delay;
                    self.evq.push(now + d, Ev::TaskStart(i as u32));
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
    if r.action == b'U' {
        ev.pdu = r.extra as u64;
    }
    ev
}
