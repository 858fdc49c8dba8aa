//! Submission (`block/blk-mq.c`): `blk_mq_submit_bio` in the kernel's order of decisions
//! (plug merge, elevator merge, request allocation, then plug, insert or direct issue), the
//! plug and its flush (`blk_mq_flush_plug_list`), request–request merges, inserts into the
//! elevator or the software queues, and `blk_mq_try_issue_directly`.

use super::*;

impl RequestQueue {
    pub(super) fn plug_mut(&mut self, task: u32) -> &mut Plug {
        let t = task as usize;
        if self.plugs.len() <= t {
            self.plugs.resize_with(t + 1, Plug::default);
        }
        &mut self.plugs[t]
    }

    /// `blk_start_plug`.
    pub fn start_plug(&mut self, task: u32) {
        self.plug_mut(task).active = true;
    }

    /// `blk_finish_plug`: flush the plug (not from schedule) and end plugging.
    pub fn finish_plug(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        task: u32,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        self.flush_plug(cpus, task, false, drv, now, out);
        self.plug_mut(task).active = false;
    }

    /// Split a submitter's I/O into bios no larger than `max_sectors` (`bio_split_to_limits`)
    /// and return how many bios it became. The caller then submits each with [`Self::submit_bio`].
    pub fn split_count(&self, nr_sectors: u32) -> u32 {
        let max = self.lim.max_sectors().max(1);
        nr_sectors.div_ceil(max).max(1)
    }

    /// [`Self::submit_bio_at`] for callers without a CPU context (the local clock is `now`).
    pub fn submit_bio(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        bio: Bio,
        drv: &mut dyn Driver,
        now: Ns,
        out: &mut BlkOut,
    ) -> Submit {
        let mut t = now;
        self.submit_bio_at(cpus, bio, drv, &mut t, out)
    }

