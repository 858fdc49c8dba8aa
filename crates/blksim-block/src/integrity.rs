//! The data-integrity oracle: which write last reached each sector, checked on every read.
//!
//! Data is never simulated; a write carries a *version* (`Bio::version`, a global counter the
//! workload assigns to each user write) and the oracle keeps two extent maps:
//!
//! * `device`: the version each sector holds on the device, updated when a write *request*
//!   completes (`blk_mq_end_request`), bio by bio in chain order. That covers requests an
//!   elevator built itself (the `eraseblock` scheduler's combined writes, whose gap bios carry
//!   the versions its gap reads returned).
//! * `user`: the version of the last user write whose completion the submitter saw. A gap bio
//!   (internal token) changes only `device`.
//!
//! A user read that completes compares the two over its range: a sector where they differ
//! means the device lost a completed write (or returned stale data). Sectors with a user write
//! in flight are skipped: a read racing an overlapping write may legitimately see either
//! (the kernel gives no ordering between them). Both maps coalesce equal neighbours and drop
//! version 0 (never written / discarded), so memory follows the written footprint, not the
//! number of I/Os.

use crate::request::{Op, RqId, RqPool, NO_BIO};
use std::collections::BTreeMap;

/// Bio tokens with this bit belong to the block layer or an elevator (gap reads, ...): the
/// submitter never sees their completion.
pub const INTERNAL_TOKEN: u64 = 1 << 63;

/// Non-overlapping extents `start -> (end, version)`; absent sectors are version 0.
#[derive(Clone, Debug, Default)]
pub struct ExtentMap {
    m: BTreeMap<u64, (u64, u64)>,
}

impl ExtentMap {
    /// Set `[s, e)` to `v`.
    pub fn set(&mut self, s: u64, e: u64, v: u64) {
        if s >= e {
            return;
        }
        // Split an extent straddling `s`.
        if let Some((&ps, &(pe, pv))) = self.m.range(..s).next_back() {
            if pe > s {
                self.m.insert(ps, (s, pv));
                self.m.insert(s, (pe, pv));
            }
        }
        // Split an extent straddling `e`.
        if let Some((&ps, &(pe, pv))) = self.m.range(..e).next_back() {
            if pe > e {
                self.m.insert(ps, (e, pv));
                self.m.insert(e, (pe, pv));
            }
        }
        // Drop the extents inside [s, e) one by one (no temporary list per write).
        while let Some(k) = self.m.range(s..e).next().map(|(&k, _)| k) {
            self.m.remove(&k);
        }
        if v == 0 {
            return;
        }
        let (mut ns, mut ne) = (s, e);
        if let Some((&ps, &(pe, pv))) = self.m.range(..s).next_back() {
            if pe == s && pv == v {
                self.m.remove(&ps);
                ns = ps;
            }
        }
        if let Some(&(fe, fv)) = self.m.get(&e) {
            if fv == v {
                self.m.remove(&e);
                ne = fe;
            }
        }
        self.m.insert(ns, (ne, v));
    }

    /// The versions over `[s, e)` as consecutive pieces `(start, end, version)` covering it.
    pub fn get(&self, s: u64, e: u64) -> Vec<(u64, u64, u64)> {
        let mut out = Vec::new();
        self.get_into(s, e, &mut out);
        out
    }

    /// [`Self::get`] into a caller's buffer (cleared first), so the per-read check allocates
    /// nothing in steady state.
    pub fn get_into(&self, s: u64, e: u64, out: &mut Vec<(u64, u64, u64)>) {
        out.clear();
        let mut pos = s;
        let first = self
            .m
            .range(..=s)
            .next_back()
            .filter(|(_, &(pe, _))| pe > s)
            .map(|(&k, _)| k)
            .unwrap_or(s);
        for (&ps, &(pe, pv)) in self.m.range(first..e) {
            let a = ps.max(s);
            if a > pos {
                out.push((pos, a, 0));
            }
            let b = pe.min(e);
            out.push((a, b, pv));
            pos = b;
        }
        if pos < e {
            out.push((pos, e, 0));
        }
    }

