//! `blksim fuzz`: a simulation fuzzer in the spirit of TigerBeetle's VOPR and FoundationDB's
//! simulation testing. It draws random valid cases from the simulator's own tables (fio's
//! option table, the bundled profiles, the elevators, every model parameter table; see
//! [`gen`]), runs each in a child process and checks invariants ([`exec`]); a failing case is
//! written down with the `blksim run` command that reproduces it, then minimised ([`shrink`]).
//!
//! Generation is deterministic: case `i` of seed `s` is the same case on every machine, so
//! `blksim fuzz --seed=s --case=i` redoes it. Which cases a `--seconds` run reaches depends on
//! the machine's speed; what each case is does not.

mod bounds;
mod case;
mod exec;
mod gen;
pub mod keys;
mod shrink;
mod trace;

use case::Case;
use exec::{CostModel, Failure, Runner, Verdict};
use gen::GenConfig;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The fuzzer's part of `blksim --help`.
pub const USAGE: &str = "\
blksim fuzz options (a simulation fuzzer: random valid cases, each run in a child process
and checked for termination, panics, lost requests, data integrity, fio's JSON keys,
determinism and cost proportional to events; a failure prints a repro command, then a
minimised one, and the exit status is 1):
  --seconds=N            stop starting new cases after N seconds (default 60, unless
                         --cases or --case is given)
  --cases=N              run N cases (with --seconds: whichever comes first)
  --seed=N               the fuzzer's seed (default 1); the same seed gives the same cases
  --case=N               run only case N of the seed (to redo a reported case)
  --dir=PATH             where failing cases' job files go (default: a new directory
                         under the system's temporary directory)
  --jobs=N               cases run in parallel (default: the number of CPUs)
  --max-ios=N            I/O budget of one case (default 2000)
  --minimise-runs=N      runs the minimiser may spend per distinct failure (default 300;
                         0 = do not minimise)
  --verbose              print one line per case
  --print                write the cases' job files to --dir and print their blksim run
                         commands instead of running them (with --case or --cases)
";

struct FuzzArgs {
    seconds: Option<u64>,
    cases: Option<u64>,
    seed: u64,
    case: Option<u64>,
    dir: Option<PathBuf>,
    jobs: usize,
    max_ios: u64,
    minimise_runs: u32,
    verbose: bool,
    print: bool,
    /// Test only: forwarded to every `blksim run` as `--debug-drop-completion=N`, so the
    /// fuzzer's own test can check that an injected lost completion is caught and reported.
    debug_drop_completion: u64,
}

fn parse_args(args: &[String]) -> Result<FuzzArgs, String> {
    let mut a = FuzzArgs {
        seconds: None,
        cases: None,
        seed: 1,
        case: None,
        dir: None,
        jobs: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        max_ios: GenConfig::default().max_ios,
        minimise_runs: 300,
        verbose: false,
        print: false,
        debug_drop_completion: 0,
    };
    let num = |k: &str, v: &str, min: u64| -> Result<u64, String> {
        let n: u64 = v
            .trim()
            .parse()
            .map_err(|_| format!("fuzz: {k}={v}: expected a whole number"))?;
        if n < min {
            return Err(format!("fuzz: {k}={v}: must be at least {min}"));
        }
        Ok(n)
    };
    for arg in args {
        let (k, v) = match arg.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (arg.as_str(), None),
        };
        let val = || v.ok_or_else(|| format!("fuzz: {k} needs a value ({k}=N)"));
        match k {
            "--seconds" => a.seconds = Some(num(k, val()?, 1)?),
            "--cases" => a.cases = Some(num(k, val()?, 1)?),
            "--seed" => a.seed = num(k, val()?, 0)?,
            "--case" => a.case = Some(num(k, val()?, 0)?),
            "--dir" => a.dir = Some(PathBuf::from(val()?)),
            "--jobs" => a.jobs = num(k, val()?, 1)?.min(256) as usize,
            "--max-ios" => a.max_ios = num(k, val()?, 1)?,
            "--minimise-runs" => a.minimise_runs = num(k, val()?, 0)?.min(100_000) as u32,
            "--verbose" | "-v" if v.is_none() => a.verbose = true,
            "--print" if v.is_none() => a.print = true,
            "--debug-drop-completion" => a.debug_drop_completion = num(k, val()?, 1)?,
            _ => {
                return Err(format!(
                    "fuzz: unknown argument '{arg}' (expected --seconds=N, --cases=N, --seed=N, --case=N, --dir=PATH, --jobs=N, --max-ios=N, --minimise-runs=N, --verbose, --print)"
                ))
            }
        }
    }
    if a.print && a.case.is_none() && a.cases.is_none() {
        return Err("fuzz: --print needs --case=N or --cases=N".into());
    }
    if a.seconds.is_none() && a.cases.is_none() && a.case.is_none() {
        a.seconds = Some(60);
    }
    Ok(a)
}

