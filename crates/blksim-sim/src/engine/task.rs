//! fio's job task: one job clone's state (`struct thread_data` as far as blksim models it)
//! and its io_units (`struct io_u`).

use super::*;

/// What a task's loop waits for (`do_io`), when it is not inside a syscall: one thing at a
/// time; the loop stops until it ends (completions that come meanwhile are still reaped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Nothing: the loop runs.
    None,
    /// thinktime, or a rate limit's wait for the next I/O's issue time (`Ev::TaskWake`).
    Sleeping,
    /// The queue is full: reap down to `iodepth_low` (`wait_for_completions`), at least
    /// `iodepth_batch_complete_min` at a time.
    QueueFull,
    /// Inside a synchronous fsync/fdatasync (`do_io_u_sync`), or an async engine's
    /// synchronous trim (`do_io_u_trim`, [`Task::sync_trim`]), until it returns.
    SyncInFlight,
}

/// Where a task is inside a submit syscall (`io_submit`, `io_uring_enter`, `pwrite`): the
/// task does nothing else until the syscall goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InSyscall {
    /// Not inside one (or running through it).
    No,
    /// Asleep in `blk_mq_get_tag` (`Ev::TaskTagResume` wakes it).
    AsleepOnTag,
    /// A dispatch run inside the syscall yielded the CPU model's clock, or the task yields
    /// between bios so that earlier lock acquisitions of other CPUs go first
    /// (`Ev::TaskSubmitCont` goes on).
    Yielded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    Waiting,
    Running,
    Done,
}

/// One fio io_u in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoUnit {
    pub(crate) ddir: Ddir,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    /// fio's `start_time` (io_u prepared) and `issue_time` (after submit).
    pub(crate) start: Ns,
    pub(crate) issue: Ns,
    pub(crate) parts_left: u32,
    /// A flush, and which: an fsync (`DDIR_SYNC`), an fdatasync (`DDIR_DATASYNC`: in the
    /// sync latency, not in `sync.total_ios`, which counts `DDIR_SYNC` only), or `end_fsync`
    /// (fio's `fio_file_fsync` at the end of the job is a plain fsync(2), not an io_u, so it
    /// is not in the sync statistics). None for data.
    pub(crate) sync: Option<SyncKind>,
    /// The errno it ended with, 0 if none: EIO from the block layer, EINVAL from a syscall
    /// that refused it (`blkdev_dio_unaligned`, `blk_ioctl_discard`).
    pub(crate) errno: i32,
    /// A write of a synchronous engine on an O_SYNC/O_DSYNC file whose data is done: the
    /// syscall goes on with `generic_write_sync` → `blkdev_fsync`, an empty PREFLUSH write,
    /// before it returns.
    pub(crate) dsync_flush: bool,
    /// Its priority (`io_u->ioprio`: the job's, or the engine's `cmdprio` draw) and that
    /// priority's place in the job's per-priority latencies (`clat_prio_index`).
    pub(crate) ioprio: IoPrio,
    pub(crate) prio_index: u16,
}

/// The kernel's per-I/O work for the task's engine outside the block layer (CPU model), and
/// who submits: fio's io_uring options change both (`engines/io_uring.c`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SubmitPath {
    /// `fget`/`fput` of the file per I/O; 0 with registered files (`IOSQE_FIXED_FILE`).
    pub(crate) fget_ns: Ns,
    /// Pinning the user buffer per I/O and releasing it at completion, fixed part and per
    /// 4 KiB page (`bio_iov_iter_get_pages`, `bio_release_pages`); 0 with registered buffers
    /// (`io_import_fixed`).
    pub(crate) pin_ns: Ns,
    pub(crate) pin_page_ns: Ns,
    /// `sqthread_poll` (`IORING_SETUP_SQPOLL`): the ring's kernel thread submits, on
    /// [`Task::cpu`], which is then the SQ thread's CPU; fio makes no submit syscall and
    /// spins on the completion ring in user space (`fio_ioring_commit`,
    /// `fio_ioring_getevents`), so it never sleeps for completions.
    pub(crate) sqpoll: bool,
}