    /// `blk_mq_submit_bio` for one bio (already within limits), in a context whose local
    /// clock is `now` (advanced by the CPU time the submission costs).
    pub fn submit_bio_at(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        mut bio: Bio,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> Submit {
        self.ctx_cpu = bio.cpu;
        *now += cpus.costs().bio_alloc_ns;
        bio.queue_time = *now;
        bio.next = NO_BIO;
        self.integrity
            .bio_submitted(bio.op, bio.token, bio.sector, bio.nr_sectors, bio.version);
        let bio_id = self.pool.alloc_bio(bio);
        self.trace(out, now, b'Q', TraceSrc::Bio(bio_id), 0);
        // 2. Plug merge, then scheduler (or software queue) merge.
        if self.lim.nomerges < 2 && self.attempt_merges(cpus, bio_id, now, out) {
            return Submit::Done;
        }
        self.submit_bio_alloc(cpus, bio_id, drv, now, out)
    }

    /// Steps 3–6 of `blk_mq_submit_bio`: allocate a request, then plug, insert or issue.
    pub(super) fn submit_bio_alloc(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        bio_id: BioId,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> Submit {
        let (cpu, task, op, flags) = {
            let b = self.pool.bio(bio_id);
            (b.cpu, b.task, b.op, b.flags)
        };
        let hctx = self.cpu_to_hctx(cpu);
        let h = self.tags_of(hctx as usize);
        // 3. Allocate a tag: scheduler tag with an elevator, driver tag without.
        let tag = if self.elevator.is_some() {
            let sync = op == Op::Read || flags & crate::request::flags::REQ_SYNC != 0;
            let shallow = self.elevator.as_ref().and_then(|e| e.limit_depth(op, sync));
            let tags = &mut self.sched_tags[h];
            match shallow {
                Some(d) if tags.busy() >= d => None,
                _ => tags.get(cpu as usize),
            }
        } else {
            self.driver_tags[h].get(cpu as usize)
        };
        let Some(tag) = tag else {
            // No tag: the task sleeps (`blk_mq_get_tag` → `io_schedule`), which flushes its
            // plug from the scheduler (async queue runs). Waiters are woken in batches.
            self.stats.tag_waits += 1;
            let wq = if self.elevator.is_some() {
                &mut self.sched_waitq[h]
            } else {
                &mut self.driver_waitq[h]
            };
            wq.arm(if self.elevator.is_some() {
                self.wake_batch_sched
            } else {
                self.wake_batch_driver
            });
            wq.waiters.push_back(TagWaiter { task });
            let t = task as usize;
            if self.task_wait_bio.len() <= t {
                self.task_wait_bio.resize(t + 1, None);
            }
            // A task asleep in `blk_mq_get_tag` submits nothing until it is woken.
            assert!(
                self.task_wait_bio[t].is_none(),
                "task {task} submitted a bio while asleep on a tag"
            );
            self.task_wait_bio[t] = Some(bio_id);
            self.flush_plug(cpus, task, true, drv, now, out);
            // Before sleeping the kernel runs the queue once (`blk_mq_get_tag`).
            self.run_hw_queue(cpus, hctx, false, cpu, drv, now, out);
            return Submit::WaitTag;
        };
        let rq = self.pool.alloc_rq_from_bio(bio_id, hctx, *now);
        {
            let r = self.pool.get_mut(rq);
            if self.elevator.is_some() {
                r.sched_tag = tag as i32;
            } else {
                r.tag = tag as i32;
            }
        }
        self.trace(out, now, b'G', TraceSrc::Rq(rq), 0);
        self.after_alloc(cpus, rq, task, drv, now, out);
        Submit::Done
    }

    pub(super) fn after_alloc(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        task: u32,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let hctx = self.pool.get(rq).hctx;
        let cpu = self.pool.get(rq).cpu;
        // 4. `op_is_flush(bio->bi_opf) && blk_insert_flush(rq)`: PREFLUSH/FUA requests are
        // sequenced by the flush machinery (`flush.rs`), which may take them here.
        if flush::op_is_flush(self.pool.get(rq).flags) && self.insert_flush(cpus, rq, drv, now, out)
        {
            return;
        }
        // 5. Plugged: add to the plug.
        if self
            .plugs
            .get(task as usize)
            .map(|p| p.active)
            .unwrap_or(false)
        {
            let last_bytes = self.plugs[task as usize]
                .last()
                .map(|l| self.pool.get(l).bytes())
                .unwrap_or(0);
            let nomerges = self.lim.nomerges >= 2;
            if self.plugs[task as usize].must_flush_before_add(last_bytes, nomerges) {
                self.flush_plug(cpus, task, false, drv, now, out);
            }
            let p = self.plug_mut(task);
            if p.list.is_empty() {
                self.trace(out, now, b'P', TraceSrc::Task(task, cpu), 0);
            }
            self.pool.get_mut(rq).state = RqState::Plugged;
            self.plug_mut(task).list.push(rq);
            *now += cpus.costs().plug_ns;
            return;
        }
        // 6. With an elevator, or a busy single-queue device: insert and run asynchronously.
        let h = hctx as usize;
        let is_sync = self.pool.get(rq).op == Op::Read
            || self.pool.get(rq).flags & crate::request::flags::REQ_SYNC != 0;
        if self.elevator.is_some()
            || (self.hctxs[h].dispatch_busy > 0 && (self.hctxs.len() == 1 || !is_sync))
        {
            self.insert_requests_one(cpus, rq, now, out);
            self.run_hw_queue(cpus, hctx, true, cpu, drv, now, out);
        } else {
            self.try_issue_directly(cpus, rq, cpu, drv, now, out);
        }
    }

    /// Plug merge (`blk_attempt_plug_merge`: only the last plugged request) then elevator or
    /// software-queue merge (`blk_mq_sched_bio_merge`). Returns true if the bio was merged.
    pub(super) fn attempt_merges(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        bio_id: BioId,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> bool {
        let info = self.bio_info(bio_id);
        let task = info.task as usize;
        // Plug merge.
        if let Some(last) = self
            .plugs
            .get(task)
            .filter(|p| p.active)
            .and_then(|p| p.last())
        {
            let kind = bio_merge_kind(self.pool.get(last), &info, &self.lim);
            if kind != ElvMerge::NoMerge {
                self.do_bio_merge(last, bio_id, kind, now, out);
                self.stats.plug_merges += 1;
                return true;
            }
        }
        if self.lim.nomerges >= 1 && self.elevator.is_none() {
            return false;
        }
        // Elevator merge: `dd_bio_merge` / `bfq_bio_merge` take the elevator lock for the
        // lookup whether or not a merge is found.
        if cpus.is_on() && self.elevator.is_some() {
            let hold = cpus.costs().elv(cpus.costs().elv_merge_ns);
            let _ = cpus.elv_hold(info.cpu, now, hold, ElvHook::Merge);
        }
        if let Some(elv) = self.elevator.as_mut() {
            if let Some((rq, kind)) = elv.find_merge(&self.pool, &info) {
                if bio_merge_kind(self.pool.get(rq), &info, &self.lim) == kind {
                    self.do_bio_merge(rq, bio_id, kind, now, out);
                    self.stats.elv_merges += 1;
                    let elv = self.elevator.as_mut().unwrap();
                    elv.request_merged(&mut self.pool, rq, kind);
                    // Request–request merge with the neighbour (`attempt_back_merge` /
                    // `attempt_front_merge`).
                    let neighbour = match kind {
                        ElvMerge::BackMerge => elv.next_request(&self.pool, rq).map(|n| (rq, n)),
                        ElvMerge::FrontMerge => elv.former_request(&self.pool, rq).map(|p| (p, rq)),
                        ElvMerge::NoMerge => None,
                    };
                    if let Some((a, b)) = neighbour {
                        if requests_mergeable(self.pool.get(a), self.pool.get(b), &self.lim) {
                            self.merge_two_queued(a, b, now, out);
                        }
                    }
                    return true;
                }
            }
            return false;
        }
        // `none`: `blk_bio_list_merge` over the CPU's software queue, newest first, at most
        // 8 requests inspected.
        let cpu = info.cpu as usize % self.nr_cpus;
        let mut found = None;
        for &rq in self.sw_queues[cpu].iter().rev().take(8) {
            let kind = bio_merge_kind(self.pool.get(rq), &info, &self.lim);
            if kind != ElvMerge::NoMerge {
                found = Some((rq, kind));
                break;
            }
        }
        if let Some((rq, kind)) = found {
            self.do_bio_merge(rq, bio_id, kind, now, out);
            self.stats.elv_merges += 1;
            return true;
        }
        false
    }

    /// Merge queued request `b` into `a` (b follows a) and free `b`. As `attempt_merge` does,
    /// `a` takes `b`'s data before the elevator hears of it (`elv_merge_requests`), so that
    /// the merge hash files `a` under its new end sector (`elv_rqhash_reposition`).
    pub(super) fn merge_two_queued(&mut self, a: RqId, b: RqId, now: &mut Ns, out: &mut BlkOut) {
        self.pool.merge_requests(a, b);
        let r = self.pool.get_mut(a);
        r.ready_time = r.ready_time.max(*now);
        let elv = self
            .elevator
            .as_mut()
            .expect("queued merges need an elevator");
        elv.requests_merged(&mut self.pool, a, b);
        self.stats.rq_merges += 1;
        // The absorbed request takes the older deadline (`dd_merged_requests` keeps the
        // earlier fifo_time); the elevator did that in `requests_merged`.
        let freed = self.pool.free_rq_shell(b);
        self.release_tags(&freed, now, out);
    }

    pub(super) fn do_bio_merge(
        &mut self,
        rq: RqId,
        bio_id: BioId,
        kind: ElvMerge,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let dir = self.pool.bio(bio_id).op.dir();
        self.stats.merges[dir] += 1;
        match kind {
            ElvMerge::BackMerge => {
                self.trace(out, now, b'M', TraceSrc::Bio(bio_id), 0);
                self.pool.back_merge_bio(rq, bio_id);
            }
            ElvMerge::FrontMerge => {
                self.trace(out, now, b'F', TraceSrc::Bio(bio_id), 0);
                self.pool.front_merge_bio(rq, bio_id);
            }
            ElvMerge::NoMerge => unreachable!(),
        }
        let r = self.pool.get_mut(rq);
        r.ready_time = r.ready_time.max(*now);
    }

    pub(super) fn bio_info(&self, id: BioId) -> BioInfo {
        let b = self.pool.bio(id);
        BioInfo {
            op: b.op,
            flags: b.flags,
            sector: b.sector,
            nr_sectors: b.nr_sectors,
            nr_segments: b.nr_segments,
            cpu: b.cpu,
            task: b.task,
            ioprio: b.ioprio,
        }
    }

    /// `blk_mq_flush_plug_list`.
    pub fn flush_plug(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        task: u32,
        from_schedule: bool,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let Some(p) = self.plugs.get_mut(task as usize) else {
            return;
        };
        if p.list.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut p.list);
        let cpu = self.pool.get(list[0]).cpu;
        self.trace(out, now, b'U', TraceSrc::Task(task, cpu), list.len() as u32);
        if self.elevator.is_none() && !from_schedule {
            // Fast path: no elevator, not from schedule → issue directly, in order
            // (`blk_mq_try_issue_list_directly`); on a resource error the rest is inserted.
            let n = list.len();
            for i in 0..n {
                let rq = list[i];
                let hctx = self.pool.get(rq).hctx;
                let h = hctx as usize;
                if self.hctxs[h].stopped || !self.hctxs[h].dispatch.is_empty() {
                    for &r in &list[i..] {
                        self.bypass_insert(r, false, *now);
                    }
                    self.run_hw_queue(cpus, hctx, false, cpu, drv, now, out);
                    break;
                }
                let st = self.issue_one(cpus, rq, i + 1 == n, cpu, drv, now, out);
                match st {
                    BlkStatus::Ok | BlkStatus::Blocked => {}
                    BlkStatus::Resource | BlkStatus::DevResource => {
                        for &r in &list[i..] {
                            self.bypass_insert(r, false, *now);
                        }
                        drv.commit_rqs(hctx, *now, &mut out.drv);
                        self.run_hw_queue(cpus, hctx, false, cpu, drv, now, out);
                        break;
                    }
                    BlkStatus::IoErr => self.end_request(cpus, rq, BlkStatus::IoErr, drv, now, out),
                }
            }
        } else {
            // Insert the batch (one elevator lock hold) and run the queue.
            for &rq in &list {
                self.pool.get_mut(rq).state = RqState::Idle;
            }
            // Read the hctx first: an insert merge may free list[0].
            let hctx = self.pool.get(list[0]).hctx;
            self.insert_requests_batch(cpus, &list, now, out);
            self.run_hw_queue(cpus, hctx, from_schedule, cpu, drv, now, out);
        }
        list.clear();
        // Give the buffer back to the plug so steady state does not allocate.
        let p = &mut self.plugs[task as usize];
        if p.list.is_empty() {
            p.list = list;
        }
    }

    pub(super) fn insert_requests_one(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let mut one = std::mem::take(&mut self.scratch);
        one.clear();
        one.push(rq);
        self.insert_requests_batch(cpus, &one, now, out);
        one.clear();
        self.scratch = one;
    }

    /// Insert into the elevator (`insert_requests`) or the software queues.
    pub(super) fn insert_requests_batch(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        list: &[RqId],
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        for &rq in list {
            self.pool.get_mut(rq).insert_time = *now;
            self.trace(out, now, b'I', TraceSrc::Rq(rq), 0);
        }
        if cpus.is_on() && self.elevator.is_some() && !list.is_empty() {
            let cpu = self.pool.get(list[0]).cpu;
            let one = cpus.costs().elv(cpus.costs().elv_insert_ns);
            if self.elv_lock_per_insert {
                for _ in 0..list.len() {
                    let _ = cpus.elv_hold(cpu, now, one, ElvHook::Insert);
                }
            } else {
                let _ = cpus.elv_hold(cpu, now, one * list.len() as Ns, ElvHook::Insert);
            }
        }
        // In the scheduler once the insertion's critical section is over (a request merged
        // into a queued one there passes its time on, `RqPool::merge_requests`).
        for &rq in list {
            let r = self.pool.get_mut(rq);
            r.ready_time = r.ready_time.max(*now);
        }
        if let Some(elv) = self.elevator.as_mut() {
            // `dd_insert_requests` and `bfq_insert_requests` take the list a request at a time,
            // each first trying to merge into a queued one (`blk_mq_sched_try_insert_merge`,
            // which reads `nomerges` itself): so a request may merge into one inserted just
            // before it from the same list. The elevator moves the bios; the core frees the
            // empty shells.
            let mut merged_away: Vec<RqId> = Vec::new();
            for &rq in list {
                if elv.try_insert_merge(&mut self.pool, rq).is_some() {
                    merged_away.push(rq);
                    continue;
                }
                let r = self.pool.get_mut(rq);
                r.state = RqState::Queued;
                r.rq_flags |= crate::request::rqf::ELV;
                elv.insert_requests(&mut self.pool, std::slice::from_ref(&rq), false, *now);
            }
            for rq in merged_away {
                self.stats.rq_merges += 1;
                let freed = self.pool.free_rq_shell(rq);
                self.release_tags(&freed, now, out);
            }
            self.reap_elv_released(now, out);
        } else {
            for &rq in list {
                let cpu = self.pool.get(rq).cpu as usize % self.nr_cpus;
                self.pool.get_mut(rq).state = RqState::Queued;
                self.sw_queues[cpu].push_back(rq);
            }
        }
    }

    /// `blk_mq_request_bypass_insert`: onto `hctx->dispatch`, at `now`.
    pub(super) fn bypass_insert(&mut self, rq: RqId, at_head: bool, now: Ns) {
        let r = self.pool.get_mut(rq);
        let h = r.hctx as usize;
        r.state = RqState::OnDispatchList;
        r.ready_time = r.ready_time.max(now);
        if at_head {
            self.hctxs[h].dispatch.push_front(rq);
        } else {
            self.hctxs[h].dispatch.push_back(rq);
        }
    }

    /// `blk_mq_try_issue_directly` (no elevator).
    pub(super) fn try_issue_directly(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let hctx = self.pool.get(rq).hctx;
        let h = hctx as usize;
        if self.hctxs[h].stopped {
            self.insert_requests_one(cpus, rq, now, out);
            self.run_hw_queue(cpus, hctx, false, cpu, drv, now, out);
            return;
        }
        let st = self.issue_one(cpus, rq, true, cpu, drv, now, out);
        match st {
            BlkStatus::Ok | BlkStatus::Blocked => self.update_dispatch_busy(h, false),
            BlkStatus::Resource | BlkStatus::DevResource => {
                self.update_dispatch_busy(h, true);
                self.bypass_insert(rq, false, *now);
                self.run_hw_queue(cpus, hctx, false, cpu, drv, now, out);
            }
            BlkStatus::IoErr => self.end_request(cpus, rq, BlkStatus::IoErr, drv, now, out),
        }
    }

    /// Issue one request that already has its driver tag. Blocked direct issues resume
    /// nothing (the submitter itself is the blocked context).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn issue_one(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        last: bool,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> BlkStatus {
        let id = self.new_run_id();
        let st = self.queue_rq(cpus, rq, last, CallCtx { id, cpu }, drv, now, out);
        if st == BlkStatus::Blocked {
            let hctx = self.pool.get(rq).hctx;
            self.park_run(id, hctx, cpu, Vec::new());
        }
        st
    }
}
