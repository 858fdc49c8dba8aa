//! `blksim compare A.json B.json [...]`: fio JSON results (blksim's or the real fio's) side by
//! side, per job and direction, with each file's deltas against the first. When the files
//! come from `blksim run --seeds=N` (their `blksim.seeds` array holds every seed's figures),
//! the values are means over the seeds and each delta has a 95 % confidence interval: a
//! paired t-interval over the seeds both files share (the same seed drives the same workload
//! randomness, so pairing removes most of it), or Welch's interval when they share none.

use blksim_report::json::{job_json, JsonValue};
use blksim_report::RunReport;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub const USAGE: &str = "\
usage: blksim compare [--output-format=text|html] A.json B.json [C.json ...]
       fio JSON reports (--output-format=json or json+, from blksim or the real fio): per job
       and direction, IOPS, bandwidth, mean and percentile latencies of each file, and the
       deltas of B, C, ... against A, absolute and relative. Reports of
       `blksim run --seeds=N` give means over the seeds and a 95 % confidence interval of
       each delta. With --output-format=html, one self-contained page: the same tables and,
       per job and direction, the files' completion-latency CDFs overlaid (from json+'s
       histogram bins, or through the clat percentiles of a plain JSON report).
";

/// The figures `compare` reads from one job of a fio JSON report, kept per seed by
/// `run --seeds`: per direction `io_bytes`, `iops`, `bw`, the latency means and the clat
/// percentiles, under fio's own keys.
pub fn seed_jobs(r: &RunReport) -> JsonValue {
    let mut jobs = Vec::new();
    for jr in &r.jobs {
        let full = job_json(jr, r.group(jr.groupid), false);
        let mut j = JsonValue::object();
        j.push("jobname", JsonValue::Str(jr.name.clone()))
            .push("groupid", JsonValue::UInt(jr.groupid as u64));
        for ddir in ["read", "write", "trim"] {
            let Some(d) = full.get(ddir) else { continue };
            let mut o = JsonValue::object();
            for k in ["io_bytes", "iops", "bw"] {
                if let Some(v) = d.get(k) {
                    o.push(k, v.clone());
                }
            }
            for lat in ["lat_ns", "clat_ns"] {
                let Some(l) = d.get(lat) else { continue };
                let mut lo = JsonValue::object();
                if let Some(m) = l.get("mean") {
                    lo.push("mean", m.clone());
                }
                if let Some(p) = l.get("percentile") {
                    lo.push("percentile", p.clone());
                }
                o.push(lat, lo);
            }
            j.push(ddir, o);
        }
        jobs.push(j);
    }
    JsonValue::Array(jobs)
}

/// One file: per seed (one entry without seeds), per (job, direction), per metric a value.
struct Doc {
    path: String,
    seeds: Vec<(Option<u64>, Figures)>,
    /// Per (job, direction) of the report's own run: its completion-latency CDF.
    cdfs: BTreeMap<Key, Vec<(f64, f64)>>,
}

type Key = (usize, String, String); // (job position, job name, direction)
/// One metric of one (job, direction) over a file's seeds: (seed, value).
type Series = Vec<(Option<u64>, f64)>;
type Figures = BTreeMap<Key, BTreeMap<String, f64>>;

/// The metrics, in print order: the label and how to read it from a direction's object.
fn metrics(d: &Value) -> Vec<(String, f64)> {
    let mut m = Vec::new();
    let num = |v: &Value| v.as_f64();
    if let Some(v) = d.get("iops").and_then(num) {
        m.push(("IOPS".to_string(), v));
    }
    if let Some(v) = d.get("bw").and_then(num) {
        m.push(("bw KiB/s".to_string(), v));
    }
    if let Some(v) = d.pointer("/lat_ns/mean").and_then(num) {
        m.push(("lat mean us".to_string(), v / 1000.0));
    }
    if let Some(v) = d.pointer("/clat_ns/mean").and_then(num) {
        m.push(("clat mean us".to_string(), v / 1000.0));
    }
    if let Some(p) = d.pointer("/clat_ns/percentile").and_then(Value::as_object) {
        for (k, v) in p {
            let Some(v) = num(v) else { continue };
            let label = match k.parse::<f64>() {
                Ok(q) => format!("clat p{} us", trim_zeros(q)),
                Err(_) => continue,
            };
            m.push((label, v / 1000.0));
        }
    }
    m
}

