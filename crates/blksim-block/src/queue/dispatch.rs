//! Dispatch (`block/blk-mq-sched.c` and the dispatch half of `block/blk-mq.c`): hardware-queue
//! runs, synchronous and from kblockd (`blk_mq_run_hw_queue`, `blk_mq_delay_run_hw_queue`,
//! `blk_mq_hctx_next_cpu`), `__blk_mq_sched_dispatch_requests` with its three sources
//! (`hctx->dispatch`, `__blk_mq_do_dispatch_sched`, `blk_mq_do_dispatch_ctx`),
//! `blk_mq_dispatch_rq_list` and `queue_rq`, `SCHED_RESTART`, `dispatch_busy`, and the
//! dispatch contexts that park on a lock or inside a blocking driver and resume.

use super::*;

impl RequestQueue {
    /// The id a context gets if it parks: the lowest free slot of `blocked` (a new one if
    /// none is free), taken only when it parks ([`Self::park_slot`]).
    pub(super) fn new_run_id(&mut self) -> u32 {
        if let Some(i) = self.free_runs.first() {
            return i;
        }
        let i = self.blocked.len() as u32;
        self.blocked.push(None);
        self.free_runs.insert(i);
        i
    }

    /// Park `run` in slot `id` (from [`Self::new_run_id`]).
    pub(super) fn park_slot(&mut self, id: u32, run: BlockedRun) {
        self.free_runs.remove(id);
        self.blocked[id as usize] = Some(run);
    }

    pub(super) fn park_run(&mut self, id: u32, hctx: u16, cpu: u16, rest: Vec<RqId>) {
        self.park_slot(
            id,
            BlockedRun {
                hctx,
                cpu,
                rest,
                pulling: false,
                granted: None,
                owner: None,
            },
        );
    }

    /// Call the driver's `queue_rq` and account for the outcome.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn queue_rq(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        rq: RqId,
        last: bool,
        ctx: CallCtx,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> BlkStatus {
        let hctx = self.pool.get(rq).hctx;
        // A context runs to its end when its event comes up, with its clock ahead of the
        // event time by what it charged: a submitter whose syscall takes longer than a
        // transfer inserts (or merges into) a request at a time later than the completion
        // that runs the queue next. The request cannot reach the driver before that; the
        // dispatcher waits for it (what it would do behind the inserter's hold of the lock).
        *now = (*now).max(self.pool.get(rq).ready_time);
        if cpus.is_on() {
            // The driver's submission path for this hardware queue (`blk_mq_start_request`
            // and the driver's own per-queue lock, e.g. null_blk's `nq`/`cmd` handling,
            // `nvmeq->sq_lock`): it moves between CPUs when several dispatch to one hctx.
            let c = cpus.costs().queue_rq_ns;
            cpus.drv_hold(hctx, ctx.cpu, now, c);
        }
        {
            let r = self.pool.get_mut(rq);
            debug_assert!(r.tag >= 0, "queue_rq without a driver tag");
            r.state = RqState::InFlight;
            r.issue_time = *now;
            r.rq_flags |= crate::request::rqf::STARTED;
            if r.op == Op::Flush {
                // What this flush will make durable (the integrity oracle's power-cut view).
                r.flush_ack_seq = self.integrity.flush_issued();
            }
        }
        self.stats.queue_rq_calls += 1;
        self.set_in_flight_delta(hctx, 1, now, &mut out.spans);
        let st = drv.queue_rq(&self.pool, rq, hctx, last, ctx, *now, &mut out.drv);
        match st {
            BlkStatus::Ok | BlkStatus::Blocked => {
                self.trace(out, now, b'D', TraceSrc::Rq(rq), 0);
                let seq = self.pool.get(rq).elv_priv[1];
                if seq != 0 {
                    if seq < self.last_issued_seq {
                        self.stats.dispatch_inversions += 1;
                    }
                    self.last_issued_seq = self.last_issued_seq.max(seq);
                }
                let r = self.pool.get(rq);
                self.stats.blk_wait_ns += now.saturating_sub(r.alloc_time);
            }
            BlkStatus::Resource | BlkStatus::DevResource => {
                self.stats.queue_rq_resource += 1;
                self.set_in_flight_delta(hctx, -1, now, &mut out.spans);
                let r = self.pool.get_mut(rq);
                r.state = RqState::Idle;
                r.requeues += 1;
            }
            BlkStatus::IoErr => {}
        }
        // Inline completions (null_blk irqmode=0 completes inside queue_rq).
        self.drain_driver_completions_at(cpus, drv, now, out);
        st
    }

