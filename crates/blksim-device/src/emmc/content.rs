//! What the card holds, for power cuts: the data version of every sector on NAND, and the data
//! still on its way there (in the volatile cache, or being programmed).
//!
//! Kept only when a power cut is configured (`card.power_cut_ns` / `card.power_cut_after_ios`);
//! otherwise the card is a pure timing model. Data is never simulated: each host write carries
//! per-sector *versions* (the block layer's integrity oracle numbers them), which the driver
//! stages here when it accepts a write ([`Content::stage`], keyed by the command's tag) and the
//! card takes when the data crosses the bus.
//!
//! A write's data reaches NAND when its program ends: for a cached write, when the write-back
//! of its cache chunk ends; for a write-through (reliable write, no cache, larger than the
//! cache), when its foreground program ends. A newer write supersedes the older data still
//! waiting for the same sectors (the controller keeps one copy per LBA), so write-back never
//! brings back stale data. At a power cut the card keeps what reached NAND, the programs in
//! progress are torn at the NAND page (the program unit), and everything else waiting is lost.

use blksim_core::extent::ExtentMap;
use blksim_core::Ns;
use std::collections::{BTreeMap, VecDeque};

/// `[start, end)` sector ranges with the version each holds.
pub type Extents = Vec<(u64, u64, u64)>;

/// A foreground (write-through) program on the NAND: its data is on media at `end`.
#[derive(Clone, Debug)]
struct Program {
    start: Ns,
    end: Ns,
    data: Extents,
}

#[derive(Clone, Debug, Default)]
pub struct Content {
    /// Versions on NAND (durable whatever the power does).
    media: ExtentMap,
    /// Data of accepted writes not yet transferred, by command tag.
    staged: BTreeMap<u32, Extents>,
    /// Write-through programs not yet at their end, in start order.
    programs: VecDeque<Program>,
    /// Sectors per NAND page, the program unit a cut tears at.
    unit_sectors: u64,
}

/// Remove `[s, e)` from every extent of `data`.
fn cut_out(data: &mut Extents, s: u64, e: u64) {
    let mut out = Vec::with_capacity(data.len());
    for &(a, b, v) in data.iter() {
        if b <= s || a >= e {
            out.push((a, b, v));
            continue;
        }
        if a < s {
            out.push((a, s, v));
        }
        if b > e {
            out.push((e, b, v));
        }
    }
    *data = out;
}

/// The first `fraction` of `data`'s sectors in LBA order, whole program units only.
fn torn_prefix(data: &Extents, done: u128, total: u128, unit: u64) -> Extents {
    let mut d = data.clone();
    d.sort_unstable();
    let n: u64 = d.iter().map(|&(a, b, _)| b - a).sum();
    let programmed = (n as u128 * done)
        .checked_div(total)
        .map_or(n, |p| p as u64);
    let mut left = programmed / unit.max(1) * unit.max(1);
    let mut out = Vec::new();
    for (a, b, v) in d {
        if left == 0 {
            break;
        }
        let take = (b - a).min(left);
        out.push((a, a + take, v));
        left -= take;
    }
    out
}

impl Content {
    pub fn new(page_bytes: u64) -> Self {
        Content {
            unit_sectors: (page_bytes / 512).max(1),
            ..Default::default()
        }
    }

    /// The driver accepted write `tag` with this data.
    pub fn stage(&mut self, tag: u32, data: Extents) {
        self.staged.insert(tag, data);
    }

    /// Command `tag` ended without its data reaching the card (an error, a reset).
    pub fn unstage(&mut self, tag: u32) {
        self.staged.remove(&tag);
    }

    /// Command `tag`'s data crossed the bus: take it, superseding older data still waiting for
    /// the same sectors. `waiting` is the card's write-back chunks' data.
    pub fn take(&mut self, tag: u32, waiting: &mut [&mut Extents]) -> Extents {
        let data = self.staged.remove(&tag).unwrap_or_default();
        for &(s, e, _) in &data {
            for w in waiting.iter_mut() {
                cut_out(w, s, e);
            }
            for p in self.programs.iter_mut() {
                cut_out(&mut p.data, s, e);
            }
        }
        data
    }

    /// A write-through program of `data` runs on the NAND over `[start, end)`.
    pub fn program(&mut self, start: Ns, end: Ns, data: Extents) {
        if !data.is_empty() {
            self.programs.push_back(Program { start, end, data });
        }
    }

