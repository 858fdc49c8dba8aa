//! Job-file semantics: each test states a fio rule and checks the typed result.

use blksim_job::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse(text: &str) -> JobSet {
    match parse_job_str(text, "job.fio", &no_env) {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn err(text: &str) -> ParseError {
    match parse_job_str(text, "job.fio", &no_env) {
        Ok(s) => panic!("expected an error, got {} jobs", s.jobs.len()),
        Err(e) => e,
    }
}

const R: usize = 0;
const W: usize = 1;
const T: usize = 2;

#[test]
fn sizes_follow_kb_base_both_ways() {
    let s = parse("[a]\nsize=1k\nio_size=1ki\noffset=0x1000\nbs=4KiB\n");
    let j = &s.jobs[0];
    assert_eq!(j.size, Some(SizeOrPct::Bytes(1024)));
    assert_eq!(j.io_size, Some(1000));
    assert_eq!(j.offset, SizeOrPct::Bytes(4096));
    assert_eq!(j.bs[R], BsSpec::fixed(4000));

    // kb_base=1000 reverses the prefixes; it applies before size even when written after it
    // (fio sorts kb_base first).
    let s = parse("[a]\nsize=1k\nio_size=1ki\nkb_base=1000\nbs=4kb\n");
    let j = &s.jobs[0];
    assert_eq!(j.kb_base, 1000);
    assert_eq!(j.size, Some(SizeOrPct::Bytes(1000)));
    assert_eq!(j.io_size, Some(1024));
    assert_eq!(j.bs[W], BsSpec::fixed(4000));

    // kb_base inherited from [global].
    let s = parse("[global]\nkb_base=1000\n[a]\nsize=2m\n");
    assert_eq!(s.jobs[0].size, Some(SizeOrPct::Bytes(2_000_000)));
}

#[test]
fn percent_hex_and_arithmetic() {
    let s =
        parse("[a]\nsize=50%\noffset=12.5%\noffset_increment=10%\nbs=(4*1024)\nrandseed=0x1234\n");
    let j = &s.jobs[0];
    assert_eq!(j.size, Some(SizeOrPct::PctMilli(50_000)));
    assert_eq!(j.offset, SizeOrPct::PctMilli(12_500));
    assert_eq!(j.offset_increment_pct, Some(10_000));
    assert_eq!(j.bs[R], BsSpec::fixed(4096));
    assert_eq!(j.randseed, 0x1234);
    assert!(j.randseed_set);
}

#[test]
fn per_direction_lists() {
    let s = parse("[a]\nbs=8k,32k\n[b]\nbs=8k,32k,\n[c]\nbs=,8k\n[d]\nblocksize=512,512,16384\n");
    let bs = |i: usize| -> Vec<u64> { s.jobs[i].bs.iter().map(|b| b.min).collect() };
    assert_eq!(bs(0), vec![8192, 32768, 32768]);
    assert_eq!(bs(1), vec![8192, 32768, 4096]);
    assert_eq!(bs(2), vec![4096, 8192, 8192]);
    assert_eq!(bs(3), vec![512, 512, 16384]);

    let s = parse("[a]\nrate=1m,500k\npercentage_random=10,20\nblockalign=4k,,512\n");
    let j = &s.jobs[0];
    assert_eq!(j.rate, [1 << 20, 500 * 1024, 500 * 1024]);
    // (rate and rate_iops together are refused, as fio does.)
    assert_eq!(
        parse("[a]\nrate_iops=,100\n").jobs[0].rate_iops,
        [0, 100, 100]
    );
    assert_eq!(j.percentage_random, [10, 20, 20]);
    assert_eq!(j.blockalign, [Some(4096), None, Some(512)]);

    let s = parse("[a]\nbsrange=1k-4k,2k:8k\n");
    let j = &s.jobs[0];
    assert_eq!((j.bs[R].min, j.bs[R].max), (1024, 4096));
    assert_eq!((j.bs[W].min, j.bs[W].max), (2048, 8192));
    assert_eq!((j.bs[T].min, j.bs[T].max), (2048, 8192));
}

#[test]
fn bssplit_remainder_and_errors() {
    let s = parse("[a]\nbssplit=4k/50:1k/:32k/\n");
    let sp: Vec<(u64, u32)> = s.jobs[0].bs[R]
        .split
        .iter()
        .map(|e| (e.bs, e.pct))
        .collect();
    // In the job's order (fio's later sort by share is stable).
    assert_eq!(sp, vec![(4096, 50), (1024, 25), (32768, 25)]);
    assert_eq!(s.jobs[0].bs[W], s.jobs[0].bs[R]);

    // Per direction: reads and writes differ, trims follow writes.
    let s = parse("[a]\nbssplit=2k/50:4k/50,4k/90:8k/10\n");
    assert_eq!(s.jobs[0].bs[R].split.len(), 2);
    assert_eq!(s.jobs[0].bs[W].split[1], BsSplit { bs: 8192, pct: 10 });
    assert_eq!(s.jobs[0].bs[T], s.jobs[0].bs[W]);

    let e = err("[a]\nbssplit=4k/60:8k/50\n");
    assert_eq!(e.line, 2);
    assert_eq!(e.option.as_deref(), Some("bssplit"));
    assert!(e.message.contains("more than 100"), "{e}");

    // bssplit takes precedence over a later bs (fio uses the split whenever one is set).
    let s = parse("[global]\nbssplit=4k/50:8k/50\n[a]\nbs=16k\n");
    assert_eq!(s.jobs[0].bs[R].split.len(), 2);
    assert!(s.jobs[0].notes.iter().any(|n| n.contains("bssplit")));
}

#[test]
fn global_applies_only_below_and_accumulates() {
    let s = parse(
        "[global]\nbs=8k\n[a]\n[global]\nrw=randwrite\niodepth=4\n[b]\n[global]\nbs=16k\n[c]\niodepth=2\n",
    );
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let a = &s.jobs[0];
    assert_eq!((a.bs[R].min, a.rw, a.iodepth), (8192, RwPattern::Read, 1));
    let b = &s.jobs[1];
    assert_eq!(
        (b.bs[R].min, b.rw, b.iodepth),
        (8192, RwPattern::RandWrite, 4)
    );
    let c = &s.jobs[2];
    assert_eq!(
        (c.bs[R].min, c.rw, c.iodepth),
        (16384, RwPattern::RandWrite, 2)
    );
    // JSON objects: globals in order, jobs only their own options.
    let g: Vec<&str> = s.global_options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(g, ["bs", "rw", "iodepth", "bs"]);
    assert!(s.jobs[0].raw_options.is_empty());
    assert_eq!(
        s.jobs[2].raw_options,
        vec![("iodepth".to_string(), "2".to_string())]
    );
    assert_eq!(s.jobs[0].origin, "job.fio:3");
}

#[test]
fn section_name_wins_over_global_name_and_job_name_option() {
    let s = parse("[global]\nname=fromglobal\n[file1]\n[file2]\nname=renamed\n");
    assert_eq!(s.jobs[0].name, "file1");
    assert_eq!(s.jobs[1].name, "renamed");
}

#[test]
fn raw_options_use_canonical_names_and_skip_bare_keys() {
    let s = parse("[a]\ntimeout=60\ntime_based\nreadwrite=randrw\nstonewall\n");
    let j = &s.jobs[0];
    assert_eq!(
        j.raw_options,
        vec![
            ("runtime".to_string(), "60".to_string()),
            ("rw".to_string(), "randrw".to_string())
        ]
    );
    assert!(j.time_based && j.stonewall);
    assert_eq!(j.runtime_ns, 60_000_000_000);
}

#[test]
fn stonewall_and_new_group() {
    let s =
        parse("[a]\n[b]\nstonewall\n[c]\nwait_for_previous\n[d]\nnew_group\n[e]\nstonewall=0\n");
    let sw: Vec<bool> = s.jobs.iter().map(|j| j.stonewall).collect();
    assert_eq!(sw, [false, true, true, false, false]);
    assert!(s.jobs[3].new_group);
}

#[test]
fn valueless_booleans() {
    let s = parse(
        "[a]\ntime_based\ngroup_reporting\nnorandommap\nthread\ndirect\nbs_unaligned\nend_fsync\n",
    );
    let j = &s.jobs[0];
    assert!(j.time_based_asked && j.group_reporting && j.norandommap && j.thread && j.direct);
    assert!(j.bs_unaligned && j.end_fsync);
    let s = parse("[a]\ndirect=1\nbuffered=1\n");
    assert!(!s.jobs[0].direct, "buffered=1 is direct=0, last wins");
}

#[test]
fn env_vars_and_keywords() {
    let env = |k: &str| match k {
        "SIZE" => Some("64m".to_string()),
        "DEV" => Some("/dev/nullb0".to_string()),
        _ => None,
    };
    let s = parse_job_str(
        "[a]\nsize=${SIZE}\nfilename=${DEV}\ndirectory=x${UNSET}y\nbs=$pagesize\nnumjobs=$ncpus\nio_size=8*$mb_memory\n",
        "job.fio",
        &env,
    )
    .unwrap();
    let j = &s.jobs[0];
    assert_eq!(j.size, Some(SizeOrPct::Bytes(64 << 20)));
    assert_eq!(j.filename.as_deref(), Some("/dev/nullb0"));
    assert_eq!(j.directory.as_deref(), Some("xy"));
    assert_eq!(j.bs[R].min, 4096);
    assert_eq!(j.numjobs, 2);
    assert_eq!(j.io_size, Some(8 * 24576));
    assert_eq!(j.raw_options[0], ("size".to_string(), "64m".to_string()));

    let kw = Keywords {
        pagesize: 16384,
        ncpus: 8,
        mb_memory: 1024,
    };
    let s =
        parse_job_str_with("[a]\nbs=$pagesize\nnumjobs=$ncpus\n", "j.fio", &no_env, &kw).unwrap();
    assert_eq!((s.jobs[0].bs[R].min, s.jobs[0].numjobs), (16384, 8));
}

#[test]
fn comments_inline_and_whole_line() {
    let s = parse(
        "; leading comment\n# another\n[a] ; the job\nfilename=datafile.tmp\t; or use a full disk\nnumjobs=4\t# four\n  ; indented comment\nbs = 8k \n",
    );
    let j = &s.jobs[0];
    assert_eq!(j.filename.as_deref(), Some("datafile.tmp"));
    assert_eq!(j.numjobs, 4);
    assert_eq!(j.bs[R].min, 8192);
    assert_eq!(j.name, "a");
}

#[test]
fn rwmix_last_wins() {
    let s =
        parse("[a]\nrw=randrw\nrwmixread=60\nrwmixwrite=30\n[b]\nrwmixwrite=30\nrwmixread=60\n");
    assert_eq!(s.jobs[0].rwmixread, 70);
    assert_eq!(s.jobs[1].rwmixread, 60);
    let s = parse("[global]\nrwmixread=80\n[a]\nrwmixwrite=10\n");
    assert_eq!(s.jobs[0].rwmixread, 90);
}

#[test]
fn rw_postfix() {
    let s = parse(
        "[a]\nrw=write:4k\n[b]\nrw=randread:8\n[c]\nrw=read:-8k\n[d]\nrw=randread:8\nrw=randread\n",
    );
    assert_eq!(
        (s.jobs[0].rw, s.jobs[0].rw_seq_skip),
        (RwPattern::Write, 4096)
    );
    assert_eq!(
        (s.jobs[1].rw, s.jobs[1].rw_nr_random),
        (RwPattern::RandRead, 8)
    );
    assert_eq!(s.jobs[1].rw_seq_skip, 0);
    assert_eq!(s.jobs[2].rw_seq_skip, -8192);
    assert_eq!(
        s.jobs[3].rw_nr_random, 1,
        "setting rw again resets the postfix"
    );
    let e = err("[a]\nrw=randread:x\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("rw")));
    let e = err("[a]\nrw=sideways\n");
    assert!(e.message.contains("valid: read, write"), "{e}");
}

#[test]
fn sync_engine_effective_depth_is_one() {
    let s = parse("[a]\nioengine=psync\niodepth=16\n[b]\nioengine=libaio\niodepth=16\n[c]\nioengine=null\niodepth=8\n[d]\niodepth=4\n");
    assert_eq!(
        s.jobs[0].iodepth, 16,
        "configured depth is kept for the header"
    );
    assert_eq!(s.jobs[0].effective_depth(), 1);
    assert!(s.jobs[0].notes.iter().any(|n| n.contains("capped at 1")));
    assert_eq!(s.jobs[1].effective_depth(), 16);
    assert_eq!(s.jobs[1].ioengine, IoEngine::Async("libaio"));
    assert_eq!(s.jobs[2].ioengine, IoEngine::Null);
    assert_eq!(s.jobs[2].effective_depth(), 8);
    assert_eq!(
        s.jobs[3].ioengine,
        IoEngine::Sync("psync"),
        "psync is the default"
    );
    assert_eq!(s.jobs[3].effective_depth(), 1);
    for e in ["sync", "vsync", "pvsync", "pvsync2"] {
        let s = parse(&format!("[a]\nioengine={e}\niodepth=32\n"));
        assert_eq!(s.jobs[0].effective_depth(), 1, "{e}");
    }
}

#[test]
fn batch_and_low_water_defaults() {
    let s = parse("[a]\nioengine=libaio\niodepth=16\niodepth_batch=0\niodepth_batch_complete=4\niodepth_low=32\n");
    let j = &s.jobs[0];
    assert_eq!(j.effective_iodepth_batch_submit(), 16);
    assert_eq!(j.iodepth_batch_complete_min, 4);
    assert_eq!(j.effective_iodepth_batch_complete_max(), 4);
    assert_eq!(j.effective_iodepth_low(), 16);
}

#[test]
fn times_and_distributions() {
    let s = parse(
        "[a]\nruntime=2m\nramp_time=500ms\nstartdelay=1-3\nthinktime=100\nthinktime_blocks=4\nrandom_distribution=zipf:1.2\n\
         [b]\nrandom_distribution=zoned:50/5:30/15:20/\n[c]\nrandom_distribution=zoned_abs:50/10G:50/100G,100/1g\n\
         [d]\nrandom_distribution=normal:5:0.3\n[e]\nrandom_distribution=pareto:0.9\n",
    );
    let a = &s.jobs[0];
    assert_eq!(a.runtime_ns, 120_000_000_000);
    assert_eq!(a.ramp_time_ns, 500_000_000);
    assert_eq!(a.startdelay_ns, (1_000_000_000, 3_000_000_000));
    assert_eq!(a.thinktime_ns, 100_000);
    assert_eq!(a.thinktime_blocks, 4);
    assert_eq!(
        a.random_distribution,
        RandomDistribution::Zipf {
            theta: 1.2,
            center: 0.0
        }
    );
    match &s.jobs[1].random_distribution {
        RandomDistribution::Zoned { zones } => {
            let z: Vec<(u32, u32)> = zones[0]
                .iter()
                .map(|z| (z.access_pct, z.size_pct))
                .collect();
            assert_eq!(z, vec![(50, 5), (30, 15), (20, 80)]);
            assert_eq!(zones[1], zones[0]);
            assert_eq!(zones[2], zones[0]);
        }
        d => panic!("{d:?}"),
    }
    match &s.jobs[2].random_distribution {
        RandomDistribution::ZonedAbs { zones } => {
            assert_eq!(
                zones[0][1],
                ZoneAbs {
                    access_pct: 50,
                    size: 100 << 30
                }
            );
            assert_eq!(
                zones[1],
                vec![ZoneAbs {
                    access_pct: 100,
                    size: 1 << 30
                }]
            );
        }
        d => panic!("{d:?}"),
    }
    assert_eq!(
        s.jobs[3].random_distribution,
        RandomDistribution::Normal {
            dev_pct: 5.0,
            center: 0.3
        }
    );
    assert_eq!(
        s.jobs[4].random_distribution,
        RandomDistribution::Pareto {
            h: 0.9,
            center: 0.0
        }
    );
    let e = err("[a]\nrandom_distribution=zipf:1.0\n");
    assert!(e.message.contains("1.0"), "{e}");
    let e = err("[a]\nrandom_distribution=zoned:50/5:30/15\n");
    assert!(e.message.contains("100"), "{e}");
}

#[test]
fn percentiles_and_reporting() {
    let s = parse("[a]\npercentile_list=99.5:99.9\nlat_percentiles=1\nunified_rw_reporting=1\ngtod_reduce=1\n");
    let j = &s.jobs[0];
    assert_eq!(j.percentile_list, vec![99.5, 99.9]);
    assert!(j.gtod_reduce && !j.clat_percentiles && !j.lat_percentiles);
    assert_eq!(j.unified_rw_reporting, "mixed");
    let many = (1..=21)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(":");
    let e = err(&format!("[a]\npercentile_list={many}\n"));
    assert!(e.message.contains("at most 20"), "{e}");
}

#[test]
fn ignored_options_add_one_note_each() {
    let s = parse("[global]\nnice=0\n[a]\nnice=1\ndisk_util=1\nflow=2\n[b]\n");
    let a = &s.jobs[0];
    assert_eq!(
        a.notes
            .iter()
            .filter(|n| n.contains("'nice' has no meaning in a simulation"))
            .count(),
        1
    );
    assert!(a.notes.iter().any(|n| n.contains("'disk_util'")));
    assert!(a.notes.iter().any(|n| n.contains("'flow' is not modelled")));
    assert_eq!(
        s.jobs[1].notes.len(),
        1,
        "inherited from [global]: {:?}",
        s.jobs[1].notes
    );
}

#[test]
fn include_is_relative_to_the_including_file() {
    let dir = std::env::temp_dir().join(format!("blksim-job-include-{}", std::process::id()));
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("common.fio"), "bs=16k\ninclude deeper.fio\n").unwrap();
    std::fs::write(sub.join("deeper.fio"), "iodepth=8 ; nested include\n").unwrap();
    std::fs::write(
        dir.join("main.fio"),
        "[global]\ninclude sub/common.fio\n[a]\nrw=randread\n",
    )
    .unwrap();
    std::fs::write(dir.join("bad.fio"), "[a]\ninclude missing.fio\n").unwrap();
    std::fs::write(sub.join("sect.fio"), "[b]\nbs=1k\n").unwrap();
    std::fs::write(dir.join("sect.fio"), "[a]\ninclude sub/sect.fio\n").unwrap();
    std::fs::write(dir.join("self.fio"), "[a]\ninclude loop.fio\n").unwrap();
    std::fs::write(dir.join("loop.fio"), "bs=4k\ninclude loop.fio\n").unwrap();

    let s = parse_job_file(&dir.join("main.fio")).unwrap();
    assert_eq!((s.jobs[0].bs[R].min, s.jobs[0].iodepth), (16384, 8));
    assert_eq!(s.global_options.len(), 2);

    let e = parse_job_file(&dir.join("bad.fio")).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("missing.fio"), "{e}");
    let e = parse_job_file(&dir.join("sect.fio")).unwrap_err();
    assert!(
        e.file.ends_with("sect.fio") && e.line == 1 && e.message.contains("no new sections"),
        "{e}"
    );
    let e = parse_job_file(&dir.join("self.fio")).unwrap_err();
    assert!(e.message.contains("nested too deeply"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn several_files_get_an_implicit_stonewall_and_share_global() {
    let dir = std::env::temp_dir().join(format!("blksim-job-multi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("one.fio"), "[global]\nbs=8k\n[a]\n[b]\n").unwrap();
    std::fs::write(dir.join("two.fio"), "[global]\niodepth=2\n[c]\n[d]\n").unwrap();
    let s = parse_job_files(&[dir.join("one.fio"), dir.join("two.fio")]).unwrap();
    let sw: Vec<bool> = s.jobs.iter().map(|j| j.stonewall).collect();
    assert_eq!(sw, [false, false, true, false]);
    assert_eq!((s.jobs[2].bs[R].min, s.jobs[2].iodepth), (8192, 2));
    let e = parse_job_files(&[dir.join("one.fio"), dir.join("nope.fio")]).unwrap_err();
    assert!(e.file.ends_with("nope.fio") && e.line == 0, "{e}");
    assert!(
        e.to_string().contains("nope.fio: cannot read job file"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn errors_name_file_line_and_option() {
    let e = err("[a]\nrw=read\n\n\n\n\n\n\n\n\n\n\n\nbs=4q\n");
    assert_eq!(
        e.to_string(),
        "job.fio:14: option 'bs': invalid size '4q' (expected a number with an optional k/m/g/t/p suffix)"
    );
    let e = err("[a]\nrw=read\niodepht=4\n");
    assert_eq!(
        e.to_string(),
        "job.fio:3: unknown option 'iodepht' (did you mean 'iodepth'?)"
    );
    let e = err("bs=4k\n[a]\n");
    assert_eq!((e.line, e.message.contains("outside")), (1, true));
    let e = err("[a\nbs=4k\n");
    assert_eq!(e.line, 1);
    let e = err("[]\n");
    assert_eq!(e.line, 1);
    let e = err("[a]\nfilename\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("filename")));
    assert!(e.message.contains("requires a value"), "{e}");
    let e = err("[a]\ndirect=2\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("direct")));
    let e = err("[a]\nruntime=5x\n");
    assert!(e.message.contains("invalid time '5x'"), "{e}");
    let e = err("[a]\nioengine=mtd\n");
    assert!(e.message.contains("not supported by blksim"), "{e}");
    let e = err("[a]\nioengine=foo\n");
    assert!(e.message.contains("unknown"), "{e}");
    let e = err("[a]\nkb_base=1023\n");
    assert_eq!(e.option.as_deref(), Some("kb_base"));
    let e = err("[a]\nrwmixread=101\n");
    assert!(e.message.contains("out of range"), "{e}");
    let e = err("[a]\nnumjobs=0\n");
    assert!(e.message.contains("min 1"), "{e}");
    let e = err("[a]\n=4\n");
    assert_eq!(e.line, 2);
    let e = err("[global]\nbs=4k\n");
    assert!(e.message.contains("no jobs"), "{e}");
    let e = err("[a]\nzonemode=strided\n");
    assert!(e.message.contains("--zonesize must be specified"), "{e}");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("zonemode")));
    let e = err("[a]\nzonesize=1m\n");
    assert!(e.message.contains("not compatible"), "{e}");
    let e = err("[a]\nzonemode=zbd\n");
    assert!(e.message.contains("zonemode 'zbd'"), "{e}");
    let e = err("[a]\nsize=1.5g\n");
    assert_eq!(e.option.as_deref(), Some("size"));
}

#[test]
fn global_prefix_is_global_as_in_fio() {
    let s = parse("[global-defaults]\nbs=64k\n[a]\n");
    assert_eq!(s.jobs.len(), 1);
    assert_eq!(s.jobs[0].bs[R].min, 65536);
}

/// fio's `fixup_options` refuses a byte rate with an IOPS rate, whatever their directions
/// ("fio: rate and rate_iops are mutually exclusive"); either alone is fine.
#[test]
fn rate_and_rate_iops_together_are_refused() {
    let e = parse_job_str(
        "[a]\nrw=randrw\nrate=1m,0\nrate_iops=0,100\n",
        "job.fio",
        &no_env,
    )
    .unwrap_err();
    assert_eq!((e.line, e.option.as_deref()), (4, Some("rate_iops")), "{e}");
    assert!(e.message.contains("mutually exclusive"), "{e}");
    parse("[a]\nrw=randrw\nrate=1m\n");
    parse("[a]\nrw=randrw\nrate_iops=100\n");
}

/// Every option fio 3.33's table has is known here, under its name and its alias: fio's own
/// examples use `ratemin` (1mbs_clients.fio) and the tiobench profile's `threads`
/// (steadystate.fio, waitfor.fio), which fio takes in any job. `rwmixcycle` fails in fio
/// ("failed parsing ... deprecated"), `verifysort` is a warning there, and a job's `profile=`
/// is stored and never read (fio 3.33 runs such a job): each says so.
#[test]
fn fios_aliases_profile_options_and_deprecated_options() {
    let s = parse("[a]\nratemin=1\nratecycle=7\n");
    assert_eq!((s.jobs[0].rate_min, s.jobs[0].rate_cycle_ms), ([1; 3], 7));
    assert!(parse("[a]\ndisable_bw=1\n").jobs[0].disable_bw);
    // The steady-state ones are modelled.
    let s = parse("[a]\nss=bw_slope:1m\nss_dur=30\nss_ramp=5s\n");
    let ss = s.jobs[0].steadystate;
    assert!(!ss.iops && ss.slope && !ss.pct);
    assert_eq!(
        (ss.limit, ss.dur_s, ss.ramp_ns),
        (1048576.0, 30, 5_000_000_000)
    );
    let s = parse("[a]\nthreads=1\nblock=4k\ndevice-names=/dev/x\nverifysort=1\nsoftrandommap=1\n");
    assert_eq!(s.jobs[0].notes.len(), 5, "{:?}", s.jobs[0].notes);
    assert!(s.jobs[0]
        .notes
        .iter()
        .any(|n| n.contains("'verifysort' is deprecated")));
    let e = err("[a]\nrw=read\nrwmixcycle=10\n");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("deprecated"), "{e}");
    let s = parse("[a]\nprofile=tiobench\n");
    assert!(s.jobs[0].notes.iter().any(|n| n.contains("'profile'")));
    let s = parse("[a]\noffset=10%\noffset_align=64k\n");
    assert_eq!(s.jobs[0].offset_align, Some(65536));
    // fio keeps it in an unsigned int: 4g would be 0 there (and crash fio).
    let e = err("[a]\noffset=10%\noffset_align=4g\n");
    assert!(e.message.contains("32 bits"), "{e}");
}

/// An engine's own options are unknown because the engine is (fio loads them with it): the
/// error names the engine's line, as for fio's examples/dfs.fio (`ioengine=dfs`, `pool=`).
#[test]
fn an_unsupported_engines_options_name_the_engine() {
    let e = err("[global]\nioengine=dfs\npool=p\ncont=c\n[a]\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("ioengine")), "{e}");
    assert!(e.message.contains("ioengine 'dfs' is not supported"), "{e}");
    // With a supported engine the unknown option is the error.
    let e = err("[global]\nioengine=libaio\npool=p\n[a]\n");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("unknown option 'pool'"), "{e}");
}
