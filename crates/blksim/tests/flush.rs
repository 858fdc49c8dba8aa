//! The kernel's flush path against the kernel itself: fio's fsync/fdatasync/end_fsync/O_SYNC
//! on a device with a volatile cache and no FUA, as the machine's kernel issued them to a loop
//! device (recorded in `data/kernel-flush-counts.tsv` by `scripts/kernel-flush-counts.sh`),
//! and on blksim's null_blk declared the same way (memory_backed, cache_size, fua=0).

mod common;

fn run_json(args: &[&str]) -> serde_json::Value {
    common::blksim_json(None, args)
}

struct Counts {
    write_ios: u64,
    flush_ios: u64,
    fio_writes: u64,
    fio_syncs: u64,
    flush_requests: u64,
    merged: u64,
}

fn counts(v: &serde_json::Value) -> Counts {
    let jobs = v["jobs"].as_array().unwrap();
    let b = &v["blksim"];
    Counts {
        write_ios: v["disk_util"][0]["write_ios"].as_u64().unwrap(),
        flush_ios: b["diskstats"]["flush_ios"].as_u64().unwrap(),
        fio_writes: jobs
            .iter()
            .map(|j| j["write"]["total_ios"].as_u64().unwrap())
            .sum(),
        fio_syncs: jobs
            .iter()
            .map(|j| j["sync"]["total_ios"].as_u64().unwrap())
            .sum(),
        flush_requests: b["flush"]["flush_requests"].as_u64().unwrap(),
        merged: b["flush"]["merged"].as_u64().unwrap(),
    }
}

/// A null_blk with what a loop device over a file declares: a write-back cache, no FUA.
const LOOP_LIKE: [&str; 4] = [
    "--device=null_blk",
    "--set=memory_backed=1",
    "--set=cache_size=64",
    "--set=fua=0",
];

#[test]
fn fsync_and_o_sync_issue_what_the_kernel_issues() {
    let data = include_str!("data/kernel-flush-counts.tsv");
    let mut exact = 0;
    for line in data
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        let (args, kernel) = (f[0], &f[1..]);
        let k: Vec<u64> = kernel.iter().map(|x| x.parse().unwrap()).collect();
        let mut a: Vec<&str> = vec!["run"];
        a.extend(LOOP_LIKE);
        a.extend(["--name=f", "--bs=4k", "--size=16m"]);
        a.extend(args.split_whitespace());
        let c = counts(&run_json(&a));
        // fio's counts and the write ios (data writes plus the empty PREFLUSH write of each
        // fsync, which the kernel accounts as a write when its sequence ends) follow from the
        // job alone while one flush can be outstanding at a time.
        let concurrent = args.contains("io_uring") || args.contains("numjobs");
        assert_eq!(c.fio_writes, k[2], "{args}: fio writes");
        // Every PREFLUSH/POSTFLUSH step is served by exactly one flush request: its own, or
        // one another request started (flush merging, blk_flush_complete_seq).
        assert_eq!(c.flush_ios, c.flush_requests, "{args}");
        let o_sync = args
            .split_whitespace()
            .any(|a| a == "--sync=1" || a == "--sync=dsync");
        let steps = if o_sync {
            // O_SYNC: each write's FUA becomes a POSTFLUSH; synchronous engines add the
            // flush of generic_write_sync.
            c.fio_writes * if args.contains("libaio") { 1 } else { 2 }
        } else {
            c.write_ios - c.fio_writes
        };
        assert_eq!(c.flush_requests + c.merged, steps, "{args}: flush steps");
        if concurrent {
            // Several syncs outstanding at once: how many merge depends on timing. An
            // asynchronous fsync (io_uring) still in flight lets fio 3.33 start another
            // (`should_fsync` looks at the last *completed* io_u), so there are more syncs
            // than writes / fsync; the kernel's 4 jobs issue one each after each write.
            assert_eq!(c.write_ios, c.fio_writes + c.fio_syncs, "{args}");
            assert!(c.merged <= steps, "{args}");
            if args.contains("io_uring") {
                assert!(
                    c.fio_syncs > 64 / 4 && c.fio_syncs < 64,
                    "{args}: {}",
                    c.fio_syncs
                );
            } else {
                assert_eq!(c.fio_syncs, k[3], "{args}");
            }
            continue;
        }
        assert_eq!(c.write_ios, k[0], "{args}: write ios");
        assert_eq!(c.fio_syncs, k[3], "{args}: fio syncs");
        if args.contains("libaio --iodepth=4") {
            // Up to four POSTFLUSHes wait together: between one flush per write and one per
            // four (the kernel issued 25 to 36 over several runs).
            assert!((25..=50).contains(&c.flush_ios), "{args}: {}", c.flush_ios);
            assert!((25..=50).contains(&k[1]), "{args}: kernel {}", k[1]);
        } else {
            assert_eq!(c.flush_ios, k[1], "{args}: flush ios");
            exact += 1;
        }
    }
    assert!(exact >= 6, "only {exact} exact rows");
}

/// On an eMMC that declares FUA (reliable writes, `MMC_BLK_REL_WR`) a FUA write reaches the
/// card as a reliable write and needs no flush; with `MMC_QUIRK_AVOID_REL_WRITE` the block
/// layer follows it with a flush instead; a card without cache or reliable writes gets no
/// flush at all.
#[test]
fn emmc_fua_reliable_writes_and_flushes() {
    let run = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "--device=emmc-hbg4a2",
            "--name=f",
            "--rw=randwrite",
            "--bs=4k",
            "--size=16m",
            "--number_ios=50",
            "--ioengine=libaio",
            "--iodepth=4",
        ];
        a.extend_from_slice(extra);
        let v = run_json(&a);
        let d = v["blksim"]["driver_stats"].clone();
        (counts(&v), v["blksim"]["flush"].clone(), d)
    };
    let (c, fl, d) = run(&["--sync=1"]);
    assert_eq!(
        (fl["write_cache"].as_bool(), fl["fua"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(c.flush_ios, 0, "FUA needs no flush on a FUA device");
    assert_eq!(
        d["card_write_through"], 50,
        "every FUA write is a reliable write"
    );
    assert_eq!(d["card_flushes"], 0);
    let (c, fl, d) = run(&["--sync=1", "--set=card.avoid_rel_write=1"]);
    assert_eq!(fl["fua"].as_bool(), Some(false));
    assert_eq!(d["card_write_through"], 0, "no reliable writes");
    assert_eq!(
        c.flush_requests + c.merged,
        50,
        "one POSTFLUSH step per write"
    );
    assert_eq!(d["card_flushes"], c.flush_ios);
    // fsync: the card flushes its cache once per flush request.
    let (c, _, d) = run(&["--fsync=5"]);
    assert_eq!(c.fio_syncs, 9);
    assert_eq!(d["card_flushes"], c.flush_ios);
    // No cache and no reliable writes: no write cache, so fsync never reaches the card.
    let (c, fl, d) = run(&["--fsync=5", "--set=card.cache_kib=0", "--set=card.rel_wr=0"]);
    assert_eq!(fl["write_cache"].as_bool(), Some(false));
    assert_eq!((c.flush_ios, c.fio_syncs), (0, 9));
    assert_eq!(fl["elided"], 9);
    assert_eq!(d["card_flushes"], 0);
    // Flushes are not writes to the device.
    assert_eq!(d["card_writes"], 50);
}