    pub(super) fn hctx_has_work(&self, h: usize) -> bool {
        !self.hctxs[h].dispatch.is_empty()
            || match &self.elevator {
                Some(e) => e.has_work(),
                None => self.hctx_cpus(h).any(|c| !self.sw_queues[c].is_empty()),
            }
    }

    /// The CPUs whose software queues map to hardware queue `h` (`blk_mq_map_queues`:
    /// `cpu % nr_hw_queues`), in ascending order: `hctx->ctxs`.
    pub(super) fn hctx_cpus(&self, h: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        (h..self.nr_cpus).step_by(self.hctxs.len())
    }

    /// `blk_mq_run_hw_queue(hctx, async)`. `cpu` is the CPU of the caller (runs inline when
    /// not async).
    #[allow(clippy::too_many_arguments)]
    pub fn run_hw_queue(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        async_run: bool,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        if self.hctxs[h].stopped || !self.hctx_has_work(h) {
            return;
        }
        if async_run {
            self.delay_run_hw_queue(hctx, 0, now, out);
            return;
        }
        self.sched_dispatch_requests(cpus, hctx, cpu, drv, now, out);
    }

    /// `blk_mq_delay_run_hw_queue` → `kblockd_mod_delayed_work_on(blk_mq_hctx_next_cpu(hctx),
    /// &hctx->run_work, delay)`: one run work per hctx, and `mod_delayed_work_on` re-arms a
    /// pending one with the new delay and CPU (a later request can postpone an earlier one,
    /// as in the kernel). Where it runs (`blk_mq_hctx_next_cpu`): with a single hardware
    /// queue `WORK_CPU_UNBOUND`, i.e. kblockd (a per-CPU workqueue) on the CPU that asked for
    /// the run; otherwise round-robin over the hctx's CPUs, switching every
    /// `BLK_MQ_CPU_WORK_BATCH` (8) runs. That CPU's sbitmap hint picks the driver tags the
    /// run allocates, which is what orders the MMC host software queue's slots.
    pub fn delay_run_hw_queue(&mut self, hctx: u16, delay: Ns, now: &mut Ns, out: &mut BlkOut) {
        let nr_hw = self.hctxs.len();
        let nr_cpus = self.nr_cpus;
        let requester = self.ctx_cpu;
        let h = &mut self.hctxs[hctx as usize];
        let at = *now + delay;
        h.run_cpu = if nr_hw == 1 {
            requester
        } else {
            h.next_cpu_batch = h.next_cpu_batch.saturating_sub(1);
            if h.next_cpu_batch == 0 {
                // cpumask_next over the CPUs mapped to this hctx (`blk_mq_map_queues`:
                // cpu % nr_hw), wrapping to the first.
                let mut c = h.next_cpu as usize + 1;
                while c < nr_cpus && c % nr_hw != hctx as usize {
                    c += 1;
                }
                if c >= nr_cpus {
                    c = hctx as usize % nr_cpus;
                }
                h.next_cpu = c as u16;
                h.next_cpu_batch = 8;
            }
            h.next_cpu
        };
        if h.run_at != Some(at) {
            h.run_at = Some(at);
            out.hw_runs.push((hctx, delay));
        }
    }

    /// CPU the pending run of `hctx` executes on (see [`Self::delay_run_hw_queue`]).
    pub fn run_cpu(&self, hctx: u16) -> u16 {
        self.hctxs[hctx as usize].run_cpu
    }