/// What one case came to.
struct Outcome {
    case: Case,
    verdict: Verdict,
}

/// `blksim fuzz ARGS`: Ok(true) when every case passed or was rejected.
pub fn main(args: &[String]) -> Result<bool, String> {
    let a = parse_args(args)?;
    let exe = std::env::current_exe().map_err(|e| format!("fuzz: own executable: {e}"))?;
    let (dir, own_dir) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("blksim-fuzz-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("fuzz: --dir={}: {e}", dir.display()))?;
    // Children run in it, so the job files' paths must not depend on the working directory.
    let dir =
        std::fs::canonicalize(&dir).map_err(|e| format!("fuzz: --dir={}: {e}", dir.display()))?;
    let runner = Runner {
        exe: exe.clone(),
        dir: dir.clone(),
        cost: CostModel::for_this_build(),
    };
    let cfg = GenConfig {
        max_ios: a.max_ios,
        debug_drop_completion: a.debug_drop_completion,
        ..GenConfig::default()
    };
    let (first, end) = match a.case {
        Some(i) => (i, i.saturating_add(1)),
        None => (0, a.cases.unwrap_or(u64::MAX)),
    };
    let deadline = a.seconds.map(Duration::from_secs);
    if a.print {
        let mut out = String::new();
        for i in first..end {
            let case = gen::generate(a.seed, i, &cfg);
            let file = dir.join(format!("case-{i}.fio"));
            std::fs::write(&file, case.job_text())
                .map_err(|e| format!("fuzz: writing {}: {e}", file.display()))?;
            let _ = writeln!(out, "{}", case.command_line(&exe, &file));
            write_stdout(&mut out);
        }
        return Ok(true);
    }
    println!(
        "blksim fuzz: seed {}, {}, {} parallel, I/O budget {} per case, job files in {}",
        a.seed,
        match (a.case, a.cases, a.seconds) {
            (Some(i), _, _) => format!("case {i}"),
            (None, Some(n), Some(s)) => format!("{n} cases or {s} s"),
            (None, Some(n), None) => format!("{n} cases"),
            (None, None, Some(s)) => format!("{s} s"),
            _ => String::new(),
        },
        a.jobs,
        a.max_ios,
        dir.display()
    );
    let t0 = Instant::now();
    let next = AtomicU64::new(first);
    let fatal: Mutex<Option<String>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let outcomes: Mutex<Vec<(u64, Outcome)>> = Mutex::new(Vec::new());
    let last_progress = Mutex::new(Instant::now());
    std::thread::scope(|s| {
        for _ in 0..a.jobs {
            s.spawn(|| loop {
                if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| t0.elapsed() >= d) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end {
                    break;
                }
                let case = gen::generate(a.seed, i, &cfg);
                let file = dir.join(format!("case-{i}.fio"));
                let verdict = match runner.check(&case, &file) {
                    Ok(v) => v,
                    Err(e) => {
                        *fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                };
                if !matches!(verdict, Verdict::Fail(_)) {
                    let _ = std::fs::remove_file(&file);
                }
                if a.verbose {
                    println!("{}", case_line(&case, &verdict));
                }
                let mut all = outcomes.lock().unwrap_or_else(|p| p.into_inner());
                all.push((i, Outcome { case, verdict }));
                let mut lp = last_progress.lock().unwrap_or_else(|p| p.into_inner());
                if lp.elapsed() >= Duration::from_secs(10) {
                    *lp = Instant::now();
                    let failed = all
                        .iter()
                        .filter(|(_, o)| matches!(o.verdict, Verdict::Fail(_)))
                        .count();
                    eprintln!(
                        "blksim fuzz: {} cases in {:.0} s, {failed} failed",
                        all.len(),
                        t0.elapsed().as_secs_f64()
                    );
                }
            });
        }
    });
    if let Some(e) = fatal.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(format!("fuzz: {e}"));
    }
    let elapsed = t0.elapsed();
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|(i, _)| *i);
    let mut out = summary(&outcomes, elapsed, &runner);
    // Failures, one per distinct signature, each with its repro and a minimised repro.
    let mut groups: BTreeMap<String, Vec<(&Case, &Failure)>> = BTreeMap::new();
    for (_, o) in &outcomes {
        if let Verdict::Fail(f) = &o.verdict {
            groups.entry(f.signature()).or_default().push((&o.case, f));
        }
    }
    // Report failures in the order of their first case.
    let mut ordered: Vec<&Vec<(&Case, &Failure)>> = groups.values().collect();
    ordered.sort_by_key(|g| g[0].0.index);
    for g in ordered {
        let (c, f) = g[0];
        let file = dir.join(format!("case-{}.fio", c.index));
        let others: Vec<String> = g[1..]
            .iter()
            .take(8)
            .map(|(c, _)| c.index.to_string())
            .collect();
        let _ = writeln!(
            out,
            "\nFAIL case {} ({} case{} with this failure{}): {}\n  {}\n  repro: {}",
            c.index,
            g.len(),
            if g.len() == 1 { "" } else { "s" },
            if others.is_empty() {
                String::new()
            } else {
                format!(", also {}", others.join(", "))
            },
            f.kind.text(),
            f.detail,
            c.command_line(&exe, &file)
        );
        write_stdout(&mut out);
        if a.minimise_runs > 0 {
            let m = shrink::minimise(
                &runner,
                c,
                f.kind,
                &dir,
                a.minimise_runs,
                Duration::from_secs(120),
            );
            let min_file = dir.join(format!("case-{}-min.fio", c.index));
            if std::fs::write(&min_file, m.case.job_text()).is_ok() && m.case != *c {
                let _ = writeln!(
                    out,
                    "  minimised ({} -> {} options, sets and sections; {} runs): {}\n  {}\n  minimised repro: {}",
                    c.size(),
                    m.case.size(),
                    m.runs,
                    f.kind.text(),
                    m.detail,
                    m.case.command_line(&exe, &min_file)
                );
                for l in m.case.job_text().lines() {
                    let _ = writeln!(out, "    | {l}");
                }
            } else {
                let _ = writeln!(
                    out,
                    "  minimised: no smaller case fails the same way ({} runs)",
                    m.runs
                );
            }
        }
        write_stdout(&mut out);
    }
    let failed = !groups.is_empty();
    if !failed && own_dir {
        let _ = std::fs::remove_dir_all(&dir);
    }
    write_stdout(&mut out);
    Ok(!failed)
}

