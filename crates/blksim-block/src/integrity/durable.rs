//! What FLUSH and FUA promise, for power cuts: which version of each sector is *durable*.
//!
//! A write the device acknowledged is in its volatile cache until something makes it durable:
//! * a device without a write cache: every acknowledged write is durable;
//! * a FUA write acknowledged by a device that honours FUA (`BLK_FEAT_FUA`; on one that does not,
//!   the flush machinery's POSTFLUSH covers it as a flush would);
//! * a completed flush covers every write acknowledged before the flush reached the device
//!   (REQ_PREFLUSH: "flush the cache before this command"): the flush takes a snapshot of the
//!   acknowledgement sequence when it is issued and, when it completes, every sector whose
//!   last acknowledgement is at or before it becomes durable with the version it holds.
//!
//! A discard (version 0) is made durable the same way (`REQ_OP_DISCARD` carries no FUA): until
//! a flush covers it, a sector discarded after its durable version was written may hold that
//! old data or zeroes after a cut. Its effect counts from its submission: a discard in flight
//! may have reached the medium.
//!
//! At a power cut the device reports the sectors that lost or tore data with what they hold
//! now. Each is judged against what was durable, what the device acknowledged and what the
//! submitter saw acknowledged (a write the flush machinery still had to POSTFLUSH was
//! acknowledged by the device, not yet to the submitter):
//! * not older than what the submitter saw: nothing lost (a newer version is a write in
//!   flight that reached the medium);
//! * older than what the submitter saw but not older than durable: *allowed* loss (data no
//!   FLUSH or FUA covered), counted in sectors;
//! * zeroes where a discard submitted after the durable version's write allows them: nothing
//!   lost but the data of writes submitted after that discard (allowed);
//! * older than durable, or a version never written to that sector: a *violation*.
//!
//! Afterwards everything on the medium is durable. The maps are not sampled (the oracle's
//! stripe budget applies to its read checks only): power-cut runs are meant to be small.

use blksim_core::extent::ExtentMap;
use std::collections::BTreeMap;

/// Versions whose written range is remembered, to tell "never written here" from a
/// legitimately older version; past this many, the oldest are forgotten and accepted.
const WRITTEN_BUDGET: usize = 1 << 20;

#[derive(Clone, Debug, Default)]
pub struct Durability {
    write_cache: bool,
    durable: ExtentMap,
    /// Acknowledged but not yet durable: the acknowledgement sequence number per sector.
    volatile: ExtentMap,
    ack_seq: u64,
    /// Range each remembered version was written to.
    written: BTreeMap<u64, (u64, u64)>,
    /// Versions below this are no longer remembered.
    written_floor: u64,
    /// The newest version submitted so far.
    last_version: u64,
    /// Sectors a discard may have zeroed (not made durable since): the first version
    /// submitted after that discard.
    zero_ok: ExtentMap,
    /// Sectors whose acknowledged data a power cut took, as FLUSH/FUA allow.
    pub lost_allowed: u64,
    /// Sectors where a power cut lost durable data or left data never written there.
    pub violations: u64,
    pub first_violation: Option<String>,
}

impl Durability {
    pub fn new(write_cache: bool) -> Self {
        Durability {
            write_cache,
            ..Default::default()
        }
    }

    /// A user write of `version` to `[s, e)` entered the block layer.
    pub fn submitted(&mut self, version: u64, s: u64, e: u64) {
        if version == 0 {
            return;
        }
        self.last_version = self.last_version.max(version);
        self.written.insert(version, (s, e));
        while self.written.len() > WRITTEN_BUDGET {
            if let Some((v, _)) = self.written.pop_first() {
                self.written_floor = v + 1;
            }
        }
    }

    /// A user discard of `[s, e)` entered the block layer: from now until a flush covers it, a
    /// cut may leave zeroes there instead of the durable version.
    pub fn discard_submitted(&mut self, s: u64, e: u64) {
        self.zero_ok.set(s, e, self.last_version + 1);
    }