    /// The kblockd work for `hctx` fired at `now` (scheduled at `at`). Stale events (the work
    /// was moved) are ignored.
    #[allow(clippy::too_many_arguments)]
    pub fn run_work(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        at: Ns,
        cpu: u16,
        drv: &mut dyn Driver,
        now: Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        if self.hctxs[h].run_at != Some(at) {
            return;
        }
        self.hctxs[h].run_at = None;
        self.ctx_cpu = cpu;
        self.stats.hw_runs += 1;
        if self.hctxs[h].stopped || !self.hctx_has_work(h) {
            return;
        }
        // A kblockd work item: its own context on `cpu`.
        let start = cpus.begin(cpu, now);
        let mut clk = start;
        self.sched_dispatch_requests(cpus, hctx, cpu, drv, &mut clk, out);
        self.end_context(cpus, cpu, start, clk, out);
    }

    /// When the pending asynchronous run of `hctx` is due (absolute time), if any.
    pub fn pending_run_at(&self, hctx: u16) -> Option<Ns> {
        self.hctxs[hctx as usize].run_at
    }

    /// The elevator's timer fired (bfq idling, kyber's statistics timer) on `cpu`: the CPU of
    /// the context that last set it, which `hrtimer_start` keeps it on unless the timer code
    /// moves it off an idle CPU (`get_nohz_timer_target`, not modelled).
    pub fn elevator_timer(&mut self, now: Ns, cpu: u16, out: &mut BlkOut) {
        // An expiry the elevator has since moved later (bfq re-arms its idle timer): the
        // timer did not fire.
        if self
            .elevator
            .as_ref()
            .and_then(|e| e.next_timer())
            .is_none_or(|t| t > now)
        {
            return;
        }
        let now = &mut { now };
        // The callback's context: what it frees and runs, and the timer it re-arms, are on
        // `cpu`.
        self.ctx_cpu = cpu;
        let run = match self.elevator.as_mut() {
            Some(e) => e.timer(&mut self.pool, *now),
            None => false,
        };
        self.reap_elv_released(now, out);
        if run {
            // `bfq_idle_slice_timer` → `bfq_schedule_dispatch` → `blk_mq_run_hw_queues(q, true)`.
            self.run_hw_queues_async(cpu, now, out);
        }
    }

    /// `blk_mq_run_hw_queues(q, true)` called on `cpu`. With a single-queue elevator
    /// (`blk_queue_sq_sched`) only `blk_mq_get_sq_hctx`, the hctx of `cpu`'s software queue
    /// (unless stopped), and hctxs whose dispatch list holds requests are run: the elevator
    /// dispatches the same requests from any hctx, so running every one only contends on its
    /// lock (Jan Kara, "blk-mq: Improve performance of non-mq IO schedulers with multiple HW
    /// queues", 2021). Otherwise every hctx with pending work (`blk_mq_run_hw_queue`'s
    /// `blk_mq_hctx_has_pending` check).
    pub fn run_hw_queues_async(&mut self, cpu: u16, now: &mut Ns, out: &mut BlkOut) {
        let sq_hctx = match &self.elevator {
            Some(e) if e.sq_sched() => {
                let h = self.cpu_to_hctx(cpu);
                (!self.hctxs[h as usize].stopped).then_some(h as usize)
            }
            _ => None,
        };
        for h in 0..self.hctxs.len() {
            if self.hctxs[h].stopped {
                continue;
            }
            let chosen = sq_hctx.is_none_or(|sq| sq == h) || !self.hctxs[h].dispatch.is_empty();
            if chosen && self.hctx_has_work(h) {
                self.delay_run_hw_queue(h as u16, 0, now, out);
            }
        }
    }

    /// When the elevator next wants [`Self::elevator_timer`].
    pub fn elevator_next_timer(&self) -> Option<Ns> {
        self.elevator.as_ref().and_then(|e| e.next_timer())
    }

    /// `blk_mq_stop_hw_queues` (null_blk's throttle): no dispatch until restarted.
    pub fn stop_hw_queues(&mut self) {
        for h in &mut self.hctxs {
            h.stopped = true;
        }
    }