    pub fn extents(&self) -> usize {
        self.m.len()
    }
}

/// The first mismatch found (the run stops on it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub sector: u64,
    pub expected: u64,
    pub found: u64,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "data integrity: read of sector {} returned version {}, expected version {} (the last completed write)",
            self.sector, self.found, self.expected
        )
    }
}

#[derive(Clone, Debug, Default)]
pub struct Integrity {
    device: ExtentMap,
    user: ExtentMap,
    /// User writes (and discards) submitted and not completed: (start, end) -> count.
    inflight: BTreeMap<(u64, u64), u32>,
    max_inflight_len: u64,
    /// User read bios compared.
    pub reads_checked: u64,
    pub sectors_checked: u64,
    pub mismatches: u64,
    pub first_mismatch: Option<Mismatch>,
    /// Reused buffers for the read check.
    buf_dev: Vec<(u64, u64, u64)>,
    buf_usr: Vec<(u64, u64, u64)>,
    buf_race: Vec<(u64, u64)>,
}

impl Integrity {
    pub fn new() -> Self {
        Self::default()
    }

    fn is_data_write(op: Op) -> bool {
        matches!(op, Op::Write | Op::Discard)
    }

    /// A bio entered the block layer (`submit_bio`): user writes are now in flight.
    pub fn bio_submitted(&mut self, op: Op, token: u64, sector: u64, nr: u32) {
        if Self::is_data_write(op) && token & INTERNAL_TOKEN == 0 && nr > 0 {
            *self
                .inflight
                .entry((sector, sector + nr as u64))
                .or_insert(0) += 1;
            self.max_inflight_len = self.max_inflight_len.max(nr as u64);
        }
    }

    fn write_done(&mut self, s: u64, e: u64) {
        if let Some(c) = self.inflight.get_mut(&(s, e)) {
            *c -= 1;
            if *c == 0 {
                self.inflight.remove(&(s, e));
            }
        }
    }

    /// User writes in flight overlapping `[s, e)`, as (start, end), into `out`.
    fn inflight_overlaps(&self, s: u64, e: u64, out: &mut Vec<(u64, u64)>) {
        out.clear();
        let lo = s.saturating_sub(self.max_inflight_len);
        out.extend(
            self.inflight
                .range((lo, 0)..(e, 0))
                .filter(|(&(a, b), _)| a < e && b > s)
                .map(|(&k, _)| k),
        );
    }

    /// The versions the device holds over `[s, e)` (what a read returns).
    pub fn device_versions(&self, s: u64, e: u64) -> Vec<(u64, u64, u64)> {
        self.device.get(s, e)
    }

    /// Request `rq` completed with `ok` (`blk_mq_end_request`, before its bios are freed).
    pub fn request_completed(&mut self, pool: &RqPool, rq: RqId, ok: bool) {
        let op = pool.get(rq).op;
        let mut b = pool.get(rq).bio_head;
        while b != NO_BIO {
            let bio = pool.bio(b);
            let (s, e) = (bio.sector, bio.sector + bio.nr_sectors as u64);
            let user = bio.token & INTERNAL_TOKEN == 0;
            match op {
                Op::Write | Op::Discard => {
                    if user {
                        self.write_done(s, e);
                    }
                    if ok {
                        let v = if op == Op::Discard { 0 } else { bio.version };
                        self.device.set(s, e, v);
                        if user {
                            self.user.set(s, e, v);
                        }
                    }
                }
                Op::Read if ok && user && e > s => self.check_read(s, e),
                _ => {}
            }
            b = bio.next;
        }
    }

