//! No fio JSON may panic the calibration's reader. A deterministic generator (fixed seed, so
//! a failure reproduces) mutates real fio outputs (the probe's and fio 3.33's, from the
//! repository's recorded runs) and the published-figure files by replacing, deleting,
//! duplicating and splicing bytes and values. Every input must give a run or an error that
//! names the file.

use blksim_calibrate::fiojson::parse_run;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn seeds() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    [
        "crates/blksim/tests/data/probe-vda/fio/rr4k-4jobs.json",
        "crates/blksim/tests/data/probe-vda/probe/randread-4k-qd16.json",
        "repro/s1-hbg4a2/published/randwrite.json",
    ]
    .iter()
    .map(|p| std::fs::read_to_string(root.join(p)).unwrap())
    .collect()
}

const VALUES: &[&str] = &[
    "\"\"",
    "0",
    "-1",
    "1e308",
    "null",
    "[]",
    "{}",
    "\"numjobs\"",
    "\"99999999999999999999\"",
    "\"randread\"",
    "\"4k\"",
    "\"1g\"",
    "\"group_reporting\"",
    "\"[x]\"",
    "\"a\\nb\"",
    "true",
];

#[test]
fn mutated_fio_json_never_panics() {
    let seeds = seeds();
    let mut r = blksim_core::mutate::Mutator::new(0x5eed_f10a);
    let (mut ok, mut err) = (0, 0);
    for case in 0..6000 {
        let text = r.mutate(
            &seeds[case % seeds.len()],
            blksim_core::mutate::JSON,
            VALUES,
            4,
        );
        let got = catch_unwind(AssertUnwindSafe(|| parse_run(&text, "m.json")));
        match got {
            Ok(Ok(run)) => {
                assert!(!run.measured.is_empty());
                assert!(run.min_time_ns <= blksim_calibrate::fiojson::MAX_MIN_TIME_NS);
                ok += 1;
            }
            Ok(Err(e)) => {
                assert!(
                    e.contains("m.json"),
                    "case {case}: error without the file: {e}"
                );
                err += 1;
            }
            Err(_) => panic!("case {case} panicked; input:\n{text}"),
        }
    }
    // Both outcomes must be explored for the test to mean anything.
    assert!(ok > 100 && err > 100, "ok {ok}, err {err}");
}
