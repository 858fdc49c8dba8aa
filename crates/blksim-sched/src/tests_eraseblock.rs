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

/// An elevator over 8 KiB (16-sector) erase blocks with `neighbours` neighbour blocks.
fn small_blocks(neighbours: u64) -> EraseBlock {
    let mut p = params(false);
    p.erase_block_bytes = Some(8 * 1024);
    let mut e = EraseBlock::new(&p);
    e.neighbour_blocks = neighbours;
    e.update_window();
    e
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
        let mut e = small_blocks(rng.below(24));
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

/// Random writes inserted (some at clocks earlier than the last, as the CPU model's
/// per-CPU clocks give), dispatched, and completed out of order (gap reads with their
/// data), with random neighbour counts, gap limits and waits: after every step the plan
/// from what changed (the group, the write released, starved or not, and the timer) is the
/// one a full scan of the held writes gives.
#[test]
fn the_plan_from_what_changed_is_the_full_scans() {
    let data = Integrity::default();
    let (mut formed, mut steps) = (0, 0);
    for seed in 0..60u64 {
        let mut rng = Rng::from_seed(1000 + seed);
        let mut pool = RqPool::new();
        let mut e = small_blocks(rng.below(4));
        e.max_gap_sectors = 1 + rng.below(48);
        e.write_wait_ns = rng.below(3) * NSEC_PER_MSEC;
        e.capacity = 16 * (8 + rng.below(24));
        e.touch_all();
        let mut now: Ns = 0;
        let mut out: Vec<RqId> = Vec::new();
        for _ in 0..400 {
            now += rng.below(400_000);
            match rng.below(8) {
                0..=3 => {
                    // In half the runs now and then longer than a window: such a write
                    // seeds nothing, but locked out or not it decides which write of its
                    // first block seeds.
                    let max = if seed % 2 == 0 && rng.below(4) == 0 {
                        64
                    } else {
                        24
                    };
                    let len = 1 + rng.below(max);
                    let s = rng.below(e.capacity - len);
                    let mut r = Rq::write(s);
                    r.sectors = len as u32;
                    // A context whose CPU's clock is behind the last one's.
                    let at = now.saturating_sub(rng.below(2) * rng.below(3 * NSEC_PER_MSEC));
                    let rq = mk(&mut pool, r, at);
                    e.insert_requests(&mut pool, &[rq], false, at);
                }
                4 | 5 => {
                    if let Some(rq) = e.dispatch_request(&mut pool, now) {
                        out.push(rq);
                    }
                }
                _ if !out.is_empty() => {
                    let rq = out.swap_remove(rng.below(out.len() as u64) as usize);
                    e.completed_request_data(&pool, rq, &data, now);
                    e.completed_request(&pool, rq, now);
                    let mut freed = Vec::new();
                    e.take_released(&mut freed);
                }
                _ => {}
            }
            steps += 1;
            let scan = e.plan_form_scan(&pool);
            formed += scan.is_some() as u32;
            assert_eq!(e.plan_form_known(&pool), scan, "seed {seed}");
            for starved in [false, true] {
                assert_eq!(
                    e.plan_release(&pool, now, starved),
                    e.eligible_since(&pool)
                        .find(|&(rq, since)| if starved {
                            now >= since + e.write_expire_ns
                        } else {
                            now >= since + e.write_wait_ns
                                || !(e.writes_wait() && pool.get(rq).sector != e.last_write_end)
                        })
                        .map(|(rq, _)| rq),
                    "seed {seed}"
                );
            }
            e.refresh(&pool, now);
            assert_eq!(
                e.next_timer_at,
                e.eligible_since(&pool)
                    .map(|(_, since)| since + e.write_wait_ns)
                    .filter(|&t| t > now)
                    .min(),
                "seed {seed}"
            );
        }
    }
    assert!(
        formed > 100,
        "{formed} plans formed a group in {steps} steps"
    );
}

/// Hold `writes` (start, sectors) in order on 8 KiB erase blocks with no neighbours, form the
/// group the plan finds (it must span `first`), and return the next plan's window, checked
/// against the full scan.
fn plan_after_a_group(writes: &[(u64, u32)], first: (u64, u64)) -> Option<(u64, u64)> {
    let mut pool = RqPool::new();
    let mut e = small_blocks(0);
    e.capacity = 16 * 64;
    e.touch_all();
    for &(s, len) in writes {
        let mut r = Rq::write(s);
        r.sectors = len;
        let rq = mk(&mut pool, r, 0);
        e.hold(&pool, rq, 0);
    }
    let w = e.plan_form_known(&pool).expect("a group is worth it");
    assert_eq!((w.start, w.end), first);
    e.form(&mut pool, w, 0);
    let next = e.plan_form_known(&pool);
    assert_eq!(next, e.plan_form_scan(&pool));
    next.map(|w| (w.start, w.end))
}

/// A held write longer than any window shadows the younger writes of its first erase
/// block; a group formed over its tail, further away than a window reaches, locks it out,
/// and the oldest of those younger writes becomes the seed of a group of its own.
#[test]
fn a_group_over_a_long_writes_tail_makes_its_first_blocks_next_write_a_seed() {
    // Blocks 0..=3, then two writes in block 0 and two in block 2.
    let writes = [(0, 64), (2, 2), (8, 2), (34, 2), (40, 2)];
    assert_eq!(plan_after_a_group(&writes, (32, 48)), Some((0, 16)));
}

/// The same, with the long write starting late in its first block and reaching just into
/// the group's: the younger writes before it in that block become seeds too.
#[test]
fn a_group_over_a_writes_tail_reaches_the_writes_before_it_in_its_first_block() {
    // Sectors 10..18 (blocks 0 and 1), then two writes before it in block 0 and two in
    // block 1.
    let writes = [(10, 8), (2, 2), (6, 2), (20, 2), (26, 2)];
    assert_eq!(plan_after_a_group(&writes, (16, 32)), Some((0, 16)));
}