    /// The device acknowledged a write of `version` (0: a discard) to `[s, e)`; `fua` if it
    /// was a FUA write the device honoured itself.
    pub fn acknowledged(&mut self, s: u64, e: u64, version: u64, fua: bool) {
        if !self.write_cache || fua {
            self.durable.set(s, e, version);
            self.volatile.set(s, e, 0);
        } else {
            self.ack_seq += 1;
            self.volatile.set(s, e, self.ack_seq);
        }
    }

    /// A flush reaches the device: what it will cover.
    pub fn flush_issued(&self) -> u64 {
        self.ack_seq
    }

    /// A flush issued with `snapshot` completed: what was acknowledged before it is durable
    /// with the version `device` (the acknowledged content) holds.
    pub fn flush_completed(&mut self, snapshot: u64, device: &ExtentMap) {
        let covered: Vec<(u64, u64)> = self
            .volatile
            .iter()
            .filter(|&(_, _, seq)| seq > 0 && seq <= snapshot)
            .map(|(s, e, _)| (s, e))
            .collect();
        for (s, e) in covered {
            for (a, b, v) in device.get(s, e) {
                self.durable.set(a, b, v);
            }
            self.volatile.set(s, e, 0);
        }
    }

    fn plausible(&self, found: u64, s: u64, e: u64) -> bool {
        if found < self.written_floor {
            return true;
        }
        match self.written.get(&found) {
            Some(&(a, b)) => a <= s && e <= b,
            None => false,
        }
    }