    /// `blk_mq_start_stopped_hw_queues(q, true)`: clear STOPPED and run asynchronously.
    pub fn start_stopped_hw_queues(&mut self, now: &mut Ns, out: &mut BlkOut) {
        for i in 0..self.hctxs.len() {
            if self.hctxs[i].stopped {
                self.hctxs[i].stopped = false;
                if self.hctx_has_work(i) {
                    self.delay_run_hw_queue(i as u16, 0, now, out);
                }
            }
        }
    }

    /// `blk_mq_sched_dispatch_requests` → `__blk_mq_sched_dispatch_requests`.
    pub(super) fn sched_dispatch_requests(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        if self.hctxs[h].stopped {
            return;
        }
        // Leftovers on hctx->dispatch go first.
        if !self.hctxs[h].dispatch.is_empty() {
            if cpus.is_on() {
                // `spin_lock(&hctx->lock); list_splice_init(&hctx->dispatch, ...)`.
                cpus.hctx_hold(hctx, cpu, now, 0);
            }
            let mut list = std::mem::take(&mut self.scratch);
            list.clear();
            list.extend(self.hctxs[h].dispatch.drain(..));
            self.hctxs[h].sched_restart = true;
            let r = self.dispatch_rq_list(cpus, hctx, &mut list, cpu, drv, now, out);
            list.clear();
            self.scratch = list;
            match r {
                ListResult::AllSent => {}
                ListResult::Suspended | ListResult::NotAll => return,
            }
            if self.elevator.is_some() {
                self.do_dispatch_sched(cpus, hctx, cpu, drv, now, out);
            } else {
                self.do_dispatch_ctx(cpus, hctx, cpu, drv, now, out);
            }
        } else if self.elevator.is_some() {
            self.do_dispatch_sched(cpus, hctx, cpu, drv, now, out);
        } else if self.hctxs[h].dispatch_busy > 0 {
            self.do_dispatch_ctx(cpus, hctx, cpu, drv, now, out);
        } else {
            // Flush all software queues of this hctx and dispatch them in one list.
            let mut list = std::mem::take(&mut self.scratch);
            list.clear();
            for c in self.hctx_cpus(h) {
                list.extend(self.sw_queues[c].drain(..));
            }
            for &rq in &list {
                self.pool.get_mut(rq).state = RqState::Idle;
            }
            if !list.is_empty() {
                self.dispatch_rq_list(cpus, hctx, &mut list, cpu, drv, now, out);
            }
            list.clear();
            self.scratch = list;
        }
    }

    /// `blk_mq_do_dispatch_sched` → repeated `__blk_mq_do_dispatch_sched`.
    pub(super) fn do_dispatch_sched(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let mut list = std::mem::take(&mut self.scratch);
        list.clear();
        self.dispatch_sched_loop(cpus, hctx, cpu, list, drv, now, out);
    }