fn trim_zeros(q: f64) -> String {
    let s = format!("{q:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn figures(jobs: &Value) -> Figures {
    let mut f = Figures::new();
    for (i, j) in jobs.as_array().into_iter().flatten().enumerate() {
        let name = j["jobname"].as_str().unwrap_or("?").to_string();
        for ddir in ["read", "write", "trim"] {
            let d = &j[ddir];
            if d.get("io_bytes").and_then(Value::as_u64).unwrap_or(0) == 0 {
                continue;
            }
            let mut m = BTreeMap::new();
            for (k, v) in metrics(d) {
                m.insert(k, v);
            }
            f.insert((i, name.clone(), ddir.to_string()), m);
        }
    }
    f
}

/// The completion-latency CDF of each (job, direction): from json+'s histogram bins when
/// the report has them, else through its clat percentiles.
fn cdfs(jobs: &Value) -> BTreeMap<Key, Vec<(f64, f64)>> {
    let mut out = BTreeMap::new();
    for (i, j) in jobs.as_array().into_iter().flatten().enumerate() {
        let name = j["jobname"].as_str().unwrap_or("?").to_string();
        for ddir in ["read", "write", "trim"] {
            let c = &j[ddir]["clat_ns"];
            let mut pts: Vec<(f64, f64)> = Vec::new();
            if let Some(bins) = c.get("bins").and_then(Value::as_object) {
                let mut b: Vec<(f64, f64)> = bins
                    .iter()
                    .filter_map(|(k, n)| Some((k.parse::<f64>().ok()?, n.as_f64()?)))
                    .collect();
                b.sort_by(|x, y| x.0.total_cmp(&y.0));
                let total: f64 = b.iter().map(|x| x.1).sum();
                let mut acc = 0.0;
                for (ns, n) in b {
                    acc += n;
                    pts.push((ns.max(1.0) / 1000.0, acc / total));
                }
            } else if let Some(p) = c.get("percentile").and_then(Value::as_object) {
                pts = p
                    .iter()
                    .filter_map(|(q, v)| {
                        Some((
                            v.as_f64()?.max(1.0) / 1000.0,
                            q.parse::<f64>().ok()? / 100.0,
                        ))
                    })
                    .collect();
                pts.sort_by(|x, y| x.1.total_cmp(&y.1));
            }
            if !pts.is_empty() {
                out.insert((i, name.clone(), ddir.to_string()), pts);
            }
        }
    }
    out
}

fn load(path: &str) -> Result<Doc, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    // A report may follow other output (`--output-format=normal,json`): the JSON document
    // starts at the first line that opens an object.
    let start = text
        .lines()
        .scan(0usize, |off, l| {
            let at = *off;
            *off += l.len() + 1;
            Some((at, l))
        })
        .find(|(_, l)| l.starts_with('{'))
        .map(|(at, _)| at)
        .ok_or_else(|| format!("{path}: no JSON report (a line starting with '{{')"))?;
    let v: Value = serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .next()
        .ok_or_else(|| format!("{path}: empty JSON"))?
        .map_err(|e| {
            format!(
                "{path}: line {}: {e}",
                text[..start].lines().count() + e.line()
            )
        })?;
    if !v["jobs"].is_array() {
        return Err(format!("{path}: not a fio JSON report (no \"jobs\" array)"));
    }
    let seeds = match v.pointer("/blksim/seeds").and_then(Value::as_array) {
        Some(s) if !s.is_empty() => s
            .iter()
            .map(|e| (e["seed"].as_u64(), figures(&e["jobs"])))
            .collect(),
        _ => vec![(None, figures(&v["jobs"]))],
    };
    Ok(Doc {
        path: path.to_string(),
        seeds,
        cdfs: cdfs(&v["jobs"]),
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn var(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() as f64 - 1.0)
}

/// Student's t quantile for a two-sided 95 % interval with `df` degrees of freedom (table to
/// 30, then the normal approximation with a first-order correction).
pub fn t975(df: f64) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df < 1.0 {
        return f64::NAN;
    }
    let d = df.floor() as usize;
    if d <= 30 {
        T[d - 1]
    } else {
        1.959_964 + 2.4 / df
    }
}

/// The delta of `b` against `a` and its 95 % interval, if there are seeds to make one.
fn delta(a: &[(Option<u64>, f64)], b: &[(Option<u64>, f64)]) -> (f64, Option<(f64, f64)>) {
    let av: Vec<f64> = a.iter().map(|x| x.1).collect();
    let bv: Vec<f64> = b.iter().map(|x| x.1).collect();
    let d = mean(&bv) - mean(&av);
    // Pairs: the seeds both have.
    let pairs: Vec<f64> = b
        .iter()
        .filter_map(|(s, y)| {
            s.and_then(|s| a.iter().find(|(t, _)| *t == Some(s)))
                .map(|(_, x)| y - x)
        })
        .collect();
    if pairs.len() >= 2 {
        let h = t975(pairs.len() as f64 - 1.0) * (var(&pairs) / pairs.len() as f64).sqrt();
        let m = mean(&pairs);
        return (d, Some((m - h, m + h)));
    }
    if av.len() >= 2 && bv.len() >= 2 {
        // Welch: unpaired, unequal variances, Welch–Satterthwaite degrees of freedom.
        let (va, vb) = (var(&av) / av.len() as f64, var(&bv) / bv.len() as f64);
        let se = (va + vb).sqrt();
        let df = if se == 0.0 {
            (av.len() + bv.len() - 2) as f64
        } else {
            (va + vb).powi(2)
                / (va * va / (av.len() as f64 - 1.0) + vb * vb / (bv.len() as f64 - 1.0))
        };
        let h = t975(df) * se;
        return (d, Some((d - h, d + h)));
    }
    (d, None)
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn signed(v: f64) -> String {
    let s = num(v);
    if v >= 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// The comparison, ready for either writer: per (job, direction) a table whose first column
/// is left-aligned and the others right-aligned to `widths`, and the files' CDFs.
struct Comparison {
    /// "A: path (N seeds)" lines.
    files: Vec<String>,
    tables: Vec<Table>,
}

struct Table {
    title: String,
    widths: Vec<usize>,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Per file, its completion-latency CDF for this job and direction: (µs, fraction).
    cdfs: Vec<(String, Vec<(f64, f64)>)>,
}

fn compare(paths: &[String]) -> Result<Comparison, String> {
    if paths.len() < 2 {
        return Err(format!("compare: give at least two JSON reports\n{USAGE}"));
    }
    if paths.len() > 26 {
        return Err(format!(
            "compare: {} reports; at most 26 (named A to Z) at a time",
            paths.len()
        ));
    }
    let docs: Vec<Doc> = paths.iter().map(|p| load(p)).collect::<Result<_, _>>()?;
    let tag = |i: usize| (b'A' + i as u8) as char;
    let files = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let seeds = match d.seeds.len() {
                1 if d.seeds[0].0.is_none() => String::new(),
                n => format!(" ({n} seeds)"),
            };
            format!("{}: {}{seeds}", tag(i), d.path)
        })
        .collect();
    let base = &docs[0];
    let mut tables = Vec::new();
    for key in base.seeds[0].1.keys() {
        let mut widths = vec![16];
        let mut header = vec!["metric".to_string()];
        for i in 0..docs.len() {
            widths.push(14);
            header.push(tag(i).to_string());
        }
        for (i, doc) in docs.iter().enumerate().skip(1) {
            widths.extend([14, 9]);
            header.extend([format!("{}-A", tag(i)), format!("{}-A %", tag(i))]);
            if doc.seeds.len() > 1 || base.seeds.len() > 1 {
                widths.push(25);
                header.push("95% CI of delta".to_string());
            }
        }
        let mut rows = Vec::new();
        let names: Vec<String> = base.seeds[0].1[key].keys().cloned().collect();
        for m in order_metrics(names) {
            let series = |d: &Doc| -> Option<Series> {
                d.seeds
                    .iter()
                    .map(|(s, f)| f.get(key).and_then(|x| x.get(&m)).map(|v| (*s, *v)))
                    .collect()
            };
            let Some(a) = series(base) else { continue };
            let mut row = vec![m.clone()];
            let all: Vec<Option<Series>> = docs.iter().map(series).collect();
            for s in &all {
                row.push(match s {
                    Some(v) => num(mean(&v.iter().map(|x| x.1).collect::<Vec<_>>())),
                    None => "-".to_string(),
                });
            }
            for (i, s) in all.iter().enumerate().skip(1) {
                let with_ci = docs[i].seeds.len() > 1 || base.seeds.len() > 1;
                match s {
                    Some(b) => {
                        let (d, ci) = delta(&a, b);
                        let am = mean(&a.iter().map(|x| x.1).collect::<Vec<_>>());
                        let rel = if am != 0.0 {
                            format!("{:+.2}%", 100.0 * d / am)
                        } else {
                            "-".to_string()
                        };
                        row.extend([signed(d), rel]);
                        if with_ci {
                            row.push(match ci {
                                Some((lo, hi)) => format!("[{}, {}]", signed(lo), signed(hi)),
                                None => "-".to_string(),
                            });
                        }
                    }
                    None => {
                        row.extend(["-".to_string(), "-".to_string()]);
                        if with_ci {
                            row.push("-".to_string());
                        }
                    }
                }
            }
            rows.push(row);
        }
        let cdfs = docs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let pts = d.cdfs.get(key)?;
                Some((tag(i).to_string(), pts.clone()))
            })
            .collect();
        tables.push(Table {
            title: format!("job '{}' ({}), {}", key.1, key.0 + 1, key.2),
            widths,
            header,
            rows,
            cdfs,
        });
    }
    Ok(Comparison { files, tables })
}

