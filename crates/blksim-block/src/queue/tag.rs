//! Tags (`block/blk-mq-tag.c`, `lib/sbitmap.c` through [`crate::tags::Sbitmap`]): driver tags
//! taken at dispatch (`blk_mq_get_driver_tag`), tags released at completion, and the tasks
//! sleeping in `blk_mq_get_tag` woken in batches (`sbitmap_queue_wake_up`).

use super::*;

impl RequestQueue {
    /// `blk_mq_get_driver_tag`.
    pub(super) fn get_driver_tag(&mut self, rq: RqId, cpu: u16) -> bool {
        if self.pool.get(rq).tag >= 0 {
            return true;
        }
        let h = self.tags_of(self.pool.get(rq).hctx as usize);
        match self.driver_tags[h].get(cpu as usize) {
            Some(t) => {
                self.pool.get_mut(rq).tag = t as i32;
                true
            }
            None => false,
        }
    }

    pub(super) fn put_driver_tag(&mut self, rq: RqId, now: &mut Ns, out: &mut BlkOut) {
        let (h, tag, cpu) = {
            let r = self.pool.get_mut(rq);
            let t = r.tag;
            r.tag = -1;
            (r.hctx as usize, t, r.cpu)
        };
        let h = self.tags_of(h);
        if tag >= 0 {
            self.driver_tags[h].put(tag as u32, cpu as usize);
            self.wake_tag_waiters(h, false, now, out);
        }
    }

    /// `blk_mq_mark_tag_wait` after a failed driver tag allocation at dispatch. Unshared
    /// tags: mark the hctx for a restart (a completion of its own frees a tag) and retry
    /// once. Shared tags: a completion on another hctx may free the tag, so the hctx hooks
    /// its `dispatch_wait` onto the tags' wait queue (woken by `blk_mq_dispatch_wake`) and
    /// retries once; if it was already waiting, it does not retry.
    pub(super) fn mark_tag_wait(&mut self, rq: RqId, cpu: u16) -> bool {
        let h = self.pool.get(rq).hctx as usize;
        if !self.shared_tags {
            self.hctxs[h].sched_restart = true;
            return self.get_driver_tag(rq, cpu);
        }
        if self.hctxs[h].dispatch_wait {
            return false;
        }
        let wq = &mut self.driver_waitq[0];
        wq.arm(self.wake_batch_driver);
        wq.dispatch.push(h as u16);
        self.hctxs[h].dispatch_wait = true;
        if !self.get_driver_tag(rq, cpu) {
            return false;
        }
        // Got one: leave the wait queue so that someone else gets the wake-up.
        self.driver_waitq[0].dispatch.retain(|&x| x as usize != h);
        self.hctxs[h].dispatch_wait = false;
        true
    }

    pub(super) fn release_tags(
        &mut self,
        freed: &crate::request::FreedRq,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let h = self.tags_of(freed.hctx as usize);
        if freed.tag >= 0 {
            self.driver_tags[h].put(freed.tag as u32, freed.cpu as usize);
            self.wake_tag_waiters(h, false, now, out);
        }
        if freed.sched_tag >= 0 {
            self.sched_tags[h].put(freed.sched_tag as u32, freed.cpu as usize);
            self.wake_tag_waiters(h, true, now, out);
        }
    }

    /// `sbitmap_queue_wake_up`: every `wake_batch` frees wake up to `wake_batch` sleepers;
    /// they allocate right away (their request is then plugged/inserted/issued, which is what
    /// the woken task would do next). Hctxs waiting for a shared driver tag are
    /// non-exclusive waiters: each wake-up wakes all of them (`blk_mq_dispatch_wake`: an
    /// asynchronous queue run), most recently added first (`__add_wait_queue` adds at the
    /// head). `h` is the tag set's index ([`Self::tags_of`]).
    pub(super) fn wake_tag_waiters(
        &mut self,
        h: usize,
        sched: bool,
        now: &mut Ns,
        out: &mut BlkOut,
    ) {
        let batch = if sched {
            self.wake_batch_sched
        } else {
            self.wake_batch_driver
        };
        let wq = if sched {
            &mut self.sched_waitq[h]
        } else {
            &mut self.driver_waitq[h]
        };
        if !wq.active() {
            return;
        }
        wq.wait_cnt = wq.wait_cnt.saturating_sub(1);
        if wq.wait_cnt > 0 {
            return;
        }
        wq.wait_cnt = batch;
        let n = batch.min(wq.waiters.len() as u32);
        // The wake-up makes them runnable; the event loop resumes them (possibly after a
        // wake-up latency) through `resume_tag_waiter`.
        for _ in 0..n {
            let Some(w) = wq.waiters.pop_front() else {
                break;
            };
            out.task_unblocked.push(w.task);
        }
        if sched {
            return;
        }
        // Most recently hooked first; running a queue leaves the wait queue as it is.
        for i in (0..self.driver_waitq[h].dispatch.len()).rev() {
            let hctx = self.driver_waitq[h].dispatch[i];
            self.hctxs[hctx as usize].dispatch_wait = false;
            self.delay_run_hw_queue(hctx, 0, now, out);
        }
        self.driver_waitq[h].dispatch.clear();
    }

    /// The event loop resumes a task woken from a tag wait: retry the allocation for the bio
    /// it slept on. It may have to sleep again if another task took the tag first.
    pub fn resume_tag_waiter(
        &mut self,
        cpus: &mut crate::cpu::CpuModel,
        task: u32,
        drv: &mut dyn Driver,
        now: &mut Ns,
        out: &mut BlkOut,
    ) -> Submit {
        let bio = self
            .task_wait_bio
            .get_mut(task as usize)
            .and_then(|b| b.take())
            .expect("task resumed without a pending bio");
        self.submit_bio_alloc(cpus, bio, drv, now, out)
    }
}
