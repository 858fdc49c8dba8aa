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
//!
//! The user map is kept as its difference from the device map (`user_diff`: the user's
//! version + 1 where the two differ, nothing where they agree). A completed, acknowledged user
//! write sets both to the same version, so in most runs the difference stays empty: a write
//! then costs one map update instead of two, and a read has nothing to compare (profiled on
//! 4 KiB random writes, the two maps were most of the simulator's time).
//!
//! The footprint of random writes on a large device can still be millions of extents
//! (~30 bytes each in a map's sparse form, at most 128 in its dense form of one version per
//! 4 KiB granule, which it keeps only while it spans at most 16 granules per extent). So the
//! oracle has a budget ([`EXTENT_BUDGET`] extents per map): when a map outgrows it, the
//! oracle stops tracking half of the 1 MiB stripes it still tracks (chosen by a hash of the
//! stripe number, so deterministic and spread over the device) and drops their extents.
//! Checks go on, exactly as before, in the stripes still tracked;
//! `blksim.integrity.tracked_one_in` reports the share (1 = the whole device). Runs whose
//! footprint fits the budget, which includes every test, check everything.

mod durable;

pub use durable::Durability;

use crate::request::{flags, Op, RqId, RqPool, NO_BIO};
use blksim_core::extent::ExtentMap;
use blksim_core::hash::FxHashMap;

/// Bio tokens with this bit belong to the block layer or an elevator (gap reads, ...): the
/// submitter never sees their completion.
pub const INTERNAL_TOKEN: u64 = 1 << 63;

/// Extents either map may hold before the oracle tracks half as many stripes (at most
/// 32 MiB per map, in either form).
pub const EXTENT_BUDGET: usize = 1 << 18;

/// Sectors per sampling stripe: 1 MiB.
const STRIPE_SHIFT: u32 = 11;

/// Which stripes stay tracked must not follow the address pattern: one SplitMix64 step of the
/// stripe number.
fn stripe_hash(stripe: u64) -> u64 {
    let mut st = stripe;
    blksim_core::rng::splitmix64(&mut st)
}

