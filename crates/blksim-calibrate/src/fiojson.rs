//! fio JSON results as calibration targets: the jobs rebuilt from the options the file
//! echoes, and the figures measured per job and direction.
//!
//! fio writes every job's options into its JSON output (`"global options"`, and per job
//! `"job options"`, in the order they were given: `show_run_stats` → `json_add_job_opts`), so
//! a result file is enough to run the same jobs again. fio prints one entry per job clone
//! (`numjobs`) unless `group_reporting` folds a group into one; the clones of one section are
//! folded back into that section here, so blksim prints the same entries.
//!
//! What fio's JSON does not say (seen with fio 3.33):
//! * options given without a value are missing: `group_reporting` and `stonewall` are
//!   inferred from the entries and their group ids; other bare flags (`time_based`,
//!   `norandommap`) are lost, so calibration runs should write them with a value
//!   (`time_based=1`);
//! * several `[global]` sections are merged into one list, so which jobs each applied to is
//!   lost: every job gets the last value, and a key set twice there is reported.

use blksim_job::JobSet;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use std::path::Path;

/// The directions fio reports, in its order.
pub const DDIRS: [&str; 3] = ["read", "write", "trim"];

/// What the loss compares, per job and direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// `iops`
    Iops,
    /// `clat_ns.mean`
    ClatMean,
    /// `clat_ns.percentile["99.000000"]`
    ClatP99,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Iops, Metric::ClatMean, Metric::ClatP99];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Iops => "IOPS",
            Metric::ClatMean => "clat mean us",
            Metric::ClatP99 => "clat p99 us",
        }
    }

    /// The value in a direction's object of a fio JSON report, in the unit of [`Self::name`].
    fn read(self, d: &Value) -> Option<f64> {
        let v = match self {
            Metric::Iops => d.get("iops")?.as_f64()?,
            Metric::ClatMean => d.pointer("/clat_ns/mean")?.as_f64()? / 1000.0,
            Metric::ClatP99 => d.pointer("/clat_ns/percentile/99.000000")?.as_f64()? / 1000.0,
        };
        (v.is_finite() && v > 0.0).then_some(v)
    }
}

/// One measured figure: which report entry, direction and metric, and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Position of the job entry in the report's `jobs` array.
    pub entry: usize,
    pub jobname: String,
    pub ddir: &'static str,
    pub metric: Metric,
    pub value: f64,
}

/// The figures of a fio JSON report's `jobs` array: per entry and direction that moved data,
/// IOPS, mean and p99 completion latency when the report has them.
pub fn figures(jobs: &[Value]) -> Vec<Figure> {
    let mut out = Vec::new();
    for (entry, j) in jobs.iter().enumerate() {
        let name = j.get("jobname").and_then(Value::as_str).unwrap_or("");
        for ddir in DDIRS {
            let Some(d) = j.get(ddir) else { continue };
            if d.get("io_bytes").and_then(Value::as_u64).unwrap_or(0) == 0 {
                continue;
            }
            for metric in Metric::ALL {
                if let Some(value) = metric.read(d) {
                    out.push(Figure {
                        entry,
                        jobname: name.to_string(),
                        ddir,
                        metric,
                        value,
                    });
                }
            }
        }
    }
    out
}

/// A fio option list in the order fio wrote it (a JSON object whose values are strings).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Opts(pub Vec<(String, String)>);

impl<'de> Deserialize<'de> for Opts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Opts;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of option names to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Opts, A::Error> {
                let mut v = Vec::new();
                while let Some((k, val)) = m.next_entry::<String, Value>()? {
                    let text = match val {
                        Value::String(s) => s,
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    v.push((k, text));
                }
                Ok(Opts(v))
            }
        }
        d.deserialize_map(V)
    }
}

impl Opts {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Deserialize)]
struct DocJob {
    #[serde(default)]
    jobname: String,
    #[serde(default)]
    groupid: u64,
    #[serde(rename = "job options", default)]
    options: Opts,
}

#[derive(Deserialize)]
struct Doc {
    #[serde(rename = "global options", default)]
    global: Opts,
    jobs: Vec<DocJob>,
}

