//! Running one case in a child process and checking the invariants.
//!
//! Each case runs as `blksim run <jobfile> --device=... --set=... --seed=...
//! --output-format=json --max-events=N` (the fuzzer's own binary), with `BLKSIM_FAKE_TIME`
//! set, so that a hang or a panic cannot take the fuzzer down. A child is killed after an
//! absolute timeout derived from its event bound.
//!
//! Invariants, in the order they are checked:
//! 1. it terminates: no timeout, no signal, no panic; no broken durability promise
//!    (`integrity violation:` on stderr);
//! 2. an error exit without a report is a rejection (a normal message, e.g. a cross-parameter
//!    constraint), unless the simulator says it lost a request ("internal error"), found a
//!    data-integrity mismatch, or ran past `--max-events`; an error exit with a report is
//!    fio's exit value (jobs that ended with an I/O error) and the report is checked;
//! 3. the JSON parses, `blksim.integrity.mismatches` is 0, every bio submitted completed
//!    exactly once (`blksim.bios`), the fio I/Os stay within what the job file allows, and the
//!    key paths are fio's (from fio's own JSON reports, the frozen samples of blksim-report),
//!    no job's latencies add up to more than its iodepth allows and no rated direction
//!    moves more than its rate ([`super::bounds`]);
//! 4. a second run, which also writes blktrace files, gives byte-identical JSON (and so the
//!    same `blksim.event_digest`);
//! 5. the blktrace files are time ordered per CPU, no request is issued before a bio was
//!    queued at its sector, none completes before it was issued, and every one issued has
//!    completed by the end ([`super::trace`]), and the bytes fio counted are the ones the
//!    trace shows the device completing ([`super::bounds::conserved`]);
//! 6. wall time (the faster of the two runs) is at most `A + B × events`.

use super::case::{Case, FAKE_TIME};
use super::keys::key_paths;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Which invariant failed. The minimiser keeps a smaller case only if it fails the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Timeout,
    Signal,
    Panic,
    LostRequest,
    Integrity,
    MaxEvents,
    BadJson,
    LostBio,
    TooManyIos,
    FioKeys,
    Nondeterministic,
    Trace,
    Cost,
    Little,
    Rate,
    Bytes,
}