    /// The body of `blk_mq_do_dispatch_sched`, entered with the requests this context has
    /// already pulled (non-empty when it resumes after yielding the CPU model's clock).
    ///
    /// Mainline (`queue.sched_batch_dispatch` = 0): every `dispatch_request` is its own hold
    /// of the elevator lock (`dd->lock` / `bfqd->lock` inside the elevator), and the pulled
    /// requests are issued together after the loop. With several CPUs dispatching at once,
    /// their pulls interleave (the lock moves between them), so each CPU's list holds every
    /// other request of the elevator's order and the driver sees 1, 3, 2, 4.
    ///
    /// Batch (§4.9, Yu Kuai's unmerged series, `BUDGET_TOKEN_BATCH` = 8): the lock is taken
    /// once for up to N `dispatch_request` calls, and each batch is issued before the next is
    /// pulled. Departure: the series collects up to `nr_requests` for drivers without
    /// `get_budget` (null_blk); blksim takes N from the setting for every driver.
    ///
    /// With the CPU model on, a context that wants the elevator lock reserves its hold on
    /// the lock's timeline, then yields until the hold starts (it spins meanwhile) and calls
    /// the elevator then, so critical sections act on the elevator in the order and at the
    /// time they run. As in the kernel, `has_work` is checked locklessly before spinning, so
    /// a context may get the lock only to find the elevator drained by the CPUs ahead of it
    /// (`dispatch_request` returns NULL).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch_sched_loop(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        cpu: u16,
        mut list: Vec<RqId>,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let l = std::mem::take(&mut list);
        self.dispatch_sched_loop_granted(cpus, hctx, cpu, l, None, drv, now, out);
    }

    /// [`Self::dispatch_sched_loop`], resuming with the elevator lock granted until
    /// `granted` (the end of the reserved hold) when Some.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch_sched_loop_granted(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        cpu: u16,
        mut list: Vec<RqId>,
        mut granted: Option<Ns>,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        loop {
            let max_dispatch = if self.hctxs[h].dispatch_busy > 0 {
                1
            } else {
                self.lim.nr_requests.max(1)
            };
            // The series batches only when the hctx is not busy (`!hctx->dispatch_busy`).
            let batch = if self.hctxs[h].dispatch_busy == 0 {
                self.lim.sched_batch_dispatch
            } else {
                0
            };
            let mut run_queue = false;
            let mut busy = false;
            while (list.len() as u32) < max_dispatch {
                let n = if batch > 0 {
                    batch.min(max_dispatch - list.len() as u32)
                } else {
                    1
                };
                let hold_end = match granted.take() {
                    Some(end) => Some(end),
                    None => {
                        if !self.elevator.as_ref().unwrap().has_work() {
                            break;
                        }
                        if !self.hctxs[h].dispatch.is_empty() {
                            busy = true;
                            break;
                        }
                        if cpus.is_on() {
                            let hold = n as Ns * cpus.costs().elv(cpus.costs().elv_dispatch_ns);
                            let mut end = *now;
                            let start = cpus.elv_hold(cpu, &mut end, hold, ElvHook::Dispatch);
                            if start > cpus.floor() {
                                // Spin until the hold starts; call the elevator then.
                                *now = start;
                                self.park_pull(cpus, hctx, cpu, list, Some(end), *now, out);
                                return;
                            }
                            Some(end)
                        } else {
                            None
                        }
                    }
                };
                let mut stop = false;
                for k in 0..n {
                    let elv = self.elevator.as_mut().unwrap();
                    if k > 0 && !elv.has_work() {
                        break;
                    }
                    let picked = elv.dispatch_request(&mut self.pool, *now);
                    self.reap_elv_released(now, out);
                    let Some(rq) = picked else {
                        run_queue = true;
                        stop = true;
                        break;
                    };
                    self.dispatch_seq += 1;
                    {
                        let r = self.pool.get_mut(rq);
                        r.state = RqState::Idle;
                        r.elv_priv[1] = self.dispatch_seq;
                        // Requests an elevator builds itself (eraseblock's gap reads and
                        // combined writes) are its own too.
                        r.rq_flags |= crate::request::rqf::ELV;
                    }
                    list.push(rq);
                    if !self.get_driver_tag(rq, cpu) {
                        stop = true;
                        break;
                    }
                }
                if let Some(end) = hold_end {
                    *now = (*now).max(end);
                }
                if stop || batch > 0 {
                    break;
                }
            }
            let dispatched = if list.is_empty() {
                if run_queue {
                    self.delay_run_hw_queue(hctx, BLK_MQ_BUDGET_DELAY, now, out);
                }
                false
            } else {
                let r = self.dispatch_rq_list(cpus, hctx, &mut list, cpu, drv, now, out);
                if r == ListResult::Suspended {
                    list.clear();
                    self.scratch = list;
                    return;
                }
                r == ListResult::AllSent
            };
            list.clear();
            if busy {
                // -EAGAIN: hctx->dispatch got refilled; run again (the kernel retries once
                // inline, then asynchronously).
                self.scratch = list;
                self.delay_run_hw_queue(hctx, 0, now, out);
                return;
            }
            if !dispatched {
                self.scratch = list;
                return;
            }
        }
    }

    /// Park a dispatch context that yields in its pull loop; it resumes through
    /// [`DriverOut::unblock`] at its local time (see [`Self::resume_run`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn park_pull(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        cpu: u16,
        list: Vec<RqId>,
        granted: Option<Ns>,
        at: Ns,
        out: &mut BlkOut,
    ) {
        let id = self.new_run_id();
        let owner = cpus.current_task();
        self.park_slot(
            id,
            BlockedRun {
                hctx,
                cpu,
                rest: list,
                pulling: true,
                granted,
                owner,
            },
        );
        if let Some(t) = owner {
            // The task is inside this dispatch (its syscall has not returned).
            cpus.park_task(t);
        }
        out.drv.unblock.push((id, at));
    }

    /// `blk_mq_do_dispatch_ctx`: one request at a time, round-robin over software queues.
    pub(super) fn do_dispatch_ctx(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = hctx as usize;
        loop {
            if !self.hctxs[h].dispatch.is_empty() {
                return;
            }
            // The hctx's CPUs in circular order from `dispatch_from`.
            let n = self.nr_cpus;
            let nr_hw = self.hctxs.len();
            let start = self.hctxs[h].dispatch_from % n;
            let first = start + (h + nr_hw - start % nr_hw) % nr_hw;
            let mut picked = None;
            for c in (first..n)
                .step_by(nr_hw)
                .chain(self.hctx_cpus(h).take_while(|&c| c < start))
            {
                if let Some(rq) = self.sw_queues[c].pop_front() {
                    picked = Some(rq);
                    self.hctxs[h].dispatch_from = c + 1;
                    break;
                }
            }
            let Some(rq) = picked else { return };
            self.pool.get_mut(rq).state = RqState::Idle;
            let mut list = vec![rq];
            let r = self.dispatch_rq_list(cpus, hctx, &mut list, cpu, drv, now, out);
            if r != ListResult::AllSent {
                return;
            }
        }
    }

    /// `blk_mq_dispatch_rq_list`. Consumes `list`; leftovers go to `hctx->dispatch`.
    ///
    /// A list pulled from an elevator that is shared by the hardware queues (mq-deadline,
    /// bfq, eraseblock, and kyber whose state blksim keeps shared) holds requests of other
    /// hctxs than the one running (`multi_hctxs` in `__blk_mq_do_dispatch_sched`). The
    /// kernel then dispatches each hctx's requests as its own list
    /// (`blk_mq_dispatch_hctx_list` → `blk_mq_dispatch_rq_list(rq->mq_hctx, ...)`): a
    /// request's driver tag, its `SCHED_RESTART` mark, its leftovers on `hctx->dispatch` and
    /// the queue re-run are those of the request's own hctx, since only a completion on that
    /// hctx frees one of its tags and restarts it (`blk_mq_sched_restart`); with tags shared
    /// by the hctxs, any free wakes it through the tags' wait queue ([`Self::mark_tag_wait`]).
    /// One hctx running out of tags or hitting BLK_STS_RESOURCE stops that hctx's requests
    /// only.
    /// Departure: the requests are issued in the elevator's order, not grouped by hctx
    /// (`list_sort(sched_rq_cmp)`); `hctx` is the running queue, used for a parked context.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch_rq_list(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        hctx: u16,
        list: &mut Vec<RqId>,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> ListResult {
        let n = list.len();
        let mut groups = std::mem::take(&mut self.list_groups);
        groups.clear();
        // One group per hctx in the list, in order of first appearance, with the index of
        // its last request (`bd.last` is per hctx list).
        for (i, &rq) in list.iter().enumerate() {
            let g = self.list_group(&mut groups, self.pool.get(rq).hctx);
            groups[g].last = i;
        }
        let mut left = std::mem::take(&mut self.list_left);
        left.clear();
        let mut i = 0;
        while i < n {
            let rq = list[i];
            let rq_hctx = self.pool.get(rq).hctx;
            let g = self.list_group(&mut groups, rq_hctx);
            if groups[g].stopped {
                left.push(rq);
                i += 1;
                continue;
            }
            if !self.get_driver_tag(rq, cpu) && !self.mark_tag_wait(rq, cpu) {
                groups[g].stopped = true;
                // For unshared tags the restart mark suffices.
                groups[g].no_tag = self.shared_tags;
                left.push(rq);
                i += 1;
                continue;
            }
            let id = self.new_run_id();
            let last = groups[g].last == i;
            let st = self.queue_rq(cpus, rq, last, CallCtx { id, cpu }, drv, now, out);
            groups[g].last_status = st;
            match st {
                BlkStatus::Ok => groups[g].queued += 1,
                BlkStatus::Blocked => {
                    // The dispatching context sleeps in the driver; it resumes with the rest
                    // of its list when the driver wakes it. Requests of hctxs already
                    // stopped stay behind on their dispatch lists.
                    let mut rest: Vec<RqId> = Vec::new();
                    for &r in &list[i + 1..] {
                        let rg = self.list_group(&mut groups, self.pool.get(r).hctx);
                        if groups[rg].stopped {
                            left.push(r);
                        } else {
                            rest.push(r);
                        }
                    }
                    groups[g].queued += 1;
                    self.finish_rq_list(cpus, &groups, &left, true, cpu, drv, now, out);
                    self.park_run(id, hctx, cpu, rest);
                    self.list_groups = groups;
                    self.list_left = left;
                    list.clear();
                    return ListResult::Suspended;
                }
                BlkStatus::Resource | BlkStatus::DevResource => {
                    if st == BlkStatus::Resource {
                        groups[g].needs_resource = true;
                    }
                    // `blk_mq_handle_dev_resource`: release the driver tag when an elevator
                    // owns the request (`__blk_mq_requeue_request` → put driver tag).
                    if self.elevator.is_some() {
                        self.put_driver_tag(rq, now, out);
                    }
                    groups[g].stopped = true;
                    left.push(rq);
                }
                BlkStatus::IoErr => {
                    self.end_request(cpus, rq, BlkStatus::IoErr, drv, now, out);
                    groups[g].queued += 1;
                }
            }
            i += 1;
        }
        let all_sent = self.finish_rq_list(cpus, &groups, &left, false, cpu, drv, now, out);
        self.list_groups = groups;
        self.list_left = left;
        list.clear();
        if all_sent {
            ListResult::AllSent
        } else {
            ListResult::NotAll
        }
    }

    /// Index of `hctx`'s group in `groups`, added if missing (`hctx_group` maps an hctx to
    /// its slot; a slot is valid only if it names the same hctx).
    pub(super) fn list_group(&mut self, groups: &mut Vec<ListGroup>, hctx: u16) -> usize {
        let h = hctx as usize;
        let g = self.hctx_group[h] as usize;
        if g < groups.len() && groups[g].hctx == hctx {
            return g;
        }
        self.hctx_group[h] = groups.len() as u32;
        groups.push(ListGroup {
            hctx,
            last: 0,
            queued: 0,
            last_status: BlkStatus::Ok,
            stopped: false,
            needs_resource: false,
            no_tag: false,
        });
        groups.len() - 1
    }

    /// The end of `blk_mq_dispatch_rq_list` for each hctx of the list: `commit_rqs`, the
    /// leftovers spliced onto `hctx->dispatch`, the re-run, the `dispatch_busy` EWMA.
    /// Returns whether some hctx sent its whole list (`dispatched |= ...`). With
    /// `stopped_only` (the context is parking in the driver with the rest of its list), only
    /// the hctxs that have leftovers are finished.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_rq_list(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        groups: &[ListGroup],
        left: &[RqId],
        stopped_only: bool,
        cpu: u16,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> bool {
        let mut any_sent = false;
        for g in groups {
            let hctx = g.hctx;
            let h = hctx as usize;
            // A stopped hctx has leftovers: at least the request that stopped it.
            let has_left = g.stopped;
            if stopped_only && !has_left {
                continue;
            }
            if has_left || (g.last_status != BlkStatus::Ok && g.queued > 0) {
                drv.commit_rqs(hctx, *now, &mut out.drv);
            }
            if !has_left {
                self.update_dispatch_busy(h, false);
                any_sent = true;
                continue;
            }
            if cpus.is_on() {
                // Leftovers are spliced onto hctx->dispatch under `hctx->lock`.
                cpus.hctx_hold(hctx, cpu, now, 0);
            }
            for &rq in left {
                if self.pool.get(rq).hctx == hctx {
                    self.pool.get_mut(rq).state = RqState::OnDispatchList;
                    self.hctxs[h].dispatch.push_back(rq);
                }
            }
            let needs_restart = self.hctxs[h].sched_restart;
            // A shared-tag waiter already woken (its `dispatch_wait` left the wait queue
            // before the leftovers were back on `hctx->dispatch`) must run again.
            if !needs_restart || (g.no_tag && !self.hctxs[h].dispatch_wait) {
                self.delay_run_hw_queue(hctx, 0, now, out);
            } else if g.needs_resource {
                self.delay_run_hw_queue(hctx, BLK_MQ_RESOURCE_DELAY, now, out);
            }
            self.update_dispatch_busy(h, true);
        }
        any_sent
    }

    /// `blk_mq_update_dispatch_busy`: EWMA with weight 8, factor 4.
    pub(super) fn update_dispatch_busy(&mut self, h: usize, busy: bool) {
        let e = self.hctxs[h].dispatch_busy;
        if e == 0 && !busy {
            return;
        }
        self.hctxs[h].dispatch_busy = (e * 7 + if busy { 1 << 4 } else { 0 }) / 8;
    }

    /// A blocked dispatch context was woken by the driver: go on with the rest of its list,
    /// then run the queue again from the top (as the kernel's dispatch loop would).
    pub fn resume_run(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        id: u32,
        drv: &mut dyn Driver,
        now: Ns,
        out: &mut BlkOut,
    ) {
        let Some(run) = self.blocked.get_mut(id as usize).and_then(|b| b.take()) else {
            panic!("resume of unknown dispatch context {id}");
        };
        self.free_runs.insert(id);
        let start = cpus.begin(run.cpu, now);
        self.ctx_cpu = run.cpu;
        cpus.set_current_task(run.owner);
        let mut clk = start;
        let now = &mut clk;
        if run.pulling {
            self.dispatch_sched_loop_granted(
                cpus,
                run.hctx,
                run.cpu,
                run.rest,
                run.granted,
                drv,
                now,
                out,
            );
        } else {
            let mut rest = run.rest;
            let mut go_on = true;
            if !rest.is_empty() {
                let r = self.dispatch_rq_list(cpus, run.hctx, &mut rest, run.cpu, drv, now, out);
                go_on = r == ListResult::AllSent;
            }
            if go_on {
                self.run_hw_queue(cpus, run.hctx, false, run.cpu, drv, now, out);
            }
        }
        self.end_context(cpus, run.cpu, start, clk, out);
    }

    /// End a context started with [`crate::cpu::CpuModel::begin`]; if it ran a task's
    /// dispatch that has now finished (no further yield), the task goes on.
    pub(super) fn end_context(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        cpu: u16,
        start: Ns,
        clk: Ns,
        out: &mut BlkOut,
    ) {
        cpus.end(cpu, start, clk);
        if let Some(t) = cpus.current_task() {
            if cpus.take_parked() != Some(t) {
                out.task_resume.push((t, clk));
            }
        }
        cpus.leave_task();
    }

    /// `blk_mq_sched_restart`, and the completion-time run an elevator asks for: bfq's
    /// `bfq_schedule_dispatch` and eraseblock's (`blk_mq_run_hw_queues`), kyber's token wake-up
    /// (its waiting hctx).
    pub(super) fn sched_restart(&mut self, hctx: u16, now: &mut Ns, out: &mut BlkOut) {
        let h = hctx as usize;
        if self.hctxs[h].sched_restart {
            self.hctxs[h].sched_restart = false;
            self.delay_run_hw_queue(hctx, 0, now, out);
        } else if let Some(sq) = self
            .elevator
            .as_ref()
            .filter(|e| e.wants_run_on_completion() && e.has_work())
            .map(|e| e.sq_sched())
        {
            if sq {
                // bfq's `bfq_schedule_dispatch` (and eraseblock's run after a completion):
                // `blk_mq_run_hw_queues` from the completing CPU.
                self.run_hw_queues_async(self.ctx_cpu, now, out);
            } else {
                // kyber's `kyber_domain_wake`: the hctx that waits for the token.
                self.delay_run_hw_queue(hctx, 0, now, out);
            }
        }
    }
}
