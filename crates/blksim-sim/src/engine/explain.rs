//! `blksim run --explain=N`: the N slowest fio I/Os (by total latency), each with its path
//! through the block layer, where it waited longest, and the I/Os that overtook it (issued
//! after it, completed before it): how many, and the first few by job, offset and driver tag.
//!
//! Memory stays bounded: state is kept for the I/Os in flight and the N kept; the overtaker
//! count of an I/O X is computed when it completes, from counters taken when it was issued:
//! of the completions during X's life, those of older I/Os are the ones in flight at X's
//! issue that are no longer in flight, so
//! `overtakers = (completions since X's issue) - (in flight at X's issue - older still in flight)`.

use blksim_block::queue::RqTrail;
use blksim_core::Ns;
use std::collections::{BTreeMap, BTreeSet};

/// Overtakers named per I/O.
const NAMED: usize = 5;

/// An I/O that overtook the explained one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overtaker {
    pub task: u32,
    pub ddir: usize,
    pub offset: u64,
    /// The driver tag its request had (-1: none).
    pub tag: i32,
}

/// One explained I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplainRec {
    pub task: u32,
    pub ddir: usize,
    pub offset: u64,
    pub len: u64,
    /// fio's `start_time` (io_u prepared), `issue_time`, and the reap.
    pub start: Ns,
    pub issue: Ns,
    pub reaped: Ns,
    /// The block layer's part (the request its last bio completed with).
    pub trail: Option<RqTrail>,
    pub overtakers: u64,
    pub named: Vec<Overtaker>,
    seq: u64,
}

impl ExplainRec {
    pub fn latency(&self) -> Ns {
        self.reaped.saturating_sub(self.start)
    }
}

struct InFlight {
    seq: u64,
    completed_at_issue: u64,
    inflight_at_issue: u64,
    trail: Option<RqTrail>,
    named: Vec<Overtaker>,
}

pub(crate) struct Explain {
    n: usize,
    next_seq: u64,
    completed: u64,
    /// In-flight I/Os by issue order, and their state by (task, io_u id).
    order: BTreeMap<u64, (u32, u32)>,
    live: BTreeMap<(u32, u32), InFlight>,
    /// In-flight I/Os with fewer than [`NAMED`] overtakers named, by issue order.
    hungry: BTreeSet<u64>,
    /// The slowest so far, slowest first (ties: issued first).
    pub top: Vec<ExplainRec>,
    /// Reused for the older I/Os a completion names itself to (no allocation per I/O).
    scratch: Vec<u64>,
}

impl Explain {
    pub fn new(n: usize) -> Self {
        Explain {
            n,
            next_seq: 0,
            completed: 0,
            order: BTreeMap::new(),
            live: BTreeMap::new(),
            hungry: BTreeSet::new(),
            top: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// fio issued io_u `id` of `task`.
    pub fn issued(&mut self, task: u32, id: u32) {
        if self.live.contains_key(&(task, id)) {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.live.insert(
            (task, id),
            InFlight {
                seq,
                completed_at_issue: self.completed,
                inflight_at_issue: self.order.len() as u64,
                trail: None,
                named: Vec::new(),
            },
        );
        self.order.insert(seq, (task, id));
        self.hungry.insert(seq);
    }

    /// A bio of the I/O completed with its request's path.
    pub fn trail(&mut self, task: u32, id: u32, t: RqTrail) {
        if let Some(f) = self.live.get_mut(&(task, id)) {
            f.trail = Some(t);
        }
    }

    /// The I/O was reaped at `now` (`keep`: a read, write or trim that completed; errors and
    /// syncs still count as completions that overtake others).
    #[allow(clippy::too_many_arguments)]
    pub fn completed(
        &mut self,
        task: u32,
        id: u32,
        ddir: usize,
        offset: u64,
        len: u64,
        start: Ns,
        issue: Ns,
        now: Ns,
        keep: bool,
    ) {
        let Some(f) = self.live.remove(&(task, id)) else {
            return;
        };
        self.order.remove(&f.seq);
        self.hungry.remove(&f.seq);
        let older_in_flight = self.order.range(..f.seq).count() as u64;
        let overtakers =
            (self.completed - f.completed_at_issue) - (f.inflight_at_issue - older_in_flight);
        self.completed += 1;
        // This I/O overtook every older one still in flight: name it to those that want
        // names.
        let me = Overtaker {
            task,
            ddir,
            offset,
            tag: f.trail.map_or(-1, |t| t.tag),
        };
        let mut older = std::mem::take(&mut self.scratch);
        older.clear();
        older.extend(self.hungry.range(..f.seq).copied());
        for &s in &older {
            let key = self.order[&s];
            let o = self.live.get_mut(&key).expect("hungry I/Os are in flight");
            o.named.push(me.clone());
            if o.named.len() >= NAMED {
                self.hungry.remove(&s);
            }
        }
        self.scratch = older;
        if !keep || self.n == 0 {
            return;
        }
        let rec = ExplainRec {
            task,
            ddir,
            offset,
            len,
            start,
            issue,
            reaped: now,
            trail: f.trail,
            overtakers,
            named: f.named,
            seq: f.seq,
        };
        let key = |r: &ExplainRec| (std::cmp::Reverse(r.latency()), r.seq);
        if self.top.len() == self.n && key(&rec) >= key(&self.top[self.n - 1]) {
            return;
        }
        let at = self.top.partition_point(|r| key(r) < key(&rec));
        self.top.insert(at, rec);
        self.top.truncate(self.n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three I/Os: A issued first, then B and C; C and B complete before A. A is overtaken
    /// by both, named in completion order; B by C only if C was issued after B.
    #[test]
    fn overtakers_are_the_younger_ones_that_finished_first() {
        let mut e = Explain::new(3);
        e.issued(0, 1); // A
        e.issued(0, 2); // B
        e.issued(1, 3); // C
        e.completed(1, 3, 0, 300, 4096, 0, 0, 5, true); // C
        e.completed(0, 2, 0, 200, 4096, 0, 0, 6, true); // B
        e.completed(0, 1, 0, 100, 4096, 0, 0, 9, true); // A
        let by_off = |o: u64| e.top.iter().find(|r| r.offset == o).unwrap();
        assert_eq!(by_off(100).overtakers, 2);
        assert_eq!(
            by_off(100)
                .named
                .iter()
                .map(|o| o.offset)
                .collect::<Vec<_>>(),
            vec![300, 200]
        );
        assert_eq!(by_off(200).overtakers, 1);
        assert_eq!(by_off(300).overtakers, 0);
        // Slowest first.
        assert_eq!(e.top[0].offset, 100);
        // Only the N slowest are kept.
        let mut k = Explain::new(1);
        for i in 0..10u32 {
            k.issued(0, i);
            k.completed(0, i, 0, i as u64, 512, 0, 0, (i as u64 * 7) % 10, true);
        }
        assert_eq!(k.top.len(), 1);
        assert_eq!(k.top[0].latency(), 9);
    }
}