impl Kind {
    pub fn text(self) -> &'static str {
        match self {
            Kind::Timeout => "did not terminate (killed after its timeout)",
            Kind::Signal => "killed by a signal",
            Kind::Panic => "panic",
            Kind::LostRequest => "lost a request (internal error)",
            Kind::Integrity => "data integrity mismatch",
            Kind::MaxEvents => "ran past its --max-events bound",
            Kind::BadJson => "JSON report does not parse or lacks blksim's keys",
            Kind::LostBio => "a bio did not complete exactly once",
            Kind::TooManyIos => "more I/Os than the job file allows",
            Kind::FioKeys => "JSON key paths differ from fio's",
            Kind::Nondeterministic => "two runs of the same case differ",
            Kind::Trace => "blktrace out of time order, a request issued or completed too early, or one never completed",
            Kind::Cost => "cost not proportional to events",
            Kind::Little => "fio's latencies need more I/Os in flight than iodepth (Little's law)",
            Kind::Rate => "a rated direction moved more bytes than its rate allows",
            Kind::Bytes => "fio's bytes differ from the bytes the device completed",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: Kind,
    pub detail: String,
}

impl Failure {
    /// What identifies "the same bug" among many failing cases: the kind and the message with
    /// its numbers taken out.
    pub fn signature(&self) -> String {
        let first = self.detail.lines().next().unwrap_or("");
        let norm: String = first
            .chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect();
        format!("{:?}: {norm}", self.kind)
    }
}

#[derive(Clone, Debug)]
pub struct Pass {
    pub events: u64,
    /// Simulated time at the end (`blksim.sim_time_ns`).
    pub sim_ns: u64,
    pub wall: Duration,
    pub digest: String,
}

/// Simulated time per event a run may add to its `--max-events` bound. The bound follows the
/// case's I/Os, but some kernel work is periodic while the device is busy: the queue run
/// that `blk_mq_dispatch_rq_list` re-arms every `BLK_MQ_RESOURCE_DELAY` (3 ms) while the
/// MMC legacy path's one dispatch context waits for a card write that takes seconds. A run
/// past its bound is tried again with [`TIME_RETRY_FACTOR`] times it and passes if its
/// events are within the bound plus one per simulated millisecond.
const TIME_PER_EVENT_NS: u64 = 1_000_000;
const TIME_RETRY_FACTOR: u64 = 20;

/// Where the second run of a case writes its blktrace files, in the case's directory.
const TRACE_DIR: &str = "blktrace";

#[derive(Clone, Debug)]
pub enum Verdict {
    Pass(Pass),
    /// The simulator refused the case with a normal error message.
    Rejected(String),
    Fail(Failure),
}

/// Wall-time budget of a run: `base + per_event × events`. Measured on the project's 2-core
/// machine: the release build simulates about 0.15-0.2 µs per event, the debug build (this
/// workspace's opt-level 1) about 0.2-0.3 µs, and a run's fixed cost (process, profile, report)
/// is a few ms for most configurations. The largest is a card's page FTL built in the steady
/// state over its whole modelled space (`card.ftl_model_gib`, at most 64 GiB): 0.6-0.8 s in
/// the release build, 1.4-1.6 s in the debug build (a 59 GiB `sd-a2-pi4` and a 1 TB card);
/// 4096 hardware queues of 10240 tags take 0.2 s. The budget is 15-20 times the cost per
/// event and about 4 times the largest fixed cost, so a loaded machine passes and a cost that
/// grows with something else than events does not.
#[derive(Clone, Copy, Debug)]
pub struct CostModel {
    pub base: Duration,
    pub per_event_ns: u64,
}

impl CostModel {
    pub fn for_this_build() -> CostModel {
        if cfg!(debug_assertions) {
            CostModel {
                base: Duration::from_secs(6),
                per_event_ns: 5_000,
            }
        } else {
            CostModel {
                base: Duration::from_secs(3),
                per_event_ns: 3_000,
            }
        }
    }

    pub fn budget(&self, events: u64) -> Duration {
        self.base + Duration::from_nanos(self.per_event_ns.saturating_mul(events))
    }