    /// Put `data` on NAND (a write-back chunk or a program ended).
    pub fn to_media(&mut self, data: &Extents) {
        for &(s, e, v) in data {
            self.media.set(s, e, v);
        }
    }

    /// Programs ended by `t` are on NAND.
    pub fn advance(&mut self, t: Ns) {
        while let Some(p) = self.programs.front() {
            if p.end > t {
                break;
            }
            let p = self.programs.pop_front().unwrap();
            self.to_media(&p.data);
        }
    }

    /// Trimmed sectors read back as never written, and no waiting data brings them back.
    pub fn trim(&mut self, s: u64, e: u64, waiting: &mut [&mut Extents]) {
        self.media.set(s, e, 0);
        for w in waiting.iter_mut() {
            cut_out(w, s, e);
        }
        for p in self.programs.iter_mut() {
            cut_out(&mut p.data, s, e);
        }
    }

    /// Power lost at `t`. `front` is the write-back chunk being programmed (its data, and the
    /// share of its program done), `lost` every other cached chunk's data. Returns the content
    /// of every sector whose waiting data was lost or torn, as it is now on NAND.
    pub fn power_cut(
        &mut self,
        t: Ns,
        front: Option<(&Extents, u128, u128)>,
        lost: &[&Extents],
    ) -> Extents {
        self.advance(t);
        let mut touched: Vec<(u64, u64)> = Vec::new();
        let unit = self.unit_sectors;
        let mut tear = |me: &mut Self, data: &Extents, done: u128, total: u128| {
            for &(a, b, _) in data {
                touched.push((a, b));
            }
            let part = torn_prefix(data, done, total, unit);
            me.to_media(&part);
        };
        if let Some((data, done, total)) = front {
            tear(self, data, done, total);
        }
        for p in std::mem::take(&mut self.programs) {
            if p.start < t {
                let done = (t - p.start) as u128;
                tear(self, &p.data, done, (p.end - p.start) as u128);
            } else {
                tear(self, &p.data, 0, 1);
            }
        }
        for data in lost {
            tear(self, data, 0, 1);
        }
        self.staged.clear();
        touched.sort_unstable();
        let mut out = Vec::new();
        let mut last_end = 0;
        for (a, b) in touched {
            let a = a.max(last_end);
            if a >= b {
                continue;
            }
            out.extend(self.media.get(a, b));
            last_end = b;
        }
        out
    }

    /// Versions on NAND over `[s, e)` (tests).
    pub fn media(&self, s: u64, e: u64) -> Extents {
        self.media.get(s, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_data_supersedes_waiting_data_and_a_cut_tears_at_the_page() {
        let mut c = Content::new(4096); // 8-sector program unit
        let mut chunk_a: Extents = Vec::new();
        c.stage(1, vec![(0, 16, 1)]);
        chunk_a.extend(c.take(1, &mut []));
        // A newer write to sectors 8..16 supersedes chunk A's copy there.
        c.stage(2, vec![(8, 16, 2)]);
        let chunk_b = c.take(2, &mut [&mut chunk_a]);
        assert_eq!(chunk_a, vec![(0, 8, 1)]);
        c.to_media(&chunk_a);
        // A 32-sector write-through program torn after 40% of its time: 12.8 sectors done,
        // one whole page (8 sectors) is on media.
        c.program(100, 200, vec![(100, 132, 3)]);
        let changed = c.power_cut(140, None, &[&chunk_b]);
        assert_eq!(c.media(0, 16), vec![(0, 8, 1), (8, 16, 0)]);
        assert_eq!(c.media(100, 132), vec![(100, 108, 3), (108, 132, 0)]);
        assert_eq!(
            changed,
            vec![(8, 16, 0), (100, 108, 3), (108, 132, 0)],
            "lost and torn sectors with what NAND holds now"
        );
    }

    #[test]
    fn programs_reach_media_at_their_end_and_trim_clears() {
        let mut c = Content::new(4096);
        c.program(0, 50, vec![(0, 8, 7)]);
        c.advance(49);
        assert_eq!(c.media(0, 8), vec![(0, 8, 0)]);
        c.advance(50);
        assert_eq!(c.media(0, 8), vec![(0, 8, 7)]);
        c.trim(0, 4, &mut []);
        assert_eq!(c.media(0, 8), vec![(0, 4, 0), (4, 8, 7)]);
    }
}
