//! The random numbers of a job are fio 3.33's: the same job file makes the real fio (Debian's,
//! on its null engine) and blksim issue the same I/Os, direction, offset and size, in the
//! same order, as each writes them with `write_iolog`. Covered: uniform random offsets with
//! the random map, rwmix, bsrange, bssplit (its order), percentage_random, `rw=randrw:N`,
//! trims and (rand)trimwrite, zoned distributions, strided zones, tausworthe64, lfsr,
//! `allrandrepeat`, `randseed` with and without `randrepeat`, loops that repeat their pass
//! (and with `randseed` go on with the stream), `io_size` past `size` on a sync and an async
//! engine, syncs, `filesize` with `size`, jobs 1 to 26 in one file (each its own thread
//! number); `randrepeat=0` with `allrandrepeat=1` is fio-deterministic too. Clones
//! (`numjobs`) append to one shared iolog in fio, each its own block in whatever order they
//! finish, so their test compares the I/Os sorted.
//! Then fio 3.33's seeding rules, which decide what an option changes: with `randrepeat=1`
//! `randseed` changes block sizes but not offsets; with `randrepeat=0` it changes offsets.

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fiorand-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("fio")).unwrap();
    std::fs::create_dir_all(d.join("sim")).unwrap();
    d
}

/// Run `job` (its text) with the real fio in `d/fio` and with blksim in `d/sim`; blksim's
/// standard error.
fn run_both(d: &Path, job: &str, sim_args: &[&str]) -> String {
    std::fs::write(d.join("job.fio"), job).unwrap();
    // fio appends to an existing write_iolog file: start both from none.
    for sub in ["fio", "sim"] {
        for e in std::fs::read_dir(d.join(sub)).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
    }
    let o = Command::new("fio")
        .args(["../job.fio", "--output=/dev/null"])
        .current_dir(d.join("fio"))
        .output()
        .expect("fio (scripts/test.sh installs Debian's fio)");
    assert!(
        o.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args([
            "run",
            "../job.fio",
            "--device=null_blk",
            "--output=/dev/null",
        ])
        .args(sim_args)
        .current_dir(d.join("sim"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "blksim: {stderr}");
    stderr
}

/// The (action, offset, length) lines of an iolog, and its syncs (whose offset and length
/// mean nothing: fio logs the last I/O's offset there).
fn ios(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.get(2) {
                Some(&a @ ("read" | "write" | "trim")) => Some(format!("{a} {} {}", f[3], f[4])),
                Some(&a @ ("sync" | "datasync")) => Some(a.to_string()),
                _ => None,
            }
        })
        .collect()
}

/// Equal I/O lists, or a message naming the first that differs.
fn same(sim: &[String], real: &[String], what: &str) {
    if let Some(i) = (0..sim.len().max(real.len())).find(|&i| sim.get(i) != real.get(i)) {
        panic!(
            "{what}: I/O {i} of {} (fio) / {} (blksim) differs: fio {:?}, blksim {:?}",
            real.len(),
            sim.len(),
            real.get(i),
            sim.get(i)
        );
    }
}

/// The iolog `log` of both tools in `d`: fio's has `n` I/Os when given, and blksim's is the
/// same list. Returns fio's count.
fn compare(d: &Path, log: &str, n: Option<usize>) -> usize {
    let (real, sim) = (ios(&d.join("fio").join(log)), ios(&d.join("sim").join(log)));
    if let Some(n) = n {
        assert_eq!(real.len(), n, "{log}");
    }
    same(&sim, &real, log);
    real.len()
}

const GLOBAL: &str = "[global]\nioengine=null\nsize=16m\nfilename=/dev/null\nnumber_ios=2000\n";