    /// The absolute timeout of a child: a run may use its whole event bound, at the budget's
    /// rate, twice over.
    pub fn timeout(&self, max_events: u64) -> Duration {
        (self.budget(max_events) * 2).max(Duration::from_secs(30))
    }
}

/// Where and how children run.
#[derive(Clone, Debug)]
pub struct Runner {
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub cost: CostModel,
}

pub struct RunOut {
    /// Exit code; None when killed by a signal (or by the timeout).
    pub code: Option<i32>,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub wall: Duration,
}

impl Runner {
    /// Run `blksim` with `args`, killing it after `timeout`.
    pub fn run_child(
        &self,
        args: &[String],
        timeout: Duration,
        cwd: &Path,
    ) -> Result<RunOut, String> {
        let t0 = Instant::now();
        // In the case's own directory: log files it asks for (`write_bw_log`, ...) land there.
        let mut child = Command::new(&self.exe)
            .current_dir(cwd)
            .args(args)
            .env("BLKSIM_FAKE_TIME", FAKE_TIME)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        // Drain both pipes on threads so a large report cannot block the child.
        let mut so = child.stdout.take().ok_or("no stdout pipe")?;
        let mut se = child.stderr.take().ok_or("no stderr pipe")?;
        let h1 = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = so.read_to_end(&mut b);
            b
        });
        let h2 = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = se.read_to_end(&mut b);
            b
        });
        let mut nap = Duration::from_micros(100);
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) => {}
                Err(e) => return Err(format!("waiting for a child: {e}")),
            }
            if t0.elapsed() > timeout {
                timed_out = true;
                let _ = child.kill();
                break child
                    .wait()
                    .map_err(|e| format!("waiting for a child: {e}"))?;
            }
            std::thread::sleep(nap);
            nap = (nap * 3 / 2).min(Duration::from_millis(5));
        };
        let wall = t0.elapsed();
        let stdout = h1.join().unwrap_or_default();
        let stderr = String::from_utf8_lossy(&h2.join().unwrap_or_default()).into_owned();
        Ok(RunOut {
            code: if timed_out { None } else { status.code() },
            timed_out,
            stdout,
            stderr,
            wall,
        })
    }

    /// Write the case's job file to `file` and check every invariant.
    pub fn check(&self, case: &Case, file: &Path) -> Result<Verdict, String> {
        let cwd = file.with_extension("d");
        let v = self.check_in(case, file, &cwd);
        // What the runs wrote (log files) is kept with the job file of a failed case only.
        if !matches!(v, Ok(Verdict::Fail(_))) {
            let _ = std::fs::remove_dir_all(&cwd);
        }
        v
    }

    fn check_in(&self, case: &Case, file: &Path, cwd: &Path) -> Result<Verdict, String> {
        std::fs::write(file, case.job_text())
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
        std::fs::create_dir_all(cwd).map_err(|e| format!("creating {}: {e}", cwd.display()))?;
        let mut args = case.run_args(file);
        let mut timeout = self.cost.timeout(case.max_events);
        let mut a = self.run_child(&args, timeout, cwd)?;
        let mut verdict = classify(case, &a, timeout);
        if matches!(&verdict, Verdict::Fail(f) if f.kind == Kind::MaxEvents) {
            let mut more = case.clone();
            more.max_events = case.max_events.saturating_mul(TIME_RETRY_FACTOR);
            args = more.run_args(file);
            timeout = self.cost.timeout(more.max_events);
            a = self.run_child(&args, timeout, cwd)?;
            verdict = match classify(&more, &a, timeout) {
                Verdict::Pass(p)
                    if p.events > case.max_events.saturating_add(p.sim_ns / TIME_PER_EVENT_NS) =>
                {
                    fail(
                        Kind::MaxEvents,
                        format!(
                            "{} events in {:.3} s simulated: more than its bound {} and one per simulated ms",
                            p.events,
                            p.sim_ns as f64 / 1e9,
                            case.max_events
                        ),
                    )
                }
                // Past the larger bound too: the first run's failure stands.
                Verdict::Fail(f) if f.kind == Kind::MaxEvents => verdict,
                other => other,
            };
        }
        let first = match verdict {
            Verdict::Pass(p) => p,
            // A refusal names the job file; its directory (a per-process temporary one by
            // default) is left out so that the verdict is the same run to run.
            Verdict::Rejected(m) => {
                let dir = format!("{}/", file.parent().unwrap_or(Path::new("")).display());
                return Ok(Verdict::Rejected(m.replace(&dir, "")));
            }
            other => return Ok(other),
        };
        // The second run also writes blktrace files (tracing must not change the report).
        let mut traced = args.clone();
        traced.push(format!("--blktrace={TRACE_DIR}"));
        let b = self.run_child(&traced, timeout, cwd)?;
        // The writer refuses a record earlier than a time the simulation said was settled.
        if let Some(l) = b
            .stderr
            .lines()
            .find(|l| l.starts_with("blksim: blktrace:"))
        {
            return Ok(Verdict::Fail(Failure {
                kind: Kind::Trace,
                detail: format!(
                    "{} (--blktrace={TRACE_DIR})",
                    l.trim_start_matches("blksim: ")
                ),
            }));
        }
        let second = match classify(case, &b, timeout) {
            Verdict::Pass(p) => p,
            Verdict::Fail(f) => {
                return Ok(Verdict::Fail(Failure {
                    kind: Kind::Nondeterministic,
                    detail: format!("the first run passed, the second failed: {}", f.detail),
                }))
            }
            Verdict::Rejected(m) => {
                return Ok(Verdict::Fail(Failure {
                    kind: Kind::Nondeterministic,
                    detail: format!("the first run passed, the second was refused: {m}"),
                }))
            }
        };
        if a.stdout != b.stdout {
            let detail = if first.digest != second.digest {
                format!(
                    "event digests differ between two runs ({} vs {})",
                    first.digest, second.digest
                )
            } else {
                format!(
                    "same event digest {}, but the JSON reports differ (first difference at byte {})",
                    first.digest,
                    a.stdout
                        .iter()
                        .zip(&b.stdout)
                        .position(|(x, y)| x != y)
                        .unwrap_or(a.stdout.len().min(b.stdout.len()))
                )
            };
            return Ok(Verdict::Fail(Failure {
                kind: Kind::Nondeterministic,
                detail,
            }));
        }
        // The report, which `classify` found to parse. eraseblock makes requests of its own
        // (gap reads, combined writes), with no bio.
        let report = serde_json::from_slice::<Value>(&a.stdout).ok();
        let own_requests = report
            .as_ref()
            .is_none_or(|v| v["blksim"]["scheduler"] == "eraseblock");
        let device = match super::trace::check(&cwd.join(TRACE_DIR), own_requests) {
            Ok(d) => d,
            Err(e) => {
                return Ok(Verdict::Fail(Failure {
                    kind: Kind::Trace,
                    detail: format!("{e} (the second run's --blktrace={TRACE_DIR})"),
                }))
            }
        };
        if let Some(v) = &report {
            if let Err(e) = super::bounds::conserved(case, v, device) {
                return Ok(Verdict::Fail(Failure {
                    kind: Kind::Bytes,
                    detail: format!("{e} (the second run's --blktrace={TRACE_DIR})"),
                }));
            }
        }
        let wall = a.wall.min(b.wall);
        let budget = self.cost.budget(first.events);
        if wall > budget {
            return Ok(Verdict::Fail(Failure {
                kind: Kind::Cost,
                detail: format!(
                    "{:.3} s wall for {} events, budget {:.3} s ({} ms + {} ns/event)",
                    wall.as_secs_f64(),
                    first.events,
                    budget.as_secs_f64(),
                    self.cost.base.as_millis(),
                    self.cost.per_event_ns
                ),
            }));
        }
        Ok(Verdict::Pass(Pass { wall, ..first }))
    }
}

