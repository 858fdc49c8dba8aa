//! Behavioural tests of the fio I/O generator against fio's algorithms.

use blksim_core::Rng;
use blksim_job::{
    BsSpec, BsSplit, Ddir, IoEngine, JobSpec, RandomDistribution, RwPattern, SizeOrPct, Zone,
};
use blksim_workload::{hash_u64, workload_seeds, IoGen, IoU, Region, Zipf};

const K: u64 = 1024;
const M: u64 = 1024 * 1024;

fn spec(rw: RwPattern) -> JobSpec {
    JobSpec {
        name: "t".into(),
        rw,
        ..JobSpec::default()
    }
}

fn region(start: u64, len: u64, dev: u64) -> Region {
    Region {
        start,
        run_start: start,
        len,
        bytes: len,
        device_bytes: dev,
    }
}

fn gen(s: &JobSpec, r: Region) -> IoGen {
    IoGen::new(s, r, &workload_seeds(s, 1, 0))
}

fn all(g: &mut IoGen, cap: usize) -> Vec<IoU> {
    let mut v = Vec::new();
    while let Some(u) = g.next() {
        v.push(u);
        assert!(v.len() <= cap, "generator did not terminate");
    }
    v
}

fn take(g: &mut IoGen, n: usize) -> Vec<IoU> {
    (0..n).map(|_| g.next().expect("ended early")).collect()
}