fn write_stdout(s: &mut String) {
    let mut so = std::io::stdout().lock();
    let _ = so.write_all(s.as_bytes());
    let _ = so.flush();
    s.clear();
}

/// One line per case (`--verbose`): everything in it is deterministic.
fn case_line(c: &Case, v: &Verdict) -> String {
    let what = match v {
        Verdict::Pass(p) => format!("pass events={} digest={}", p.events, p.digest),
        Verdict::Rejected(m) => format!("rejected: {m}"),
        Verdict::Fail(f) => format!("FAIL {}: {}", f.kind.text(), f.detail),
    };
    format!(
        "case {}: {} jobs={} sets={} -> {what}",
        c.index,
        c.device,
        c.jobs(),
        c.sets.len()
    )
}

/// The elevator and MMC host path a case asked for (for the coverage lines).
fn case_paths(c: &Case) -> (String, String) {
    let set = |k: &str| c.sets.iter().find(|(s, _)| s == k).map(|(_, v)| v.clone());
    let fio = c
        .sections
        .iter()
        .find_map(|s| s.get("ioscheduler").cloned().flatten());
    let profile = blksim_sim::profile::Profile::load(&c.device).ok();
    let sched = fio
        .or_else(|| set("queue.scheduler"))
        .or_else(|| profile.as_ref().and_then(|p| p.get("queue.scheduler")))
        .unwrap_or_else(|| "none".into());
    let host = match profile.as_ref().map(|p| p.driver.as_str()) {
        Some("mmc") => {
            let q = set("host.queue")
                .or_else(|| profile.as_ref().and_then(|p| p.get("host.queue")))
                .unwrap_or_else(|| "legacy".into());
            if q == "hsq" {
                let t = set("host.hsq_next_tag")
                    .or_else(|| profile.as_ref().and_then(|p| p.get("host.hsq_next_tag")))
                    .unwrap_or_else(|| "fifo".into());
                format!("hsq/{t}")
            } else {
                q
            }
        }
        Some(d) => d.into(),
        None => "?".into(),
    };
    let sched = blksim_sched::canonical_name(&sched)
        .unwrap_or("?")
        .to_string();
    (sched, host)
}