/// The error message of a failed run: the last `blksim: ` line that is not a note.
fn error_line(stderr: &str) -> String {
    stderr
        .lines()
        .rfind(|l| l.starts_with("blksim: ") && !l.starts_with("blksim: note:"))
        .unwrap_or_else(|| stderr.lines().last().unwrap_or(""))
        .trim_start_matches("blksim: ")
        .to_string()
}

fn fail(kind: Kind, detail: impl Into<String>) -> Verdict {
    Verdict::Fail(Failure {
        kind,
        detail: detail.into(),
    })
}

/// One run's verdict, before the determinism and cost checks.
fn classify(case: &Case, out: &RunOut, timeout: Duration) -> Verdict {
    if out.timed_out {
        return fail(
            Kind::Timeout,
            format!("no exit after {:.1} s", timeout.as_secs_f64()),
        );
    }
    if let Some(i) = out.stderr.find("panicked at") {
        let text: Vec<&str> = out.stderr[i..].lines().take(2).collect();
        return fail(Kind::Panic, text.join(": "));
    }
    let Some(code) = out.code else {
        return fail(Kind::Signal, "the run was killed by a signal");
    };
    // A broken durability promise (`integrity violation:`) fails the run even when it wrote
    // its report.
    if let Some(l) = out
        .stderr
        .lines()
        .find(|l| l.starts_with("blksim: integrity violation"))
    {
        return fail(Kind::Integrity, l.trim_start_matches("blksim: "));
    }
    // A non-zero status with a report is fio's exit value, the number of jobs that ended
    // with an I/O error: the run itself completed and its report is checked as any other.
    let report = serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .filter(|v| v["blksim"].is_object());
    if code != 0 && report.is_none() {
        let msg = error_line(&out.stderr);
        return if msg.contains("internal error") {
            fail(Kind::LostRequest, msg)
        } else if msg.contains("data integrity") {
            fail(Kind::Integrity, msg)
        } else if msg.contains("(--max-events)") {
            fail(Kind::MaxEvents, msg)
        } else if code != 1 || msg.is_empty() {
            fail(Kind::Signal, format!("exit status {code}: {msg}"))
        } else {
            Verdict::Rejected(msg)
        };
    }
    let v: Value = match report {
        Some(v) => v,
        None => {
            return match serde_json::from_slice::<Value>(&out.stdout) {
                Ok(_) => fail(Kind::BadJson, "the report has no blksim key"),
                Err(e) => fail(Kind::BadJson, format!("the report does not parse: {e}")),
            }
        }
    };
    let b = &v["blksim"];
    let (Some(events), Some(digest)) = (b["events"].as_u64(), b["event_digest"].as_str()) else {
        return fail(Kind::BadJson, "no blksim.events or blksim.event_digest");
    };
    match b["integrity"]["mismatches"].as_u64() {
        Some(0) => {}
        m => {
            return fail(
                Kind::Integrity,
                format!("blksim.integrity.mismatches = {m:?}"),
            )
        }
    }
    // Sectors a power cut took against a FLUSH/FUA promise, where the report counts them.
    if let Some(n) = b["integrity"]["violations"].as_u64().filter(|&n| n > 0) {
        return fail(
            Kind::Integrity,
            format!("blksim.integrity.violations = {n}"),
        );
    }
    let (sub, done) = (
        b["bios"]["submitted"].as_u64(),
        b["bios"]["completed"].as_u64(),
    );
    if sub.is_none() || sub != done {
        return fail(
            Kind::LostBio,
            format!("blksim.bios: submitted {sub:?}, completed {done:?}"),
        );
    }
    let ios = fio_ios(&v);
    if ios > case.max_ios {
        return fail(
            Kind::TooManyIos,
            format!(
                "the report counts {ios} I/Os; the job file allows at most {}",
                case.max_ios
            ),
        );
    }
    if let Err(e) = check_keys(&v, case.json_plus) {
        return fail(Kind::FioKeys, e);
    }
    if let Err((b, e)) = super::bounds::check(case, &v) {
        let kind = match b {
            super::bounds::Broken::Little => Kind::Little,
            super::bounds::Broken::Rate => Kind::Rate,
        };
        return fail(kind, e);
    }
    Verdict::Pass(Pass {
        events,
        sim_ns: b["sim_time_ns"].as_u64().unwrap_or(0),
        wall: out.wall,
        digest: digest.to_string(),
    })
}