#[test]
fn blksim_issues_the_ios_fio_issues() {
    let d = dir("same");
    let jobs = [
        ("uniform", "rw=randread\n"),
        (
            "mix",
            "rw=randrw\nrwmixread=70\nbsrange=4k-64k\nrandseed=1234\n",
        ),
        ("split", "rw=randwrite\nbssplit=4k/50:16k/30:64k/20\n"),
        (
            "perc",
            "rw=randread\nrandrepeat=0\nrandseed=99\npercentage_random=60\n",
        ),
        (
            "all64",
            "rw=randread\nallrandrepeat=1\nbs=8k\nrandom_generator=tausworthe64\n",
        ),
        (
            "allr0",
            "rw=randrw\nrandrepeat=0\nallrandrepeat=1\nbsrange=4k-16k\n",
        ),
        (
            "zoned",
            "rw=randread\nrandom_distribution=zoned:50/10:30/20:20/70\n",
        ),
        ("loops", "rw=randwrite\nsize=1m\nloops=3\n"),
        (
            "seqmix",
            "rw=randrw:4\nbs=4k,8k\nverify=crc32c\ndo_verify=0\n",
        ),
        ("trim", "rw=randtrim\nbsrange=4k-16k\n"),
        // randseed turns randrepeat off after seeding (`fixup_options`), so a new pass goes
        // on with the stream instead of repeating the first pass.
        (
            "seedloops",
            "rw=randwrite\nsize=1m\nloops=3\nrandseed=1234\n",
        ),
        // A sync engine's pass ends only when the file is done: with norandommap never,
        // so io_size runs as one pass; with the map the failed draw that ends a pass is
        // not drawn again.
        (
            "syncnomap",
            "rw=randread\nsize=1m\nio_size=8m\nnorandommap\n",
        ),
        (
            "syncmap",
            "rw=randread\nsize=1m\nio_size=8m\nrandseed=1234\n",
        ),
        // fio 3.33's get_next_seq_offset has no io_size wrap for mixed jobs: a direction at
        // the end fails and the pass ends.
        ("rwpass", "rw=rw\nsize=1m\nio_size=4m\n"),
        // A failed sequential fill leaves IO_U_F_BUSY_OK on its io_u, so the next pass's
        // first random block is not marked in the map.
        ("busyok", "rw=randread:2\nbs=3k\nsize=1m\nloops=3\n"),
        // Near the region's end an unaligned range draws thousands of sizes until one fits.
        (
            "unaligned",
            "rw=randwrite\nbsrange=1k-2k\nbs_unaligned=1\nsize=2m\nallrandrepeat=1\n",
        ),
        // `get_rw_ddir` picks a due sync before the offset: the pass whose next offset
        // fails still syncs after its last writes, the next pass (`reset_io_counters`
        // clears `last_was_sync`) syncs first, and `end_fsync` is an io_u in the log.
        ("syncpass", "rw=randwrite\nsize=1m\nfsync=2\nloops=3\n"),
        (
            "endfsync",
            "rw=write\nbs=3k\nsize=1m\nfdatasync=3\nend_fsync=1\nloops=2\n",
        ),
        ("endfsync2", "rw=write\nsize=4m\nfsync=3\nend_fsync=1\n"),
        // trimwrite picks a trim when the last trim and write started together; its write
        // takes its own sequential offset and size, so different sizes drift apart.
        ("twsizes", "rw=trimwrite\nbs=4k,8k,4k\nsize=8m\n"),
        // bs_is_seq_rand: the read sizes for the sequential I/Os of rw=randrw:3, the write
        // sizes for its random ones, whatever the direction.
        (
            "seqrand",
            "rw=randrw:3\nbsrange=1k-8k,16k-32k\nbs_is_seq_rand=1\n",
        ),
        // randtrimwrite's write counts down rw=...:N as its trim does.
        ("rtwseq", "rw=randtrimwrite:4\nsize=2m\n"),
        // zonemode=strided: zonesize bytes in each zone of zonerange, then zoneskip on.
        (
            "strided",
            "rw=randread\nsize=8m\nzonemode=strided\nzonesize=256k\nzonerange=64k\nzoneskip=64k\nloops=2\n",
        ),
        (
            "stridedseq",
            "rw=rw\nsize=8m\nzonemode=strided\nzonesize=64k\nzoneskip=128k\n",
        ),
        // bssplit entries with equal shares keep the job's order (fio's qsort by share is
        // stable), and blank shares split what is left by integer division.
        ("splitorder", "rw=randrw\nbssplit=64k/12:1k/76:16k/12\n"),
        ("splitblank", "rw=randwrite\nbssplit=4k/:8k/:16k/\n"),
        // A zone smaller than a block still draws, and gives the zone's first block.
        (
            "zonesmall",
            "rw=randwrite\nbs=64k\nsize=512k\nio_size=128m\nrandom_distribution=zoned:90/10:10/90\n",
        ),
    ];
    let mut text = GLOBAL.to_string();
    for (name, body) in jobs {
        text += &format!("[{name}]\n{body}write_iolog={name}.log\n");
    }
    run_both(&d, &text, &[]);
    for (name, _) in jobs {
        let n = compare(&d, &format!("{name}.log"), None);
        assert!(n >= 700, "{name}: {n} I/Os");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The (direction, length, offset) of each I/O in a `write_lat_log` clat log written with
/// `log_offset=1`, in completion order. fio's own `write_iolog` logs an io_u again each time
/// its null engine answers FIO_Q_BUSY; the latency log has each once.
fn completions(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(", ").collect();
            format!("{} {} {}", f[2], f[3], f[4])
        })
        .collect()
}

