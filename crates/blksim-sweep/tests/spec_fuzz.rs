//! No sweep file may panic the sweep's reader. A deterministic generator (fixed seed, so a
//! failure reproduces) mutates valid sweep files by replacing, deleting, duplicating and
//! splicing bytes and values. Every input must give a sweep within its bounds, whose points
//! can all be listed, or an error that names the file.

use blksim_sweep::{grid, spec};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

const SEEDS: &[&str] = &[
    "[base]\njob_text = \"[j]\\nrw=randread\\nsize=1m\\n\"\ndevice = \"null_blk\"\nset = [\"irqmode=2\"]\noptions = [\"--runtime=1\"]\nseed = 3\nrepeats = 2\n[axes]\ndevice = [\"null_blk\", \"emmc-hbg4a2\"]\n[axes.job]\nnumjobs = { from = 1, to = 8, times = 2 }\nbs = [\"4k\", 8192]\n[axes.set]\n\"queue.nomerges\" = [0, 1, 2]\n",
    "[base]\njob_text = \"[j]\\n\"\n[axes.job]\niodepth = { from = 1, to = 64, step = 7 }\n[sample]\ncount = 5\nseed = 9\n",
];

const VALUES: &[&str] = &[
    "0",
    "-1",
    "9223372036854775807",
    "1e308",
    "\"\"",
    "[]",
    "{}",
    "{ from = 1 }",
    "{ from = 0, to = 5, times = 2 }",
    "{ from = 1, to = 999999999, step = 1 }",
    "true",
    "[\"a\", 1, 2.5]",
    "\"[x]\"",
];

#[test]
fn mutated_sweep_files_never_panic() {
    let mut r = blksim_core::mutate::Mutator::new(0x5eed_5eeb);
    let (mut ok, mut err) = (0, 0);
    for case in 0..4000 {
        let text = r.mutate(
            SEEDS[case % SEEDS.len()],
            blksim_core::mutate::TOML,
            VALUES,
            3,
        );
        let got = catch_unwind(AssertUnwindSafe(|| {
            spec::parse(&text, "m.toml", Path::new("/nonexistent")).map(|s| {
                let n = grid::points(&s).len() as u64;
                assert!(n <= spec::MAX_POINTS, "{n} points");
                // The bundle of an accepted sweep parses to the same points.
                let b =
                    spec::parse(&spec::bundle(&s), "b.toml", Path::new("/nonexistent")).unwrap();
                assert_eq!(grid::points(&b).len() as u64, n);
            })
        }));
        match got {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => {
                assert!(
                    e.starts_with("m.toml"),
                    "case {case}: error without the file: {e}"
                );
                err += 1;
            }
            Err(_) => panic!("case {case} panicked; input:\n{text}"),
        }
    }
    assert!(ok > 100 && err > 100, "ok {ok}, err {err}");
}