/// fio's I/O count of a report: every job's read, write and trim I/Os and its syncs.
fn fio_ios(v: &Value) -> u64 {
    let Some(jobs) = v["jobs"].as_array() else {
        return 0;
    };
    jobs.iter()
        .map(|j| {
            ["read", "write", "trim", "sync"]
                .iter()
                .map(|d| j[d]["total_ios"].as_u64().unwrap_or(0))
                .sum::<u64>()
        })
        .sum()
}

/// fio's own JSON reports for jobs like the fuzzer's (fio 3.33, frozen in blksim-report's
/// tests): their key paths are what a report must have.
pub(super) const FIO_JSON: &[&str] = &[
    include_str!("../../../blksim-report/tests/data/null_randread.json"),
    include_str!("../../../blksim-report/tests/data/file_mixed.json"),
    include_str!("../../../blksim-report/tests/data/numjobs_group.json"),
    include_str!("../../../blksim-report/tests/data/cmdprio.json"),
    include_str!("../../../blksim-report/tests/data/prio_group_trim.json"),
];
pub(super) const FIO_JSON_PLUS: &[&str] = &[
    include_str!("../../../blksim-report/tests/data/null_randread.jsonplus.json"),
    include_str!("../../../blksim-report/tests/data/libaio_direct_timed.jsonplus.json"),
    include_str!("../../../blksim-report/tests/data/cmdprio.jsonplus.json"),
    include_str!("../../../blksim-report/tests/data/prio_group_trim.jsonplus.json"),
];