/// Keep only the parts of `m`'s extents that lie in stripes `keep` accepts.
fn retain_stripes(m: &mut ExtentMap, keep: impl Fn(u64) -> bool) {
    let old = std::mem::take(m);
    for (a, b, v) in old.iter() {
        let mut pos = a;
        while pos < b {
            let stripe = pos >> STRIPE_SHIFT;
            let end = ((stripe + 1) << STRIPE_SHIFT).min(b);
            if keep(stripe) {
                m.set(pos, end, v);
            }
            pos = end;
        }
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

#[derive(Clone, Debug)]
pub struct Integrity {
    device: ExtentMap,
    /// Where the submitter's view differs from `device`: its version + 1 there (so that
    /// "never written", version 0, is a difference too). Absent: the two agree.
    user_diff: ExtentMap,
    /// Reused buffers for a device-only update.
    buf_old: Vec<(u64, u64, u64)>,
    /// User writes (and discards) submitted and not completed: (start, end) -> count.
    /// Looked up on every write and its completion, scanned only when a read finds the two
    /// views differing: a hash map (at most the queue depth of entries).
    inflight: FxHashMap<(u64, u64), u32>,
    /// User read bios compared.
    pub reads_checked: u64,
    pub sectors_checked: u64,
    pub mismatches: u64,
    pub first_mismatch: Option<Mismatch>,
    /// Reused buffers for the read check.
    buf_dev: Vec<(u64, u64, u64)>,
    buf_usr: Vec<(u64, u64, u64)>,
    /// Scratch for the submitter's view: the device's pieces and the difference's.
    buf_udev: Vec<(u64, u64, u64)>,
    buf_diff: Vec<(u64, u64, u64)>,
    buf_race: Vec<(u64, u64)>,
    /// The oracle tracks the stripes whose hash has its low `sample_shift` bits clear.
    sample_shift: u32,
    budget: usize,
    /// What FLUSH/FUA made durable, for power cuts (`durable.rs`); None unless a power cut
    /// is configured.
    pub durability: Option<Durability>,
}

impl Default for Integrity {
    fn default() -> Self {
        Self::with_budget(EXTENT_BUDGET)
    }
}

impl Integrity {
    pub fn new() -> Self {
        Self::default()
    }

    /// An oracle whose maps may hold `budget` extents each before it samples stripes.
    pub fn with_budget(budget: usize) -> Self {
        Integrity {
            device: ExtentMap::default(),
            user_diff: ExtentMap::default(),
            buf_old: Vec::new(),
            inflight: FxHashMap::default(),
            reads_checked: 0,
            sectors_checked: 0,
            mismatches: 0,
            first_mismatch: None,
            buf_dev: Vec::new(),
            buf_usr: Vec::new(),
            buf_udev: Vec::new(),
            buf_diff: Vec::new(),
            buf_race: Vec::new(),
            sample_shift: 0,
            budget: budget.max(1),
            durability: None,
        }
    }

    /// The oracle checks one stripe in this many (1: the whole device).
    pub fn tracked_one_in(&self) -> u64 {
        1u64 << self.sample_shift
    }

    fn tracked(shift: u32, stripe: u64) -> bool {
        shift == 0 || stripe_hash(stripe) & ((1u64 << shift) - 1) == 0
    }

    /// Calls `f` with each piece of `[s, e)` that lies in a tracked stripe (the whole range
    /// while everything is tracked).
    fn for_tracked(&mut self, s: u64, e: u64, mut f: impl FnMut(&mut Self, u64, u64)) {
        if self.sample_shift == 0 {
            return f(self, s, e);
        }
        let mut pos = s;
        while pos < e {
            let stripe = pos >> STRIPE_SHIFT;
            let end = ((stripe + 1) << STRIPE_SHIFT).min(e);
            if Self::tracked(self.sample_shift, stripe) {
                f(self, pos, end);
            }
            pos = end;
        }
    }

    /// Over budget: track half as many stripes and drop the others' extents.
    fn enforce_budget(&mut self) {
        while (self.device.extents() > self.budget || self.user_diff.extents() > self.budget)
            && self.sample_shift < 63
        {
            self.sample_shift += 1;
            let shift = self.sample_shift;
            retain_stripes(&mut self.device, |st| Self::tracked(shift, st));
            retain_stripes(&mut self.user_diff, |st| Self::tracked(shift, st));
        }
    }

    /// Both views hold `v` over `[s, e)` (an acknowledged user write, a power cut).
    fn set_both(&mut self, s: u64, e: u64, v: u64) {
        self.device.set(s, e, v);
        self.user_sees_device(s, e);
    }

    /// The device holds `v` over `[s, e)`; the submitter's view stays what it was (a gap bio,
    /// a write whose acknowledgement the flush machinery still holds).
    fn set_device_only(&mut self, s: u64, e: u64, v: u64) {
        let mut old = std::mem::take(&mut self.buf_old);
        self.user_get_into(s, e, &mut old);
        for &(a, b, u) in &old {
            self.user_diff.set(a, b, if u == v { 0 } else { u + 1 });
        }
        self.buf_old = old;
        self.device.set(s, e, v);
    }

    /// The submitter's view over `[s, e)` becomes what the device holds.
    fn user_sees_device(&mut self, s: u64, e: u64) {
        if !self.user_diff.is_empty() {
            self.user_diff.set(s, e, 0);
        }
    }

    /// The submitter's versions over `[s, e)` as consecutive pieces, into `out`.
    fn user_get_into(&mut self, s: u64, e: u64, out: &mut Vec<(u64, u64, u64)>) {
        let mut dev = std::mem::take(&mut self.buf_udev);
        self.device.get_into(s, e, &mut dev);
        self.user_over(s, e, &dev, out);
        self.buf_udev = dev;
    }

    /// The submitter's versions over `[s, e)`, given the device's pieces `dev` over it.
    fn user_over(
        &mut self,
        s: u64,
        e: u64,
        dev: &[(u64, u64, u64)],
        out: &mut Vec<(u64, u64, u64)>,
    ) {
        out.clear();
        if self.user_diff.is_empty() {
            out.extend_from_slice(dev);
            return;
        }
        let mut diff = std::mem::take(&mut self.buf_diff);
        self.user_diff.get_into(s, e, &mut diff);
        let (mut i, mut j, mut pos) = (0, 0, s);
        while pos < e {
            let (_, de, dv) = dev[i];
            let (_, fe, fv) = diff[j];
            let end = de.min(fe);
            let v = if fv > 0 { fv - 1 } else { dv };
            match out.last_mut() {
                Some(last) if last.2 == v && last.1 == pos => last.1 = end,
                _ => out.push((pos, end, v)),
            }
            pos = end;
            i += (de == end) as usize;
            j += (fe == end) as usize;
        }
        self.buf_diff = diff;
    }

    fn is_data_write(op: Op) -> bool {
        matches!(op, Op::Write | Op::Discard)
    }

    /// Track what FLUSH and FUA make durable from now on (a power cut will be judged by it).
    pub fn track_durability(&mut self, write_cache: bool) {
        self.durability = Some(Durability::new(write_cache));
    }

    /// A bio entered the block layer (`submit_bio`): user writes are now in flight.
    pub fn bio_submitted(&mut self, op: Op, token: u64, sector: u64, nr: u32, version: u64) {
        if let Some(d) = self.durability.as_mut() {
            if op == Op::Write && nr > 0 {
                d.submitted(version, sector, sector + nr as u64);
            }
            if op == Op::Discard && nr > 0 && token & INTERNAL_TOKEN == 0 {
                d.discard_submitted(sector, sector + nr as u64);
            }
        }
        if Self::is_data_write(op) && token & INTERNAL_TOKEN == 0 && nr > 0 {
            // Its completion sets the map.
            self.device.prefetch(sector);
            *self
                .inflight
                .entry((sector, sector + nr as u64))
                .or_insert(0) += 1;
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
        out.extend(
            self.inflight
                .keys()
                .filter(|&&(a, b)| a < e && b > s)
                .copied(),
        );
        // In sector order, whatever the hash map's.
        out.sort_unstable();
    }

    /// The versions the device holds over `[s, e)` (what a read returns).
    pub fn device_versions(&self, s: u64, e: u64) -> Vec<(u64, u64, u64)> {
        self.device.get(s, e)
    }

    /// Request `rq` completed with `ok` (`blk_mq_end_request`, before its bios are freed).
    /// `acked`: the submitter sees it now; false for the DATA step of a write the flush
    /// machinery still has to flush (it hears of it through [`Self::request_acknowledged`]).
    pub fn request_completed(&mut self, pool: &RqPool, rq: RqId, ok: bool, acked: bool) {
        let op = pool.get(rq).op;
        // REQ_FUA reaches the completion only on a device that honours FUA (the flush
        // machinery strips it otherwise and covers the write with a POSTFLUSH).
        let fua = pool.get(rq).flags & flags::REQ_FUA != 0;
        let mut b = pool.get(rq).bio_head;
        while b != NO_BIO {
            let bio = pool.bio(b);
            let (s, e) = (bio.sector, bio.sector + bio.nr_sectors as u64);
            let user = bio.token & INTERNAL_TOKEN == 0;
            match op {
                Op::Write | Op::Discard => {
                    if user && acked {
                        self.write_done(s, e);
                    }
                    if ok {
                        let v = if op == Op::Discard { 0 } else { bio.version };
                        if let Some(d) = self.durability.as_mut() {
                            d.acknowledged(s, e, v, fua);
                        }
                        self.for_tracked(s, e, |me, a, b| {
                            if user && acked {
                                me.set_both(a, b, v);
                            } else {
                                me.set_device_only(a, b, v);
                            }
                        });
                        self.enforce_budget();
                    }
                }
                Op::Read if ok && user && e > s => {
                    let mut compared = false;
                    self.for_tracked(s, e, |me, a, b| {
                        compared = true;
                        me.sectors_checked += b - a;
                        me.check_read(a, b);
                    });
                    self.reads_checked += compared as u64;
                }
                _ => {}
            }
            b = bio.next;
        }
    }

    fn check_read(&mut self, s: u64, e: u64) {
        // The submitter's view agrees with the device everywhere (the common case: every
        // write acknowledged as it completed): nothing to compare.
        if self.user_diff.is_empty() {
            return;
        }
        let mut dev = std::mem::take(&mut self.buf_dev);
        let mut usr = std::mem::take(&mut self.buf_usr);
        let mut racing = std::mem::take(&mut self.buf_race);
        self.device.get_into(s, e, &mut dev);
        self.user_over(s, e, &dev, &mut usr);
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
                while let Some(&(_, b)) = racing.iter().find(|&&(a, b)| a <= p && b > p) {
                    p = b;
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

    /// The submitter hears of a write whose DATA step completed earlier (the flush machinery
    /// ended its sequence): it is no longer in flight, and reads must now return it.
    pub fn request_acknowledged(&mut self, pool: &RqPool, rq: RqId) {
        let r = pool.get(rq);
        if r.op != Op::Write {
            return;
        }
        let mut b = r.bio_head;
        while b != NO_BIO {
            let bio = pool.bio(b);
            let (s, e) = (bio.sector, bio.sector + bio.nr_sectors as u64);
            if bio.token & INTERNAL_TOKEN == 0 && e > s {
                self.write_done(s, e);
                // What the device holds there now: this write's data, or a newer write's that
                // completed meanwhile. A write that failed after its data reached the device
                // (its flush never came) leaves that data: reported to the submitter as an
                // error, and what reads return from then on.
                self.for_tracked(s, e, |me, a, b| me.user_sees_device(a, b));
            }
            b = bio.next;
        }
    }

    /// A flush request reaches the device: the snapshot it will make durable.
    pub fn flush_issued(&self) -> u64 {
        self.durability.as_ref().map_or(0, |d| d.flush_issued())
    }

    /// A flush issued with `snapshot` completed.
    pub fn flush_completed(&mut self, snapshot: u64) {
        if let Some(d) = self.durability.as_mut() {
            d.flush_completed(snapshot, &self.device);
        }
    }

    /// The device lost power; `changed` are the sectors that lost or tore data with what
    /// they hold now. Judged against what was durable (violations, allowed loss), then what
    /// the device holds is what reads must return.
    pub fn power_cut(&mut self, changed: &[(u64, u64, u64)]) {
        if self.durability.is_some() {
            // The submitter's view over the changed sectors (power cuts are rare).
            let mut seen = ExtentMap::default();
            let mut buf = Vec::new();
            for &(s, e, _) in changed {
                self.user_get_into(s, e, &mut buf);
                for &(a, b, v) in &buf {
                    seen.set(a, b, v);
                }
            }
            if let Some(d) = self.durability.as_mut() {
                d.power_cut(changed, &self.device, &seen);
            }
        }
        for &(s, e, v) in changed {
            self.for_tracked(s, e, |me, a, b| me.set_both(a, b, v));
        }
    }

    /// Sectors a power cut took as allowed (never made durable) and sectors where it broke
    /// FLUSH/FUA's promise.
    pub fn lost_allowed(&self) -> u64 {
        self.durability.as_ref().map_or(0, |d| d.lost_allowed)
    }
    pub fn violations(&self) -> u64 {
        self.durability.as_ref().map_or(0, |d| d.violations)
    }

    /// Extents held by the device map and by the submitter's difference from it (memory
    /// check).
    pub fn extents(&self) -> (usize, usize) {
        (self.device.extents(), self.user_diff.extents())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_budget_the_oracle_samples_stripes_and_still_catches_stale_data() {
        let mut i = Integrity::with_budget(64);
        let mut x = 1u64;
        // 4 KiB writes at scattered 4 KiB-aligned sectors over 4 GiB: one extent each.
        for v in 1..=1000u64 {
            x = stripe_hash(x);
            let s = (x % (1 << 20)) * 8;
            // What `request_completed` does for a user write.
            i.for_tracked(s, s + 8, |me, a, b| me.set_both(a, b, v));
            i.enforce_budget();
            assert!(i.device.extents() <= 64 && i.user_diff.extents() <= 64);
        }
        // 1000 extents against a budget of 64: at least 1 stripe in 16 dropped.
        assert!(i.tracked_one_in() >= 16, "{}", i.tracked_one_in());
        // Every extent left lies in a tracked stripe, and is checked as before.
        let shift = i.sample_shift;
        let (s, e, v) = i.device.iter().next().expect("some extents kept");
        assert!(Integrity::tracked(shift, s >> STRIPE_SHIFT));
        i.set_device_only(s, e, v - 1); // the device lost the last write there
        i.check_read(s, e);
        assert_eq!(i.mismatches, 1);
        // Untracked stripes are skipped, not reported.
        let untracked = (0..).find(|&st| !Integrity::tracked(shift, st)).unwrap();
        let mut n = 0;
        i.for_tracked(
            untracked << STRIPE_SHIFT,
            (untracked + 1) << STRIPE_SHIFT,
            |_, _, _| n += 1,
        );
        assert_eq!(n, 0);
    }

    /// The submitter's view kept as a difference from the device's equals the plain second
    /// map it replaces, over random sequences of every update.
    #[test]
    fn user_view_as_difference_equals_a_second_map() {
        let mut i = Integrity::new();
        let mut user = ExtentMap::default();
        let mut x = 7u64;
        let mut rnd = |n: u64| {
            x = stripe_hash(x);
            x % n
        };
        for step in 0..4000u64 {
            let s = rnd(200);
            let e = s + 1 + rnd(40);
            let v = rnd(6); // small versions: equal neighbours and zeroes are frequent
            match rnd(3) {
                0 => {
                    i.set_both(s, e, v);
                    user.set(s, e, v);
                }
                1 => i.set_device_only(s, e, v),
                _ => {
                    i.user_sees_device(s, e);
                    for (a, b, d) in i.device.get(s, e) {
                        user.set(a, b, d);
                    }
                }
            }
            let mut got = Vec::new();
            i.user_get_into(0, 260, &mut got);
            let mut want = user.get(0, 260);
            // Coalesce the reference's zero holes with their equal neighbours, as
            // `user_get_into` does.
            want.dedup_by(|b, a| {
                if a.2 == b.2 && a.1 == b.0 {
                    a.1 = b.1;
                    true
                } else {
                    false
                }
            });
            assert_eq!(got, want, "step {step}");
        }
        // Where the views agree the difference holds nothing.
        i.user_sees_device(0, 260);
        assert!(i.user_diff.is_empty());
    }

    #[test]
    fn retain_stripes_splits_extents_at_stripe_boundaries() {
        let mut m = ExtentMap::default();
        let st = 1u64 << STRIPE_SHIFT;
        m.set(st / 2, 3 * st + 5, 9); // spans stripes 0..=3
        retain_stripes(&mut m, |x| x % 2 == 1);
        assert_eq!(
            m.get(0, 4 * st),
            vec![
                (0, st, 0),
                (st, 2 * st, 9),
                (2 * st, 3 * st, 0),
                (3 * st, 3 * st + 5, 9),
                (3 * st + 5, 4 * st, 0)
            ]
        );
    }

    #[test]
    fn stale_device_data_is_a_mismatch_naming_sector_and_versions() {
        let mut i = Integrity::new();
        i.set_both(8, 16, 5);
        // An elevator rewrote sectors 10..12 with older (gap) data.
        i.set_device_only(10, 12, 3);
        i.check_read(0, 16);
        assert_eq!(i.mismatches, 1);
        let m = i.first_mismatch.clone().unwrap();
        assert_eq!((m.sector, m.expected, m.found), (10, 5, 3));
        assert!(m.to_string().contains("sector 10"), "{m}");
        // A read racing an overlapping user write is not checked there.
        let mut j = Integrity::new();
        j.set_both(8, 16, 5);
        j.set_device_only(8, 16, 0);
        j.bio_submitted(Op::Write, 1, 9, 4, 0);
        j.check_read(8, 16);
        assert_eq!(
            j.mismatches, 1,
            "sector 8 is not covered by the racing write"
        );
        let mut k = Integrity::new();
        k.set_both(9, 13, 5);
        k.set_device_only(9, 13, 0);
        k.bio_submitted(Op::Write, 1, 9, 4, 0);
        k.check_read(8, 16);
        assert_eq!(k.mismatches, 0);
    }
}
