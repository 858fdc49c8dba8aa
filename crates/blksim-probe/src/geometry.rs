//! Flash geometry from timed writes, after flashbench (Arnd Bergmann, 2011: "--open-au" and
//! the erase-block search). Both tests write, so they run only with `--write`.
//!
//! * **Open units.** N streams, each appending small chunks at the start of its own
//!   16 MiB region, are written round robin. While N is at most the number of allocation
//!   units the card keeps open, every write appends to an open unit; one stream more and
//!   each write must close (merge) another unit first, and the median write costs many
//!   times more. The count is the last N before that jump.
//! * **Allocation-unit size.** A region is written sequentially for S bytes from its start,
//!   then its first chunk is written again. If S is a whole number of units, every unit the
//!   stream opened was filled and closed cleanly, and the rewrite opens a unit like any
//!   write. If S is less than a unit, the unit is still open with its write pointer past the
//!   rewrite, which an allocation-unit FTL can only serve by merging the unit (rewriting it
//!   whole). Going down from 8 MiB, the unit size is the smallest S whose rewrite is still
//!   cheap. A page-mapped FTL shows neither jump, and the probe says so.

use crate::target::{Op, Target};

/// Region of one stream or one rewrite sequence: a multiple of every unit size searched.
pub const REGION: u64 = 16 << 20;
/// Unit sizes searched, largest first (8 MiB .. 16 KiB).
pub const AU_SIZES: [u64; 10] = [
    8 << 20,
    4 << 20,
    2 << 20,
    1 << 20,
    512 << 10,
    256 << 10,
    128 << 10,
    64 << 10,
    32 << 10,
    16 << 10,
];
/// Streams tried for the open-unit count.
pub const MAX_STREAMS: u32 = 8;
/// A median write this many times the cheapest is a merge.
pub const JUMP: f64 = 4.0;

const CHUNK: u32 = 16 << 10;
const STREAM_CHUNK: u32 = 4 << 10;
const ROUNDS: u64 = 8;
const REPS: u64 = 2;

/// Hands out fresh regions of the probed area, wrapping when it is used up.
pub struct Regions {
    next: u64,
    count: u64,
}

impl Regions {
    pub fn new(size: u64) -> Result<Regions, String> {
        let count = size / REGION;
        if count < 16 {
            return Err(format!(
                "the geometry tests need at least {} MiB to write (16 regions of 16 MiB); the probed area has {} MiB",
                16 * (REGION >> 20),
                size >> 20
            ));
        }
        Ok(Regions { next: 0, count })
    }

    fn take(&mut self) -> u64 {
        let r = self.next % self.count;
        self.next += 1;
        r * REGION
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[(v.len() - 1) / 2]
}

/// One row of a geometry test: the parameter (streams, or bytes written before the
/// rewrite) and the median latency of the measured writes.
#[derive(Clone, Debug)]
pub struct Row {
    pub x: u64,
    pub median_ns: u64,
}

#[derive(Clone, Debug)]
pub struct Found {
    pub rows: Vec<Row>,
    /// The open-unit count, or the unit size in bytes; None when no jump was seen.
    pub value: Option<u64>,
}

/// The number of allocation units the device keeps open.
pub fn open_units(
    t: &mut dyn Target,
    regions: &mut Regions,
    deadline_ns: u64,
) -> Result<Found, String> {
    let mut rows = Vec::new();
    for n in 1..=MAX_STREAMS as u64 {
        let starts: Vec<u64> = (0..n).map(|_| regions.take()).collect();
        let mut ops = Vec::new();
        for round in 0..ROUNDS {
            for s in &starts {
                ops.push(Op::write(s + round * STREAM_CHUNK as u64, STREAM_CHUNK));
            }
        }
        let b = t.run(&ops, 1, deadline_ns)?;
        // The first round opens the streams' units (closing whatever the device had open).
        let steady: Vec<u64> = b.lat_ns.iter().skip(n as usize).copied().collect();
        rows.push(Row {
            x: n,
            median_ns: median(steady),
        });
    }
    let base = rows[0].median_ns.max(1) as f64;
    let jump = rows.iter().position(|r| r.median_ns as f64 > JUMP * base);
    Ok(Found {
        value: jump.map(|i| rows[i].x - 1).filter(|&n| n >= 1),
        rows,
    })
}

/// The allocation-unit size in bytes.
pub fn au_size(
    t: &mut dyn Target,
    regions: &mut Regions,
    deadline_ns: u64,
) -> Result<Found, String> {
    let mut rows = Vec::new();
    for &s in &AU_SIZES {
        let mut lat = Vec::new();
        for _ in 0..REPS {
            let start = regions.take();
            let chunk = (CHUNK as u64).min(s);
            let mut ops: Vec<Op> = (0..s / chunk)
                .map(|k| Op::write(start + k * chunk, chunk as u32))
                .collect();
            ops.push(Op::write(start, chunk as u32));
            let b = t.run(&ops, 1, deadline_ns)?;
            if b.lat_ns.len() == ops.len() {
                lat.push(*b.lat_ns.last().unwrap_or(&0));
            }
        }
        rows.push(Row {
            x: s,
            median_ns: median(lat),
        });
    }
    let cheapest = rows.iter().map(|r| r.median_ns).min().unwrap_or(0).max(1) as f64;
    let cheap: Vec<bool> = rows
        .iter()
        .map(|r| r.median_ns as f64 <= JUMP * cheapest)
        .collect();
    // Sizes run largest first: the unit is the last size of the leading run of cheap ones,
    // when a costly one follows.
    let lead = cheap.iter().take_while(|&&c| c).count();
    let value = (lead > 0 && lead < rows.len()).then(|| rows[lead - 1].x);
    Ok(Found { rows, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;

    fn probe(device: &str, sets: &[&str]) -> (Found, Found) {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let mut t = SimTarget::new(device, &sets, None, 1).unwrap();
        let mut r = Regions::new(t.size()).unwrap();
        let o = open_units(&mut t, &mut r, u64::MAX).unwrap();
        let a = au_size(&mut t, &mut r, u64::MAX).unwrap();
        eprintln!("{device} {sets:?}\nopen {o:?}\nau {a:?}");
        (o, a)
    }

    /// The 2009 card of measurements §4: 512 KiB units, one open.
    #[test]
    fn finds_the_2009_cards_unit_and_its_one_open_unit() {
        let (o, a) = probe("emmc-512k-2009", &[]);
        assert_eq!(o.value, Some(1), "{o:?}");
        assert_eq!(a.value, Some(512 << 10), "{a:?}");
    }

    /// Not a fixed answer: other geometry set on the same card is found too.
    #[test]
    fn finds_other_units_and_open_counts() {
        let (o, a) = probe(
            "emmc-512k-2009",
            &[
                "card.au_kib=2048",
                "card.au_open=3",
                "card.pages_per_block=512",
            ],
        );
        assert_eq!(o.value, Some(3), "{o:?}");
        assert_eq!(a.value, Some(2 << 20), "{a:?}");
    }

    /// A page-mapped FTL has no allocation units: neither test may invent one.
    #[test]
    fn a_page_mapped_card_shows_no_units() {
        let (o, a) = probe("emmc-hbg4a2", &[]);
        assert_eq!(o.value, None, "{o:?}");
        assert_eq!(a.value, None, "{a:?}");
    }
}