impl SubmitPath {
    /// CPU time charged before an I/O's first bio.
    pub(crate) fn per_io_ns(&self, len: u64) -> Ns {
        self.fget_ns + self.pin_ns + self.pin_page_ns * len.div_ceil(4096).max(1)
    }
}

/// `io_sq_thread` goes to sleep after `sq_thread_idle` without work, and fio passes none, so
/// the kernel's default applies: one second (`io_sq_offload_create`: HZ jiffies).
pub(crate) const SQ_THREAD_IDLE_NS: Ns = 1_000_000_000;

pub(crate) struct Task {
    /// fio's message for a job it could not set up (it runs without I/O).
    pub(crate) setup_failure: Option<String>,
    /// fio failed the job's setup (`setup_files`): it counts in the run's exit status.
    pub(crate) setup_failed: bool,
    /// fio's message for the offset draw that ended the job, kept when its generator goes.
    pub(crate) draw_failure: Option<(&'static str, u32)>,
    /// fio's `td->terminate`, set by the steady-state check: a job not started yet starts
    /// and ends at once, a sleeping one notices at its sleep's next slice.
    pub(crate) terminated: bool,
    /// The task's current or last sleep (thinktime, a rate wait): from, until.
    pub(crate) sleep: (Ns, Ns),
    /// fio's steady-state data (`td->ss`), with `steadystate_duration`.
    pub(crate) ss: Option<Box<super::steadystate::SsData>>,
    /// fio's `io_blocks` and `io_bytes` summed over the directions: read, write and trim
    /// completions since the job's start, and again from its ramp's end.
    pub(crate) ss_ios: u64,
    pub(crate) ss_bytes: u64,
    pub(crate) spec: usize,
    pub(crate) name: String,
    pub(crate) groupid: u32,
    pub(crate) cpu: u16,
    /// fio's `cpu` line (CPU model): see [`Rusage`].
    pub(crate) rusage: Rusage,
    /// Since when fio has been spinning on the SQPOLL ring (its last reap or wake-up).
    pub(crate) spin_from: Ns,
    pub(crate) path: SubmitPath,
    /// When the SQ thread last had work (`sqthread_poll`): after [`SQ_THREAD_IDLE_NS`] it
    /// sleeps and fio's next commit wakes it (`IORING_ENTER_SQ_WAKEUP`).
    pub(crate) sq_last: Ns,
    /// `read_iolog`: the log this clone replays, when its next I/O may be issued, and when
    /// the last one was (fio's `last_issue`, which `iolog_delay` counts from).
    pub(crate) replay: Option<Box<blksim_workload::iolog::IologReader>>,
    pub(crate) replay_due: Option<Ns>,
    /// A flush the log asked for, issued when due.
    pub(crate) replay_sync: Option<SyncKind>,
    pub(crate) last_issue: Ns,
    /// `write_iolog`: the I/O this clone issues, as a fio iolog.
    pub(crate) iolog: Option<Box<super::iolog::IoLogWriter>>,
    /// fio's log files for this clone, if the job writes any.
    pub(crate) logs: Option<Box<super::logs::TaskLogs>>,
    pub(crate) gen: Option<IoGen>,
    pub(crate) depth: u32,
    pub(crate) batch_submit: u32,
    pub(crate) complete_min: u32,
    pub(crate) complete_max: u32,
    pub(crate) iodepth_low: u32,
    pub(crate) stats: JobStats,
    pub(crate) stats_opts: StatsOptions,
    pub(crate) state: TaskState,
    /// Jobs that must finish before this one starts (stonewall).
    pub(crate) wait_for: Vec<u32>,
    pub(crate) start_delay: Ns,
    pub(crate) start_ns: Ns,
    pub(crate) end_ns: Ns,
    pub(crate) deadline: Option<Ns>,
    pub(crate) deadline_hit: bool,
    /// `time_based`: the task ends only at its deadline, however many I/Os it does.
    pub(crate) time_based: bool,
    /// io_units submitted and not yet reaped (`cur_depth`).
    pub(crate) in_flight: u32,
    /// Completed, waiting for the reap at this instant.
    pub(crate) completed: Vec<u32>,
    pub(crate) reap_scheduled: bool,
    /// Prepared, not yet committed (`io_u_queued`).
    pub(crate) pending: Vec<u32>,
    /// Bios not yet submitted because the task sleeps on a tag: (io_u, next part).
    pub(crate) submit_cursor: Option<(usize, u32)>,
    pub(crate) commit_batch: Vec<u32>,
    /// Where the task is inside a submit syscall, if it is: asleep on a tag, or yielded.
    pub(crate) in_syscall: InSyscall,
    pub(crate) plugging: bool,
    /// What the task waits for before its loop goes on (outside a syscall).
    pub(crate) wait: Wait,
    pub(crate) held: Option<IoU>,
    /// `held` was drawn before a sync that `get_rw_ddir` put first: fio draws it only at the
    /// next `get_io_u`, after `check_get_verify`.
    pub(crate) held_behind_sync: bool,
    pub(crate) gen_done: bool,
    pub(crate) ious: Slab<IoUnit>,
    /// fio's `thinktime_blocks_counter`: read, write and trim I/Os completed
    /// (`io_blocks`, `thinktime_blocks_type=complete`) or issued (`io_issues`), both zeroed
    /// when the ramp ends (`reset_all_stats`).
    pub(crate) think_done: u64,
    pub(crate) think_issued: u64,
    pub(crate) think_issue: bool,
    /// `last_thinktime_blocks`: the counter at the last think time (kept across the ramp's
    /// end, as fio keeps it).
    pub(crate) think_last: u64,
    /// A think time is due: fio's `io_u_quiesce` first, then the sleep.
    pub(crate) think_pending: bool,
    /// Read, write and trim I/Os completed before the ramp's end (the report counts the
    /// others).
    pub(crate) done_in_ramp: u64,
    /// The ramp's end was seen (`ramp_time_over` → `reset_all_stats`).
    pub(crate) ramp_over: bool,
    /// `fsync=`, `fdatasync=` (fio's `fsync_blocks`, `fdatasync_blocks`), `io_issues[DDIR_WRITE]`
    /// and `last_was_sync`: fio 3.33's `get_rw_ddir` turns the next io_u into a sync when the
    /// write count is a multiple of the block count and `should_fsync` (the job writes, and
    /// the last io_u that *completed* was not a sync, so an asynchronous fsync still in flight
    /// lets another one start).
    pub(crate) fsync_blocks: u32,
    pub(crate) fdatasync_blocks: u32,
    pub(crate) writes_issued: u64,
    pub(crate) last_was_sync: bool,
    /// `get_rw_ddir` may turn an io_u into a sync: the job writes (`td_write`), and its
    /// direction is not trimwrite's, whose `set_rw_ddir` overrides the sync with the trim or
    /// write of the block (so fio's trimwrite jobs never sync between I/Os).
    pub(crate) rw_syncs: bool,
    /// Syncs issued and not yet reaped, which fio's `exceeds_number_ios` counts with the
    /// I/Os queued and in flight (`io_u_queued + io_u_in_flight`).
    pub(crate) syncs_out: u64,
    /// The I/O phase stopped at `number_ios` only because syncs in flight were counted: fio's
    /// `keep_running` then finds fewer I/Os done than asked and starts another `do_io` pass,
    /// which (`last_was_sync` cleared by `clear_io_state`) begins with a sync and, having
    /// moved no bytes, ends the job.
    pub(crate) number_ios_by_syncs: bool,
    /// `sync=1`: writes are FUA (and flushed after, on a synchronous engine).
    pub(crate) sync_io: bool,
    /// io_uring queues fsync as an asynchronous request (`IORING_OP_FSYNC`); the other
    /// engines run it synchronously in the submitting task (libaio: `do_io_u_sync`).
    pub(crate) async_fsync: bool,
    pub(crate) end_fsync: bool,
    pub(crate) end_fsync_done: bool,
    /// The generator's pass the task last saw: a new one is a new `do_io`, with its own
    /// `end_fsync`.
    pub(crate) pass_seen: u64,
    /// The generator's pass of the last I/O it gave: a new one ran `clear_io_state`, whose
    /// `reset_io_counters` clears `last_was_sync`.
    pub(crate) io_pass: u64,
    /// `io_submit_mode=offload`: the rate is kept without waiting for completions.
    pub(crate) submit_offload: bool,
    /// Ahead of its rate, how long fio will sleep once its I/O has drained: `rate_ddir`
    /// computes the wait before `io_u_quiesce` and sleeps all of it after.
    pub(crate) rate_wait: Option<Ns>,
    pub(crate) wrote: bool,
    pub(crate) thinktime_ns: Ns,
    pub(crate) thinktime_blocks: u32,
    /// `thinktime_iotime` (0 = off), whether `thinktime_blocks` was given, and fio's
    /// `last_thinktime`: the job's start, then the time of each think check that stalled.
    pub(crate) thinktime_iotime: Ns,
    pub(crate) thinktime_blocks_set: bool,
    pub(crate) last_thinktime: Ns,
    /// When the task last queued an io_u, and its direction.
    pub(crate) queued_at: Ns,
    pub(crate) queued_ddir: Ddir,
    /// `rate_ignore_thinktime`.
    pub(crate) rate_ign_think: bool,
    /// fio's rate state per direction (`__setup_rate`, `usec_for_io`): bytes per second
    /// (`rate`, else `rate_iops` × the direction's smallest block size), bytes issued since
    /// the rate clock started, and when the next I/O is due, from that start.
    pub(crate) rate_bps: [u64; 3],
    pub(crate) rate_min_bs: [u64; 3],
    pub(crate) rate_issued_bytes: [u64; 3],
    pub(crate) rate_next: [Ns; 3],
    /// `rate_process=poisson`: the sum of the exponential gaps drawn (`last_usec`).
    pub(crate) rate_poisson: bool,
    pub(crate) rate_last: [Ns; 3],
    /// fio's `td->epoch` for the rate: the first rated I/O, and again when the ramp ends
    /// (`reset_all_stats` → `reset_io_counters` clears the rate state).
    pub(crate) rate_epoch: Option<Ns>,
    pub(crate) rate_rng: blksim_core::Rng,
    /// `number_ios` × `loops` (`exceeds_number_ios`); 0 during a verify phase.
    pub(crate) number_ios: u64,
    pub(crate) number_ios_cfg: u64,
    pub(crate) issued: u64,
    /// The trim an async engine is issuing synchronously inside its queue hook
    /// (FIO_ASYNCIO_SYNC_TRIM: libaio, io_uring and posixaio call `do_io_u_trim`, a
    /// BLKDISCARD ioctl, and return FIO_Q_COMPLETED): the task waits in it.
    pub(crate) sync_trim: Option<u32>,
    /// posixaio answers a trim FIO_Q_BUSY while any io_u is unreaped (`pd->queued` counts
    /// until `fio_posixaio_getevents`), not only while some are uncommitted.
    pub(crate) trim_drains: bool,
    /// fio's `io_issues` per direction (read, write, trim).
    pub(crate) issued_dir: [u64; 3],
    /// O_DIRECT's alignment, the device's logical block size (`blkdev_dio_unaligned`); 0 for
    /// buffered I/O, which blksim sends to the device as the logical blocks it touches (no
    /// page cache).
    pub(crate) dio_align: u64,
    pub(crate) null_engine: bool,
    /// fio's null engine at `iodepth` > 1 queues io_us (syncs too) until a commit completes
    /// them all, and answers FIO_Q_BUSY while those completions are unreaped (`null_queue`);
    /// at `iodepth=1` it is a synchronous engine (`null_init` sets FIO_SYNCIO).
    pub(crate) null_queued: bool,
    /// sync/psync/...: one I/O per syscall, issue time stamped before the call.
    pub(crate) is_sync_engine: bool,
    /// `hipri` on a polling engine (io_uring, pvsync2) with the driver's poll queues: the
    /// task's bios are REQ_POLLED and it spins for their completions instead of sleeping.
    pub(crate) polled: bool,
    /// When the task's last context ended (a polling task spins from then until it reaps).
    pub(crate) ctx_end: Ns,
    /// fio's verify phase (`verify=` + `do_verify`): after the write phase the job reads its
    /// region back (`do_verify`); the block layer's integrity oracle checks every read.
    pub(crate) verify_log: Option<crate::verify::VerifyLog>,
    /// The job reads back what it wrote after each pass (`do_verify`).
    pub(crate) verifies: bool,
    pub(crate) verify_reads: Option<crate::verify::VerifyReads>,
    /// Reads and bytes of the current verify phase, which fio's `keep_running` counts.
    pub(crate) verify_ios: u64,
    pub(crate) verify_bytes: u64,
    /// A power cut ended the write phase: read back, then stop.
    pub(crate) crashed: bool,
    /// The read-back phase has started.
    pub(crate) in_verify: bool,
    /// `serialize_overlap` as fio applies it (`JobSpec::effective_serialize_overlap`).
    pub(crate) serialize_overlap: bool,
    /// The I/O priority of the job's bios (`prio`, `prioclass`: ioprio_set(2) on the thread,
    /// which `bio_set_ioprio` gives every bio it submits), and of its log lines.
    pub(crate) ioprio: IoPrio,
    /// The engine's per-I/O priorities (`cmdprio_percentage`, `cmdprio_bssplit`).
    pub(crate) cmdprio: Option<Box<super::cmdprio::CmdPrio>>,
    /// `latency_target`'s search of the queue depth, and what it waits for the I/Os in
    /// flight to do (`io_u_quiesce`): start a window, or clear the statistics first.
    pub(crate) lat_target: Option<Box<super::lat_target::LatTarget>>,
    pub(crate) lat_quiesce: Option<super::lat_target::Next>,
    /// `max_latency` per direction (ns, 0 = none).
    pub(crate) max_latency: [Ns; 3],
    /// Reads, writes and trims completed since the job started (fio's `bytes_done` is
    /// not zero from the first).
    pub(crate) rw_done: u64,
    /// `thinktime_spin` (ns): the first part of each think time, spun on the CPU.
    pub(crate) thinktime_spin_ns: Ns,
    /// The job has `rate_min`/`rate_iops_min` or `latency_target` (checks after each turn of
    /// its loop), and `max_latency` or `latency_target` (checks of each I/O's latency): the
    /// hot path asks one flag each.
    pub(crate) loop_checks: bool,
    pub(crate) latency_checks: bool,
    /// The depth the job keeps to: `depth`, or `latency_target`'s.
    pub(crate) qd_limit: u32,
    /// `rate_min`, `rate_iops_min` (`check_min_rate`), and fio's messages when not met.
    pub(crate) min_rate: Option<Box<super::min_rate::MinRate>>,
    pub(crate) rate_failures: Vec<String>,
    /// `exit_what` and `exitall_on_error` (see `Sim::terminate_threads`).
    pub(crate) exit_what: ExitWhat,
    pub(crate) exitall_on_error: bool,
    /// `verify_backlog` (0 = off) and `verify_backlog_batch` (0 = `verify_backlog`): reads
    /// of logged writes taken while writing (`check_get_verify`), and how many are left of
    /// the batch under way (fio's `td->verify_batch`).
    pub(crate) verify_backlog: u64,
    pub(crate) verify_backlog_batch: u64,
    pub(crate) verify_batch: u64,
    /// fio's `td->last_ddir`: the direction of the last data io_u reaped (`io_completed`);
    /// fio's zeroed `thread_data` starts it at DDIR_READ.
    pub(crate) last_ddir: Ddir,
    /// `continue_on_error` bits and fio's error state: the first fatal error (`td->error`,
    /// errno) and the count of non-fatal ones (`total_err_count`, `first_error`).
    pub(crate) continue_on_error: u8,
    /// `ignore_error`'s lists for reads and writes (None: fio's EIO and EILSEQ).
    pub(crate) ignore_error: [Option<Vec<i32>>; 2],
    pub(crate) error: i32,
    /// Where fio set `error` (`VERROR_IO_U`, `VERROR_QUEUE`).
    pub(crate) error_site: &'static str,
    pub(crate) total_err_count: u64,
    pub(crate) first_error: i32,
}

impl IoUnit {
    pub(crate) fn is_sync(&self) -> bool {
        self.sync.is_some()
    }
    pub(crate) fn is_end_fsync(&self) -> bool {
        self.sync == Some(SyncKind::EndFsync)
    }
    pub(crate) fn is_datasync(&self) -> bool {
        self.sync == Some(SyncKind::Fdatasync)
    }
}

impl Task {
    /// Whether any direction is rate-limited (fio's `should_check_rate`).
    pub(crate) fn rated(&self) -> bool {
        self.rate_bps.iter().any(|&b| b > 0)
    }

