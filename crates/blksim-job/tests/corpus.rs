//! The repository's own job-file corpus (`tests/jobs/`, see its README): every file parses, the
//! refused ones fail at the listed file, line and option, the parsed jobs mean what the files
//! say, and together the files use every option name, alias and enumerated value of the option
//! table, so an option added to the table without a corpus line fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use blksim_job::*;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/jobs")
}

fn fio_files(sub: &str) -> Vec<PathBuf> {
    let dir = corpus().join(sub);
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .fio files in {}", dir.display());
    files
}

/// Files blksim runs: those fio 3.33 also parses, and `blksim-only/`.
fn accepted_files() -> Vec<PathBuf> {
    let mut v = fio_files("");
    v.extend(fio_files("blksim-only"));
    v
}

/// The environment the corpus expects (tests/jobs/README.md).
fn env(k: &str) -> Option<String> {
    match k {
        "CORPUS_BS" => Some("8k".to_string()),
        "CORPUS_DIR" => Some(corpus().display().to_string()),
        _ => None,
    }
}

fn parse(path: &Path) -> Result<JobSet, ParseError> {
    parse_job_files_with(&[path.to_path_buf()], &env, &Keywords::default())
}

fn load(rel: &str) -> JobSet {
    let p = corpus().join(rel);
    parse(&p).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn job<'a>(set: &'a JobSet, name: &str) -> &'a JobSpec {
    set.jobs
        .iter()
        .find(|j| j.name == name)
        .unwrap_or_else(|| panic!("no job [{name}]"))
}

/// Options refused whatever their value (fio 3.33 fails on them).
const ALWAYS_REFUSED: &[&str] = &["rwmixcycle"];

/// Files in `refused/`, with the line and the option blksim refuses.
const REFUSED: &[(&str, usize, &str)] = &[
    ("bssplit-over-100.fio", 6, "bssplit"),
    ("ioengine-mtd.fio", 6, "ioengine"),
    ("random-distribution-sequence.fio", 8, "random_distribution"),
    ("rwmixcycle-deprecated.fio", 5, "rwmixcycle"),
    ("zonemode-zbd.fio", 5, "zonemode"),
];

#[test]
fn every_corpus_file_parses() {
    let files = accepted_files();
    assert!(files.len() >= 25, "only {} corpus files", files.len());
    for path in &files {
        let fname = path.file_name().unwrap().to_string_lossy().to_string();
        let set = parse(path).unwrap_or_else(|e| panic!("{fname}: {e}"));
        assert!(!set.jobs.is_empty(), "{fname}: no jobs");
        for j in &set.jobs {
            assert!(!j.name.is_empty(), "{fname}: unnamed job");
            assert!(j.origin.contains(&fname), "{fname}: origin {}", j.origin);
        }
    }
}

#[test]
fn refused_files_fail_at_the_listed_line_and_option() {
    let files = fio_files("refused");
    let on_disk: BTreeSet<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    let listed: BTreeSet<String> = REFUSED.iter().map(|r| r.0.to_string()).collect();
    assert_eq!(on_disk, listed, "tests/jobs/refused/ and REFUSED disagree");
    for path in &files {
        let fname = path.file_name().unwrap().to_string_lossy().to_string();
        let (_, line, opt) = REFUSED.iter().find(|r| r.0 == fname).unwrap();
        let e = parse(path).expect_err(&fname);
        assert!(e.file.ends_with(&fname), "{e}");
        assert_eq!(e.line, *line, "{e}");
        assert_eq!(e.option.as_deref(), Some(*opt), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("{}:{line}: ", path.display())),
            "{e}"
        );
        // The refused line really is the option's line in the file.
        let text = std::fs::read_to_string(path).unwrap();
        let l = text.lines().nth(line - 1).unwrap();
        assert!(l.trim_start().starts_with(opt), "{fname}:{line}: {l}");
    }
}