    fn check_read(&mut self, s: u64, e: u64) {
        self.reads_checked += 1;
        self.sectors_checked += e - s;
        // Nothing written yet anywhere: both sides read zeros (the common case of a pure
        // read workload), nothing to compare.
        if self.device.m.is_empty() && self.user.m.is_empty() {
            return;
        }
        let mut dev = std::mem::take(&mut self.buf_dev);
        let mut usr = std::mem::take(&mut self.buf_usr);
        let mut racing = std::mem::take(&mut self.buf_race);
        self.device.get_into(s, e, &mut dev);
        self.user.get_into(s, e, &mut usr);
        self.inflight_overlaps(s, e, &mut racing);
        self.compare(s, e, &dev, &usr, &racing);
        self.buf_dev = dev;
        self.buf_usr = usr;
        self.buf_race = racing;
    }

    fn compare(
        &mut self,
        s: u64,
        e: u64,
        dev: &[(u64, u64, u64)],
        usr: &[(u64, u64, u64)],
        racing: &[(u64, u64)],
    ) {
        let (mut i, mut j) = (0, 0);
        let mut pos = s;
        while pos < e {
            let (_, de, dv) = dev[i];
            let (_, ue, uv) = usr[j];
            let end = de.min(ue);
            if dv != uv {
                // The first sector of [pos, end) not covered by a racing write.
                let mut p = pos;
                loop {
                    match racing.iter().find(|&&(a, b)| a <= p && b > p) {
                        Some(&(_, b)) => p = b,
                        None => break,
                    }
                    if p >= end {
                        break;
                    }
                }
                if p < end {
                    self.mismatches += 1;
                    if self.first_mismatch.is_none() {
                        self.first_mismatch = Some(Mismatch {
                            sector: p,
                            expected: uv,
                            found: dv,
                        });
                    }
                    return;
                }
            }
            pos = end;
            if de == end {
                i += 1;
            }
            if ue == end {
                j += 1;
            }
        }
    }

    /// Extents held by both maps (memory check).
    pub fn extents(&self) -> (usize, usize) {
        (self.device.extents(), self.user.extents())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extent_map_splits_coalesces_and_reads_zero_holes() {
        let mut m = ExtentMap::default();
        m.set(10, 20, 1);
        m.set(20, 30, 1);
        assert_eq!(m.extents(), 1);
        m.set(15, 25, 2);
        assert_eq!(
            m.get(0, 40),
            vec![
                (0, 10, 0),
                (10, 15, 1),
                (15, 25, 2),
                (25, 30, 1),
                (30, 40, 0)
            ]
        );
        m.set(12, 28, 0);
        assert_eq!(m.get(10, 30), vec![(10, 12, 1), (12, 28, 0), (28, 30, 1)]);
        m.set(0, 100, 7);
        assert_eq!(m.extents(), 1);
        assert_eq!(m.get(50, 60), vec![(50, 60, 7)]);
    }

    #[test]
    fn stale_device_data_is_a_mismatch_naming_sector_and_versions() {
        let mut i = Integrity::new();
        i.user.set(8, 16, 5);
        i.device.set(8, 16, 5);
        // An elevator rewrote sectors 10..12 with older (gap) data.
        i.device.set(10, 12, 3);
        i.check_read(0, 16);
        assert_eq!(i.mismatches, 1);
        let m = i.first_mismatch.clone().unwrap();
        assert_eq!((m.sector, m.expected, m.found), (10, 5, 3));
        assert!(m.to_string().contains("sector 10"), "{m}");
        // A read racing an overlapping user write is not checked there.
        let mut j = Integrity::new();
        j.user.set(8, 16, 5);
        j.bio_submitted(Op::Write, 1, 9, 4);
        j.check_read(8, 16);
        assert_eq!(
            j.mismatches, 1,
            "sector 8 is not covered by the racing write"
        );
        let mut k = Integrity::new();
        k.user.set(9, 13, 5);
        k.bio_submitted(Op::Write, 1, 9, 4);
        k.check_read(8, 16);
        assert_eq!(k.mismatches, 0);
    }
}