    /// When the next I/O of each direction is due (`rate_next_io_time` from the epoch),
    /// starting the rate clock at the first rated I/O and again when the ramp ends
    /// (`reset_io_counters`). A direction without a rate is always due.
    pub(crate) fn rate_due(&mut self, now: Ns) -> [Ns; 3] {
        let ramp_end = self.stats.start_ns;
        let epoch = match self.rate_epoch {
            Some(e) if e >= ramp_end || now < ramp_end => e,
            _ => {
                self.rate_issued_bytes = [0; 3];
                self.rate_next = [0; 3];
                self.rate_last = [0; 3];
                *self.rate_epoch.insert(now)
            }
        };
        self.rate_next.map(|n| epoch.saturating_add(n))
    }

    /// `usec_for_io` after an I/O of `len` bytes in direction `d` was issued.
    pub(crate) fn rate_issued(&mut self, d: usize, len: u64) {
        let bps = self.rate_bps[d] as u128;
        if bps == 0 {
            return;
        }
        self.rate_issued_bytes[d] += len;
        self.rate_next[d] = if self.rate_poisson {
            // Exponential gaps at the rate's IOPS (`rate_process=poisson`).
            let iops = (bps / self.rate_min_bs[d] as u128).max(1);
            let mean = NSEC_PER_SEC as f64 / iops as f64;
            let u = self.rate_rng.f64();
            let gap = (-(1.0 - u).ln() * mean) as Ns;
            self.rate_last[d] = self.rate_last[d].saturating_add(gap);
            self.rate_last[d]
        } else {
            (self.rate_issued_bytes[d] as u128 * NSEC_PER_SEC as u128 / bps).min(NS_HORIZON as u128)
                as Ns
        };
    }

