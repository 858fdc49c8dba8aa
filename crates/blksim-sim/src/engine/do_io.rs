//! fio's `do_io` loop (`backend.c`, `io_u.c`) for one job clone: start, fill the queue with
//! io_units and commit every `iodepth_batch_submit` (`td_io_queue`, `td_io_commit`), sleep
//! on a tag inside `io_submit`, reap completions (`io_u_queued_complete`,
//! `wait_for_completions` down to `iodepth_low`), error handling (`io_u_log_error`,
//! `continue_on_error`) and the end of the job.

use super::*;
use blksim_workload::iolog::ReplayOp;

impl Sim {
    pub(super) fn task_start(&mut self, t: usize, now: Ns) {
        let task = &mut self.tasks[t];
        if task.state != TaskState::Waiting {
            return;
        }
        task.state = TaskState::Running;
        task.start_ns = now;
        // `init_thinktime`: `last_thinktime` starts at the job's epoch.
        task.last_thinktime = now;
        // `lat_target_init` in `do_io`: the first window starts now.
        if let Some(l) = task.lat_target.as_mut() {
            l.init(now, 0);
        }
        task.lat_qd_moved();
        if let Some(ss) = task.ss.as_mut() {
            ss.set_epoch(now);
        }
        // Ended by its group's steady state before it started: `keep_running` is false.
        if task.terminated {
            task.deadline_hit = true;
        }
        task.last_issue = now;
        if let Some(l) = task.iolog.as_mut() {
            l.start(now);
        }
        // Fresh statistics from the start, kept by the same priorities.
        task.stats = task.stats.restarted(now, &task.stats_opts);
        // fio sets the ring up (and an SQPOLL ring's thread starts) when the job starts,
        // after its startdelay.
        task.sq_last = now;
        self.pump(t, now);
    }

    /// Set the deadline when the task starts (runtime counts from the start, ramp included).
    pub fn set_deadlines(&mut self, specs: &[JobSpec]) {
        for t in &mut self.tasks {
            let s = &specs[t.spec];
            t.time_based = s.time_based;
            // A time_based job without a runtime runs by its size (`fixup_options` turns
            // time_based off; the job spec did the same).
            if s.runtime_ns > 0 {
                t.deadline = Some(s.runtime_ns + s.ramp_time_ns);
            }
        }
    }

    /// The task waits until `due` (a rate limit's or a replayed log's time for its next
    /// I/O), or its deadline if sooner: what it prepared is committed first. A replayed
    /// I/O is waited for whatever the deadline: fio's `read_iolog_get` sleeps in
    /// `iolog_delay` after `do_io` checked the runtime, and issues the I/O when it wakes.
    fn sleep_until(&mut self, t: usize, now: Ns, due: Ns) {
        self.tasks[t].wait = Wait::Sleeping;
        if !self.tasks[t].pending.is_empty() {
            self.commit(t, now);
        }
        let task = &mut self.tasks[t];
        let deadline = match task.replay {
            Some(_) => None,
            None => task.deadline.map(|d| task.start_ns + d),
        };
        let wake = due.min(deadline.unwrap_or(Ns::MAX));
        task.sleep = (now, wake.max(now));
        self.evq.push(wake.max(now), Ev::TaskWake(t as u32));
    }