    /// Judge what the device holds after a power cut (`changed`: sectors with what they hold
    /// now) against `acked` (what the device acknowledged) and `seen` (what the submitter saw
    /// acknowledged). Afterwards the medium is durable.
    pub fn power_cut(&mut self, changed: &[(u64, u64, u64)], acked: &ExtentMap, seen: &ExtentMap) {
        for &(s, e, found) in changed {
            for (a, b, ack) in acked.get(s, e) {
                for (c, d, dur) in self.durable.get(a, b) {
                    for (x0, y0, user) in seen.get(c, d) {
                        for (x, y, zero_from) in self.zero_ok.get(x0, y0) {
                            let n = y - x;
                            if found == ack {
                                continue;
                            }
                            // Zeroes from a discard submitted after the durable version's
                            // write (`zero_from`: the first version submitted after it).
                            let zeroed = found == 0 && dur < zero_from;
                            let ok = found == dur
                                || (found > dur && self.plausible(found, x, y))
                                || zeroed;
                            if !ok {
                                self.violations += n;
                                if self.first_violation.is_none() {
                                    self.first_violation = Some(format!(
                                        "power cut: sectors {x}..{y} hold version {found}, but version {dur} was durable (FLUSH/FUA) and {ack} acknowledged"
                                    ));
                                }
                            } else if found < user && !(zeroed && user < zero_from) {
                                self.lost_allowed += n;
                            }
                        }
                    }
                }
            }
        }
        // What the medium holds now is durable; nothing is in a cache.
        for &(s, e, found) in changed {
            self.durable.set(s, e, found);
        }
        for (s, e, _) in self.volatile.iter().collect::<Vec<_>>() {
            for (a, b, v) in acked.get(s, e) {
                self.durable.set(a, b, v);
            }
        }
        self.volatile.clear();
        self.zero_ok.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acked(list: &[(u64, u64, u64)]) -> ExtentMap {
        let mut m = ExtentMap::default();
        for &(s, e, v) in list {
            m.set(s, e, v);
        }
        m
    }

    #[test]
    fn flushes_and_fua_decide_what_a_cut_may_take() {
        let mut d = Durability::new(true);
        for (v, s) in [(1, 0), (2, 8), (3, 16)] {
            d.submitted(v, s, s + 8);
        }
        d.acknowledged(0, 8, 1, false);
        let snap = d.flush_issued();
        d.acknowledged(8, 16, 2, false); // after the flush was issued: not covered
        let dev = acked(&[(0, 8, 1), (8, 16, 2)]);
        d.flush_completed(snap, &dev);
        d.acknowledged(16, 24, 3, true); // FUA: durable at once
        let dev = acked(&[(0, 8, 1), (8, 16, 2), (16, 24, 3)]);
        // The cut keeps sector 0..8 and 16..24, loses 8..16 (allowed).
        d.power_cut(&[(8, 16, 0)], &dev, &dev);
        assert_eq!((d.lost_allowed, d.violations), (8, 0));
        // Losing flushed or FUA data is a violation, as is a version never written there.
        let mut e = d.clone();
        e.power_cut(&[(0, 8, 0), (16, 24, 2)], &dev, &dev);
        assert_eq!(e.violations, 16, "{:?}", e.first_violation);
        assert!(e.first_violation.unwrap().contains("version 1 was durable"));
    }

    /// A discard not yet covered by a flush may leave the old data or zeroes; once flushed, or
    /// once a write submitted after it is durable, zeroes are a violation again.
    #[test]
    fn an_unflushed_discard_may_leave_old_data_or_zeroes() {
        let mut d = Durability::new(true);
        d.submitted(1, 0, 8);
        d.acknowledged(0, 8, 1, true); // FUA: version 1 durable
        d.discard_submitted(0, 8);
        let v1 = acked(&[(0, 8, 1)]);
        // The discard reached the medium before the cut but was never acknowledged.
        let mut e = d.clone();
        e.power_cut(&[(0, 8, 0)], &v1, &v1);
        assert_eq!(
            (e.lost_allowed, e.violations),
            (0, 0),
            "{:?}",
            e.first_violation
        );
        // Acknowledged, not flushed: old data or zeroes.
        d.acknowledged(0, 8, 0, false);
        let zero = acked(&[(0, 8, 0)]);
        for found in [0, 1] {
            let mut e = d.clone();
            e.power_cut(&[(0, 8, found)], &zero, &zero);
            assert_eq!((e.lost_allowed, e.violations), (0, 0), "found {found}");
        }
        // A later write acknowledged but not flushed: zeroes lose it, as allowed.
        d.submitted(2, 0, 8);
        d.acknowledged(0, 8, 2, false);
        let v2 = acked(&[(0, 8, 2)]);
        let mut e = d.clone();
        e.power_cut(&[(0, 8, 0)], &v2, &v2);
        assert_eq!((e.lost_allowed, e.violations), (8, 0));
        // The same write made durable by FUA: zeroes now lose durable data.
        let mut f = d.clone();
        f.acknowledged(0, 8, 2, true);
        f.power_cut(&[(0, 8, 0)], &v2, &v2);
        assert_eq!(f.violations, 8);
        // A flushed discard: zeroes, nothing lost.
        let mut g = Durability::new(true);
        g.submitted(1, 0, 8);
        g.acknowledged(0, 8, 1, true);
        g.discard_submitted(0, 8);
        g.acknowledged(0, 8, 0, false);
        let snap = g.flush_issued();
        g.flush_completed(snap, &zero);
        let mut h = g.clone();
        h.power_cut(&[(0, 8, 0)], &zero, &zero);
        assert_eq!((h.lost_allowed, h.violations), (0, 0));
        // A cut settles a pending discard: if the old data stayed, it is durable, and a later
        // cut may not turn it into zeroes.
        let mut k = d.clone();
        k.power_cut(&[(0, 8, 1)], &v2, &v2);
        assert_eq!(k.violations, 0);
        let v1 = acked(&[(0, 8, 1)]);
        k.power_cut(&[(0, 8, 0)], &v1, &v1);
        assert_eq!(k.violations, 8);
    }

    #[test]
    fn without_a_cache_every_acknowledged_write_is_durable() {
        let mut d = Durability::new(false);
        d.submitted(5, 0, 8);
        d.acknowledged(0, 8, 5, false);
        d.power_cut(&[(0, 8, 0)], &acked(&[(0, 8, 5)]), &acked(&[(0, 8, 5)]));
        assert_eq!(d.violations, 8);
    }
}