    /// `handle_thinktime` with `rate_ignore_thinktime`: a think time of `total` ns after an
    /// I/O of direction `d` counts as the bytes the rate would have issued meanwhile, less
    /// one block when it spans a whole I/O's time, so the job goes on at its rate instead
    /// of catching up. fio's unsigned difference would wrap when the rounded bytes fall short
    /// of the block (the job then never issues again); it stops at 0 here.
    pub(crate) fn rate_think_ignored(&mut self, d: usize, total: Ns) {
        let bps = self.rate_bps[d];
        let total_us = total / 1_000;
        if !self.rate_ign_think || bps == 0 || total_us == 0 {
            return;
        }
        let missed = (bps as u128 * total_us as u128 / 1_000_000) as u64;
        let bs = self.rate_min_bs[d];
        let usperop = (bs as u128 * 1_000_000 / bps as u128) as u64;
        let over = if usperop <= total_us { bs } else { 0 };
        // The next I/O's time was set when the last one was queued (`usec_for_io` right
        // after `io_u_submit`); these count from the one after.
        self.rate_issued_bytes[d] += missed.saturating_sub(over);
        // `last_usec` under rate_process=poisson.
        self.rate_last[d] = self.rate_last[d].saturating_add(total_us * 1_000);
    }

    /// fio's `check_get_verify` (io_u.c), before a new I/O is drawn: with `verify_backlog`
    /// set, once the log holds a multiple of it and the last io_u reaped was not a read, a
    /// batch of reads of logged writes starts (`verify_backlog_batch`, or the backlog), and
    /// goes on while the first piece's write is done (`get_next_verify`). Not once `do_io`'s
    /// loop is over: what is left is read back after the writes.
    ///
    /// `drawn_ahead`: the generator already drew the I/O fio would draw next (one held
    /// behind a sync), so its count says nothing of whether `do_io`'s loop goes on.
    pub(crate) fn check_get_verify(&mut self, drawn_ahead: bool) -> Option<IoU> {
        if self.verify_backlog == 0
            || self
                .gen
                .as_ref()
                .is_none_or(|g| !drawn_ahead && g.issue_done())
        {
            return None;
        }
        if !self.verify_batch_due() {
            return None;
        }
        let io = self.verify_log.as_mut()?.take_first()?;
        self.verify_batch -= 1;
        Some(io)
    }