    /// fio's main loop for one task at `now`.
    pub(super) fn pump(&mut self, t: usize, now: Ns) {
        loop {
            // The local clock moves as the task's syscalls spend CPU time (CPU model).
            let now = now.max(self.clk);
            // I/Os that take no time (fio's null engine) complete inside this loop.
            if self.stands_still(now) {
                return;
            }
            let task = &mut self.tasks[t];
            if task.state != TaskState::Running
                || task.in_syscall != InSyscall::No
                || task.wait != Wait::None
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
            // A replayed I/O or flush fetched before the deadline and waiting for its time
            // is issued first (`iolog_delay` inside `get_io_u`, see `sleep_until`).
            let replay_fetched =
                task.replay_due.is_some() && (task.held.is_some() || task.replay_sync.is_some());
            let stopping = (task.deadline_hit || task.gen_done) && !replay_fetched;
            // `ramp_time_over`: the loop's first turn at or after the ramp's end.
            if !task.ramp_over && now >= task.stats.start_ns {
                task.ramp_ended(now);
                // `reset_all_stats` → `helper_reset`: the helper thread's timers restart
                // (only for a job with a ramp: `ramp_time_over` resets nothing otherwise).
                let had_ramp = task.stats.start_ns > task.start_ns;
                // `reset_all_stats` → `lat_target_reset`: the search starts again.
                if had_ramp {
                    let blocks = task.ss_ios;
                    if let Some(l) = task.lat_target.as_mut() {
                        l.init(now, blocks);
                    }
                    task.lat_qd_moved();
                }
                if had_ramp && self.ss_live() {
                    self.ss_tick_reset(now);
                }
            }
            let task = &mut self.tasks[t];
            // `check_min_rate`, then `lat_target_check`, after each turn of `do_io`'s loop.
            if task.loop_checks && self.loop_checks(t, now) {
                continue;
            }
            let task = &mut self.tasks[t];
            // `handle_thinktime`: once the counter has moved `thinktime_blocks` past its
            // value at the last think time, note it, wait for everything in flight
            // (`io_u_quiesce`), then stall. `do_verify` has no think time.
            // With `thinktime_iotime`, also once that long (and the think time) has passed
            // since the last think time, and then only so unless `thinktime_blocks` is given.
            if task.thinktime_ns > 0 && !stopping && !task.think_pending && !task.in_verify {
                let b = if task.think_issue {
                    task.think_issued
                } else {
                    task.think_done
                };
                let mut stall = false;
                let mut by_blocks = true;
                if task.thinktime_iotime > 0 {
                    // fio looks after each io_u it queues: the time is that queue's.
                    let since = task.queued_at.saturating_sub(task.last_thinktime);
                    if since >= task.thinktime_iotime + task.thinktime_ns {
                        stall = true;
                    } else if !task.thinktime_blocks_set {
                        by_blocks = false;
                    }
                }
                if by_blocks && b >= task.think_last + task.thinktime_blocks as u64 {
                    stall = true;
                }
                if stall {
                    task.think_last = b;
                    if task.thinktime_iotime > 0 {
                        task.last_thinktime = task.queued_at;
                    }
                    task.think_pending = true;
                }
            }
            if task.think_pending && !stopping && !task.in_verify {
                if !task.pending.is_empty() {
                    self.commit(t, now);
                    continue;
                }
                if task.in_flight > 0 {
                    return;
                }
                task.think_pending = false;
                task.wait = Wait::Sleeping;
                let d = task.queued_ddir.idx();
                task.rate_think_ignored(d, task.thinktime_ns);
                let at = now.saturating_add(task.thinktime_ns);
                // `usec_spin` first, then sleep the rest: the spin is CPU time of its own
                // (getrusage's usr). Departure: the spin does not hold the CPU's timeline
                // in the CPU model, so other work there is not delayed by it.
                let spin = task.thinktime_spin_ns;
                if spin > 0 && self.cpus.is_on() {
                    task.rusage
                        .usr(now, now.saturating_add(spin), task.stats.start_ns);
                }
                task.sleep = (now.saturating_add(spin).min(at), at);
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
                // A pass the generator started since the last `end_fsync` is a new `do_io`,
                // with its own.
                let pass = task.gen.as_ref().map_or(1, |g| g.passes());
                if pass != task.pass_seen {
                    task.pass_seen = pass;
                    task.end_fsync_done = false;
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
                    if task.sync_at_write_count() {
                        let kind = SyncKind::from(!task.fsync_due());
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
                        task.held_behind_sync = false;
                        task.rate_wait = None;
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
                    if task.verifies {
                        task.verify_log = Some(crate::verify::VerifyLog::for_pass(g));
                    }
                    task.gen_done = false;
                    continue;
                }
                self.finish_task(t, now);
                return;
            }
            // `latency_target` waits for the I/Os in flight before a new window
            // (`io_u_quiesce`), and clears the statistics before the final one.
            if let Some(next) = task.lat_quiesce {
                if !task.pending.is_empty() {
                    self.commit(t, now);
                    continue;
                }
                if task.in_flight > 0 {
                    return;
                }
                task.lat_quiesce = None;
                if next == LatNext::FinalRun {
                    task.reset_all_stats(now);
                }
                let blocks = task.ss_ios;
                if let Some(l) = task.lat_target.as_mut() {
                    l.new_cycle(now, blocks);
                }
            }
            // Queue full: commit what is pending and wait for completions.
            if task.in_flight + task.pending.len() as u32 >= task.queue_depth() {
                if !task.pending.is_empty() {
                    self.commit(t, now);
                    continue;
                }
                task.wait = Wait::QueueFull;
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
            // A flush of the replayed log, due now or later.
            if let Some(kind) = task.replay_sync {
                if let Some(due) = task.replay_due.filter(|&d| now < d) {
                    self.sleep_until(t, now, due);
                    return;
                }
                task.replay_due = None;
                if self.queue_sync(t, now, kind) {
                    self.tasks[t].replay_sync = None;
                }
                continue;
            }
            // Next io_u. A read of `verify_backlog` comes first (`get_io_u` →
            // `check_get_verify`), and skips `get_rw_ddir`'s sync and rate waits.
            let mut backlog = false;
            let io = match task.held.take() {
                Some(io) if std::mem::take(&mut task.held_behind_sync) => {
                    match task.check_get_verify(true) {
                        Some(read) => {
                            task.held = Some(io);
                            task.held_behind_sync = true;
                            backlog = true;
                            read
                        }
                        None => io,
                    }
                }
                Some(io) => io,
                None => match if task.in_verify {
                    task.verify_reads.as_mut().and_then(|r| r.next())
                } else if let Some(io) = task.check_get_verify(false) {
                    backlog = true;
                    Some(io)
                } else if let Some(r) = task.replay.as_mut() {
                    // `read_iolog_get`: the log's next I/O, held until its gap has passed
                    // since the last issue (`iolog_delay`), or its `wait` time.
                    let next = r.next_io();
                    // The trace's own response times, for the report beside the simulated.
                    for (d, ns) in r.take_recorded() {
                        task.stats.dir[d as usize].recorded.add(ns);
                    }
                    match next {
                        Ok(Some(x)) => {
                            let due = match x.at_ns {
                                // Since the run began: fio's genesis, set as
                                // run_threads starts the first jobs.
                                Some(at) => at,
                                None => task.last_issue.saturating_add(x.gap_ns),
                            };
                            task.replay_due = (x.gap_ns > 0 || x.at_ns.is_some()).then_some(due);
                            let io = match x.op {
                                ReplayOp::Io(io) => io,
                                ReplayOp::Sync { datasync } => {
                                    task.replay_sync = Some(SyncKind::from(datasync));
                                    continue;
                                }
                            };
                            let end = io.offset.checked_add(io.len);
                            let bad = if end.is_none_or(|e| e > self.capacity_bytes) {
                                Some("beyond the end of the device")
                            } else if io.offset % 512 != 0 || io.len % 512 != 0 {
                                Some("not in whole 512-byte sectors (direct I/O)")
                            } else {
                                None
                            };
                            if let Some(why) = bad {
                                let at = r.location();
                                self.trace_error.get_or_insert(format!(
                                    "read_iolog: {at}: {} of {} bytes at {} is {why}",
                                    io.ddir.name(),
                                    io.len,
                                    io.offset
                                ));
                                None
                            } else {
                                Some(io)
                            }
                        }
                        Ok(None) => None,
                        Err(e) => {
                            self.trace_error.get_or_insert(format!("read_iolog: {e}"));
                            None
                        }
                    }
                } else if task.rated() {
                    // `get_rw_ddir` → `rate_ddir`: a direction ahead of its rate gives way
                    // to the other when that one is due.
                    let due = task.rate_due(now);
                    task.gen.as_mut().and_then(|g| g.next_rated(now, due))
                } else {
                    task.gen.as_mut().and_then(|g| g.next())
                } {
                    Some(io) => {
                        // The first I/O of a new pass: `clear_io_state` → `reset_io_counters`
                        // cleared `last_was_sync`, so a sync may be due again before it.
                        let pass = task.gen.as_ref().map_or(1, |g| g.passes());
                        if pass != task.io_pass && !task.in_verify && task.replay.is_none() {
                            task.io_pass = pass;
                            task.last_was_sync = false;
                        }
                        io
                    }
                    None => {
                        if let Some(e) = task.gen.as_ref().and_then(|g| g.no_progress()) {
                            self.trace_error
                                .get_or_insert(format!("job '{}': {e}", task.name));
                        }
                        // `get_rw_ddir` picks a due sync before `fill_io_u` needs an offset:
                        // when the fill fails (not at a limit, which ends `do_io`'s loop
                        // first) the sync after the pass's last writes still goes.
                        let fill_failed = !task.in_verify
                            && task.replay.is_none()
                            && task.gen.as_ref().is_some_and(|g| g.fill_failed());
                        if fill_failed && task.sync_due() {
                            // Deferred while io_submit has not returned: the generator, still
                            // at its pass end, answers None again and the sync is still due.
                            let kind = SyncKind::from(!task.fsync_due());
                            if self.queue_sync(t, now, kind) {
                                self.tasks[t].gen_done = true;
                            }
                            continue;
                        }
                        task.gen_done = true;
                        continue;
                    }
                },
            };
            // `get_rw_ddir`: every `fsync_blocks` (`fdatasync_blocks`) writes the next io_u is
            // a sync, if there is a next one (the last writes of a job get none unless
            // `end_fsync`). libaio answers FIO_Q_BUSY while io_us are queued, so they are
            // committed first; in-flight I/O is not waited for.
            if !backlog && task.sync_due() {
                // The I/O waits in `held` behind the sync (and the sync itself, when it is
                // deferred, goes from there once io_submit returns).
                let kind = SyncKind::from(!task.fsync_due());
                task.held = Some(io);
                task.held_behind_sync = true;
                self.queue_sync(t, now, kind);
                continue;
            }
            // An async engine's trim is a synchronous ioctl inside its queue hook, which
            // answers FIO_Q_BUSY while io_us are queued (`fio_libaio_queue`,
            // `fio_ioring_queue`), or for posixaio while any is unreaped (`pd->queued`): fio
            // commits, reaps (`wait_for_completions`) and tries again, before the trim's own
            // checks.
            if io.ddir == Ddir::Trim
                && !task.is_sync_engine
                && !task.null_engine
                && (!task.pending.is_empty() || (task.trim_drains && task.in_flight > 0))
            {
                if self.busy_hold(t, now, io) {
                    return;
                }
                continue;
            }
            // Replay: not before the log's time for this I/O.
            if let Some(due) = task.replay_due {
                if now < due {
                    task.held = Some(io);
                    self.sleep_until(t, now, due);
                    return;
                }
                task.replay_due = None;
            }
            // `io_u_submit` with `serialize_overlap`: an io_u that overlaps one in flight
            // (queued, or done and not yet reaped) is answered FIO_Q_BUSY before
            // `td_io_queue`; fio commits, reaps a round and tries the same io_u again. A rate
            // wait cannot come between: `rate_ddir` waits for everything in flight first.
            // Departure: fio's `in_flight_overlap` also compares sync io_us, with whatever
            // offset and length their io_u last held; syncs are left out here.
            if task.serialize_overlap
                && task.in_flight + task.pending.len() as u32 > 0
                && task.ious.values().any(|u| {
                    u.sync.is_none()
                        && io.offset < u.offset + u.len
                        && u.offset < io.offset + io.len
                })
            {
                // `unlog_io_piece`: what the write's log entry displaced stays out.
                if let Some(log) = task.verify_log.as_mut() {
                    log.drop_overlapped(&io);
                }
                if self.busy_hold(t, now, io) {
                    return;
                }
                continue;
            }
            // Rate limiting (`rate_iops`, `rate`): fio's `usec_for_io` sets when the next I/O
            // of a direction is due, from the bytes issued since the rate clock started; a
            // job that fell behind (a think time, a slow device) issues at once until it has
            // caught up. Ahead of its rate, fio first waits for everything in flight
            // (`rate_ddir` → `io_u_quiesce`), then sleeps.
            // The read-back of a verify phase is not rated (`do_verify`).
            let d = io.ddir.idx();
            if backlog && task.rate_bps[d] > 0 {
                // Not rated, but counted (`td_io_queue`'s `rate_io_issue_bytes`).
                task.rate_issued(d, io.len);
            } else if task.rate_bps[d] > 0 && !task.in_verify {
                let next = task.rate_due(now)[d];
                if now < next || task.rate_wait.is_some() {
                    let wait = *task.rate_wait.get_or_insert(next.saturating_sub(now));
                    task.held = Some(io);
                    if !task.submit_offload {
                        if !task.pending.is_empty() {
                            self.commit(t, now);
                        }
                        if self.tasks[t].in_flight > 0 {
                            return;
                        }
                    }
                    let task = &mut self.tasks[t];
                    task.rate_wait = None;
                    if wait > 0 {
                        self.sleep_until(t, now, now.saturating_add(wait));
                        return;
                    }
                    continue;
                }
                task.rate_issued(d, io.len);
            }
            if task.null_queued && !task.completed.is_empty() {
                // `log_io_piece` ran before the queue attempt that answered FIO_Q_BUSY.
                if let Some(log) = task.verify_log.as_mut() {
                    log.drop_overlapped(&io);
                }
                self.null_busy_reap(t, now);
            }
            let task = &mut self.tasks[t];
            let sync_trim = io.ddir == Ddir::Trim && !task.is_sync_engine && !task.null_engine;
            if let Some(l) = task.iolog.as_mut() {
                // `log_io_u`, with `io_ddir_name`.
                l.io(now, io.ddir.name(), io.offset, io.len);
            }
            // The engine's priority draw (`fio_cmdprio_set_ioprio`), for reads and writes:
            // an async engine's trim is an ioctl that never reaches it.
            let mut ioprio = (task.ioprio, 0);
            if let Some(c) = task.cmdprio.as_mut() {
                if !sync_trim {
                    ioprio = c.draw(io.ddir, io.len).unwrap_or(ioprio);
                }
            }
            let (ioprio, prio_index) = ioprio;
            let id = task.ious.insert(IoUnit {
                ddir: io.ddir,
                offset: io.offset,
                len: io.len,
                start: now,
                issue: now,
                parts_left: 0,
                sync: None,
                dsync_flush: false,
                errno: 0,
                ioprio,
                prio_index,
            });
            task.pending.push(id);
            task.issued += 1;
            // fio's `io_issues`, which a verify phase's reads leave alone (IO_U_F_VER_LIST).
            if !task.in_verify && !backlog {
                task.issued_dir[io.ddir.idx()] += 1;
            }
            if backlog {
                if let Some(g) = task.gen.as_mut() {
                    g.backlog_read(io.len);
                }
            }
            self.ios_issued += 1;
            task.think_issued += 1;
            task.queued_at = now;
            task.queued_ddir = io.ddir;
            if io.ddir == Ddir::Write {
                task.wrote = true;
                task.writes_issued += 1;
            }
            if let Some(log) = task.verify_log.as_mut() {
                log.logged(&io, id);
            }
            if task.in_verify {
                task.verify_ios += 1;
                task.verify_bytes += io.len;
            }
            if sync_trim {
                task.sync_trim = Some(id);
                task.wait = Wait::SyncInFlight;
                self.commit(t, now);
                return;
            }
            let full = task.in_flight + task.pending.len() as u32 >= task.queue_depth();
            if task.pending.len() as u32 >= task.batch_submit || full {
                self.commit(t, now);
            }
        }
    }

    /// `check_min_rate` and `lat_target_check` at the end of a turn of `do_io`'s loop that
    /// has seen an I/O done, outside the ramp: true when the job fell below its minimum
    /// rate, which ends it with EIO and, under `exitall`, ends the jobs `exit_what` names
    /// at once.
    #[cold]
    #[inline(never)]
    fn loop_checks(&mut self, t: usize, now: Ns) -> bool {
        let task = &mut self.tasks[t];
        if !task.ramp_over || task.rw_done == 0 || task.deadline_hit || task.gen_done {
            return false;
        }
        let start = task.stats.start_ns;
        let failed = match task.min_rate.as_mut() {
            Some(m) => m.check(&task.name, start),
            None => Vec::new(),
        };
        if !failed.is_empty() {
            task.rate_failures.extend(failed);
            if task.error == 0 {
                task.error = EIO;
                task.error_site = VERROR_MIN_RATE;
            }
            task.deadline_hit = true;
            self.terminate_threads(t, now);
            return true;
        }
        let blocks = task.ss_ios;
        if let (Some(l), None) = (task.lat_target.as_mut(), task.lat_quiesce) {
            match l.check(now, blocks) {
                LatNext::Go => {}
                LatNext::Done => task.deadline_hit = true,
                q => task.lat_quiesce = Some(q),
            }
            task.lat_qd_moved();
        }
        false
    }

    /// `td_io_commit`: submit the pending io_units (one `io_submit` call). More than two
    /// I/Os in one call are plugged, as `io_submit` (AIO_PLUG_THRESHOLD) and io_uring do.
    pub(super) fn commit(&mut self, t: usize, now: Ns) {
        self.clk = self.clk.max(now);
        // A sync engine's `issue_time` is taken before the engine's queue hook makes its
        // syscall (`td_io_queue` for FIO_SYNCIO engines): its clat is the whole call.
        let entered = self.clk;
        let task = &mut self.tasks[t];
        if !task.path.sqpoll {
            // The submit syscall (`io_submit`, `io_uring_enter`): entry and exit.
            self.clk += self.platform.syscall_ns;
        } else if !task.pending.is_empty() {
            // The SQ thread polls the ring. Idle longer than `sq_thread_idle` it sleeps, and
            // fio's commit finds IORING_SQ_NEED_WAKEUP and enters the kernel to wake it
            // (`fio_ioring_commit`); the thread is then switched in.
            // With polled I/O in flight the thread keeps polling (`io_sq_thread` does not
            // idle while its IOPOLL list has entries).
            let polling = task.polled && task.in_flight > 0;
            if self.clk >= task.sq_last + SQ_THREAD_IDLE_NS && !polling && self.cpus.is_on() {
                // fio's syscall (its sys time), then the thread switched in on its CPU.
                let entered = self.clk;
                self.clk += self.platform.syscall_ns + self.platform.ctxsw_ns;
                let ep = task.stats.start_ns;
                task.rusage
                    .sys(entered, entered + self.platform.syscall_ns, ep);
            }
            task.sq_last = self.clk;
        }
        let now = self.clk;
        debug_assert!(task.commit_batch.is_empty());
        std::mem::swap(&mut task.commit_batch, &mut task.pending);
        let n = task.commit_batch.len() as u32;
        if n == 0 {
            return;
        }
        task.stats.record_submit(now, n);
        task.in_flight += n;
        // A synchronous trim's too (`td_io_queue` stamps it before the queue hook when
        // `async_ioengine_sync_trim`).
        let issue = if task.is_sync_engine || task.sync_trim.is_some() {
            entered
        } else {
            now
        };
        // fio's `last_issue`, which a replayed log's gaps count from, is the issue stamp: a
        // sync engine's from before its syscall (`td_io_queue`); an async engine's is moved
        // to when its submit call returns (`end_commit`).
        task.last_issue = issue;
        for i in 0..task.commit_batch.len() {
            let id = task.commit_batch[i];
            let io = task.ious.get_mut(id);
            io.issue = issue;
            if let Some(ex) = self.explain.as_mut() {
                if !io.is_sync() {
                    ex.issued(t as u32, id);
                }
            }
        }
        let depth_now = task.in_flight;
        task.stats.record_depth_n(now, depth_now, n);
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
    pub(super) fn continue_submit(&mut self, t: usize, now: Ns) {
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
            if part == 0 && self.refuses(t, &io) {
                // The syscall fails with EINVAL before any bio; an async engine's event
                // carries it (`aio_complete`, the CQE's res), a sync engine's call returns it.
                let task = &mut self.tasks[t];
                task.ious.get_mut(id).errno = EINVAL;
                task.completed.push(id);
                if !task.reap_scheduled {
                    task.reap_scheduled = true;
                    self.evq.push(self.clk, Ev::TaskReap(t as u32));
                }
                self.tasks[t].submit_cursor = Some((idx + 1, 0));
                continue;
            }
            // The logical blocks the bytes touch: exactly the I/O for direct I/O, which is
            // aligned; a buffered I/O's partial blocks too, which the page cache would have
            // to read.
            // (The logical block size is a power of two: masks, not divisions, on this path.)
            let mask = self.lbs - 1;
            let sector0 = (io.offset & !mask) >> 9;
            let total_sectors = (((io.offset + io.len + mask) & !mask) >> 9)
                .saturating_sub(sector0)
                .max(1);
            let parts = total_sectors.div_ceil(max_part_sectors) as u32;
            if part == 0 {
                // The engine's per-I/O kernel work before the first bio: the file reference
                // and the buffer's pinning (both skipped by io_uring's registered files and
                // buffers). A trim has neither: fio issues it as a BLKDISCARD ioctl
                // (`do_io_u_trim`), with no user buffer.
                if io.ddir != Ddir::Trim {
                    self.clk += self.tasks[t].path.per_io_ns(io.len);
                }
                self.tasks[t].ious.get_mut(id).parts_left = parts;
                if parts > 1 && !self.tasks[t].plugging {
                    // Large direct I/O builds several bios under a plug (`__blkdev_direct_IO`).
                    self.tasks[t].plugging = true;
                    self.queue.start_plug(task_id);
                }
            }
            let off = part as u64 * max_part_sectors;
            let nsec = (total_sectors - off).min(max_part_sectors) as u32;
            let op = match io.ddir {
                Ddir::Read => Op::Read,
                Ddir::Write => Op::Write,
                Ddir::Trim => Op::Discard,
            };
            // A trim is an ioctl, never polled.
            let mut fl = if self.tasks[t].polled && io.ddir != Ddir::Trim {
                flags::REQ_POLLED
            } else {
                0
            };
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
                ioprio: io.ioprio,
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
            let r = self.queue.submit_bio_at(
                &mut self.cpus,
                bio,
                &mut *self.driver,
                &mut self.clk,
                &mut self.out,
            );
            if r == Submit::WaitTag {
                self.tasks[t].in_syscall = InSyscall::AsleepOnTag;
                return;
            }
            if self.cpus.take_parked() == Some(task_id) {
                // A dispatch run inside this syscall yielded; the task waits for it.
                self.tasks[t].in_syscall = InSyscall::Yielded;
                return;
            }
            if self.cpus.is_on()
                && self.clk > self.ctx_ev
                && (self.tasks[t].submit_cursor.map(|c| c.0 < nr) == Some(true)
                    || self.tasks[t].plugging)
            {
                // Yield between bios so that other CPUs' lock acquisitions that come
                // earlier in time go first.
                self.tasks[t].in_syscall = InSyscall::Yielded;
                self.evq.push(self.clk, Ev::TaskSubmitCont(task_id));
                return;
            }
        }
        if self.tasks[t].plugging {
            self.tasks[t].plugging = false;
            self.queue.finish_plug(
                &mut self.cpus,
                task_id,
                &mut *self.driver,
                &mut self.clk,
                &mut self.out,
            );
            if self.cpus.take_parked() == Some(task_id) {
                self.end_commit(t);
                self.tasks[t].in_syscall = InSyscall::Yielded;
                return;
            }
        }
        self.end_commit(t);
    }

    pub(super) fn tag_resume(&mut self, t: usize, now: Ns) {
        self.clk = self.clk.max(now);
        let r = self.queue.resume_tag_waiter(
            &mut self.cpus,
            t as u32,
            &mut *self.driver,
            &mut self.clk,
            &mut self.out,
        );
        if r == Submit::WaitTag {
            return;
        }
        self.tasks[t].in_syscall = InSyscall::No;
        if self.tasks[t].wait == Wait::SyncInFlight && self.tasks[t].submit_cursor.is_none() {
            return;
        }
        self.continue_submit(t, now);
        if self.tasks[t].in_syscall == InSyscall::No {
            let now = self.clk.max(now);
            self.pump(t, now);
        }
    }

    /// `io_submit` returned: fio's libaio/io_uring commit stamps `issue_time` on every io_u of
    /// the batch after the call (`fio_libaio_commit`), so slat includes any time the task
    /// slept in the block layer on a tag and clat starts here. Sync engines stamp it before
    /// the syscall (their clat is the whole call), so they keep the commit-time stamp.
    pub(super) fn end_commit(&mut self, t: usize) {
        let now = self.clk;
        let task = &mut self.tasks[t];
        if !task.is_sync_engine && task.sync_trim.is_none() {
            for i in 0..task.commit_batch.len() {
                let id = task.commit_batch[i];
                if let Some(io) = task.ious.try_get_mut(id) {
                    io.issue = io.issue.max(now);
                }
            }
            // `fio_libaio_queued` / `fio_ioring_queued` copy the same time into `last_issue`.
            if !task.commit_batch.is_empty() {
                task.last_issue = task.last_issue.max(now);
            }
        }
        task.commit_batch.clear();
    }

    /// FIO_Q_BUSY for `io`: it waits in `held`, what is queued is committed, and the task
    /// reaps a round before it tries `io` again. Returns whether the task now waits.
    fn busy_hold(&mut self, t: usize, now: Ns, io: IoU) -> bool {
        self.tasks[t].held = Some(io);
        if !self.tasks[t].pending.is_empty() {
            self.commit(t, now);
        }
        self.busy_wait(t, now)
    }

    /// `do_io` after FIO_Q_BUSY (and the commit it does): with io_us in flight the task
    /// reaps a round (`wait_for_completions`: at least `iodepth_batch_complete_min`, down to
    /// `iodepth_low`) before it tries the io_u again. Returns whether the task now waits.
    pub(super) fn busy_wait(&mut self, t: usize, now: Ns) -> bool {
        let task = &mut self.tasks[t];
        if task.in_syscall != InSyscall::No {
            // Asleep in the commit: it goes on from there.
            return true;
        }
        if task.in_flight == 0 {
            return false;
        }
        task.wait = Wait::QueueFull;
        if !task.completed.is_empty() && !task.reap_scheduled {
            task.reap_scheduled = true;
            self.evq.push(now, Ev::TaskReap(t as u32));
        }
        true
    }

    /// Whether the syscall refuses `io` before any bio (EINVAL): O_DIRECT needs its offset
    /// and length in the device's logical blocks (`blkdev_dio_unaligned`), and so does a
    /// trim, which fio issues as a BLKDISCARD ioctl on a block device (`blk_ioctl_discard`),
    /// buffered or not.
    fn refuses(&self, t: usize, io: &IoUnit) -> bool {
        let align = if io.ddir == Ddir::Trim {
            self.lbs
        } else {
            self.tasks[t].dio_align
        };
        // Logical block sizes are powers of two.
        align > 1 && (io.offset | io.len) & (align - 1) != 0
    }

    pub(super) fn bio_done(&mut self, token: u64, st: BlkStatus, now: Ns) {
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
        if st != BlkStatus::Ok && io.errno == 0 {
            io.errno = EIO;
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
    pub(super) fn reap(&mut self, t: usize, now: Ns) {
        self.tasks[t].reap_scheduled = false;
        self.start_dsync_flushes(t, now);
        // A task inside a synchronous trim returns from it before it reaps anything else;
        // the trim is accounted as any io_u (`io_queue_event` → `io_completed`).
        if let Some(trim) = self.tasks[t].sync_trim {
            let task = &mut self.tasks[t];
            let Some(pos) = task.completed.iter().position(|&id| id == trim) else {
                return;
            };
            task.completed.remove(pos);
            task.completed.insert(0, trim);
            task.sync_trim = None;
            task.wait = Wait::None;
            self.reap_n(t, now, 1);
            self.pump(t, now);
        }
        // A task inside a synchronous fsync returns from it before it reaps anything else
        // (not one inside a trim the pump above entered: an io_uring fsync may be among the
        // completions).
        if self.tasks[t].wait == Wait::SyncInFlight && self.tasks[t].sync_trim.is_none() {
            let task = &mut self.tasks[t];
            let Some(pos) = task
                .completed
                .iter()
                .position(|&id| task.ious.get(id).is_sync())
            else {
                return;
            };
            let id = task.completed.remove(pos);
            let io = task.ious.remove(id);
            task.wait = Wait::None;
            task.in_flight -= 1;
            if !io.is_end_fsync() {
                task.syncs_out -= 1;
            }
            // fio's `io_completed`: a sync sets `last_was_sync` whether or not it failed, or
            // a job whose syncs keep failing would ask for a sync again and again.
            task.last_was_sync = true;
            if io.errno != 0 {
                // Counted when queued, as in `reap_n`.
                let lost = self.power_cut.is_some() && io.errno == EIO;
                if !(io.is_end_fsync() || lost) {
                    task.stats.record_sync_failed(now, !io.is_datasync());
                }
                self.io_error(t, &io);
            } else if !io.is_end_fsync() {
                task.stats
                    .record_sync(now, now.saturating_sub(io.start), !io.is_datasync());
            }
            self.pump(t, now);
        }
        loop {
            let task = &mut self.tasks[t];
            // A task asleep on a tag in its submit syscall cannot reap; on an SQPOLL ring it
            // is the SQ thread that sleeps, and fio goes on reaping the completion ring (it
            // queues nothing new until the thread is back: `pump` waits for the submission).
            // Nor can one inside a synchronous fsync or trim (the pump just above may have
            // entered one): it reaps when the call returns.
            if task.completed.is_empty()
                || (task.in_syscall == InSyscall::AsleepOnTag && !task.path.sqpoll)
                || task.wait == Wait::SyncInFlight
            {
                return;
            }
            let avail = task.completed.len();
            // getevents(min, max) blocks until `iodepth_batch_complete_min` are in (0 = poll).
            let min_evts = task.complete_min.max(1).min(task.in_flight) as usize;
            if task.wait == Wait::QueueFull && avail < min_evts {
                return;
            }
            let n = if task.wait == Wait::QueueFull {
                avail.min(task.complete_max as usize)
            } else {
                avail
            };
            self.reap_n(t, now, n);
            let task = &mut self.tasks[t];
            if task.wait == Wait::QueueFull
                && (task.in_flight <= task.iodepth_low || task.in_flight == 0)
            {
                task.wait = Wait::None;
            }
            self.pump(t, now);
        }
    }

    /// `io_u_queued_complete` for the first `n` completions: account each (`io_completed`:
    /// a sync sets `last_was_sync`, any other io_u clears it) and end the failed ones.
    pub(super) fn reap_n(&mut self, t: usize, now: Ns, n: usize) {
        // An EIO after a power cut is an io_u lost with the machine, not one fio saw fail.
        let cut = self.power_cut.is_some();
        let task = &mut self.tasks[t];
        let mut failed: Vec<IoUnit> = Vec::new();
        let mut exceeded: Option<(IoUnit, Ns, Ns)> = None;
        // Jobs that look at each I/O's latency or count their rate: one flag on the path.
        let watch = task.latency_checks || task.min_rate.is_some();
        if let Some(m) = task.min_rate.as_mut() {
            m.comp_time = now;
        }
        for i in 0..n {
            let id = task.completed[i];
            let io = task.ious.remove(id);
            if let Some(ex) = self.explain.as_mut() {
                ex.completed(
                    t as u32,
                    id,
                    io.ddir.idx(),
                    io.offset,
                    io.len,
                    io.start,
                    io.issue,
                    now,
                    !io.is_sync() && io.errno == 0,
                );
            }
            if io.is_sync() && !io.is_end_fsync() {
                task.syncs_out -= 1;
            }
            if !io.is_sync() {
                // `io_completed`: the piece may be verified now, and `last_ddir` is this
                // io_u's direction, failed or not.
                task.last_ddir = io.ddir;
                if io.ddir == Ddir::Write {
                    if let Some(log) = task.verify_log.as_mut() {
                        log.completed(id, io.offset);
                    }
                }
            }
            if io.is_sync() && io.errno == 0 {
                if !io.is_end_fsync() {
                    task.stats
                        .record_sync(now, now.saturating_sub(io.start), !io.is_datasync());
                }
                task.last_was_sync = true;
                task.end_sync_wait();
            } else if io.errno != 0 {
                // fio's `io_completed` sets `last_was_sync` before it looks at the error.
                task.last_was_sync = io.is_sync();
                // fio counted it when it queued it (`td_io_queue`), an fsync among the syncs;
                // not the end-of-job fsync (queued while TD_FSYNCING), nor an io_u lost with
                // the machine at a power cut.
                let lost = cut && io.errno == EIO;
                if io.is_sync() {
                    task.end_sync_wait();
                    if !(io.is_end_fsync() || lost) {
                        task.stats.record_sync_failed(now, !io.is_datasync());
                    }
                } else if !lost {
                    task.stats.record_failed(io.ddir.idx(), now);
                }
                failed.push(io);
            } else {
                let slat = io.issue.saturating_sub(io.start);
                let clat = now.saturating_sub(io.issue);
                task.stats
                    .record_io_prio(io.ddir.idx(), now, io.len, slat, clat, io.prio_index);
                if watch {
                    if let Some((lat, max)) = watch_io(task, &io, now) {
                        exceeded.get_or_insert((io, lat, max));
                    }
                }
                task.rw_completed(now, io.len);
                if let Some(l) = task.logs.as_mut() {
                    let ep = task.stats.start_ns;
                    if task.stats.opts.stats && now >= ep {
                        let ms = |t: Ns| t.saturating_sub(ep) / 1_000_000;
                        l.io_done(
                            &task.stats,
                            ms(now),
                            ms(io.issue),
                            io.ddir.idx(),
                            io.len,
                            io.offset,
                            slat,
                            clat,
                            task.stats.opts.record_slat,
                            u32::from(io.ioprio.0),
                        );
                        if !task.stats.window_log.is_empty() {
                            l.windows(&task.stats.window_log, ep);
                            task.stats.window_log.clear();
                        }
                    }
                }
                task.last_was_sync = false;
            }
        }
        task.completed.drain(..n);
        task.stats.record_complete(now, n as u32);
        task.in_flight -= n as u32;
        for io in &failed {
            self.io_error(t, io);
        }
        if let Some((io, lat, max)) = exceeded {
            self.latency_exceeded(t, &io, lat, max);
        }
    }

    /// `lat_fatal`: an I/O over `max_latency`, or over `latency_target` at depth 1, ends the
    /// job with ETIMEDOUT (never one of `continue_on_error`'s errors); fio says so for the
    /// job's first error only.
    fn latency_exceeded(&mut self, t: usize, io: &IoUnit, lat: Ns, max: Ns) {
        let task = &mut self.tasks[t];
        if task.error == 0 {
            task.error = ETIMEDOUT;
            task.error_site = VERROR_MAX_LATENCY;
            self.fatal_errors.push(IoErrorRecord {
                exceeded: Some((lat, max)),
                task: t,
                ddir: io.ddir,
                sync: false,
                offset: io.offset,
                len: io.len,
                errno: ETIMEDOUT,
                first_direct: false,
                logged: false,
            });
        }
        task.deadline_hit = true;
    }

    /// fio's null engine at `iodepth` > 1 answers FIO_Q_BUSY while a committed batch is
    /// unreaped (`null_queue`); `do_io` then commits and waits for completions, and the
    /// null engine's getevents returns them all (`null_getevents`). The io_u fio had chosen
    /// (its direction, or a sync, decided before the attempt) is queued after.
    pub(super) fn null_busy_reap(&mut self, t: usize, now: Ns) {
        let n = self.tasks[t].completed.len();
        if n > 0 {
            self.reap_n(t, now, n);
            // The io_u fio had chosen was requeued, and `get_io_u` hands it out again
            // through `check_get_verify` (`get_next_verify` passes a requeued io_u).
            self.tasks[t].verify_check_requeued();
        }
    }

    /// An io_u ended with an error (`io_completed`): EIO ended by a power cut (the job stops
    /// writing and reads back), or failed: `td_non_fatal_error` lets a job whose
    /// `continue_on_error` names the kind (read, or write for writes and syncs) count it and
    /// go on if the errno is one of fio's `__NON_FATAL_ERR` (EIO, EILSEQ); any other error
    /// stops the job (`td_verror(td, io_u->error, "io_u error")`).
    pub(super) fn io_error(&mut self, t: usize, io: &IoUnit) {
        if io.errno == EIO {
            if let Some(pc) = self.power_cut.as_mut() {
                pc.aborted_ios += 1;
                return;
            }
        }
        self.io_errors += 1;
        let task = &mut self.tasks[t];
        let etype = if io.ddir == Ddir::Read && !io.is_sync() {
            1
        } else {
            2
        };
        // `td_non_fatal_error`: `ignore_error`'s list for the type, else EIO and EILSEQ.
        let listed = match &task.ignore_error[etype as usize - 1] {
            Some(list) => list.contains(&io.errno),
            None => matches!(io.errno, EIO | EILSEQ),
        };
        if task.continue_on_error & etype != 0 && listed {
            task.total_err_count += 1;
            if task.total_err_count == 1 {
                task.first_error = io.errno;
            }
            return;
        }
        // fio logs every io_u it reaps with an error it does not ignore (`io_u_log_error`),
        // and the first one's stops the job. An error the engine's queue call returned is
        // not logged as an io_u: `io_queue_event` clears the io_u and `td_io_queue` sets the
        // job's error. That is a trim's (`do_io_u_trim`, every engine) and a sync's on
        // libaio and posixaio (`do_io_u_sync` in their queue hooks); the sync engines' syncs
        // go through `fio_io_end`, which logs them, and io_uring's complete as events.
        let at_queue =
            io.ddir == Ddir::Trim || (io.is_sync() && !task.is_sync_engine && !task.async_fsync);
        // `break_on_this_error`: an error the queue call returned (a synchronous engine's
        // every error, and those above) is counted even as it stops the job, when
        // `continue_on_error` covers its type; one reaped as an event is not
        // (`io_completed` returns first).
        if (task.is_sync_engine || at_queue) && task.continue_on_error & etype != 0 {
            task.total_err_count += 1;
            if task.total_err_count == 1 {
                task.first_error = io.errno;
            }
        }
        if task.error == 0 {
            task.error = io.errno;
            task.error_site = if at_queue { VERROR_QUEUE } else { VERROR_IO_U };
        }
        // fio's `td_io_queue` hint when the engine's queue call returned the EINVAL (a
        // synchronous engine, or an async one's trim, which it issues synchronously:
        // FIO_ASYNCIO_SYNC_TRIM) for the first I/O under O_DIRECT. fio counts that first by
        // `io_issues[ddir & 1]`, so a trim looks at the reads' count.
        let first_direct = io.errno == EINVAL
            && task.dio_align > 0
            && (task.is_sync_engine || io.ddir == Ddir::Trim)
            && task.issued_dir[io.ddir.idx() & 1] == 1;
        self.fatal_errors.push(IoErrorRecord {
            exceeded: None,
            task: t,
            ddir: io.ddir,
            sync: io.is_sync(),
            offset: io.offset,
            len: io.len,
            errno: io.errno,
            first_direct,
            logged: !at_queue,
        });
        task.deadline_hit = true;
    }

    /// `fio_mark_td_terminate`: the job stops issuing and ends as at its runtime; one that
    /// has not started yet (a `startdelay`, a later group) starts to `keep_running` false
    /// and does nothing.
    pub(super) fn mark_terminate(&mut self, t: usize, now: Ns) {
        let task = &mut self.tasks[t];
        task.terminated = true;
        if task.wait == Wait::Sleeping {
            // It notices at the end of its sleep's current slice, or when it wakes.
            let (from, until) = task.sleep;
            if let Some(at) = super::steadystate::usec_sleep_notice(from, until, now) {
                self.evq.push(at, Ev::TaskDeadline(t as u32));
            }
        } else {
            self.evq.push(now, Ev::TaskDeadline(t as u32));
        }
    }

    /// The end of `thread_main`: under `exitall` (or `exitall_on_error` after an error),
    /// `fio_terminate_threads` marks the jobs the ending job's `exit_what` names: its
    /// group's, every job running past its ramp (`stonewall`), or every job (`all`).
    fn terminate_threads(&mut self, t: usize, now: Ns) {
        let me = &self.tasks[t];
        if !(self.exitall_on_terminate || (me.exitall_on_error && me.error != 0)) {
            return;
        }
        let (what, group) = (me.exit_what, me.groupid);
        for u in 0..self.tasks.len() {
            let other = &self.tasks[u];
            let hit = match what {
                ExitWhat::Group => other.groupid == group,
                ExitWhat::Stonewall => other.state == TaskState::Running && other.ramp_over,
                ExitWhat::All => true,
            };
            if hit && u != t && other.state != TaskState::Done && !other.terminated {
                self.mark_terminate(u, now);
            }
        }
    }

    pub(super) fn finish_task(&mut self, t: usize, now: Ns) {
        let task = &mut self.tasks[t];
        task.state = TaskState::Done;
        task.end_ns = now;
        if task.ss.is_some() {
            self.ss_tick_stop_if_done();
        }
        let task = &mut self.tasks[t];
        task.stats.finish(now);
        // fio's `cpu` line: `sys` the task's CPU time, `ctx` its switches; `usr` is only the
        // spin on an SQPOLL ring's completions (fio's own user-space work per I/O is not
        // modelled), and all stay 0 on a platform without costs.
        let (sys, usr, ctx) = task.rusage.report(task.stats.ended_in_ramp);
        task.stats.sys_time_ms = sys / 1_000_000;
        task.stats.usr_time_ms = usr / 1_000_000;
        task.stats.ctx = ctx;
        if let Some(l) = task.iolog.as_mut() {
            l.finish(now);
            if let Some(e) = l.error.take() {
                self.trace_error.get_or_insert(e);
            }
        }
        if let Some(l) = task.logs.as_mut() {
            let ep = task.stats.start_ns;
            l.windows(&task.stats.window_log, ep);
            task.stats.window_log.clear();
            l.finish(now.saturating_sub(ep) / 1_000_000);
            if let Some(e) = l.error.take() {
                self.trace_error.get_or_insert(e);
            }
        }
        task.draw_failure = task.gen.as_ref().and_then(|g| g.draw_failure());
        task.gen = None;
        self.terminate_threads(t, now);
        // Start the jobs that waited for this one (stonewall).
        for i in 0..self.tasks.len() {
            if self.tasks[i].state == TaskState::Waiting && !self.tasks[i].wait_for.is_empty() {
                let ready = self.tasks[i]
                    .wait_for
                    .iter()
                    .all(|&w| self.tasks[w as usize].state == TaskState::Done);
                if ready {
                    self.tasks[i].wait_for.clear();
                    // `run_threads` holds a job until `start_delay` has passed since the run
                    // began (`utime_since_genesis`), not since its group's start.
                    let d = self.tasks[i].start_delay;
                    self.evq.push(now.max(d), Ev::TaskStart(i as u32));
                }
            }
        }
    }
}

/// A completed I/O of a job that watches its I/Os: counted for `rate_min`
/// (`this_io_bytes`), and `account_io_completion`'s checks of its latency (from its
/// `start_time`) against `max_latency` and `latency_target`, once the ramp is over: the
/// latency and the limit when it ends the job (`lat_fatal`).
#[cold]
#[inline(never)]
fn watch_io(task: &mut Task, io: &IoUnit, now: Ns) -> Option<(Ns, Ns)> {
    // Departure: fio leaves a `verify_backlog` read out of `this_io_bytes`.
    if let Some(m) = task.min_rate.as_mut() {
        m.done(io.ddir.idx(), io.len);
    }
    if !task.latency_checks {
        return None;
    }
    let o = &task.stats.opts;
    if !o.stats || o.disable_lat || now < task.stats.start_ns {
        return None;
    }
    let lat = now.saturating_sub(io.start);
    let max = task.max_latency[io.ddir.idx()];
    let mut out = (max > 0 && lat > max).then_some((lat, max));
    if let Some(l) = task.lat_target.as_mut() {
        match l.over_target(lat) {
            Ok(LatNext::Quiesce) => task.lat_quiesce = Some(LatNext::Quiesce),
            Ok(_) => {}
            Err(()) => {
                out.get_or_insert((lat, l.target_ns()));
            }
        }
        task.lat_qd_moved();
    }
    out
}
