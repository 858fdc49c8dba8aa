//! Minimising a failing case: greedily take away job sections, `--set`s and job options, and
//! shrink numbers, keeping each change only while the case still fails the same invariant.

use super::case::Case;
use super::exec::{Kind, Runner, Verdict};
use super::gen::{estimate, parse_case, rebound};
use std::path::Path;
use std::time::{Duration, Instant};

/// What a minimisation did.
pub struct Minimised {
    pub case: Case,
    pub runs: u32,
    pub detail: String,
}

/// Candidate changes of `c`, the biggest first.
fn candidates(c: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    // Whole sections (a job file needs one job).
    for i in 0..c.sections.len() {
        if c.sections[i].name != "global" && c.jobs() == 1 {
            continue;
        }
        let mut d = c.clone();
        d.sections.remove(i);
        out.push(d);
    }
    for i in 0..c.sets.len() {
        let mut d = c.clone();
        d.sets.remove(i);
        out.push(d);
    }
    for (i, s) in c.sections.iter().enumerate() {
        for k in 0..s.opts.len() {
            let mut d = c.clone();
            d.sections[i].opts.remove(k);
            out.push(d);
        }
    }
    if c.json_plus {
        let mut d = c.clone();
        d.json_plus = false;
        out.push(d);
    }
    // Smaller numbers: halve, or go to the smallest useful value.
    for (i, s) in c.sections.iter().enumerate() {
        for (k, (_, v)) in s.opts.iter().enumerate() {
            for smaller in shrink_number(v.as_deref().unwrap_or("")) {
                let mut d = c.clone();
                d.sections[i].opts[k].1 = Some(smaller);
                out.push(d);
            }
        }
    }
    for (i, (_, v)) in c.sets.iter().enumerate() {
        for smaller in shrink_number(v) {
            let mut d = c.clone();
            d.sets[i].1 = smaller;
            out.push(d);
        }
    }
    if c.seed > 1 {
        let mut d = c.clone();
        d.seed = 1;
        out.push(d);
    }
    out
}

/// Smaller forms of a plain number with an optional unit suffix (`4096`, `64k`, `20ms`):
/// 1 and half of it. Anything else (lists, ranges, names) is left alone.
fn shrink_number(v: &str) -> Vec<String> {
    let digits = v.bytes().take_while(|b| b.is_ascii_digit()).count();
    let (num, suffix) = v.split_at(digits);
    if digits == 0 || !suffix.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Vec::new();
    }
    let Ok(n) = num.parse::<u64>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if n > 1 {
        out.push(format!("1{suffix}"));
    }
    if n > 3 {
        out.push(format!("{}{suffix}", n / 2));
    }
    out
}

/// Minimise `case`, which fails with `kind`, within `max_runs` checks and `max_time`. A
/// candidate may not do more than the original could (its I/O and byte bounds stay within
/// the original's): taking `size` away would make any case run past its `--max-events`.
pub fn minimise(
    runner: &Runner,
    case: &Case,
    kind: Kind,
    dir: &Path,
    max_runs: u32,
    max_time: Duration,
) -> Minimised {
    let t0 = Instant::now();
    let file = dir.join(format!("case-{}-try.fio", case.index));
    let mut cur = case.clone();
    let mut detail = String::new();
    let mut runs = 0;
    let limit = parse_case(case).and_then(|s| estimate(&s));
    'outer: loop {
        for mut cand in candidates(&cur) {
            if runs >= max_runs || t0.elapsed() > max_time {
                break 'outer;
            }
            let e = rebound(&mut cand);
            if let Some(l) = limit {
                if e.is_none_or(|e| e.ios > l.ios || e.bytes > l.bytes) {
                    continue;
                }
            }
            runs += 1;
            if let Ok(Verdict::Fail(f)) = runner.check(&cand, &file) {
                if f.kind == kind {
                    cur = cand;
                    detail = f.detail;
                    continue 'outer;
                }
            }
        }
        break;
    }
    let _ = std::fs::remove_file(&file);
    Minimised {
        case: cur,
        runs,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_shrink_and_other_values_do_not() {
        assert_eq!(shrink_number("4096"), vec!["1", "2048"]);
        assert_eq!(shrink_number("64k"), vec!["1k", "32k"]);
        assert_eq!(shrink_number("2"), vec!["1"]);
        assert!(shrink_number("1").is_empty());
        assert!(shrink_number("4k,8k").is_empty());
        assert!(shrink_number("randread").is_empty());
        assert!(shrink_number("50%").is_empty());
    }
}