    /// `check_get_verify`'s choice: a batch is under way, or starts now because the log
    /// holds a non-zero multiple of `verify_backlog` pieces and the last io_u reaped was not
    /// a read.
    fn verify_batch_due(&mut self) -> bool {
        let n = self.verify_log.as_ref().map_or(0, |l| l.hist_len());
        if self.verify_backlog == 0 || n == 0 {
            return false;
        }
        if self.verify_batch == 0 {
            if !n.is_multiple_of(self.verify_backlog) || self.last_ddir == Ddir::Read {
                return false;
            }
            self.verify_batch = match self.verify_backlog_batch {
                0 => self.verify_backlog,
                b => b,
            };
        }
        true
    }

    /// `check_get_verify` for an io_u that was requeued (FIO_Q_BUSY): `get_next_verify`
    /// returns it as it is, and the batch counts it, as it would count a piece; a batch may
    /// start there too.
    pub(crate) fn verify_check_requeued(&mut self) {
        if self.verify_batch_due() {
            self.verify_batch -= 1;
        }
    }

    /// A sync completed: a task waiting in a synchronous fsync returns from it.
    pub(crate) fn end_sync_wait(&mut self) {
        if self.wait == Wait::SyncInFlight {
            self.wait = Wait::None;
        }
    }

    pub(crate) fn verify_phase_started(&self) -> bool {
        self.in_verify
    }