#[test]
fn sequential_offsets_stop_at_region_end() {
    let s = spec(RwPattern::Read);
    let mut g = gen(&s, region(64 * K, M, 16 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 256);
    for (i, u) in v.iter().enumerate() {
        assert_eq!(
            *u,
            IoU {
                ddir: Ddir::Read,
                offset: 64 * K + i as u64 * 4 * K,
                len: 4 * K
            }
        );
    }
    assert_eq!(g.issued_bytes(Ddir::Read), M);
    assert_eq!(g.issued_bytes(Ddir::Write), 0);
    assert_eq!(g.next(), None);
}

#[test]
fn io_size_larger_than_size_wraps() {
    let mut s = spec(RwPattern::Write);
    s.io_size = Some(2 * M + 512 * K);
    let mut g = gen(&s, region(0, M, 16 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 640);
    assert_eq!(v[256].offset, 0);
    assert_eq!(v[639].offset, 127 * 4 * K);
    assert_eq!(g.passes(), 3);
}

#[test]
fn time_based_sequential_wraps_forever() {
    let mut s = spec(RwPattern::Read);
    s.time_based = true;
    let mut g = gen(&s, region(M, 64 * K, 16 * M));
    let v = take(&mut g, 100);
    for (i, u) in v.iter().enumerate() {
        assert_eq!(u.offset, M + (i as u64 % 16) * 4 * K);
    }
}

#[test]
fn loops_repeat_the_region() {
    let mut s = spec(RwPattern::Read);
    s.loops = 3;
    let mut g = gen(&s, region(0, 256 * K, 16 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 3 * 64);
    assert_eq!(v[64].offset, 0);
    assert_eq!(v[128].offset, 0);
}

#[test]
fn write_with_skip_leaves_holes() {
    // rw=write:4k, bs=4k: 4k written, 4k skipped. The job ends when the next offset passes
    // the region; the holes are not filled (no io_size given).
    let mut s = spec(RwPattern::Write);
    s.rw_seq_skip = 4 * K as i64;
    let mut g = gen(&s, region(0, M, 4 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 128);
    for (i, u) in v.iter().enumerate() {
        assert_eq!(u.offset, i as u64 * 8 * K);
        assert_eq!(u.ddir, Ddir::Write);
    }
}

#[test]
fn read_backwards_with_negative_skip() {
    // rw=read:-8k, bs=4k: after the first block fio wraps to the end and walks backwards.
    let mut s = spec(RwPattern::Read);
    s.rw_seq_skip = -8 * (K as i64);
    let mut g = gen(&s, region(0, M, 4 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 256);
    assert_eq!(v[0].offset, 0);
    assert_eq!(v[1].offset, M - 8 * K);
    for w in v[1..].windows(2) {
        assert_eq!(w[1].offset + 4 * K, w[0].offset, "not backwards: {:?}", w);
    }
}

/// A job of `size` at `offset` on a 64 MiB device, resolved as blksim-sim does, with fio's null
/// engine or a block-device engine (psync).
fn resolved(s: &JobSpec, null_engine: bool) -> (JobSpec, Region) {
    let mut s = s.clone();
    s.ioengine = if null_engine {
        IoEngine::Null
    } else {
        IoEngine::Sync("psync")
    };
    let r = Region::resolve(&s, 0, 64 * M).unwrap();
    (s, r)
}

#[test]
fn null_engine_file_ends_at_the_region_end() {
    // filesetup.c: the null engine has no get_file_size hook, so get_file_sizes sets
    // real_file_size = size / nr_files and setup_files raises it to file_offset + io_size.
    let mut s = spec(RwPattern::Read);
    s.size = Some(SizeOrPct::Bytes(M));
    s.offset = SizeOrPct::Bytes(64 * K);
    assert_eq!(resolved(&s, true).1, region(64 * K, M, 64 * K + M));
    assert_eq!(resolved(&s, false).1, region(64 * K, M, 64 * M));
}

#[test]
fn read_with_skip_wraps_at_the_null_engine_file_end() {
    // rw=read:4k, bs=4k, size=1m. io_u.c get_next_seq_offset adds the skip to the last
    // position; at the end of the file (pos >= real_file_size) it wraps to the start, and
    // do_io keeps going until io_issue_bytes_exceeded (size bytes issued). fio 3.33's iolog
    // (fio --name=x --ioengine=null --size=1m --bs=4k --rw=read:4k --write_iolog=...) reads
    // 0, 8192, ..., 1040384, then 0, 8192, ... again: 256 reads in one open of the file.
    let mut s = spec(RwPattern::Read);
    s.size = Some(SizeOrPct::Bytes(M));
    s.rw_seq_skip = 4 * K as i64;
    let (s_null, r) = resolved(&s, true);
    let mut g = gen(&s_null, r);
    let null_v = all(&mut g, 10_000);
    assert_eq!(null_v.len(), 256);
    for (i, u) in null_v.iter().enumerate() {
        let want = IoU {
            ddir: Ddir::Read,
            offset: (i as u64 % 128) * 8 * K,
            len: 4 * K,
        };
        assert_eq!(*u, want, "i={i}");
    }
    assert_eq!(g.issued_bytes(Ddir::Read), M);
    assert_eq!(g.passes(), 1, "the wrap is inside the pass, not a new one");

    // On a block device real_file_size is the device's: the offset after 1016k is 1024k,
    // get_next_offset refuses it (>= io_size), the file is done and keep_running stops
    // (fio_files_done, no io_size). fio 3.33 with --ioengine=psync or libaio on a 16 MiB loop
    // device: 128 reads, the last at 1040384.
    let (s_dev, r) = resolved(&s, false);
    let v = all(&mut gen(&s_dev, r), 10_000);
    assert_eq!(v.len(), 128);
    assert_eq!(v.last().unwrap().offset, 1016 * K);

    // rw_sequencer only matters for random patterns: rw=read:4k sets ddir_seq_add and leaves
    // ddir_seq_nr at 1 (options.c str_rw_cb), so every I/O is an rw_seq hit.
    let mut s_ident = s_null.clone();
    s_ident.rw_sequencer_identical = true;
    let (s_ident, r) = resolved(&s_ident, true);
    assert_eq!(all(&mut gen(&s_ident, r), 10_000), null_v);
}

#[test]
fn null_engine_region_with_offset_stops_like_fio() {
    // get_next_seq_offset compares a relative position with the absolute real_file_size.
    // With offset=64k the position after the last block (1024k) is still below
    // file_offset + io_size (1088k), so it is not wrapped and get_next_offset refuses it:
    // fio 3.33 (--ioengine=null --size=1m --offset=64k --bs=4k --rw=read:4k) reads 128.
    let mut s = spec(RwPattern::Read);
    s.size = Some(SizeOrPct::Bytes(M));
    s.offset = SizeOrPct::Bytes(64 * K);
    s.rw_seq_skip = 4 * K as i64;
    let (s, r) = resolved(&s, true);
    let v = all(&mut gen(&s, r), 10_000);
    assert_eq!(v.len(), 128);
    assert_eq!(v.last().unwrap().offset, 64 * K + 1016 * K);
}

#[test]
fn null_engine_block_past_the_file_end_is_not_issued() {
    // size=1028k, bs=8k, rw=read. fill_io_u refuses an I/O that ends past real_file_size.
    // The null engine's file ends at 1028k: fio 3.33 reads 128 blocks (1 MiB). A block device
    // is larger, the block at 1024k starts inside the region and is issued: 129 (psync on a
    // loop device).
    let mut s = spec(RwPattern::Read);
    s.size = Some(SizeOrPct::Bytes(1028 * K));
    s.bs[0] = BsSpec {
        min: 8 * K,
        max: 8 * K,
        split: Vec::new(),
    };
    for (null, n) in [(true, 128), (false, 129)] {
        let (s, r) = resolved(&s, null);
        assert_eq!(all(&mut gen(&s, r), 10_000).len(), n, "null engine: {null}");
    }
}

#[test]
fn randread_map_covers_every_block_once_per_pass() {
    let mut s = spec(RwPattern::RandRead);
    s.io_size = Some(3 * 4 * M);
    let nblocks = (4 * M / (4 * K)) as usize;
    let mut g = gen(&s, region(8 * M, 4 * M, 64 * M));
    assert!(g.uses_random_map());
    let v = all(&mut g, 100_000);
    assert_eq!(v.len(), 3 * nblocks);
    for pass in v.chunks(nblocks) {
        let mut seen = vec![false; nblocks];
        for u in pass {
            assert_eq!(u.len, 4 * K);
            let b = ((u.offset - 8 * M) / (4 * K)) as usize;
            assert!(!seen[b], "block {b} repeated within a pass");
            seen[b] = true;
        }
        assert!(seen.iter().all(|&x| x));
    }
    // randrepeat=1: fio re-seeds at each pass (clear_io_state), so the passes repeat.
    assert_eq!(v[..nblocks], v[nblocks..2 * nblocks]);
    // not simply sequential
    assert!(
        v[..nblocks]
            .windows(2)
            .filter(|w| w[1].offset == w[0].offset + 4 * K)
            .count()
            < nblocks / 10
    );
}

#[test]
fn time_based_random_map_starts_a_new_pass_when_full() {
    let mut s = spec(RwPattern::RandWrite);
    s.time_based = true;
    let mut g = gen(&s, region(0, 256 * K, 64 * M));
    let v = take(&mut g, 64 * 5 + 10);
    for pass in v.chunks(64).take(5) {
        let mut offs: Vec<u64> = pass.iter().map(|u| u.offset).collect();
        offs.sort_unstable();
        assert_eq!(offs, (0..64).map(|i| i * 4 * K).collect::<Vec<_>>());
    }
}

#[test]
fn randread_without_randrepeat_passes_differ() {
    let mut s = spec(RwPattern::RandRead);
    s.io_size = Some(2 * M);
    s.randrepeat = false;
    let mut g = gen(&s, region(0, M, 64 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 512);
    assert_ne!(v[..256], v[256..]);
}

#[test]
fn norandommap_produces_repeats() {
    let mut s = spec(RwPattern::RandRead);
    s.norandommap = true;
    let mut g = gen(&s, region(0, 4 * M, 64 * M));
    assert!(!g.uses_random_map());
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 1024);
    let mut seen = std::collections::HashSet::new();
    let repeats = v.iter().filter(|u| !seen.insert(u.offset)).count();
    // Birthday bound: ~1024/e distinct misses; expect hundreds of repeats.
    assert!(repeats > 200, "repeats={repeats}");
}

#[test]
fn blockalign_turns_off_the_map_and_aligns() {
    let mut s = spec(RwPattern::RandRead);
    s.blockalign = [Some(8 * K), Some(8 * K), Some(8 * K)];
    let mut g = gen(&s, region(0, 4 * M, 64 * M));
    assert!(!g.uses_random_map());
    for u in take(&mut g, 500) {
        assert_eq!(u.offset % (8 * K), 0);
    }
    // blockalign equal to bs keeps the map (fio only complains when it differs)
    s.blockalign = [Some(4 * K); 3];
    assert!(gen(&s, region(0, 4 * M, 64 * M)).uses_random_map());
}

#[test]
fn rwmixread_70_gives_70_percent_reads() {
    let mut s = spec(RwPattern::RandRw);
    s.rwmixread = 70;
    s.time_based = true;
    let mut g = gen(&s, region(0, 64 * M, 64 * M));
    let n = 100_000;
    let v = take(&mut g, n);
    let reads = v.iter().filter(|u| u.ddir == Ddir::Read).count() as f64 / n as f64;
    assert!((reads - 0.70).abs() < 0.005, "read fraction {reads}");
    assert!(v.iter().any(|u| u.ddir == Ddir::Write));
    // and the mix is interleaved, not blocky
    let switches = v.windows(2).filter(|w| w[0].ddir != w[1].ddir).count() as f64 / n as f64;
    assert!(
        (switches - 2.0 * 0.7 * 0.3).abs() < 0.02,
        "switch rate {switches}"
    );
}

#[test]
fn sequential_rw_mix_keeps_per_direction_positions() {
    let mut s = spec(RwPattern::ReadWrite);
    s.rwmixread = 50;
    let mut g = gen(&s, region(0, M, 16 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.iter().map(|u| u.len).sum::<u64>(), M);
    for d in [Ddir::Read, Ddir::Write] {
        let offs: Vec<u64> = v.iter().filter(|u| u.ddir == d).map(|u| u.offset).collect();
        for (i, o) in offs.iter().enumerate() {
            assert_eq!(*o, i as u64 * 4 * K);
        }
    }
}

#[test]
fn bssplit_frequencies() {
    let mut s = spec(RwPattern::RandRead);
    s.norandommap = true;
    s.time_based = true;
    let split = vec![
        BsSplit { bs: 4 * K, pct: 10 },
        BsSplit {
            bs: 64 * K,
            pct: 50,
        },
        BsSplit {
            bs: 32 * K,
            pct: 40,
        },
    ];
    s.bs[0] = BsSpec {
        min: 4 * K,
        max: 64 * K,
        split,
    };
    let mut g = gen(&s, region(0, 256 * M, 256 * M));
    let n = 100_000;
    let v = take(&mut g, n);
    for (bs, pct) in [(4 * K, 0.10), (32 * K, 0.40), (64 * K, 0.50)] {
        let f = v.iter().filter(|u| u.len == bs).count() as f64 / n as f64;
        assert!((f - pct).abs() < 0.01, "bs {bs}: {f} vs {pct}");
    }
    assert!(v
        .iter()
        .all(|u| u.offset % (4 * K) == 0 && u.offset + u.len <= 256 * M));
}

#[test]
fn bsrange_sizes_are_multiples_of_min() {
    let mut s = spec(RwPattern::RandWrite);
    s.norandommap = true;
    s.time_based = true;
    s.bs[1] = BsSpec {
        min: 4 * K,
        max: 16 * K,
        split: vec![],
    };
    let mut g = gen(&s, region(0, 64 * M, 64 * M));
    let v = take(&mut g, 20_000);
    let mut counts = [0usize; 5];
    for u in &v {
        assert_eq!(u.ddir, Ddir::Write);
        assert!(u.len >= 4 * K && u.len <= 16 * K);
        assert_eq!(u.len % (4 * K), 0);
        counts[(u.len / (4 * K)) as usize] += 1;
    }
    // fio: minbs + maxbs*U, aligned down and clamped: 4k/8k/12k/16k equally likely.
    for c in &counts[1..] {
        assert!((*c as f64 / 20_000.0 - 0.25).abs() < 0.015, "{counts:?}");
    }
    // bs_unaligned allows any size
    s.bs_unaligned = true;
    let mut g = gen(&s, region(0, 64 * M, 64 * M));
    assert!(take(&mut g, 1000).iter().any(|u| u.len % (4 * K) != 0));
}

#[test]
fn bsrange_with_map_is_trimmed_to_free_blocks() {
    let mut s = spec(RwPattern::RandRead);
    s.bs[0] = BsSpec {
        min: 4 * K,
        max: 64 * K,
        split: vec![],
    };
    let mut g = gen(&s, region(0, 4 * M, 64 * M));
    let v = all(&mut g, 100_000);
    let mut seen = vec![false; 1024];
    for u in &v {
        for b in u.offset / (4 * K)..(u.offset + u.len) / (4 * K) {
            assert!(!seen[b as usize], "block {b} read twice in one pass");
            seen[b as usize] = true;
        }
    }
    assert!(seen.iter().all(|&x| x));
    assert_eq!(g.issued_bytes(Ddir::Read), 4 * M);
}

/// Exact CDF of fio's `zipf_next` rank (1-based `val`) at `k`, derived from its three
/// branches: u < 1/ζn → 1; u < (1+2^-θ)/ζn → 2; else 1 + ⌊n·(ηu − η + 1)^α⌋.
fn fio_zipf_cdf(n: u64, theta: f64, k: u64) -> f64 {
    let zetan: f64 = (1..=n).map(|i| (1.0 / i as f64).powf(theta)).sum();
    let zeta2 = 1.0 + 0.5f64.powf(theta);
    let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
    let u1 = 1.0 / zetan;
    let u2 = zeta2 / zetan;
    let g =
        |k: u64| (((k as f64 / n as f64).powf(1.0 - theta) - (1.0 - eta)) / eta).clamp(0.0, 1.0);
    if k == 1 {
        u1 + (g(1) - u2).max(0.0)
    } else {
        u2.max(g(k))
    }
}

#[test]
fn zipf_ranks_follow_fio_algorithm_and_zipf_law() {
    let n = 10_000u64;
    let theta = 1.2;
    let mut rng = Rng::from_seed(7);
    let mut z = Zipf::zipf(n, theta, -1.0, &mut rng);
    z.disable_hash = true;
    let draws = 1_000_000;
    let mut counts = vec![0u64; n as usize + 1];
    for _ in 0..draws {
        counts[z.zipf_rank(&mut rng).min(n) as usize] += 1;
    }
    let hn: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
    let mut cum = 0u64;
    for k in 1..=n {
        cum += counts[k as usize - 1];
        if [1, 2, 3, 5, 10, 30, 100, 300, 1000, 3000, 9000].contains(&k) {
            let emp = cum as f64 / draws as f64;
            let exact = fio_zipf_cdf(n, theta, k);
            assert!((emp - exact).abs() < 0.003, "k={k}: {emp} vs fio {exact}");
            // and it is a zipf law: close to H(k,θ)/H(n,θ)
            let law = (1..=k).map(|i| (i as f64).powf(-theta)).sum::<f64>() / hn;
            assert!((emp - law).abs() < 0.025, "k={k}: {emp} vs zipf {law}");
        }
    }
    // ranks 1 and 2 are exact in fio's algorithm
    assert!((counts[0] as f64 / draws as f64 - 1.0 / hn).abs() < 0.002);
    assert!((counts[1] as f64 / draws as f64 - 0.5f64.powf(theta) / hn).abs() < 0.002);
}

#[test]
fn zipf_offsets_are_hashed_ranks() {
    // End to end: rank → __hash_u64 → + rand_off (center 0 ⇒ 0) → % nranges → × bs.
    let n = 4096u64;
    let theta = 1.2;
    let mut s = spec(RwPattern::RandRead);
    s.random_distribution = RandomDistribution::Zipf { theta, center: 0.0 };
    s.time_based = true;
    let mut g = gen(&s, region(0, n * 4 * K, 64 * M));
    assert!(
        !g.uses_random_map(),
        "non-uniform distributions disable the map"
    );
    let draws = 300_000;
    let mut hits = vec![0u64; n as usize];
    for u in take(&mut g, draws) {
        hits[(u.offset / (4 * K)) as usize] += 1;
    }
    let mut expect = vec![0f64; n as usize];
    let mut prev = 0.0;
    for k in 1..=n {
        let c = fio_zipf_cdf(n, theta, k);
        expect[(hash_u64(k - 1) % n) as usize] += c - prev;
        prev = c;
    }
    // The hottest blocks are where the hash puts ranks 1, 2, 3...
    for r in 0..3u64 {
        let b = (hash_u64(r) % n) as usize;
        let emp = hits[b] as f64 / draws as f64;
        assert!(
            (emp - expect[b]).abs() < 0.004,
            "rank {r} block {b}: {emp} vs {}",
            expect[b]
        );
    }
    // Chi-square over blocks with enough expected hits (rest pooled).
    let (mut chi, mut dof, mut pool_e, mut pool_o) = (0.0, 0usize, 0.0, 0.0);
    for b in 0..n as usize {
        let e = expect[b] * draws as f64;
        if e >= 20.0 {
            chi += (hits[b] as f64 - e).powi(2) / e;
            dof += 1;
        } else {
            pool_e += e;
            pool_o += hits[b] as f64;
        }
    }
    chi += (pool_o - pool_e).powi(2) / pool_e;
    // mean = dof, sd = sqrt(2·dof): allow 5 sd
    let limit = dof as f64 + 5.0 * (2.0 * dof as f64).sqrt();
    assert!(chi < limit, "chi2={chi} dof={dof}");
}

#[test]
fn pareto_h_0_2_gives_80_20() {
    let n = 10_000u64;
    let mut rng = Rng::from_seed(3);
    let mut p = Zipf::pareto(n, 0.2, -1.0, &mut rng);
    p.disable_hash = true;
    let draws = 1_000_000;
    let mut counts = vec![0u64; n as usize];
    for _ in 0..draws {
        counts[p.pareto_rank(&mut rng) as usize] += 1;
    }
    // fio: rank = ⌊(n−1)·u^(ln h/ln(1−h))⌋, so P(rank < m) = (m/(n−1))^(ln(1−h)/ln h).
    let e = (0.8f64).ln() / (0.2f64).ln();
    for m in [1u64, 10, 100, 2000, 5000] {
        let emp = counts[..m as usize].iter().sum::<u64>() as f64 / draws as f64;
        let exact = (m as f64 / (n - 1) as f64).powf(e).min(1.0);
        assert!((emp - exact).abs() < 0.003, "m={m}: {emp} vs {exact}");
    }
    let top20 = counts[..2000].iter().sum::<u64>() as f64 / draws as f64;
    assert!((top20 - 0.80).abs() < 0.01, "top 20% got {top20}");

    // End to end (hashed): the 20% hottest blocks take ~80% of the I/O.
    let mut s = spec(RwPattern::RandRead);
    s.random_distribution = RandomDistribution::Pareto {
        h: 0.2,
        center: -1.0,
    };
    s.time_based = true;
    let nb = 5000u64;
    let mut g = gen(&s, region(0, nb * 4 * K, 64 * M));
    let draws = 200_000;
    let mut hits = vec![0u64; nb as usize];
    for u in take(&mut g, draws) {
        hits[(u.offset / (4 * K)) as usize] += 1;
    }
    hits.sort_unstable_by(|a, b| b.cmp(a));
    let top = hits[..(nb / 5) as usize].iter().sum::<u64>() as f64 / draws as f64;
    assert!((0.79..0.86).contains(&top), "hashed top-20% share {top}");
}

#[test]
fn normal_distribution_concentrates() {
    let mut s = spec(RwPattern::RandRead);
    s.random_distribution = RandomDistribution::Normal {
        dev_pct: 0.0,
        center: -1.0,
    };
    s.time_based = true;
    let nb = 10_000u64;
    let mut g = gen(&s, region(0, nb * 4 * K, 64 * M));
    let draws = 100_000;
    let mut hits = vec![0u64; nb as usize];
    for u in take(&mut g, draws) {
        hits[(u.offset / (4 * K)) as usize] += 1;
    }
    // Irwin–Hall(12)/12 has sd n/12: ±1 sd (~2n/12 = 16.7% of blocks) holds ~68%.
    hits.sort_unstable_by(|a, b| b.cmp(a));
    let top = hits[..(nb / 6) as usize].iter().sum::<u64>() as f64 / draws as f64;
    assert!((0.64..0.72).contains(&top), "top 1/6 share {top}");
}

#[test]
fn zoned_hit_fractions() {
    let mut s = spec(RwPattern::RandRead);
    s.norandommap = true;
    s.time_based = true;
    let zones = vec![
        Zone {
            access_pct: 60,
            size_pct: 10,
        },
        Zone {
            access_pct: 30,
            size_pct: 20,
        },
        Zone {
            access_pct: 10,
            size_pct: 70,
        },
    ];
    s.random_distribution = RandomDistribution::Zoned {
        zones: [zones.clone(), zones.clone(), zones],
    };
    let len = 100 * M;
    let mut g = gen(&s, region(M, len, 128 * M));
    let n = 100_000;
    let mut z = [0usize; 3];
    for u in take(&mut g, n) {
        let rel = u.offset - M;
        assert!(rel + u.len <= len);
        z[if rel < len / 10 {
            0
        } else if rel < 3 * len / 10 {
            1
        } else {
            2
        }] += 1;
    }
    for (i, p) in [0.6, 0.3, 0.1].iter().enumerate() {
        let f = z[i] as f64 / n as f64;
        assert!((f - p).abs() < 0.01, "zone {i}: {f} vs {p}");
    }
}

#[test]
fn identical_runs_identical_and_jobs_differ() {
    let mut s = spec(RwPattern::RandRw);
    s.bs[0] = BsSpec {
        min: 4 * K,
        max: 32 * K,
        split: vec![],
    };
    s.io_size = Some(8 * M);
    let r = region(0, 4 * M, 64 * M);
    let a = all(&mut IoGen::new(&s, r, &workload_seeds(&s, 3, 0)), 100_000);
    let b = all(&mut IoGen::new(&s, r, &workload_seeds(&s, 3, 0)), 100_000);
    let c = all(&mut IoGen::new(&s, r, &workload_seeds(&s, 4, 0)), 100_000);
    assert_eq!(a, b);
    assert_ne!(a, c);
    let d = all(&mut IoGen::new(&s, r, &workload_seeds(&s, 3, 1)), 100_000);
    assert_ne!(a, d);
}

#[test]
fn number_ios_and_io_size_terminate() {
    let mut s = spec(RwPattern::RandRead);
    s.number_ios = 100;
    assert_eq!(
        all(&mut gen(&s, region(0, 64 * M, 64 * M)), 10_000).len(),
        100
    );
    s.loops = 2;
    assert_eq!(
        all(&mut gen(&s, region(0, 64 * M, 64 * M)), 10_000).len(),
        200
    );

    let mut s = spec(RwPattern::Read);
    s.io_size = Some(64 * K);
    let v = all(&mut gen(&s, region(0, 64 * M, 64 * M)), 10_000);
    assert_eq!(v.len(), 16);

    let mut s = spec(RwPattern::RandWrite);
    s.io_size = Some(100 * K);
    s.bs[1] = BsSpec::fixed(8 * K);
    let mut g = gen(&s, region(0, 64 * M, 64 * M));
    // fio issues while issued < io_size, so the last I/O may overshoot
    assert_eq!(all(&mut g, 10_000).len(), 13);
    assert_eq!(g.issued_bytes(Ddir::Write), 104 * K);
}

#[test]
fn trimwrite_trims_then_writes_same_block() {
    for rw in [RwPattern::TrimWrite, RwPattern::RandTrimWrite] {
        let s = spec(rw);
        let mut g = gen(&s, region(0, M, 64 * M));
        let v = all(&mut g, 10_000);
        assert_eq!(v.len(), 512, "{rw:?}");
        for p in v.chunks(2) {
            assert_eq!(p[0].ddir, Ddir::Trim);
            assert_eq!(p[1].ddir, Ddir::Write);
            assert_eq!((p[0].offset, p[0].len), (p[1].offset, p[1].len));
        }
        assert_eq!(g.issued_bytes(Ddir::Trim), M);
        assert_eq!(g.issued_bytes(Ddir::Write), M);
    }
}

#[test]
fn randread_n_runs_sequentially_between_random_offsets() {
    // io_u.c get_next_offset: a new random offset when --td->ddir_seq_nr reaches 0, which
    // init.c add_job starts at 1, so the first I/O is random, then 7 continue sequentially
    // (get_next_block without rw_seq: get_next_seq_offset). fio 3.33's iolog for
    // --ioengine=null --size=1m --bs=4k --rw=randread:8 begins (in blocks)
    // 15..22, 189..196, 215..222, 120..127: runs of 8, each starting at a random block.
    let mut s = spec(RwPattern::RandRead);
    s.rw_nr_random = 8;
    let mut g = gen(&s, region(0, 64 * M, 64 * M));
    let v = take(&mut g, 64);
    for i in 1..64 {
        if i % 8 != 0 {
            assert_eq!(v[i].offset, v[i - 1].offset + 4 * K, "i={i}");
        }
    }
    let jumps = (8..64)
        .step_by(8)
        .filter(|&i| v[i].offset != v[i - 1].offset + 4 * K)
        .count();
    assert!(jumps >= 6, "jumps={jumps}");
    assert_ne!(v[0].offset, 0, "the first offset is random");

    // rw_sequencer=identical: the 7 between repeat the random offset (RW_SEQ_IDENT).
    s.rw_sequencer_identical = true;
    let mut g = gen(&s, region(0, 64 * M, 64 * M));
    let v = take(&mut g, 32);
    for i in 1..32 {
        if i % 8 != 0 {
            assert_eq!(v[i].offset, v[i - 1].offset, "i={i}");
        }
    }
    assert_ne!(v[0].offset, 0, "the first offset is random");
}

#[test]
fn randread_n_transfers_size_on_the_null_engine() {
    // rw=randread:8, size=1m, bs=4k. The sequential I/Os are IO_U_F_BUSY_OK (not marked in
    // the random map), so only one block in 8 fills the map and it never runs out. When a
    // run reaches the end of the null engine's file (last_pos >= real_file_size),
    // get_next_seq_offset fails and get_next_block takes a random block instead; the job
    // ends at io_issue_bytes_exceeded. fio 3.33: 256 reads, with runs such as
    // 252 253 254 255 206 207 208 209 (blocks) in its iolog.
    let mut s = spec(RwPattern::RandRead);
    s.size = Some(SizeOrPct::Bytes(M));
    s.rw_nr_random = 8;
    let (s_null, r) = resolved(&s, true);
    let mut g = gen(&s_null, r);
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 256);
    assert_eq!(g.issued_bytes(Ddir::Read), M);
    let mut wrapped = 0;
    for i in 1..256 {
        if i % 8 != 0 && v[i].offset != v[i - 1].offset + 4 * K {
            // only where the previous I/O was the file's last block
            assert_eq!(v[i - 1].offset, M - 4 * K, "i={i}");
            wrapped += 1;
        }
    }
    assert!(wrapped > 0, "no run reached the end of the file");

    // On a block device the position after the region's last block is below
    // real_file_size, so get_next_offset refuses it (>= io_size) and the job ends there
    // (keep_running: fio_files_done without io_size). fio 3.33 with psync on a 16 MiB loop
    // device: 204 reads, the last at block 255.
    let (s_dev, r) = resolved(&s, false);
    let v = all(&mut gen(&s_dev, r), 10_000);
    assert!(v.len() < 256, "{}", v.len());
    assert_eq!(v.last().unwrap().offset, M - 4 * K);
}

#[test]
fn percentage_random_mixes_sequential() {
    let mut s = spec(RwPattern::RandRead);
    s.percentage_random = [0, 100, 100];
    let mut g = gen(&s, region(0, M, 64 * M));
    let v = all(&mut g, 10_000);
    assert_eq!(v.len(), 256);
    for (i, u) in v.iter().enumerate() {
        assert_eq!(u.offset, i as u64 * 4 * K);
    }
    s.percentage_random = [30, 100, 100];
    s.time_based = true;
    s.norandommap = true;
    let mut g = gen(&s, region(0, 256 * M, 256 * M));
    let v = take(&mut g, 20_000);
    let seq = v
        .windows(2)
        .filter(|w| w[1].offset == w[0].offset + 4 * K)
        .count() as f64
        / 19_999.0;
    assert!((seq - 0.70).abs() < 0.02, "sequential share {seq}");
}

#[test]
fn region_resolution() {
    let mut s = spec(RwPattern::Read);
    s.size = Some(SizeOrPct::Bytes(M));
    s.offset = SizeOrPct::Bytes(4 * M);
    s.offset_increment = 2 * M;
    assert_eq!(
        Region::resolve(&s, 0, 64 * M).unwrap(),
        region(4 * M, M, 64 * M)
    );
    assert_eq!(
        Region::resolve(&s, 3, 64 * M).unwrap(),
        region(10 * M, M, 64 * M)
    );
    // clamped at the device end
    assert_eq!(
        Region::resolve(&s, 0, 4 * M + 512 * K).unwrap().len,
        512 * K
    );
    // Past the device with a byte size: fio's setup_files sizes the file from size= and
    // does not check the offset; the job has nothing to do. Without a size it is checked,
    // and fio fails that job alone.
    assert_eq!(Region::resolve(&s, 30, 64 * M).unwrap().len, 0);
    let mut unsized_job = s.clone();
    unsized_job.size = None;
    assert!(Region::resolve(&unsized_job, 30, 64 * M).is_err());
    assert!(matches!(
        Region::resolve_in_run(&unsized_job, 30, 64 * M),
        Ok(Err(f)) if f.fio_lines == ["t: you need to specify valid offset="] && f.errno == 0
    ));
    // percentages: offset aligned up, size of the device aligned down
    s.offset = SizeOrPct::PctMilli(10_000); // 10%
    s.size = Some(SizeOrPct::PctMilli(50_000));
    s.offset_increment = 0;
    let r = Region::resolve(&s, 0, 10 * M + 5).unwrap();
    assert_eq!(r.start % (4 * K), 0);
    assert!(r.start >= M);
    assert_eq!(r.len % (4 * K), 0);
    // offset_increment=N%: clone × N% of the device, aligned up
    s.offset = SizeOrPct::Bytes(0);
    s.offset_increment_pct = Some(12_500); // 12.5%
    let r = Region::resolve(&s, 3, 10 * M + 5).unwrap();
    // fio: increment = pct × size / 100 (truncated), then × clone, then aligned up
    assert_eq!(r.start, ((10 * M + 5) / 8 * 3).div_ceil(4 * K) * 4 * K);
    s.offset_increment_pct = None;
    // no size: rest of the device
    s.size = None;
    s.offset = SizeOrPct::Bytes(M);
    assert_eq!(Region::resolve(&s, 0, 8 * M).unwrap().len, 7 * M);
    // nrfiles × filesize, each used from the offset on (`f->io_size = filesize - offset`)
    s.filesize = Some(2 * M);
    s.nrfiles = 3;
    assert_eq!(Region::resolve(&s, 0, 8 * M).unwrap().len, 3 * M);
    s.offset = SizeOrPct::Bytes(0);
    assert_eq!(Region::resolve(&s, 0, 8 * M).unwrap().len, 6 * M);
    // an offset past the file is refused; one at its end leaves it empty, and the job
    // runs with nothing to do, as in fio
    s.offset = SizeOrPct::Bytes(3 * M);
    assert!(Region::resolve(&s, 0, 8 * M).is_err());
    s.offset = SizeOrPct::Bytes(2 * M);
    let r = Region::resolve(&s, 0, 8 * M).unwrap();
    assert_eq!(r.len, 0);
    assert_eq!(gen(&s, r).count(), 0);
    s.offset = SizeOrPct::Bytes(0);
    // too small
    s.filesize = Some(K);
    s.nrfiles = 1;
    assert!(Region::resolve(&s, 0, 8 * M).is_err());
}

#[test]
fn invalid_distribution_parameters_are_errors() {
    let mut s = spec(RwPattern::RandRead);
    s.random_distribution = RandomDistribution::Zipf {
        theta: 1.0,
        center: -1.0,
    };
    assert!(IoGen::try_new(&s, region(0, M, M), &workload_seeds(&s, 1, 0)).is_err());
    s.random_distribution = RandomDistribution::Pareto {
        h: 1.5,
        center: -1.0,
    };
    assert!(IoGen::try_new(&s, region(0, M, M), &workload_seeds(&s, 1, 0)).is_err());
}

/// `offset_align` (fio's `get_start_offset`): a percentage offset or increment is aligned up
/// to it instead of the minimum block size; a byte offset is left alone; 0 with a percentage
/// is refused (fio 3.33 divides by it: SIGFPE). The expected starts are fio 3.33's on its
/// null engine at `size=1m offset=13%`, a percentage of the 1 MiB the engine's file is sized
/// from, whatever the device (its `write_iolog`: 139264 unset, 196608 at 64k, 138240 at 3k).
#[test]
fn offset_align_aligns_percentage_offsets() {
    let mut s = spec(RwPattern::Read);
    s.ioengine = blksim_job::IoEngine::Null;
    s.size = Some(SizeOrPct::Bytes(M));
    s.offset = SizeOrPct::PctMilli(13_000);
    let start = |s: &JobSpec| Region::resolve(s, 0, 64 * M).map(|r| r.start);
    assert_eq!(start(&s).unwrap(), 139_264);
    s.offset_align = Some(64 * K);
    assert_eq!(start(&s).unwrap(), 196_608);
    s.offset_align = Some(3 * K);
    assert_eq!(start(&s).unwrap(), 138_240);
    s.offset_align = Some(0);
    let e = start(&s).unwrap_err().to_string();
    assert!(e.contains("offset_align=0"), "{e}");
    // A byte offset is not aligned, whatever offset_align says.
    s.offset = SizeOrPct::Bytes(12_345);
    assert_eq!(start(&s).unwrap(), 12_345);
    s.offset_align = Some(64 * K);
    assert_eq!(start(&s).unwrap(), 12_345);
}