/// Key paths that depend on the case, not on the report's shape: the options as written
/// (`job options`, `global options`), blksim's own key, fio's error counts (`total_err`,
/// `first_error`: only with `continue_on_error`), and latency percentiles and bins, which fio
/// prints only for directions with samples and the enabled percentile kinds
/// (`clat_percentiles`, `lat_percentiles`, `slat_percentiles`, `gtod_reduce`), and the
/// latencies of each priority, kept as clat or as lat by `lat_percentiles`.
fn case_dependent(k: &str) -> bool {
    if k.starts_with("/blksim")
        || k.starts_with("/global options")
        || k.starts_with("/jobs[]/job options/")
        || k == "/jobs[]/total_err"
        || k == "/jobs[]/first_error"
    {
        return true;
    }
    let parts: Vec<&str> = k.split('/').collect();
    if parts.len() >= 5 && parts[3] == "prios[]" && parts[4].ends_with("_ns") {
        return true;
    }
    // "", "jobs[]", dir, lat kind, "percentile"|"bins", ["<n>"]
    parts.len() >= 5
        && parts[1] == "jobs[]"
        && ["read", "write", "trim", "sync"].contains(&parts[2])
        && ["clat_ns", "lat_ns", "slat_ns"].contains(&parts[3])
        && ["percentile", "bins"].contains(&parts[4])
}

fn paths_of(v: &Value) -> BTreeSet<String> {
    let mut out = Vec::new();
    key_paths(v, "", &mut out);
    out.into_iter().filter(|k| !case_dependent(k)).collect()
}

/// (every fio sample has these, some fio sample has these), per format.
fn reference(plus: bool) -> &'static (BTreeSet<String>, BTreeSet<String>) {
    static JSON: OnceLock<(BTreeSet<String>, BTreeSet<String>)> = OnceLock::new();
    static PLUS: OnceLock<(BTreeSet<String>, BTreeSet<String>)> = OnceLock::new();
    let (cell, docs) = if plus {
        (&PLUS, FIO_JSON_PLUS)
    } else {
        (&JSON, FIO_JSON)
    };
    cell.get_or_init(|| {
        let sets: Vec<BTreeSet<String>> = docs
            .iter()
            .map(|t| {
                let t = &t[t.find('{').unwrap_or(0)..];
                paths_of(&serde_json::from_str(t).expect("fio sample parses"))
            })
            .collect();
        let mut all = BTreeSet::new();
        for s in &sets {
            all.extend(s.iter().cloned());
        }
        let every = sets.iter().skip(1).fold(sets[0].clone(), |acc, s| {
            acc.intersection(s).cloned().collect()
        });
        (every, all)
    })
}

/// A report has every key every fio report of its format has, and none no fio report has.
pub fn check_keys(v: &Value, plus: bool) -> Result<(), String> {
    let ours = paths_of(v);
    let (every, any) = reference(plus);
    let missing: Vec<&String> = every.difference(&ours).take(6).collect();
    let extra: Vec<&String> = ours.difference(any).take(6).collect();
    if missing.is_empty() && extra.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: missing {missing:?}, not in fio's reports {extra:?}",
            if plus { "json+" } else { "json" }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_samples_pass_their_own_key_check_and_a_changed_report_fails() {
        for (docs, plus) in [(FIO_JSON, false), (FIO_JSON_PLUS, true)] {
            for t in docs {
                let v: Value = serde_json::from_str(&t[t.find('{').unwrap()..]).unwrap();
                check_keys(&v, plus).unwrap();
            }
        }
        let t = FIO_JSON[0];
        let mut v: Value = serde_json::from_str(&t[t.find('{').unwrap()..]).unwrap();
        v["jobs"][0]["read"]["iops_typo"] = Value::from(1);
        v["jobs"][0].as_object_mut().unwrap().remove("usr_cpu");
        let e = check_keys(&v, false).unwrap_err();
        assert!(e.contains("usr_cpu") && e.contains("iops_typo"), "{e}");
    }

    #[test]
    fn error_lines_and_signatures() {
        let s = "blksim: note: option 'nice' has no meaning\nblksim: f.fio:3: bad\n";
        assert_eq!(error_line(s), "f.fio:3: bad");
        let f = Failure {
            kind: Kind::Panic,
            detail: "panicked at a.rs:12:5: index 7".into(),
        };
        assert_eq!(f.signature(), "Panic: panicked at a.rs:##:#: index #");
    }
}