    /// fio's `reset_all_stats` when the ramp ends, for the think-time counter: `io_blocks`
    /// and `io_issues` start again from the ramp's end (called at the I/O loop's first turn
    /// after it, so the completions in between stay counted, as the report counts them); the
    /// count noted at the last think time stays.
    pub(crate) fn ramp_ended(&mut self, now: Ns) {
        self.ramp_over = true;
        // `reset_all_stats` zeroes `io_blocks` and `io_bytes` and moves the epoch; a job
        // without a ramp never gets there (`ramp_time_over` returns at once).
        if self.stats.start_ns > self.start_ns {
            self.ss_ios = 0;
            self.ss_bytes = 0;
            if let Some(ss) = self.ss.as_mut() {
                ss.set_epoch(now);
            }
        }
        // Until now the counter held every completion.
        self.think_done -= self.done_in_ramp;
        self.think_issued = 0;
        // `exceeds_number_ios` counts `io_blocks`, which the reset zeroes: the I/Os done in
        // the ramp stop counting toward `number_ios`. Until now they did, so a job that
        // reaches `number_ios` inside its ramp stops there, as fio's does.
        self.raise_number_ios(self.done_in_ramp);
    }

    /// The queue depth fio keeps to (`queue_full`): `latency_target`'s while it searches.
    #[inline]
    pub(crate) fn queue_depth(&self) -> u32 {
        self.qd_limit
    }