/// `key[=value]` lines of a job file as fio reads them (comments cut at the first `;` or `#`,
/// sections skipped, `include` followed), with the file each came from.
fn option_lines(path: &Path, out: &mut Vec<(String, Option<String>, String)>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for line in text.lines() {
        let t = line.trim();
        let t = t[..t.find([';', '#']).unwrap_or(t.len())].trim();
        if t.is_empty() || t.starts_with('[') {
            continue;
        }
        if let Some(rest) = t.strip_prefix("include") {
            if rest.starts_with(char::is_whitespace) {
                option_lines(&path.parent().unwrap().join(rest.trim()), out);
                continue;
            }
        }
        let (k, v) = match t.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (t, None),
        };
        out.push((
            k.to_string(),
            v,
            path.file_name().unwrap().to_string_lossy().into(),
        ));
    }
}

#[test]
fn corpus_uses_every_option_alias_and_value() {
    let mut lines = Vec::new();
    for f in accepted_files() {
        option_lines(&f, &mut lines);
    }
    // key as written -> files
    let mut keys: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (k, _, f) in &lines {
        assert!(
            find_option(k).is_some(),
            "{f}: '{k}' is not an option of the table"
        );
        keys.entry(k).or_default().insert(f);
    }
    // Options blksim always refuses can only be used in refused/, at their listed line.
    for (f, line, opt) in REFUSED {
        let text = std::fs::read_to_string(corpus().join("refused").join(f)).unwrap();
        let l = text.lines().nth(line - 1).unwrap();
        if l.trim_start().starts_with(&format!("{opt}=")) && ALWAYS_REFUSED.contains(opt) {
            keys.entry(opt).or_default().insert(f);
        }
    }
    let mut missing = Vec::new();
    for o in OPTIONS {
        for name in std::iter::once(&o.name).chain(o.aliases.iter()) {
            if !keys.contains_key(name) {
                missing.push(name.to_string());
            }
        }
        // Each enumerated value, as the value of the option or one of its aliases (the part
        // before ':' for values such as `randread:8` or `zipf:1.2`).
        for (val, _) in o.values {
            let used = lines.iter().any(|(k, v, _)| {
                o.matches(k)
                    && v.as_deref()
                        .is_some_and(|v| v.split(':').next().unwrap().trim() == *val)
            });
            if !used {
                missing.push(format!("{}={val}", o.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no file in tests/jobs/ (outside refused/) uses: {}\nadd a job that does",
        missing.join(", ")
    );
    assert!(keys.len() > OPTIONS.len(), "aliases are counted too");
}

/// Options accepted without a model add a note naming themselves.
#[test]
fn ignored_options_say_so() {
    for (file, support, text) in [
        ("no-meaning.fio", options::Support::NoMeaning, "no meaning"),
        (
            "not-modelled.fio",
            options::Support::NotModelled,
            "not modelled",
        ),
        (
            "blksim-only/newer-and-engine-options.fio",
            options::Support::NoMeaning,
            "no meaning",
        ),
    ] {
        let set = load(file);
        let mut lines = Vec::new();
        option_lines(&corpus().join(file), &mut lines);
        let notes: Vec<&String> = set.jobs.iter().flat_map(|j| &j.notes).collect();
        let mut checked = 0;
        for (k, v, _) in &lines {
            let o = find_option(k).unwrap();
            // zonemode=none and file_service_type=roundrobin are the modelled values.
            if o.support != support || matches!(v.as_deref(), Some("none" | "roundrobin")) {
                continue;
            }
            let want = format!("option '{}' ", o.name);
            assert!(
                notes.iter().any(|n| n.contains(&want) && n.contains(text)),
                "{file}: no note for {k}"
            );
            checked += 1;
        }
        assert!(checked >= 10, "{file}: only {checked} notes checked");
    }
}

#[test]
fn sample_jobs_have_their_meaning() {
    let s = load("null-randread.fio");
    assert_eq!(s.jobs.len(), 1);
    let j = &s.jobs[0];
    assert_eq!(j.name, "randread-null");
    assert_eq!(j.ioengine, IoEngine::Null);
    assert_eq!((j.rw, j.iodepth), (RwPattern::RandRead, 8));
    assert_eq!(j.size, Some(SizeOrPct::Bytes(16 << 20)));
    assert!(j.bs.iter().all(|b| *b == BsSpec::fixed(4096)));
    let g: Vec<(&str, &str)> = s
        .global_options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        g,
        [
            ("ioengine", "null"),
            ("bs", "4k"),
            ("size", "16m"),
            ("iodepth", "8")
        ]
    );
    assert_eq!(j.raw_options, vec![("rw".into(), "randread".into())]);

    let s = load("numjobs-group.fio");
    assert_eq!(s.jobs.len(), 2);
    assert!(s.jobs.iter().all(|j| j.numjobs == 3 && j.group_reporting));
    let sw: Vec<bool> = s.jobs.iter().map(|j| j.stonewall).collect();
    assert_eq!(sw, [false, true]);
    assert_eq!(
        s.global_options.len(),
        6,
        "bare group_reporting is left out, as in fio's JSON"
    );
    assert_eq!(
        s.jobs[1].raw_options,
        vec![("rw".into(), "read".into()), ("bs".into(), "128k".into())]
    );
    assert_eq!(
        (s.jobs[0].rw, s.jobs[1].rw),
        (RwPattern::RandWrite, RwPattern::Read)
    );
    assert_eq!(s.jobs[1].bs[0].min, 128 << 10);

    let s = load("mixed-files.fio");
    let (m, w) = (job(&s, "mixed"), job(&s, "seqwrite"));
    assert_eq!((m.rw, m.rwmixread), (RwPattern::RandRw, 70));
    assert_eq!(m.ioengine, IoEngine::Sync("psync"));
    assert_eq!(m.directory.as_deref(), Some("fio-work"));
    assert!(w.end_fsync && !m.end_fsync);
    assert_eq!((w.bs[1].min, m.bs[1].min), (64 << 10, 4096));

    let s = load("libaio-timed.fio");
    let (rr, mix) = (job(&s, "rr"), job(&s, "rw-mix"));
    assert!(s.jobs.iter().all(|j| j.time_based
        && j.runtime_ns == 20_000_000
        && j.direct
        && j.filename.as_deref() == Some("fiotest.dat")));
    assert_eq!((rr.iodepth, mix.iodepth), (16, 4));
    assert_eq!((rr.rate_iops, mix.rate_iops), ([0; 3], [2000; 3]));
    assert_eq!(mix.effective_depth(), 4);
}

#[test]
fn syntax_files_have_their_meaning() {
    let s = load("syntax-global-scoping.fio");
    let bs: Vec<u64> = s.jobs.iter().map(|j| j.bs[0].min).collect();
    assert_eq!(
        bs,
        [4096, 8192, 16384],
        "a [global] applies to the jobs below it"
    );
    let depth: Vec<u32> = s.jobs.iter().map(|j| j.iodepth).collect();
    assert_eq!(
        depth,
        [1, 2, 4],
        "globals accumulate; the job's own value wins"
    );
    assert!(s.jobs.iter().all(|j| j.ioengine == IoEngine::Null));

    let s = load("syntax-include.fio");
    assert!(s
        .jobs
        .iter()
        .all(|j| j.size == Some(SizeOrPct::Bytes(2 << 20)) && j.ioengine == IoEngine::Null));
    let depth: Vec<u32> = s.jobs.iter().map(|j| j.iodepth).collect();
    assert_eq!(depth, [1, 3]);

    let j = &load("syntax-env.fio").jobs[0];
    assert_eq!(j.bs[0].min, 8192, "bs=${{CORPUS_BS}} with CORPUS_BS=8k");
    assert_eq!(
        j.description.as_deref(),
        Some("block size from the environment"),
        "an unset variable is empty"
    );

    let j = &load("syntax-comments.fio").jobs[0];
    assert_eq!((j.rw, j.bs[0].min), (RwPattern::RandRead, 4096));
    assert_eq!(j.size, Some(SizeOrPct::Bytes(1 << 20)));
    assert_eq!(j.ioengine, IoEngine::Null);

    let s = load("syntax-sizes-kb-base.fio");
    let sizes = |n: &str| {
        let j = job(&s, n);
        (j.size, j.bs[0].min, j.kb_base)
    };
    let b = |n: u64| Some(SizeOrPct::Bytes(n));
    assert_eq!(sizes("binary-default"), (b(2 << 20), 4096, 1024));
    assert_eq!(
        sizes("compat-spellings"),
        (b(2_048_000), 4096, 1024),
        "kb_base=1024: KiB is 1000, kB is 1024"
    );
    assert_eq!(
        sizes("si-1000"),
        (b(2_048_000), 4096, 1000),
        "kb_base applies first"
    );
    assert_eq!(sizes("iec-in-1000"), (b(2 << 20), 4096, 1000));
    let s = load("syntax-percent-sizes.fio");
    let p = job(&s, "percent-of-device");
    assert_eq!(p.size, Some(SizeOrPct::PctMilli(1_000)));
    assert_eq!(p.offset, SizeOrPct::PctMilli(10_000));
    assert_eq!(p.number_ios, 64);

    let j = &load("blksim-only/syntax-arithmetic.fio").jobs[0];
    assert_eq!(j.size, Some(SizeOrPct::Bytes(2 << 20)));
    assert_eq!((j.bs[0].min, j.iodepth, j.number_ios), (4096, 4, 64));

    let s = load("syntax-ranges-lists.fio");
    let j = job(&s, "per-direction-bs");
    let mins: Vec<u64> = j.bs.iter().map(|b| b.min).collect();
    assert_eq!(
        mins,
        [4096, 8192, 8192],
        "a last value applies to later directions"
    );
    let j = job(&s, "ranges");
    let r: Vec<(u64, u64)> = j.bs.iter().map(|b| (b.min, b.max)).collect();
    assert_eq!(r, [(1024, 4096), (8192, 16384), (8192, 16384)]);
    assert_eq!(j.blockalign, [Some(1024), Some(8192), Some(8192)]);
    let j = job(&s, "write-only-list");
    let mins: Vec<u64> = j.bs.iter().map(|b| b.min).collect();
    assert_eq!(
        mins,
        [4096, 16384, 16384],
        "an empty entry keeps the default"
    );
    assert_eq!(j.percentage_random, [100, 50, 50]);
    assert_eq!(j.rate, [100 << 20, 50 << 20, 50 << 20]);
}

#[test]
fn workload_files_have_their_meaning() {
    let s = load("rw-modes.fio");
    for (name, rw) in [
        ("read", RwPattern::Read),
        ("write", RwPattern::Write),
        ("trim", RwPattern::Trim),
        ("randread", RwPattern::RandRead),
        ("randwrite", RwPattern::RandWrite),
        ("randtrim", RwPattern::RandTrim),
        ("rw", RwPattern::ReadWrite),
        ("readwrite", RwPattern::ReadWrite),
        ("randrw", RwPattern::RandRw),
        ("trimwrite", RwPattern::TrimWrite),
        ("randtrimwrite", RwPattern::RandTrimWrite),
        ("readwrite-alias", RwPattern::RandRead),
    ] {
        assert_eq!(job(&s, name).rw, rw, "[{name}]");
    }
    assert_eq!(job(&s, "randread-runs-of-8").rw_nr_random, 8);
    let j = job(&s, "read-skip-4k");
    assert_eq!((j.rw_seq_skip, j.rw_sequencer_identical), (4096, false));
    assert!(job(&s, "identical-offsets").rw_sequencer_identical);
    assert_eq!(job(&s, "mix-by-writes").rwmixread, 75);

    let s = load("bssplit.fio");
    let split = |j: &JobSpec, d: usize| -> Vec<(u64, u32)> {
        j.bs[d].split.iter().map(|e| (e.bs, e.pct)).collect()
    };
    let j = job(&s, "split-both");
    let want = vec![(4096, 50), (16384, 30), (65536, 20)];
    assert_eq!((split(j, 0), split(j, 1)), (want.clone(), want));
    let j = job(&s, "split-per-direction");
    assert_eq!(split(j, 0), [(4096, 75), (8192, 25)]);
    assert_eq!(split(j, 1), [(65536, 100)]);
    let j = job(&s, "split-blank-shares");
    assert_eq!(split(j, 0), [(512, 10), (4096, 45), (32768, 45)]);
    assert_eq!((j.bs[0].min, j.bs[0].max), (512, 32768));

    let s = load("random-distributions.fio");
    let d = |n: &str| job(&s, n).random_distribution.clone();
    assert_eq!(d("uniform"), RandomDistribution::Random);
    assert_eq!(
        d("zipf"),
        RandomDistribution::Zipf {
            theta: 1.2,
            center: 0.0
        }
    );
    assert_eq!(
        d("zipf-centered"),
        RandomDistribution::Zipf {
            theta: 0.8,
            center: 0.5
        }
    );
    assert_eq!(
        d("pareto"),
        RandomDistribution::Pareto {
            h: 0.2,
            center: 0.0
        }
    );
    assert_eq!(
        d("normal"),
        RandomDistribution::Normal {
            dev_pct: 10.0,
            center: 0.3
        }
    );
    let z = |a, s| Zone {
        access_pct: a,
        size_pct: s,
    };
    let zones = vec![z(60, 10), z(30, 20), z(10, 70)];
    assert_eq!(
        d("zoned"),
        RandomDistribution::Zoned {
            zones: [zones.clone(), zones.clone(), zones]
        }
    );
    let za = |a, size| ZoneAbs {
        access_pct: a,
        size,
    };
    let abs = vec![za(80, 1 << 20), za(20, 15 << 20)];
    assert_eq!(
        d("zoned-abs"),
        RandomDistribution::ZonedAbs {
            zones: [abs.clone(), abs.clone(), abs]
        }
    );
    let j = job(&s, "no-random-map");
    assert!(j.norandommap && !j.randrepeat);
    let j = job(&s, "seeded");
    assert!(j.randseed_set && j.randseed == 1234 && j.randrepeat);
    assert_eq!(job(&s, "lfsr").random_generator, RandomGenerator::Lfsr);
    assert!(job(&s, "lfsr").notes.is_empty());
    assert_eq!(job(&s, "mostly-sequential").percentage_random, [20; 3]);

    let s = load("blksim-only/zoned-per-direction.fio");
    let j = job(&s, "zoned-per-direction");
    assert_eq!(
        j.random_distribution,
        RandomDistribution::Zoned {
            zones: [
                vec![z(50, 50), z(50, 50)],
                vec![z(90, 10), z(10, 90)],
                vec![z(90, 10), z(10, 90)],
            ]
        }
    );
    let j = &load("blksim-only/percentage-sequential.fio").jobs[0];
    assert_eq!(j.percentage_random, [70; 3]);

    let s = load("rate-thinktime.fio");
    assert_eq!(job(&s, "rate-bytes").rate, [4 << 20; 3]);
    let j = job(&s, "rate-iops-linear");
    assert_eq!((j.rate_iops, j.rate_poisson), ([20000; 3], false));
    let j = job(&s, "rate-iops-poisson");
    assert!(j.rate_poisson && j.io_submit_offload);
    assert!(!job(&s, "inline-submit").io_submit_offload);
    let j = job(&s, "think");
    assert_eq!(
        (j.thinktime_ns, j.thinktime_blocks),
        (50_000, 4),
        "thinktime is in us"
    );
    assert!(!j.thinktime_blocks_issue && job(&s, "think-issue").thinktime_blocks_issue);
    // fio keeps the target in ns and the window in µs; max_latency is per direction.
    let j = job(&s, "think-spin");
    assert_eq!((j.thinktime_ns, j.thinktime_spin_ns), (100_000, 40_000));
    let j = job(&s, "min-rates");
    assert_eq!(
        (j.rate_min, j.rate_iops_min, j.rate_cycle_ms),
        ([1024, 2048, 2048], [0; 3], 500)
    );
    assert_eq!(job(&s, "min-iops").rate_iops_min, [1; 3]);
    let j = job(&s, "min-rates-old-names");
    assert_eq!((j.rate_min, j.rate_cycle_ms), ([1024; 3], 250));
    let j = job(&s, "latency-target");
    assert_eq!(
        (
            j.latency_target_ns,
            j.latency_window_us,
            j.latency_percentile
        ),
        (10_000_000, 1000, 99.9)
    );
    assert!(!j.latency_run);
    assert_eq!(
        j.max_latency_ns,
        [1_000_000_000, 2_000_000_000, 2_000_000_000]
    );

    let s = load("sync-ops.fio");
    assert_eq!(job(&s, "fsync-every-8").fsync, 8);
    assert_eq!(job(&s, "fdatasync-every-16").fdatasync, 16);
    assert!(job(&s, "end-fsync").end_fsync);
    for (name, on) in [
        ("o-sync", true),
        ("o-sync-1", true),
        ("o-dsync", true),
        ("o-sync-libaio", true),
        ("no-sync", false),
        ("no-sync-0", false),
    ] {
        assert_eq!(job(&s, name).sync_io, on, "{name}");
    }

    let s = load("errors.fio");
    let j = job(&s, "ignore-listed");
    assert_eq!(j.continue_on_error, 3, "ignore_error turns on its kinds");
    assert_eq!(j.ignore_error, [Some(vec![5, 22]), Some(vec![5, 84]), None]);
    for (name, bits) in [
        ("stop-at-first", 0),
        ("stop-at-first-0", 0),
        ("go-on-after-reads", 1),
        ("go-on-after-writes", 2),
        ("go-on-after-io", 3),
        ("go-on-after-verify", 4),
        ("go-on-after-all", 7),
        ("go-on-after-all-1", 7),
    ] {
        assert_eq!(job(&s, name).continue_on_error, bits, "{name}");
    }

    let s = load("verify.fio");
    let j = job(&s, "write-and-verify");
    assert_eq!((j.verify.as_deref(), j.do_verify), (Some("md5"), true));
    let j = job(&s, "verify-off-phase");
    assert_eq!((j.verify.as_deref(), j.do_verify), (Some("crc32c"), false));
    assert_eq!(job(&s, "no-verify").verify, None);
    assert_eq!(
        job(&s, "method-sha3-512").verify.as_deref(),
        Some("sha3-512")
    );
}

#[test]
fn engine_and_timing_files_have_their_meaning() {
    let s = load("depth-batching.fio");
    let j = job(&s, "libaio-batches");
    assert_eq!(
        (
            j.effective_depth(),
            j.effective_iodepth_batch_submit(),
            j.iodepth_batch_complete_min,
            j.effective_iodepth_batch_complete_max(),
            j.effective_iodepth_low()
        ),
        (32, 8, 4, 16, 16)
    );
    let j = job(&s, "io_uring-batch-alias");
    assert_eq!(j.ioengine, IoEngine::Async("io_uring"));
    assert_eq!(
        (j.iodepth_batch_submit, j.iodepth_batch_complete_min),
        (4, 2)
    );
    assert_eq!(job(&s, "posixaio").ioengine, IoEngine::Async("posixaio"));

    let s = load("engines.fio");
    for j in &s.jobs {
        assert_eq!(j.ioengine.name(), j.name);
        let want = if j.ioengine.is_sync() { 1 } else { 4 };
        assert_eq!(j.effective_depth(), want, "[{}]", j.name);
    }
    assert_eq!(s.jobs.len(), 9);

    let s = load("timing.fio");
    let j = job(&s, "time-based");
    assert!(j.time_based && j.runtime_ns == 5_000_000);
    let j = job(&s, "timeout-alias");
    assert_eq!((j.runtime_ns, j.ramp_time_ns), (5_000_000, 1_000_000));
    assert_eq!(job(&s, "delayed").startdelay_ns, (2_000_000, 2_000_000));
    assert_eq!(
        job(&s, "delayed-range").startdelay_ns,
        (1_000_000, 3_000_000)
    );
    assert_eq!(job(&s, "two-loops").loops, 2);
    assert_eq!(job(&s, "count").number_ios, 50);

    let s = load("reporting.fio");
    let j = job(&s, "described");
    assert_eq!(j.percentile_list, [50.0, 90.0, 99.0, 99.9]);
    assert!(j.clat_percentiles && j.lat_percentiles && j.slat_percentiles);
    assert_eq!(
        j.description.as_deref(),
        Some("latency percentiles at custom points")
    );
    let j = job(&s, "bits");
    assert!(j.new_group && j.unit_base == 1);
    assert_eq!(job(&s, "bytes").unit_base, 8);
    let j = job(&s, "reduced");
    assert!(j.gtod_reduce && !j.clat_percentiles && !j.lat_percentiles);
    assert!(j.disable_lat && j.disable_clat && j.disable_slat && j.disable_bw);
    let j = job(&s, "no-lat");
    assert!(j.disable_lat && !j.lat_percentiles && !j.disable_clat);
    let j = job(&s, "reduced-but-lat");
    assert!(j.gtod_reduce && !j.disable_lat && j.disable_clat);
    assert!(job(&s, "old-name").disable_bw);
    assert_eq!(job(&s, "figures").sig_figs, 6);
    assert!(!job(&s, "no-stats").stats && job(&s, "figures").stats);
    assert!(!job(&s, "no-clat-pct").clat_percentiles);
    for (name, u) in [
        ("unified-none", "none"),
        ("unified-mixed", "mixed"),
        ("unified-0", "none"),
        ("unified-1", "mixed"),
        ("unified-2", "both"),
        ("unified-both", "both"),
    ] {
        assert_eq!(job(&s, name).unified_rw_reporting, u, "[{name}]");
    }
    let j = job(&s, "unified-both");
    assert!(j.new_group && j.group_reporting);
    assert!(s.jobs.iter().all(|j| j.name != "section-name"));
    let header = std::fs::read_to_string(corpus().join("reporting.fio"))
        .unwrap()
        .lines()
        .position(|l| l == "[section-name]")
        .unwrap();
    assert!(
        job(&s, "reported-name")
            .origin
            .ends_with(&format!(":{}", header + 1)),
        "name= keeps the section's origin"
    );

    let s = load("region.fio");
    assert_eq!(job(&s, "io-size-twice").io_size, Some(512 << 10));
    assert_eq!(job(&s, "io-limit-alias").io_size, Some(128 << 10));
    assert_eq!(job(&s, "offset").offset, SizeOrPct::Bytes(1 << 20));
    assert_eq!(
        job(&s, "fileoffset-alias").offset,
        SizeOrPct::Bytes(2 << 20)
    );
    let j = job(&s, "clones-with-increment");
    assert_eq!((j.numjobs, j.offset_increment), (2, 1 << 20));
    let j = job(&s, "clones-with-percent-increment");
    assert_eq!(
        (j.offset_increment, j.offset_increment_pct),
        (0, Some(5_000))
    );
    let j = job(&s, "files");
    assert_eq!((j.nrfiles, j.filesize), (4, Some(64 << 10)));
    assert_eq!(j.directory.as_deref(), Some("fio-work"));
    let j = job(&s, "nr-files-alias");
    assert_eq!((j.nrfiles, j.filename.as_deref()), (1, Some("/dev/nullb0")));
    assert!(!job(&s, "buffered").direct);
    assert!(job(&s, "threads").thread);
    let j = job(&s, "elevator");
    assert_eq!(j.ioscheduler.as_deref(), Some("mq-deadline"));
    assert!(j.direct);

    let s = load("aliases.fio");
    let j = job(&s, "sizes-by-old-names");
    assert_eq!((j.bs[0].min, j.blockalign[0]), (8192, Some(8192)));
    let j = job(&s, "range-by-old-name");
    assert_eq!((j.bs[0].min, j.bs[0].max), (4096, 16384));
    assert!(job(&s, "unaligned").bs_unaligned);
    assert!(job(&s, "unaligned-old-name").bs_unaligned);
    assert!(job(&s, "waits").stonewall);
}

/// `cmdprio_*`: per direction (one value for both), real time when no class is given, the
/// size split sorted by size with the implicit class and level for `bs/perc` entries.
#[test]
fn io_priorities_have_their_meaning() {
    let s = load("job-control.fio");
    let j = job(&s, "cmdprio-share");
    assert_eq!(
        (j.cmdprio.percentage, j.cmdprio.class, j.cmdprio.level),
        ([10, 20], [2, 1], [3, 3])
    );
    let t: Vec<Vec<CmdPrioBs>> = (0..2).map(|d| j.cmdprio.table(d, true)).collect();
    assert_eq!(t[0][0].prios, vec![(10, (2 << 13) | 3)]);
    assert_eq!(t[1][0].prios, vec![(20, (1 << 13) | 3)]);
    let j = job(&s, "cmdprio-by-size");
    let reads = j.cmdprio.table(0, true);
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].bs, Some(4096));
    assert_eq!(reads[0].prios, vec![(10, 1 << 13), (20, 1 << 13)]);
    let writes = j.cmdprio.table(1, true);
    assert_eq!(writes[0].bs, Some(8192));
    assert_eq!(writes[0].prios, vec![(30, 3 << 13)]);
    // A direction the job does not do draws nothing.
    assert!(j.cmdprio.table(1, false).is_empty());
    assert!(job(&s, "first").cmdprio.table(0, true).is_empty());
}
