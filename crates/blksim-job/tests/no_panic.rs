//! No input may panic the front end. A deterministic generator (fixed seed, so failures
//! reproduce) feeds the job-file and command-line parsers thousands of inputs: random bytes,
//! the repository's job-file corpus (tests/jobs) with its lines shuffled and mutated, and lines built from real
//! option names with hostile values. Successful parses are checked against invariants.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use blksim_job::*;

/// The fuzz tests' one generator (deterministic from its seed).
struct Rng(blksim_core::mutate::Mutator);
impl Rng {
    fn seeded(seed: u64) -> Rng {
        Rng(blksim_core::mutate::Mutator::new(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.draw()
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const PIECES: &[&str] = &[
    "0",
    "1",
    "4",
    "8",
    "16",
    "100",
    "101",
    "4096",
    "0x",
    "0x1f",
    "k",
    "K",
    "ki",
    "kib",
    "KiB",
    "m",
    "g",
    "t",
    "p",
    "b",
    "z",
    "%",
    "50%",
    "12.5%",
    ",",
    ",,",
    ":",
    "::",
    "-",
    "/",
    "(",
    ")",
    "((",
    "*",
    "^",
    "+",
    "/0",
    "%0",
    ".",
    "1e400",
    "inf",
    "nan",
    "-8k",
    "99999999999999999999999",
    "18446744073709551615",
    "${",
    "}",
    "${HOME}",
    "${X}",
    "$pagesize",
    "$ncpus",
    "$mb_memory",
    "=",
    "==",
    "[",
    "]",
    "[global]",
    ";",
    "#",
    " ",
    "\t",
    "\r",
    "é",
    "\u{0}",
    "\u{feff}",
    "漢",
    "read",
    "randrw",
    "zipf",
    "zoned",
    "zoned_abs",
    "normal",
    "pareto",
    "sequence",
    "libaio",
    "psync",
    "null",
    "mtd",
    "s",
    "ms",
    "us",
    "h",
    "d",
    "msec",
    "usec",
    "include",
    "global",
    "4k/50",
    "1k/",
    "/20",
];

fn value(rng: &mut Rng) -> String {
    let n = 1 + rng.below(6);
    (0..n).map(|_| *rng.pick(PIECES)).collect()
}

fn option_names() -> Vec<&'static str> {
    let mut v = Vec::new();
    for o in OPTIONS {
        v.push(o.name);
        v.extend(o.aliases.iter().copied());
    }
    v
}

/// Every line of the repository's job-file corpus (`tests/jobs/`, refused files and include
/// fragments too), in a fixed order.
fn corpus_lines() -> Vec<String> {
    fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
        let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, files);
            } else if p.extension().is_some_and(|x| x == "fio" || x == "inc") {
                files.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/jobs"),
        &mut files,
    );
    files.sort();
    let mut lines = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        lines.extend(text.lines().map(str::to_string));
    }
    assert!(lines.len() > 500, "corpus has only {} lines", lines.len());
    lines
}

fn mutate(rng: &mut Rng, s: &mut String) {
    let mut chars: Vec<char> = s.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(chars.len() + 1);
        match rng.below(5) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 => {
                let p: Vec<char> = rng.pick(PIECES).chars().collect();
                chars.splice(at..at, p);
            }
            2 if at < chars.len() => {
                let p: Vec<char> = rng.pick(PIECES).chars().collect();
                chars[at] = p.first().copied().unwrap_or('x');
            }
            3 => {
                let end = (at + rng.below(8)).min(chars.len());
                let dup: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, dup);
            }
            _ => chars.truncate(at),
        }
    }
    *s = chars.into_iter().collect();
}

fn env(k: &str) -> Option<String> {
    match k {
        "X" => Some("4k,8k".into()),
        "HOME" => Some("/home/x;comment".into()),
        _ => None,
    }
}

/// Invariants of any successfully parsed set.
fn check(set: &JobSet, input: &str) {
    assert!(!set.jobs.is_empty(), "{input:?}");
    for j in &set.jobs {
        assert!(
            j.numjobs >= 1 && j.iodepth >= 1 && j.loops >= 1,
            "{input:?}"
        );
        assert!(j.rwmixread <= 100, "{input:?}");
        assert!(j.kb_base == 1000 || j.kb_base == 1024, "{input:?}");
        assert!(j.percentage_random.iter().all(|&p| p <= 100), "{input:?}");
        assert!(j.percentile_list.len() <= 20, "{input:?}");
        for b in &j.bs {
            assert!(b.min >= 1 && b.min <= b.max, "{input:?}");
            if !b.split.is_empty() {
                // As in fio the shares may leave some over (a lone 64k/25, three blanks at
                // 33); a draw past them takes the last entry.
                assert!(
                    b.split.iter().map(|e| e.pct).sum::<u32>() <= 100,
                    "{input:?}"
                );
            }
        }
        if let SizeOrPct::PctMilli(p) = j.offset {
            assert!((1..=100_000).contains(&p), "{input:?}");
        }
        assert!(j.effective_depth() >= 1);
    }
}