    /// [`Self::queue_depth`] after `latency_target` moved its depth.
    pub(crate) fn lat_qd_moved(&mut self) {
        if let Some(l) = self.lat_target.as_ref() {
            self.qd_limit = l.qd.min(self.depth);
        }
    }

    /// `reset_all_stats` and `reset_io_stats` in the middle of a job (`latency_target`'s
    /// final window): the statistics, `io_blocks`/`io_bytes` and the CPU times start again
    /// at `now`, and `number_ios` counts from here (`exceeds_number_ios` reads `io_blocks`).
    pub(crate) fn reset_all_stats(&mut self, now: Ns) {
        // No ramp: they count from now.
        let mut opts = self.stats.opts.clone();
        opts.ramp_ns = 0;
        self.stats = self.stats.restarted(now, &opts);
        let done = self.ss_ios;
        self.ss_ios = 0;
        self.ss_bytes = 0;
        if let Some(ss) = self.ss.as_mut() {
            ss.set_epoch(now);
        }
        self.rusage.clear();
        self.raise_number_ios(done);
    }

    fn raise_number_ios(&mut self, by: u64) {
        if self.number_ios > 0 {
            self.number_ios += by;
            if let Some(g) = self.gen.as_mut() {
                g.raise_ios_limit(by);
            }
        }
    }

