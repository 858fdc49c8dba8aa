//! The elevators' merges behind a real `RequestQueue`, in the kernel's order of steps: what
//! the driver is handed once the queue's one driver tag frees.

use blksim_block::elevator::ElvParams;
use blksim_block::testing::{Bench, FakeDrv};
use blksim_block::{Op, QueueLimits, RequestQueue};
use blksim_core::Ns;

const MS: Ns = 1_000_000;

/// A queue of one driver tag under `elevator`, with `nomerges`; every request takes 1 ms.
fn bench(elevator: &str, nomerges: u8, bios: usize) -> (Bench, FakeDrv) {
    let lim = QueueLimits {
        nomerges,
        ..QueueLimits::default()
    };
    let p = ElvParams {
        nr_requests: lim.nr_requests,
        queue_depth: 1,
        rotational: false,
        erase_block_bytes: None,
        seed: 1,
    };
    let elv = blksim_sched::make_elevator_with_limits(elevator, &p, &lim)
        .unwrap()
        .unwrap();
    let mut rng = blksim_core::Rng::from_seed(1);
    let q = RequestQueue::new(lim, Some(elv), 1, 1, 1, &mut rng);
    (Bench::new(q, bios), FakeDrv::fixed(1, 1, MS))
}

/// The sizes of the requests the driver saw, in sectors, in order.
fn seen(drv: &FakeDrv) -> Vec<u32> {
    drv.seen.iter().map(|s| s.3).collect()
}

/// A bio that fills the gap between two queued requests merges into the first, which then
/// absorbs the second (`attempt_back_merge`). `attempt_merge` adds the second's data before
/// `elv_merge_requests` re-files the first in the merge hash, so the hash knows the merged
/// request by its new end: a later bio starting there still back-merges, after another
/// request has become `last_merge`. (With an elevator, `blk_mq_submit_bio` runs the queue
/// asynchronously, so every bio submitted at the same instant is queued before the first
/// dispatch.)
#[test]
fn a_request_merged_twice_is_found_at_its_new_end() {
    for elevator in ["mq-deadline", "bfq"] {
        // (sector, sectors) of 4 KiB writes, in submission order.
        let plan: [(u64, u32); 6] = [
            (0, 8),   // A
            (16, 8),  // C
            (8, 8),   // fills A..C: A back-merges it, then absorbs C: A = [0, 24)
            (500, 8), // D
            (508, 8), // back-merges into D, which becomes last_merge
            (24, 8),  // starts at A's end: found through the merge hash
        ];
        let (mut b, mut drv) = bench(elevator, 0, plan.len());
        for (i, &(sector, nr)) in plan.iter().enumerate() {
            let bio = Bench::bio(i as u64, Op::Write, 0, sector, nr, 0);
            b.submit(&mut drv, bio, 0);
        }
        b.finish(&mut drv);
        let mut sizes = seen(&drv);
        sizes.sort();
        assert_eq!(sizes, [16, 32], "{elevator}: {:?}", drv.seen);
        assert_eq!(b.q.stats.rq_merges, 1, "{elevator}");
    }
}

/// A plug flushes W0, W1000, W8 (plug merging tries only the last request, W1000). The
/// elevator takes the list a request at a time, each first trying an insert merge
/// (`dd_insert_request`, `bfq_insert_request` → `blk_mq_sched_try_insert_merge`), so W8
/// appends to W0, inserted just before it: the driver sees two requests. W0, the first
/// request inserted, is `last_merge`, the one-hit cache `elv_attempt_insert_merge` still
/// tries with `nomerges=1`; `nomerges=2` turns every merge off.
#[test]
fn a_plugged_list_merges_into_its_own_earlier_requests() {
    for elevator in ["mq-deadline", "bfq"] {
        for (nomerges, want) in [(0, &[8, 16][..]), (1, &[8, 16]), (2, &[8, 8, 8])] {
            let (mut b, mut drv) = bench(elevator, nomerges, 3);
            b.q.start_plug(0);
            for (i, sector) in [0, 1000, 8].into_iter().enumerate() {
                let bio = Bench::bio(i as u64, Op::Write, 0, sector, 8, 0);
                b.submit(&mut drv, bio, 0);
            }
            let mut t = 0;
            b.q.finish_plug(&mut b.cpus, 0, &mut drv, &mut t, &mut b.out);
            b.settle(&mut drv, 0);
            b.finish(&mut drv);
            let mut sizes = seen(&drv);
            sizes.sort();
            assert_eq!(
                sizes, want,
                "{elevator} nomerges={nomerges}: {:?}",
                drv.seen
            );
        }
    }
}