/// Parse; true when the text was accepted.
fn run_file(input: &str) -> bool {
    let r = catch_unwind(AssertUnwindSafe(|| {
        parse_job_str(input, "/nonexistent-blksim-fuzz/job.fio", &env)
    }));
    match r {
        Ok(Ok(set)) => {
            check(&set, input);
            true
        }
        Ok(Err(e)) => {
            assert!(
                e.file.starts_with("/nonexistent-blksim-fuzz/"),
                "{input:?}: {e}"
            );
            assert!(
                e.line >= 1 || e.message.contains("no jobs"),
                "{input:?}: {e}"
            );
            let _ = e.to_string();
            false
        }
        Err(_) => panic!("parser panicked on job text {input:?}"),
    }
}

fn run_cli(a: &[String]) {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let parsed = parse_cli(a);
        let mut base = parse_job_str("[a]\n[b]\nbssplit=4k/50:8k/\n", "b.fio", &|_| None).unwrap();
        let (fio, _) = split_cli_options(a);
        let over = apply_overrides(&mut base, &fio);
        (parsed, over, base)
    }));
    match r {
        Ok((parsed, over, base)) => {
            if let Ok(set) = parsed {
                check(&set, &format!("{a:?}"));
            }
            if over.is_ok() {
                check(&base, &format!("{a:?}"));
            }
        }
        Err(_) => panic!("parser panicked on arguments {a:?}"),
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::seeded(0x5eed_0001);
    for _ in 0..4000 {
        let len = rng.below(200);
        let bytes: Vec<u8> = (0..len)
            .map(|_| match rng.below(4) {
                0 => rng.next() as u8,
                1 => *rng.pick(b"[]=;#\n\t ,:-/%()*^$0123456789kKmMgG"),
                _ => *rng.pick(b"abcdefghijklmnopqrstuvwxyz_"),
            })
            .collect();
        run_file(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn mutated_corpus_files_never_panic() {
    let lines = corpus_lines();
    let mut rng = Rng::seeded(0x5eed_0002);
    let mut accepted = 0;
    for _ in 0..6000 {
        let mut text = String::from("[job]\n");
        for _ in 0..1 + rng.below(25) {
            let mut l = rng.pick(&lines).clone();
            if rng.below(3) == 0 {
                mutate(&mut rng, &mut l);
            }
            text.push_str(&l);
            text.push('\n');
        }
        if rng.below(4) == 0 {
            mutate(&mut rng, &mut text);
        }
        accepted += usize::from(run_file(&text));
    }
    // The generator must reach the successful paths too, not only early errors.
    assert!(accepted > 600, "only {accepted} of 6000 accepted");
}

#[test]
fn option_lines_with_hostile_values_never_panic() {
    let names = option_names();
    let mut rng = Rng::seeded(0x5eed_0003);
    let mut accepted = 0;
    for _ in 0..8000 {
        let mut text = String::new();
        if rng.below(2) == 0 {
            text.push_str("[global]\n");
        }
        text.push_str("[j]\n");
        for _ in 0..1 + rng.below(6) {
            let name = *rng.pick(&names);
            match rng.below(6) {
                0 => text.push_str(name),
                _ => {
                    text.push_str(name);
                    text.push('=');
                    text.push_str(&value(&mut rng));
                }
            }
            text.push('\n');
        }
        accepted += usize::from(run_file(&text));
    }
    assert!(accepted > 400, "only {accepted} of 8000 accepted");
}

#[test]
fn command_lines_never_panic() {
    let names = option_names();
    let mut rng = Rng::seeded(0x5eed_0004);
    for _ in 0..4000 {
        let n = rng.below(8);
        let args: Vec<String> = (0..n)
            .map(|_| match rng.below(6) {
                0 => value(&mut rng),
                1 => format!("--{}", rng.pick(&names)),
                2 => format!("--name={}", value(&mut rng)),
                _ => format!("--{}={}", rng.pick(&names), value(&mut rng)),
            })
            .collect();
        run_cli(&args);
    }
}

#[test]
fn cmdhelp_never_panics() {
    let mut rng = Rng::seeded(0x5eed_0005);
    for o in OPTIONS {
        assert!(cmdhelp(Some(o.name)).is_ok());
    }
    for _ in 0..500 {
        let _ = cmdhelp(Some(&value(&mut rng)));
    }
}