/// A rejection message without its location and numbers, to count alike ones together.
fn rejection_pattern(m: &str, dir: &str) -> String {
    let m = m.replace(dir, "");
    // Drop "file:line: option: " style prefixes: keep the text after the last location.
    let tail = m
        .rsplit_once(".fio:")
        .map(|(_, t)| t.to_string())
        .unwrap_or(m);
    tail.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect::<String>()
        .trim_start_matches(['#', ':', ' '])
        .to_string()
}

fn summary(outcomes: &[(u64, Outcome)], elapsed: Duration, runner: &Runner) -> String {
    let mut s = String::new();
    let n = outcomes.len();
    let (mut passed, mut rejected, mut failed) = (0, 0, 0);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut devices: BTreeMap<String, usize> = BTreeMap::new();
    let mut scheds: BTreeMap<String, usize> = BTreeMap::new();
    let mut hosts: BTreeMap<String, usize> = BTreeMap::new();
    let mut events: u64 = 0;
    let mut slowest: Option<(f64, u64, Duration, u64)> = None;
    let dir = runner.dir.display().to_string();
    for (i, o) in outcomes {
        match &o.verdict {
            Verdict::Pass(p) => {
                passed += 1;
                events += p.events;
                *devices.entry(o.case.device.clone()).or_default() += 1;
                let (sc, h) = case_paths(&o.case);
                *scheds.entry(sc).or_default() += 1;
                *hosts.entry(h).or_default() += 1;
                let per = p.wall.as_secs_f64() * 1e9 / p.events.max(1) as f64;
                if p.events >= 10_000 && slowest.is_none_or(|(x, ..)| per > x) {
                    slowest = Some((per, p.events, p.wall, *i));
                }
            }
            Verdict::Rejected(m) => {
                rejected += 1;
                *reasons.entry(rejection_pattern(m, &dir)).or_default() += 1;
            }
            Verdict::Fail(_) => failed += 1,
        }
    }
    let mins = elapsed.as_secs_f64() / 60.0;
    let pct = |x: usize| 100.0 * x as f64 / n.max(1) as f64;
    let _ = writeln!(
        s,
        "{n} cases in {:.1} s ({:.0} cases/min): {passed} passed, {rejected} rejected ({:.1} %), {failed} failed",
        elapsed.as_secs_f64(),
        n as f64 / mins.max(1e-9),
        pct(rejected)
    );
    let line = |s: &mut String, title: &str, m: &BTreeMap<String, usize>| {
        let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let list = if parts.is_empty() {
            "(none)".to_string()
        } else {
            parts.join(", ")
        };
        let _ = writeln!(s, "  {title}: {list}");
    };
    line(&mut s, "passed by device", &devices);
    line(&mut s, "by elevator", &scheds);
    line(&mut s, "by MMC host path", &hosts);
    let _ = writeln!(s, "  simulated events of passed cases: {events}");
    if let Some((per, ev, wall, i)) = slowest {
        let _ = writeln!(
            s,
            "  slowest per event (cases of 10^4+ events): case {i}, {ev} events in {:.3} s ({:.2} us/event; budget {} ms + {:.1} us/event)",
            wall.as_secs_f64(),
            per / 1000.0,
            runner.cost.base.as_millis(),
            runner.cost.per_event_ns as f64 / 1000.0
        );
    }
    if !reasons.is_empty() {
        let mut r: Vec<(&String, &usize)> = reasons.iter().collect();
        r.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let _ = writeln!(s, "  rejections (most frequent first):");
        for (m, c) in r.iter().take(12) {
            let _ = writeln!(s, "    {c:>5} x {m}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_are_checked() {
        let a = parse_args(&[]).unwrap();
        assert_eq!((a.seconds, a.cases, a.seed), (Some(60), None, 1));
        let a = parse_args(&args(&["--cases=5", "--seed=9", "--verbose"])).unwrap();
        assert_eq!(
            (a.seconds, a.cases, a.seed, a.verbose),
            (None, Some(5), 9, true)
        );
        for bad in [
            "--cases=0",
            "--cases=x",
            "--seconds",
            "--seconds=-1",
            "--bogus",
            "--jobs=0",
            "--verbose=2",
            "--print",
        ] {
            let e = parse_args(&args(&[bad])).err().unwrap_or_default();
            assert!(e.starts_with("fuzz: "), "{bad}: {e}");
        }
    }

    #[test]
    fn rejections_are_counted_without_locations() {
        assert_eq!(
            rejection_pattern("/tmp/d/case-12.fio:7: option 'bs': bad 4000", "/tmp/d"),
            "option 'bs': bad ####"
        );
    }
}
