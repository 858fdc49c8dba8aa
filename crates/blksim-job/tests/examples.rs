//! Every job file in the shared reference (fio's own examples and the sampled jobs) either
//! parses or fails with an error that names the file and a line. The expected outcome of each
//! file is spelled out, so a change in what blksim accepts shows up here.

use std::path::{Path, PathBuf};

use blksim_job::*;

fn reference(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference")
        .join(sub)
}

fn fio_files(sub: &str) -> Vec<PathBuf> {
    let dir = reference(sub);
    let rd = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (reference material missing)", dir.display()));
    let mut files: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .fio files in {}", dir.display());
    files
}

/// Files blksim refuses, with the line and the option that is refused.
const EXPECTED_ERRORS: &[(&str, usize, &str)] = &[
    ("disk-zone-profile.fio", 10, "zonemode"),
    ("mtd.fio", 4, "ioengine"),
    ("sequence-distribution.fio", 22, "random_distribution"),
];

fn check_dir(sub: &str) -> usize {
    let mut n = 0;
    for path in fio_files(sub) {
        let fname = path.file_name().unwrap().to_string_lossy().to_string();
        let expected = EXPECTED_ERRORS.iter().find(|(f, _, _)| *f == fname);
        match (parse_job_file(&path), expected) {
            (Ok(set), None) => {
                assert!(!set.jobs.is_empty(), "{fname}: no jobs");
                for j in &set.jobs {
                    assert!(!j.name.is_empty(), "{fname}: unnamed job");
                    assert!(j.origin.contains(&fname), "{fname}: origin {}", j.origin);
                }
            }
            (Err(e), Some((_, line, opt))) => {
                assert!(e.file.ends_with(&fname), "{e}");
                assert_eq!(e.line, *line, "{e}");
                assert_eq!(e.option.as_deref(), Some(*opt), "{e}");
                assert!(
                    e.to_string()
                        .starts_with(&format!("{}:{line}: ", path.display())),
                    "{e}"
                );
            }
            (Ok(_), Some(_)) => panic!("{fname} parsed but was expected to fail"),
            (Err(e), None) => panic!("{fname} failed: {e}"),
        }
        n += 1;
    }
    n
}

#[test]
fn fio_examples_parse_or_fail_located() {
    assert!(check_dir("fio-examples") >= 20);
}

#[test]
fn fio_samples_parse() {
    assert!(check_dir("fio-samples") >= 4);
}

#[test]
fn examples_have_the_documented_meaning() {
    let p = |f: &str| parse_job_file(&reference("fio-examples").join(f)).unwrap();
    let s = p("aio-read.fio");
    let depths: Vec<u32> = s.jobs.iter().map(|j| j.iodepth).collect();
    assert_eq!(depths, [4, 32, 8, 16]);
    assert!(s
        .jobs
        .iter()
        .all(|j| j.direct && j.bs[0].min == 128 * 1024 && j.rw == RwPattern::RandRead));

    let s = p("fio-rand-RW.fio");
    let j = &s.jobs[0];
    assert_eq!(
        (j.name.as_str(), j.rwmixread, j.numjobs, j.iodepth),
        ("file1", 60, 4, 16)
    );
    assert!(j.time_based && j.runtime_ns == 900_000_000_000);
    assert_eq!(j.size, Some(SizeOrPct::Bytes(10 << 30)));

    let s = p("jesd219.fio");
    let j = &s.jobs[0];
    assert_eq!(j.bs[0].split.len(), 12);
    assert_eq!(j.bs[0].split.iter().map(|e| e.pct).sum::<u32>(), 100);
    assert_eq!(j.blockalign, [Some(4096); 3]);
    assert_eq!(j.rwmixread, 40);
    assert!(j.norandommap && !j.randrepeat && j.group_reporting);

    let s = p("iometer-file-access-server.fio");
    assert_eq!(s.jobs[0].bs[1].min, 512);
    // Inherited from [global], like every global option.
    assert_eq!(
        s.jobs[0].description.as_deref(),
        Some("Emulation of Intel IOmeter File Server Access Pattern")
    );
    assert_eq!(s.global_options[0].0, "description");

    let s = p("tiobench-example.fio");
    assert_eq!(s.jobs.len(), 4);
    assert!(s
        .jobs
        .iter()
        .all(|j| j.numjobs == 4 && j.runtime_ns == 60_000_000_000));
    let sw: Vec<bool> = s.jobs.iter().map(|j| j.stonewall).collect();
    assert_eq!(sw, [false, true, true, true]);

    let s = p("surface-scan.fio");
    assert_eq!(s.jobs[0].filename.as_deref(), Some("datafile.tmp"));
    assert!(
        s.jobs[0].thread && s.jobs[0].verify.as_deref() == Some("meta") && !s.jobs[0].do_verify
    );
    assert_eq!(s.jobs[0].effective_depth(), 1);

    let s = p("backwards-read.fio");
    assert_eq!(s.jobs[0].rw_seq_skip, -8192);

    let s = p("poisson-rate-submission.fio");
    assert!(s.jobs[0].rate_poisson && s.jobs[0].io_submit_offload);
    assert_eq!(s.jobs[0].rate_iops, [50; 3]);

    let s = p("null.fio");
    assert!(s.jobs[0].gtod_reduce && s.jobs[0].ioengine == IoEngine::Null);

    let s = parse_job_file(&reference("fio-samples").join("numjobs_group.fio")).unwrap();
    assert_eq!(
        s.global_options.len(),
        6,
        "bare group_reporting is left out, as in fio's JSON"
    );
    assert_eq!(
        s.jobs[1].raw_options,
        vec![("rw".into(), "read".into()), ("bs".into(), "128k".into())]
    );
}
