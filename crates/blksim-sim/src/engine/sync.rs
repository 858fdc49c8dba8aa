//! fio's syncs as the kernel receives them: `fsync=`/`fdatasync=` io_units (`DDIR_SYNC`,
//! `DDIR_DATASYNC`), `end_fsync`, the null engine's queued syncs, and the flush that
//! `generic_write_sync` adds after a write on an `O_SYNC`/`O_DSYNC` file.

use super::*;

impl Sim {
    /// An fsync (`DDIR_SYNC`): `blkdev_fsync` → `blkdev_issue_flush`, an empty
    /// `REQ_OP_WRITE | REQ_PREFLUSH` bio; the block layer's flush machinery decides what the
    /// device sees (nothing without a write cache). The task waits for it unless the engine
    /// queues fsync asynchronously (io_uring).
    pub(super) fn issue_sync(&mut self, t: usize, now: Ns, kind: SyncKind) {
        let task = &mut self.tasks[t];
        log_sync(task, now, kind);
        // fio's `last_issue`, which a replayed log's gaps count from, is every io_u's.
        task.last_issue = now;
        let id = task.ious.insert(IoUnit {
            ddir: Ddir::Write,
            offset: 0,
            len: 0,
            start: now,
            issue: now,
            parts_left: 1,
            sync: Some(kind),
            dsync_flush: false,
            errno: 0,
            ioprio: task.ioprio,
            prio_index: 0,
        });
        if kind != SyncKind::EndFsync {
            task.syncs_out += 1;
        }
        task.in_flight += 1;
        // `td_io_queue` marks a sync's depth like an I/O's (`io_u_mark_depth`), except the
        // end-of-job fsync (`TD_FSYNCING`); "IO depths" divides by the read, write and trim
        // I/Os only, so fio's percentages then add up to more than 100.
        if kind != SyncKind::EndFsync {
            task.stats.record_depth_n(now, task.in_flight, 1);
        }
        if task.async_fsync {
            task.end_sync_wait();
        } else {
            debug_assert!(
                matches!(task.wait, Wait::None | Wait::SyncInFlight),
                "a synchronous sync issued while the task waits for {:?}",
                task.wait
            );
            task.wait = Wait::SyncInFlight;
        }
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
    pub(super) fn submit_flush(&mut self, t: usize, id: u32, now: Ns) {
        let bio = Bio {
            token: ((t as u64) << TOKEN_SHIFT) | id as u64,
            op: Op::Write,
            flags: flags::REQ_SYNC | flags::REQ_PREFLUSH,
            sector: 0,
            nr_sectors: 0,
            nr_segments: 0,
            task: t as u32,
            cpu: self.tasks[t].cpu,
            ioprio: self.tasks[t].ioprio,
            version: 0,
            queue_time: now,
            next: blksim_block::request::NO_BIO,
        };
        self.clk = self.clk.max(now);
        self.bios[0] += 1;
        if self.queue.submit_bio_at(
            &mut self.cpus,
            bio,
            &mut *self.driver,
            &mut self.clk,
            &mut self.out,
        ) == Submit::WaitTag
        {
            self.tasks[t].in_syscall = InSyscall::AsleepOnTag;
        }
    }

    /// A sync on fio's queued null engine is an io_u like any other: queued, completed by
    /// the commit, and counted as a sync when reaped.
    pub(super) fn queue_null_sync(&mut self, t: usize, now: Ns, kind: SyncKind) {
        let task = &mut self.tasks[t];
        log_sync(task, now, kind);
        let id = task.ious.insert(IoUnit {
            ddir: Ddir::Write,
            offset: 0,
            len: 0,
            start: now,
            issue: now,
            parts_left: 1,
            // Counted as a sync when reaped, whatever asked for it.
            sync: Some(match kind {
                SyncKind::EndFsync => SyncKind::Fsync,
                k => k,
            }),
            dsync_flush: false,
            errno: 0,
            ioprio: task.ioprio,
            prio_index: 0,
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
    pub(super) fn start_dsync_flushes(&mut self, t: usize, now: Ns) {
        let task = &self.tasks[t];
        if !(task.sync_io && task.is_sync_engine) || task.null_engine {
            return;
        }
        let mut i = 0;
        while i < self.tasks[t].completed.len() {
            let task = &mut self.tasks[t];
            let id = task.completed[i];
            let io = task.ious.get_mut(id);
            // A failed write returns at once: `generic_write_sync` runs only after data
            // was written (`ret > 0`).
            if io.is_sync() || io.dsync_flush || io.ddir != Ddir::Write || io.errno != 0 {
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
}

impl Sim {
    /// A sync io_u goes out as `td_io_queue` sends one: fio's null engine queues it behind
    /// its batch (`null_queue`); the others commit what is queued first (libaio answers
    /// FIO_Q_BUSY while io_us are queued), without waiting for the I/O in flight. False
    /// when that commit left the task inside io_submit (asleep on a tag, or in a dispatch it
    /// runs): the caller tries again when it returns.
    pub(super) fn queue_sync(&mut self, t: usize, now: Ns, kind: SyncKind) -> bool {
        if self.tasks[t].null_queued {
            self.null_busy_reap(t, now);
            self.queue_null_sync(t, now, kind);
            return true;
        }
        if !self.tasks[t].pending.is_empty() {
            self.commit(t, now);
            if self.tasks[t].in_syscall != InSyscall::No {
                return false;
            }
            // libaio answered the sync FIO_Q_BUSY (`fio_libaio_queue`: `ld->queued`): fio
            // reaps a round before it tries again.
            if !self.tasks[t].async_fsync && self.busy_wait(t, now) {
                return false;
            }
        }
        let now = now.max(self.clk);
        self.issue_sync(t, now, kind);
        true
    }
}

/// A sync io_u in the `write_iolog`, `end_fsync`'s too (`fio_io_sync` queues a DDIR_SYNC
/// io_u through `td_io_queue`), see [`super::iolog::IoLogWriter::sync`].
fn log_sync(task: &mut Task, now: Ns, kind: SyncKind) {
    let what = match kind {
        SyncKind::Fsync | SyncKind::EndFsync => "sync",
        SyncKind::Fdatasync => "datasync",
    };
    if let Some(l) = task.iolog.as_mut() {
        l.sync(now, what);
    }
}