/// The comparison as text.
pub fn compare_text(paths: &[String]) -> Result<String, String> {
    let c = compare(paths)?;
    let mut o = String::new();
    for f in &c.files {
        let _ = writeln!(o, "{f}");
    }
    for t in &c.tables {
        let _ = writeln!(o, "\n{}", t.title);
        for row in std::iter::once(&t.header).chain(&t.rows) {
            for (k, (cell, w)) in row.iter().zip(&t.widths).enumerate() {
                let _ = if k == 0 {
                    write!(o, "  {cell:<w$}")
                } else {
                    write!(o, " {cell:>w$}")
                };
            }
            o.push('\n');
        }
    }
    Ok(o)
}

/// The comparison as one HTML page: the tables, and per job and direction the files'
/// completion-latency CDFs overlaid.
pub fn compare_html(paths: &[String]) -> Result<String, String> {
    let c = compare(paths)?;
    let tables: Vec<blksim_report::html::HtmlTable> = c
        .tables
        .into_iter()
        .map(|t| blksim_report::html::HtmlTable {
            title: t.title,
            header: t.header,
            rows: t.rows,
            cdfs: t.cdfs,
        })
        .collect();
    let mut page = Vec::new();
    blksim_report::html::write_compare_html(&c.files, &tables, &mut page)
        .map_err(|e| format!("compare: {e}"))?;
    Ok(String::from_utf8_lossy(&page).into_owned())
}