/// One fio result file, ready to simulate.
#[derive(Clone, Debug)]
pub struct Run {
    /// The file, as named on the command line (for messages and tables).
    pub path: String,
    /// A short label for tables: the file name.
    pub label: String,
    /// The job file rebuilt from the options (shown by `--explain`-style listings and errors).
    pub jobfile: String,
    pub jobs: JobSet,
    /// Report entries the file has (the simulation must print as many).
    pub entries: usize,
    pub measured: Vec<Figure>,
    /// What blksim can't reproduce of these jobs (fio's options it ignores).
    pub notes: Vec<String>,
    /// Simulated time the measured I/O counts need: per job and direction, the time for
    /// [`MIN_SIM_IOS`] I/Os (or as many as were measured, if fewer) at the measured IOPS.
    pub min_time_ns: u64,
}

/// I/Os a simulated direction should see before its figures are compared: enough that a
/// slow device's first costly operation (a 250 ms merge) does not dominate, and that p99
/// rests on 20 samples.
pub const MIN_SIM_IOS: f64 = 2000.0;

/// Bound of [`Run::min_time_ns`]: 10 minutes.
pub const MAX_MIN_TIME_NS: u64 = 600_000_000_000;

/// See [`Run::min_time_ns`].
fn min_time_ns(jobs: &[Value]) -> u64 {
    let mut need: f64 = 0.0;
    for j in jobs {
        for ddir in DDIRS {
            let Some(d) = j.get(ddir) else { continue };
            let iops = d.get("iops").and_then(Value::as_f64).unwrap_or(0.0);
            if iops.is_nan() || iops <= 0.0 {
                continue;
            }
            let ios = d
                .get("total_ios")
                .and_then(Value::as_f64)
                .unwrap_or(MIN_SIM_IOS)
                .min(MIN_SIM_IOS);
            need = need.max(ios / iops * 1e9);
        }
    }
    // At most ten minutes of simulated time: a file claiming 0.001 IOPS must not stall the
    // fit (the cost of a simulation grows with its events, and a slow device has few).
    need.min(MAX_MIN_TIME_NS as f64) as u64
}

/// The JSON document of a fio output: fio may print other formats before it
/// (`--output-format=normal,json`), so the document starts at the first line opening with `{`.
fn json_start(text: &str) -> Option<usize> {
    if text.starts_with('{') {
        return Some(0);
    }
    text.find("\n{").map(|i| i + 1)
}

fn line_offset(text: &str, start: usize) -> usize {
    text[..start].lines().count()
}

/// Read one fio JSON result file.
pub fn read_run(path: &Path) -> Result<Run, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    parse_run(&text, &shown)
}

