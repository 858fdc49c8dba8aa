//! A trace's own response times, for the report to show beside the simulated ones: each
//! queued request (a blktrace `Q`) is kept until a completion (`C`) covers its first sector
//! on its device, as btt pairs them for Q2C (a merged request completes every `Q` merged
//! into it). Kept requests are bounded: past [`MAX_OUTSTANDING`] (a trace whose completions
//! were not captured) the lowest-sector one is dropped.

use std::collections::BTreeMap;

use blksim_job::Ddir;

/// Requests kept waiting for their completion at most.
pub const MAX_OUTSTANDING: usize = 1 << 16;

#[derive(Default)]
pub struct Outstanding {
    /// (device, first sector, arrival order) → (queue time ns, direction).
    map: BTreeMap<(u64, u64, u64), (u64, Ddir)>,
    seq: u64,
    /// Response times found since the caller last took them.
    done: Vec<(Ddir, u64)>,
}

impl Outstanding {
    pub fn queued(&mut self, dev: u64, sector: u64, t_ns: u64, ddir: Ddir) {
        if self.map.len() >= MAX_OUTSTANDING {
            self.map.pop_first();
        }
        self.seq += 1;
        self.map.insert((dev, sector, self.seq), (t_ns, ddir));
    }

    /// A completion of `sectors` from `sector` at `t_ns`: every kept request starting in it.
    pub fn completed(&mut self, dev: u64, sector: u64, sectors: u64, t_ns: u64) {
        let end = sector.saturating_add(sectors.max(1));
        while let Some((&k, _)) = self.map.range((dev, sector, 0)..(dev, end, 0)).next() {
            let (q, ddir) = self.map.remove(&k).unwrap();
            self.done.push((ddir, t_ns.saturating_sub(q)));
        }
    }

    /// A response time the trace states itself (MSR's `ResponseTime`).
    pub fn direct(&mut self, ddir: Ddir, ns: u64) {
        self.done.push((ddir, ns));
    }

    /// The response times found since the last call.
    pub fn take(&mut self) -> std::vec::Drain<'_, (Ddir, u64)> {
        self.done.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_answers_the_requests_merged_into_it() {
        let mut o = Outstanding::default();
        o.queued(1, 100, 10, Ddir::Write);
        o.queued(1, 108, 12, Ddir::Write);
        o.queued(2, 100, 13, Ddir::Read);
        o.queued(1, 200, 14, Ddir::Read);
        o.completed(1, 100, 16, 50);
        let got: Vec<_> = o.take().collect();
        assert_eq!(got, [(Ddir::Write, 40), (Ddir::Write, 38)]);
        o.completed(2, 100, 8, 20);
        o.completed(1, 200, 8, 24);
        let got: Vec<_> = o.take().collect();
        assert_eq!(got, [(Ddir::Read, 7), (Ddir::Read, 10)]);
        assert!(o.map.is_empty());
        for i in 0..(MAX_OUTSTANDING as u64 + 10) {
            o.queued(0, i, 0, Ddir::Read);
        }
        assert_eq!(o.map.len(), MAX_OUTSTANDING);
    }
}