    /// `get_rw_ddir`'s first check: the next io_u is an fsync or fdatasync, every
    /// `fsync_blocks` (`fdatasync_blocks`) writes issued, unless the last io_u that completed
    /// was a sync (`should_fsync`). The verify phase takes its io_us from the verify list
    /// (`do_verify`), never from `get_rw_ddir`: no syncs there.
    pub(crate) fn sync_due(&self) -> bool {
        !self.last_was_sync && !self.in_verify && self.sync_at_write_count()
    }

    /// The write count is a multiple of `fsync_blocks` or `fdatasync_blocks`
    /// (`io_issues[DDIR_WRITE] % fsync_blocks`), whatever the last io_u was.
    pub(crate) fn sync_at_write_count(&self) -> bool {
        self.rw_syncs && (self.fsync_due() || self.every_writes(self.fdatasync_blocks))
    }

    /// The due sync is an fsync (else an fdatasync).
    pub(crate) fn fsync_due(&self) -> bool {
        self.every_writes(self.fsync_blocks)
    }

    fn every_writes(&self, blocks: u32) -> bool {
        blocks > 0 && self.writes_issued > 0 && self.writes_issued.is_multiple_of(blocks as u64)
    }

    /// A read, write or trim I/O completed at `now`. One that completed in the ramp is not
    /// reported, and once the ramp is over it no longer counts toward `number_ios`
    /// ([`Self::ramp_ended`]). This goes by the completion's own time, as the report does:
    /// with the CPU model a completion at a time in the ramp may be handled after the loop
    /// saw the ramp end, and it then raises the limit by itself.
    pub(crate) fn rw_completed(&mut self, now: Ns, bytes: u64) {
        self.rw_done += 1;
        self.think_done += 1;
        self.ss_ios += 1;
        self.ss_bytes += bytes;
        if now < self.stats.start_ns {
            self.done_in_ramp += 1;
            if self.ramp_over {
                self.raise_number_ios(1);
            }
        }
    }
}

/// Which flush an fio job asks for (`DDIR_SYNC`, `DDIR_DATASYNC`, or `end_fsync`'s fsync(2)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncKind {
    Fsync,
    Fdatasync,
    EndFsync,
}

impl SyncKind {
    pub(crate) fn from(datasync: bool) -> Self {
        if datasync {
            SyncKind::Fdatasync
        } else {
            SyncKind::Fsync
        }
    }
}

/// fio's `cpu` line, from `getrusage(RUSAGE_THREAD)`: `sys` the CPU time of the task's own
/// contexts, `usr` the time fio spun in user space on an SQPOLL ring's completions, `ctx`
/// the times it was switched back in. fio clears it when the ramp ends
/// (`reset_all_stats` → `clear_rusage_stat`), so what falls before the ramp's end is kept
/// apart: it is the report's only for a job that ends inside its ramp.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rusage {
    /// From the ramp's end: `[sys, usr]` ns and switches.
    after: (Ns, Ns, u64),
    /// Before the ramp's end.
    before: (Ns, Ns, u64),
}

impl Rusage {
    /// System time over `[from, to)`, split at the ramp's end `epoch`.
    pub(crate) fn sys(&mut self, from: Ns, to: Ns, epoch: Ns) {
        self.after.0 += to.saturating_sub(from.max(epoch));
        self.before.0 += to.min(epoch).saturating_sub(from);
    }

    /// User time over `[from, to)`, split at the ramp's end `epoch`.
    pub(crate) fn usr(&mut self, from: Ns, to: Ns, epoch: Ns) {
        self.after.1 += to.saturating_sub(from.max(epoch));
        self.before.1 += to.min(epoch).saturating_sub(from);
    }

    /// A switch back in at `at`.
    pub(crate) fn switch(&mut self, at: Ns, epoch: Ns) {
        if at >= epoch {
            self.after.2 += 1;
        } else {
            self.before.2 += 1;
        }
    }

    /// `clear_rusage_stat`: what the report counts starts again.
    pub(crate) fn clear(&mut self) {
        self.after = (0, 0, 0);
    }

    /// `(sys, usr, ctx)` as fio reports them: from the ramp's end, or from the start for a
    /// job that never reached it.
    pub(crate) fn report(&self, ended_in_ramp: bool) -> (Ns, Ns, u64) {
        if ended_in_ramp {
            self.before
        } else {
            self.after
        }
    }
}