/// IOPS, bandwidth, latency means, then the percentiles in increasing order.
fn order_metrics(mut names: Vec<String>) -> Vec<String> {
    let rank = |n: &str| -> (u32, f64) {
        match n {
            "IOPS" => (0, 0.0),
            "bw KiB/s" => (1, 0.0),
            "lat mean us" => (2, 0.0),
            "clat mean us" => (3, 0.0),
            _ => (
                4,
                n.trim_start_matches("clat p")
                    .trim_end_matches(" us")
                    .parse()
                    .unwrap_or(0.0),
            ),
        }
    };
    names.sort_by(|a, b| {
        let (ra, rb) = (rank(a), rank(b));
        ra.0.cmp(&rb.0).then(ra.1.total_cmp(&rb.1))
    });
    names
}

/// `blksim compare ARGS`.
pub fn main(args: &[String]) -> Result<String, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(USAGE.to_string());
    }
    let mut html = false;
    let mut paths = Vec::new();
    for a in args {
        match a.strip_prefix("--output-format=") {
            Some("text" | "normal") => html = false,
            Some("html") => html = true,
            Some(other) => {
                return Err(format!(
                    "compare: --output-format={other}: expected text or html"
                ))
            }
            None if a.starts_with("--") => {
                return Err(format!("compare: unknown option '{a}'\n{USAGE}"))
            }
            None => paths.push(a.clone()),
        }
    }
    if html {
        compare_html(&paths)
    } else {
        compare_text(&paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_and_intervals() {
        assert_eq!(t975(4.0), 2.776);
        assert!((t975(1000.0) - 1.962).abs() < 0.01);
        // Paired differences 1, 2, 3: mean 2, sd 1, n 3 → 2 ± 4.303 / sqrt(3).
        let a = [(Some(1), 10.0), (Some(2), 20.0), (Some(3), 30.0)];
        let b = [(Some(1), 11.0), (Some(2), 22.0), (Some(3), 33.0)];
        let (d, ci) = delta(&a, &b);
        assert!((d - 2.0).abs() < 1e-12);
        let (lo, hi) = ci.unwrap();
        let h = 4.303 / 3f64.sqrt();
        assert!((lo - (2.0 - h)).abs() < 1e-9 && (hi - (2.0 + h)).abs() < 1e-9);
        // The same values: the interval is the point 0.
        let (d, ci) = delta(&a, &a);
        assert_eq!((d, ci), (0.0, Some((0.0, 0.0))));
    }
}
