//! eraseblock: the window search against its first, direct form (every window around every
//! held write, members and holes built for each), which skipped nothing.

use super::*;
use crate::tests_util::*;
use blksim_core::Rng;

/// The direct search: for each held write's erase block, oldest first, every window of
/// 1..=`1 + neighbour_blocks` blocks containing it, its members and holes built
/// ([`EraseBlock::window`]) and scored from them, the best saving kept.
fn reference_plan_form(e: &EraseBlock, pool: &RqPool) -> Option<Window> {
    let mut tried = BTreeSet::new();
    for rq in e.eligible(pool) {
        let r = pool.get(rq);
        if !tried.insert(r.sector / e.eb_sectors) {
            continue;
        }
        let (s, end) = (r.sector, r.end_sector());
        let eb = e.eb_sectors;
        let (b0, b1) = (s / eb, (end - 1) / eb);
        let maxn = 1 + e.neighbour_blocks;
        if b1 - b0 + 1 > maxn {
            continue;
        }
        let mut best: Option<(Ns, Window)> = None;
        for n in (b1 - b0 + 1)..=maxn {
            for first in (b1 + 1).saturating_sub(n)..=b0 {
                let ws = first * eb;
                let we = ((first + n) * eb).min(e.capacity);
                if we < end || we - ws > e.max_sectors {
                    continue;
                }
                if e.inflight_overlap(ws, we) || e.active_overlap(ws, we).is_some() {
                    continue;
                }
                let w = e.window(pool, ws, we);
                let (members, holes) = (&w.members, &w.holes);
                let cov = runs(
                    members
                        .iter()
                        .map(|&m| (pool.get(m).sector, pool.get(m).end_sector()))
                        .collect(),
                );
                if holes.iter().any(|h| h.1 - h.0 > e.max_gap_sectors) {
                    continue;
                }
                let segs: u64 = members
                    .iter()
                    .map(|&m| pool.get(m).nr_segments as u64)
                    .sum::<u64>()
                    + holes.iter().map(|h| (h.1 - h.0).div_ceil(8)).sum::<u64>();
                if segs > e.max_segments as u64 {
                    continue;
                }
                let pieces: u64 = cov.iter().map(|&(a, b)| (b - 1) / eb - a / eb + 1).sum();
                let separate = pieces * e.write_cost_ns;
                let blocks = (we - 1) / eb - ws / eb + 1;
                let combined: Ns = holes.iter().map(|h| e.read_cost(h.1 - h.0)).sum::<Ns>()
                    + blocks * e.block_write_ns;
                if combined >= separate {
                    continue;
                }
                let saving = separate - combined;
                if best.as_ref().is_none_or(|b| saving > b.0) {
                    best = Some((saving, w));
                }
            }
        }
        if let Some((_, w)) = best {
            return Some(w);
        }
    }
    None
}

/// Random held writes (some overlapping, some in flight) over a few dozen small erase
/// blocks, random neighbour counts, gap limits and costs: the search that skips the
/// windows an earlier seed already found wanting picks the same window, members and holes
/// as the direct one, or none when it finds none.
#[test]
fn the_window_search_picks_what_the_direct_search_picks() {
    let (mut found, mut none) = (0, 0);
    for seed in 0..300u64 {
        let mut rng = Rng::from_seed(seed);
        let mut pool = RqPool::new();
        let mut p = params(false);
        p.erase_block_bytes = Some(8 * 1024);
        let mut e = EraseBlock::new(&p);
        e.neighbour_blocks = rng.below(24);
        e.update_window();
        e.max_gap_sectors = 1 + rng.below(48);
        e.capacity = 16 * (20 + rng.below(40));
        e.write_cost_ns = 100 * NSEC_PER_MSEC;
        e.block_write_ns = (20 + rng.below(200)) * NSEC_PER_MSEC;
        e.read_base_ns = rng.below(5) * NSEC_PER_MSEC;
        e.max_segments = 8 + rng.below(120) as u16;
        e.max_sectors = 64 + rng.below(512);
        for i in 0..(1 + rng.below(30)) {
            let len = 1 + rng.below(40);
            let s = rng.below(e.capacity - len);
            let mut r = Rq::write(s);
            r.sectors = len as u32;
            let rq = mk(&mut pool, r, 0);
            if i % 7 == 6 {
                // In flight: windows over it are skipped.
                e.inflight.insert((s, rq), s + len);
                e.inflight_max_len = e.inflight_max_len.max(len);
            } else {
                e.hold(&pool, rq, i);
            }
        }
        let want = reference_plan_form(&e, &pool);
        assert_eq!(e.plan_form(&pool), want, "seed {seed}");
        if want.is_some() {
            found += 1;
        } else {
            none += 1;
        }
    }
    assert!(found > 50 && none > 50, "{found} found, {none} none");
}