/// `verify_backlog`: fio reads back logged writes while it writes (`check_get_verify`), a
/// batch whenever the log holds a multiple of the backlog and the last io_u reaped was not
/// a read, the first piece first (issue order with a random map, offset order without),
/// not before its write was reaped. On the null engine at `iodepth` > 1, a requeued io_u
/// passes the check again and counts in the batch; a sync goes before the next draw.
#[test]
fn verify_backlog_reads_back_while_writing() {
    let d = dir("backlog");
    let jobs = [
        ("list", "rw=randwrite\nverify_backlog=4\n"),
        ("sorted", "rw=write\nverify_backlog=5\n"),
        (
            "overlap",
            "rw=randwrite\nbsrange=4k-16k\nnorandommap\nverify_backlog=4\n",
        ),
        (
            "batch",
            "rw=randwrite\nverify_backlog=3\nverify_backlog_batch=6\nloops=2\n",
        ),
        ("depth", "rw=randwrite\nverify_backlog=4\niodepth=8\n"),
        (
            "syncs",
            "rw=randwrite\nbs=8k\nverify_backlog=2\nverify_backlog_batch=1\niodepth=2\nfsync=3\n",
        ),
        (
            "mixed",
            "rw=randrw\nbsrange=4k-16k\nverify_backlog=2\niodepth=8\nnorandommap\n",
        ),
    ];
    let mut text = "[global]\nioengine=null\nsize=256k\nfilename=/dev/null\nverify=crc32c\n\
                    log_offset=1\n"
        .to_string();
    for (name, body) in jobs {
        text += &format!("[{name}]\n{body}write_lat_log={name}\n");
    }
    run_both(&d, &text, &[]);
    for (i, (name, _)) in jobs.iter().enumerate() {
        // fio numbers a job's logs by the job's place in the file.
        let log = format!("{name}_clat.{}.log", i + 1);
        let real = completions(&d.join("fio").join(&log));
        let sim = completions(&d.join("sim").join(&log));
        same(&sim, &real, name);
        // Reads of the log come between the writes, not only after them.
        let first_write_after_read = real
            .iter()
            .skip_while(|l| !l.starts_with("0 "))
            .any(|l| l.starts_with("1 "));
        assert!(first_write_after_read, "{name}: {real:?}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn what_randseed_and_randrepeat_change() {
    let d = dir("seed");
    // Job o draws offsets only (fixed size), job s sizes only (sequential).
    let job = |extra: &str| {
        format!(
            "{GLOBAL}{extra}[o]\nrw=randread\nbs=4k\nwrite_iolog=o.log\n[s]\nrw=read\nbsrange=4k-64k\nwrite_iolog=s.log\n"
        )
    };
    let run = |extra: &str, sim_args: &[&str]| {
        run_both(&d, &job(extra), sim_args);
        let mut v = Vec::new();
        for log in ["o.log", "s.log"] {
            let (real, sim) = (ios(&d.join("fio").join(log)), ios(&d.join("sim").join(log)));
            if sim_args.is_empty() {
                same(&sim, &real, &format!("{extra:?} {log}"));
            }
            v.push(sim);
        }
        v
    };
    let base = run("", &[]);
    // randrepeat=1 (the default): randseed re-seeds the sizes, not the offsets.
    let seeded = run("randseed=1234\n", &[]);
    assert_eq!(seeded[0], base[0], "offsets");
    assert_ne!(seeded[1], base[1], "sizes");
    // randrepeat=0 with a randseed: the offsets follow it too.
    let free = run("randrepeat=0\nrandseed=1234\n", &[]);
    assert_ne!(free[0], base[0]);
    assert_eq!(free[1], seeded[1]);
    // blksim's --seed away from its default samples another workload, repeatably.
    let other = run("", &["--seed=7"]);
    assert_ne!(other[0], base[0]);
    assert_ne!(other[1], base[1]);
    assert_eq!(run("", &["--seed=7"]), other);
    let _ = std::fs::remove_dir_all(&d);
}

/// An async engine's pass ends once `size` bytes were queued (`do_io` counts `bytes_issued`
/// only for FIO_Q_QUEUED), so with `norandommap` and `io_size` past `size` each `size` is a
/// pass of its own and re-seeds (`clear_io_state`), where a sync engine runs on.
#[test]
fn an_async_pass_ends_at_size() {
    let d = dir("aio");
    let job = "[aionomap]\nioengine=libaio\niodepth=4\nfilename=aio.dat\nrw=randread\nsize=1m\n\
               io_size=4m\nnorandommap\nwrite_iolog=a.log\n";
    run_both(&d, job, &[]);
    let (real, sim) = (ios(&d.join("fio/a.log")), ios(&d.join("sim/a.log")));
    assert_eq!(real.len(), 1024);
    same(&sim, &real, "aionomap");
    assert_eq!(real[..256], real[256..512], "each pass repeats the first");
    let _ = std::fs::remove_dir_all(&d);
}

/// Clones: fio's `add_job` makes them counting down (`td_new->subjob_number = numjobs`), so
/// the second thread of a `numjobs=3` job is subjob 2 and starts at `2 × offset_increment`;
/// and a clone is copied from a parent whose `randseed` already turned `randrepeat` off, so
/// its offsets follow `randseed`. fio's clones append to one iolog, each its own block in
/// whatever order they finish: the lists are compared sorted.
#[test]
fn clones_take_fios_subjob_numbers_and_seeds() {
    let d = dir("clones");
    let job = "[global]\nioengine=null\nfilename=x.dat\nsize=1m\nnumber_ios=64\n\
               [inc]\nrw=randwrite\nnumjobs=3\noffset_increment=2m\nwrite_iolog=inc.log\n\
               [seed]\nrw=randread\nrandseed=5\nnumjobs=2\noffset_increment=1m\nwrite_iolog=seed.log\n";
    run_both(&d, job, &[]);
    for log in ["inc.log", "seed.log"] {
        let (mut real, mut sim) = (ios(&d.join("fio").join(log)), ios(&d.join("sim").join(log)));
        real.sort();
        sim.sort();
        assert!(real.len() >= 128, "{log}: {} I/Os", real.len());
        same(&sim, &real, log);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// With `filesize`, `size` no longer sizes the file (`setup_files`): a percentage scales it,
/// a byte count is the bytes of a pass, and the file is used from the job's offset on. (On
/// a regular file name: fio sizes /dev/null, a character device, from `size` alone.)
#[test]
fn filesize_and_size() {
    let d = dir("filesize");
    let job = "[global]\nioengine=null\nnumber_ios=2000\n\
               [pct]\nfilename=pct.dat\nrw=randwrite\nfilesize=16m\nsize=25%\nwrite_iolog=pct.log\n\
               [bytes]\nfilename=bytes.dat\nrw=randread\nfilesize=16m\nsize=4m\noffset=1m\nwrite_iolog=bytes.log\n";
    run_both(&d, job, &[]);
    for log in ["pct.log", "bytes.log"] {
        compare(&d, log, Some(1024));
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// fio's `axmap_set_nr` does not clip a run to the map: an I/O that starts in the last word
/// of a strided zone's random map goes on setting the word's tail, and fio sizes the I/O by
/// the bits it could set there, not by the map's end.
#[test]
fn a_random_map_run_past_its_end() {
    let d = dir("axmap-tail");
    let job = "[zt]\nioengine=null\nfilename=zt.dat\nrw=randread\nbssplit=1k/50:64k/50\n\
               size=64m\nzonemode=strided\nzonesize=192k\nzonerange=96k\nnumber_ios=2000\n\
               write_iolog=zt.log\n";
    run_both(&d, job, &[]);
    let n = compare(&d, "zt.log", None);
    assert!(n >= 20, "{n} I/Os");
    let _ = std::fs::remove_dir_all(&d);
}

/// `filename` names the job's files and overrides `nrfiles`: with a `filesize`, fio 3.33
/// sizes one file for `filename=a nrfiles=3` and two for `filename=a:b`.
#[test]
fn filename_overrides_nrfiles() {
    let d = dir("nrfiles");
    let job = "[global]\nioengine=null\nrw=read\nbs=4k\nfilesize=1m\nsize=50%\n\
               [one]\nfilename=one.dat\nnrfiles=3\nwrite_iolog=one.log\n\
               [two]\nfilename=a.dat:b.dat\nwrite_iolog=two.log\n";
    run_both(&d, job, &[]);
    for (log, n) in [("one.log", 128), ("two.log", 256)] {
        let (real, sim) = (ios(&d.join("fio").join(log)), ios(&d.join("sim").join(log)));
        assert_eq!((real.len(), sim.len()), (n, n), "{log}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `random_generator=lfsr` (fio's `lib/lfsr.c`): every block once per pass in the register's
/// order, no random map and no draws from the offset stream, whatever the size, with loops
/// (each pass restarts the register from the job's block seed), mixed sizes, zones (the
/// register knows no zones: fio 3.33 adds the zone's start to a block of the whole file) and
/// a second job (its own block seed, `FIO_RANDSEED * thread_number`).
#[test]
fn lfsr_gives_fios_block_order() {
    let d = dir("lfsr");
    let job = "[global]\nioengine=null\nrandom_generator=lfsr\nbs=4k\n\
               [big]\nfilename=big.dat\nrw=randread\nsize=64m\nwrite_iolog=big.log\n\
               [loops]\nfilename=loops.dat\nrw=randwrite\nsize=3m\nloops=3\nwrite_iolog=loops.log\n\
               [mixed]\nfilename=mixed.dat\nrw=randrw\nsize=1m\nbsrange=4k-16k\nwrite_iolog=mixed.log\n\
               [zoned]\nfilename=zoned.dat\nrw=randread\nsize=1m\nrandom_distribution=zoned:50/10:50/90\nwrite_iolog=zoned.log\n";
    run_both(&d, job, &[]);
    for (log, n) in [
        ("big.log", Some(16384)),
        ("loops.log", Some(2304)),
        ("mixed.log", None),
        ("zoned.log", None),
    ] {
        assert!(compare(&d, log, n) >= 10, "{log}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A zone range longer than the region: fio's random map spans the range, so a block drawn
/// past the region is free there, fails at the region's end and ends the pass; it does not
/// move to the next free block (fio 3.33 issues one write here).
#[test]
fn a_zone_range_past_the_region_ends_the_pass_on_a_block_past_it() {
    let d = dir("zone-past");
    let job = "[zp]\nioengine=null\nfilename=zp.dat\nrw=randwrite\nbsrange=1k-4k\nbs_unaligned=1\n\
               size=256k\nzonemode=strided\nzonesize=128k\nzonerange=512k\nwrite_iolog=zp.log\n\
               [zq]\nioengine=null\nfilename=zq.dat\nrw=randread\nbs=4k\nsize=1m\n\
               zonemode=strided\nzonesize=64k\nzonerange=3m\nwrite_iolog=zq.log\n";
    run_both(&d, job, &[]);
    for log in ["zp.log", "zq.log"] {
        assert!(compare(&d, log, None) > 0, "{log}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// An LFSR whose seed is its register's forbidden all-ones state: fio 3.33 prints "failed
/// initializing LFSR" and that job issues nothing while the others run (the third job's
/// block seed, `3 * FIO_RANDSEED`, ends in binary 111: all ones for a 4-block file). With
/// another `--seed` the seeds are blksim's own, and such a job runs.
#[test]
fn an_lfsr_that_cannot_start_fails_its_job_only() {
    let d = dir("lfsr-fail");
    let job = "[global]\nioengine=null\nrandom_generator=lfsr\nrw=randread\nbs=4k\nsize=16k\n\
               [a]\nfilename=a.dat\nwrite_iolog=a.log\n[b]\nfilename=b.dat\nwrite_iolog=b.log\n\
               [c]\nfilename=c.dat\nwrite_iolog=c.log\n";
    let stderr = run_both(&d, job, &[]);
    for (log, n) in [("a.log", 4), ("b.log", 4), ("c.log", 0)] {
        compare(&d, log, Some(n));
    }
    assert!(stderr.contains("fio: failed initializing LFSR"), "{stderr}");
    run_both(&d, job, &["--seed=3"]);
    assert_eq!(ios(&d.join("sim").join("c.log")).len(), 4);
    // An LFSR block counts 4 KiB blocks and the writes align to 1 GiB: the offset's product
    // wraps past 2^64 as in fio (this debug build checks for overflow), and neither tool
    // issues a write.
    let job = "[w]\nioengine=null\nfilename=w.dat\nrw=randwrite\nbs=4k,1g\n\
               random_generator=lfsr\nsize=2g\nzonemode=strided\nzonesize=1g\n\
               zonerange=4611686018427387904\nwrite_iolog=w.log\n";
    run_both(&d, job, &[]);
    compare(&d, "w.log", None);
    let _ = std::fs::remove_dir_all(&d);
}

/// fio's null engine sizes its files from `size` (it has nothing to measure): a percentage
/// offset is of `size / nrfiles`, `/dev/null` ends at `size`, a regular file grows to where
/// its I/O ends, and with `filesize` and a percentage `size` the file has no end, so a
/// sequential read past the region fails and ends the pass instead of drawing a random block.
/// The simulated device's size plays no part.
#[test]
fn the_null_engine_sizes_files_from_size() {
    let d = dir("null-sizes");
    let job = "[global]\nioengine=null\nbs=4k\n\
               [pct]\nfilename=pct.dat\nrw=read\nsize=1m\noffset=50%\nwrite_iolog=pct.log\n\
               [devnull]\nfilename=/dev/null\nrw=read\nsize=1m\noffset=512k\nwrite_iolog=devnull.log\n\
               [fs]\nfilename=fs.dat\nrw=read\nsize=1m\nfilesize=2m\noffset=25%\nwrite_iolog=fs.log\n\
               [seq]\nfilename=seq.dat\nrw=randrw\nbs=4k,1k,12k\nsize=25%\n\
               percentage_random=20\nfilesize=2m\nwrite_iolog=seq.log\n";
    run_both(&d, job, &[]);
    for (log, n) in [
        ("pct.log", Some(256)),
        ("devnull.log", Some(128)),
        ("fs.log", Some(256)),
        ("seq.log", None),
    ] {
        compare(&d, log, n);
    }
    // Later `get_start_offset`s see the grown file: `io_u_fits` measures from 10 % of 2 MiB
    // while the I/O started at 10 % of 512 KiB, so a size drawn for the file's last block
    // fits there, runs past the file and ends the pass (fio 3.33: 28 I/Os, not 290). The
    // second job's LFSR draws that block 29th.
    let job = "[d]\nioengine=null\nfilename=d.dat\nrw=read\nsize=64k\n\
               [j]\nioengine=null\nfilename=j.dat\nrw=randrw\nbsrange=1k-2k\nbs_unaligned=1\n\
               size=512k\nrandom_generator=lfsr\noffset=10%\nfilesize=2m\nwrite_iolog=j.log\n\
               [l]\nioengine=null\nfilename=l.dat\nrw=read\nsize=512k\nfilesize=2m\noffset=10%\n\
               loops=2\nwrite_iolog=l.log\n";
    run_both(&d, job, &[]);
    for (log, n) in [("j.log", 28), ("l.log", 256)] {
        compare(&d, log, Some(n));
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A `zoned_abs` zone that ends past the file is found when a draw lands in it, as in fio
/// 3.33 (`__get_next_rand_offset_zoned_abs`): "fio: zoned_abs sizes exceed file size", the
/// offset fails and the pass ends after the I/Os it drew before (three here; one pass, so the
/// job ends), while the other jobs run. blksim refused such a job file before running anything.
#[test]
fn a_zoned_abs_zone_past_the_file_ends_the_job_at_its_first_draw() {
    let d = dir("zoned-abs-past");
    let job = "[j0]\nioengine=null\nfilename=j0.dat\nrw=randwrite\nbs=16k,4k\nsize=512k\n\
               random_distribution=zoned_abs:60/512k:40/1m\nwrite_iolog=j0.log\n\
               [j1]\nioengine=null\nfilename=j1.dat\nrw=randread\nbs=4k\nsize=256k\n\
               write_iolog=j1.log\n";
    let stderr = run_both(&d, job, &[]);
    assert!(
        stderr.contains("fio: zoned_abs sizes exceed file size"),
        "{stderr}"
    );
    compare(&d, "j0.log", Some(3));
    compare(&d, "j1.log", Some(64));
    let _ = std::fs::remove_dir_all(&d);
}