/// Parse fio JSON output `text` (named `file` in messages) into a run.
pub fn parse_run(text: &str, file: &str) -> Result<Run, String> {
    let start = json_start(text).ok_or_else(|| {
        format!("{file}: no JSON document (expected fio --output-format=json output)")
    })?;
    let body = &text[start..];
    let skip = line_offset(text, start);
    // Stop at the end of the first document: fio may print normal output after it.
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return Err(format!(
                "{file}:{}:{}: invalid JSON: {e}",
                e.line() + skip,
                e.column()
            ))
        }
        None => return Err(format!("{file}: empty JSON document")),
    };
    // Again as the options' own shape, which keeps their order (a `Value` sorts keys).
    let doc: Doc = match serde_json::Deserializer::from_str(body).into_iter::<Doc>().next() {
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            return Err(format!(
                "{file}: not a fio JSON report ({e}); expected \"jobs\" with \"jobname\" and \"job options\""
            ))
        }
        None => return Err(format!("{file}: empty JSON document")),
    };
    let jobs_json = value
        .get("jobs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if doc.jobs.is_empty() {
        return Err(format!("{file}: the report has no jobs"));
    }
    let measured = figures(&jobs_json);
    if measured.is_empty() {
        return Err(format!(
            "{file}: no job moved data (every direction has io_bytes 0): nothing to calibrate on"
        ));
    }
    let jobfile = rebuild_jobfile(&doc, file)?;
    let label = Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.to_string());
    let jobs =
        blksim_job::jobfile::parse_job_str(&jobfile, &format!("{file} (job options)"), &|_| None)
            .map_err(|e| {
            format!("{e}\n{file}: the job file rebuilt from its options was:\n{jobfile}")
        })?;
    let mut notes = Vec::new();
    for (i, (k, _)) in doc.global.0.iter().enumerate() {
        if doc.global.0[..i].iter().any(|(o, _)| o == k)
            && !doc.global.0[i + 1..].iter().any(|(o, _)| o == k)
        {
            notes.push(format!(
                "\"global options\" set '{k}' more than once (several [global] sections): fio's JSON does not say which jobs each value applied to; every job gets the last"
            ));
        }
    }
    for j in &jobs.jobs {
        for n in &j.notes {
            let n = format!("job '{}': {}", j.name, n.trim_start_matches("note: "));
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        if let Some(f) = &j.filename {
            let n = format!(
                "job '{}': filename={f} is simulated as the profile's device",
                j.name
            );
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    Ok(Run {
        min_time_ns: min_time_ns(&jobs_json),
        path: file.to_string(),
        label,
        jobfile,
        jobs,
        entries: doc.jobs.len(),
        measured,
        notes,
    })
}

/// A fio option line: `key=value`, or the bare key of a flag.
fn option_line(k: &str, v: &str) -> String {
    if v.is_empty() {
        format!("{k}\n")
    } else {
        format!("{k}={v}\n")
    }
}

/// The job file a report's options describe. Entries that are the clones of one section
/// (`numjobs` = N without `group_reporting`: N entries of one name, group and options) give
/// that section once. With `group_reporting` fio prints one entry per group, named and
/// optioned after the group's first job (`show_run_stats` sums the rest into it): other
/// sections in that group are not in the file and cannot be rebuilt. Results meant for
/// calibration should have one section per group.
fn rebuild_jobfile(doc: &Doc, file: &str) -> Result<String, String> {
    let mut text = String::new();
    if !doc.global.0.is_empty() {
        text.push_str("[global]\n");
        for (k, v) in &doc.global.0 {
            text.push_str(&option_line(k, v));
        }
    }
    fn flag<'a>(doc: &'a Doc, j: &'a DocJob, key: &str) -> Option<&'a str> {
        j.options.get(key).or_else(|| doc.global.get(key))
    }
    let mut i = 0;
    while i < doc.jobs.len() {
        let j = &doc.jobs[i];
        if j.jobname.is_empty() || j.jobname.contains(['[', ']', '\n']) {
            return Err(format!(
                "{file}: job entry {} has no usable \"jobname\" ({:?})",
                i + 1,
                j.jobname
            ));
        }
        let numjobs = match flag(doc, j, "numjobs") {
            None => 1,
            Some(v) => v.trim().parse::<usize>().map_err(|_| {
                format!(
                    "{file}: job '{}': numjobs={v}: expected a whole number",
                    j.jobname
                )
            })?,
        };
        // fio does not echo `group_reporting` (a flag without a value) in the options; the
        // entries tell: N identical entries are the clones, one entry is the group's sum.
        let same =
            |o: &DocJob| o.jobname == j.jobname && o.options == j.options && o.groupid == j.groupid;
        let run = doc.jobs[i..].iter().take_while(|o| same(o)).count();
        let echoed = flag(doc, j, "group_reporting").is_some_and(|v| v != "0");
        let grouped = echoed || (numjobs > 1 && run == 1);
        let clones = if grouped { 1 } else { numjobs.max(1) };
        if run < clones {
            return Err(format!(
                "{file}: job '{}' has numjobs={numjobs}, so fio prints 1 entry of it (group_reporting) or {numjobs}; the file has {run}",
                j.jobname
            ));
        }
        text.push_str(&format!("[{}]\n", j.jobname));
        for (k, v) in &j.options.0 {
            text.push_str(&option_line(k, v));
        }
        if grouped && !echoed {
            text.push_str("group_reporting\n");
        }
        // A new group id starts at a `stonewall` (or `new_group`, which the JSON cannot
        // tell from it; stonewall is the common one).
        let stonewall = ["stonewall", "wait_for_previous", "new_group"]
            .iter()
            .any(|k| j.options.get(k).is_some());
        if i > 0 && j.groupid > doc.jobs[i - 1].groupid && !stonewall {
            text.push_str("stonewall\n");
        }
        i += clones;
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"note: a line fio printed before the JSON
{
  "fio version" : "fio-3.33",
  "global options" : { "direct" : "1", "rw" : "randread", "bs" : "4k", "numjobs" : "2", "group_reporting" : "" },
  "jobs" : [
    { "jobname" : "a", "groupid" : 0, "job options" : { "iodepth" : "4", "ioengine" : "libaio" },
      "read" : { "io_bytes" : 4096000, "iops" : 1000.5,
                 "clat_ns" : { "mean" : 3000.0, "percentile" : { "99.000000" : 8000 } } },
      "write" : { "io_bytes" : 0, "iops" : 0 } }
  ]
}
"#;

    #[test]
    fn rebuilds_options_in_order_and_reads_the_figures() {
        let r = parse_run(SAMPLE, "s.json").unwrap();
        assert_eq!(
            r.jobfile,
            "[global]\ndirect=1\nrw=randread\nbs=4k\nnumjobs=2\ngroup_reporting\n[a]\niodepth=4\nioengine=libaio\n"
        );
        assert_eq!(r.jobs.jobs.len(), 1);
        assert_eq!(r.jobs.jobs[0].numjobs, 2);
        assert_eq!(r.entries, 1);
        let m: Vec<(Metric, f64)> = r.measured.iter().map(|f| (f.metric, f.value)).collect();
        assert_eq!(
            m,
            [
                (Metric::Iops, 1000.5),
                (Metric::ClatMean, 3.0),
                (Metric::ClatP99, 8.0)
            ]
        );
    }

    #[test]
    fn clones_fold_into_their_section() {
        let text = r#"{"global options":{"numjobs":"3"},"jobs":[
            {"jobname":"x","groupid":0,"job options":{"rw":"read"},"read":{"io_bytes":1,"iops":1}},
            {"jobname":"x","groupid":0,"job options":{"rw":"read"},"read":{"io_bytes":1,"iops":1}},
            {"jobname":"x","groupid":0,"job options":{"rw":"read"},"read":{"io_bytes":1,"iops":1}}]}"#;
        let r = parse_run(text, "c.json").unwrap();
        assert_eq!(r.jobfile, "[global]\nnumjobs=3\n[x]\nrw=read\n");
        assert_eq!(r.entries, 3);
        let two = text.replacen(",\n            {\"jobname\":\"x\",\"groupid\":0,\"job options\":{\"rw\":\"read\"},\"read\":{\"io_bytes\":1,\"iops\":1}}", "", 1);
        let e = parse_run(&two, "c.json").unwrap_err();
        assert!(e.contains("numjobs=3, so fio prints 1 entry"), "{e}");
        // One entry of a numjobs=3 job: fio's group_reporting (which it does not echo).
        let one = r#"{"global options":{"numjobs":"3"},"jobs":[
            {"jobname":"x","groupid":0,"job options":{"rw":"read"},"read":{"io_bytes":1,"iops":1}}]}"#;
        let r = parse_run(one, "g.json").unwrap();
        assert_eq!(
            r.jobfile,
            "[global]\nnumjobs=3\n[x]\nrw=read\ngroup_reporting\n"
        );
        assert!(r.jobs.jobs[0].group_reporting);
    }

    #[test]
    fn bad_input_names_the_file_and_place() {
        let e = parse_run("{\n \"jobs\": [ }", "bad.json").unwrap_err();
        assert!(e.starts_with("bad.json:2:"), "{e}");
        let e = parse_run("no json here", "t.json").unwrap_err();
        assert!(e.contains("t.json: no JSON document"), "{e}");
        let e = parse_run("{\"jobs\": 3}", "t.json").unwrap_err();
        assert!(e.contains("not a fio JSON report"), "{e}");
        let e = parse_run(
            r#"{"jobs":[{"jobname":"a","job options":{"rw":"read"}}]}"#,
            "t.json",
        )
        .unwrap_err();
        assert!(e.contains("no job moved data"), "{e}");
        let e = parse_run(
            r#"{"jobs":[{"jobname":"a","job options":{"rw":"sideways"},"read":{"io_bytes":1,"iops":1}}]}"#,
            "t.json",
        )
        .unwrap_err();
        assert!(e.contains("sideways") && e.contains("t.json"), "{e}");
    }
}
