//! The sweep file: a base job and device, and the axes to vary.
//!
//! ```toml
//! [base]
//! job = "randread.fio"          # a fio job file, relative to this file (or job_text = "...")
//! device = "emmc-allwinner"     # a bundled profile or a TOML file
//! set = ["host.queue=hsq"]      # --set over the profile
//! options = ["--runtime=1", "--time_based"]   # fio options over every job
//! seed = 1                      # first seed
//! repeats = 3                   # each point runs with seeds seed .. seed+repeats-1
//!
//! [axes]
//! device = ["emmc-allwinner", "emmc-hbg4a2"]
//!
//! [axes.job]                    # fio job options
//! numjobs = [1, 2, 4, 8, 16]
//! iodepth = { from = 1, to = 64, times = 2 }   # 1, 2, 4, ..., 64
//!
//! [axes.set]                    # profile keys, as --set names them
//! "host.hsq_next_tag" = ["scan", "fifo"]
//!
//! [sample]                      # optional: this many grid points, drawn without replacement
//! count = 20
//! seed = 7
//! ```
//!
//! Axes are varied in the order device, job options, profile keys, each group in name order;
//! the last varies fastest.

use std::path::{Path, PathBuf};

/// Points a sweep may have (grid cells × repeats): a bound, so no file can ask for a run that
/// never ends by accident.
pub const MAX_POINTS: u64 = 1_000_000;
/// Values one axis may have.
pub const MAX_VALUES: usize = 10_000;
/// Repeats of a point.
pub const MAX_REPEATS: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisKind {
    Device,
    Job,
    Set,
}

#[derive(Clone, Debug)]
pub struct Axis {
    pub kind: AxisKind,
    /// The option or key; also the column name.
    pub key: String,
    pub values: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Spec {
    /// The sweep file, for messages.
    pub file: String,
    /// Job file text and the name it is parsed under (its path, for includes and messages).
    pub job_text: String,
    pub job_name: String,
    pub device: String,
    pub sets: Vec<String>,
    pub options: Vec<String>,
    pub seed: u64,
    pub repeats: u64,
    pub axes: Vec<Axis>,
    /// (count, seed) of a random sample of the grid.
    pub sample: Option<(u64, u64)>,
}

impl Spec {
    /// Cells of the full grid.
    pub fn grid_cells(&self) -> u64 {
        self.axes.iter().map(|a| a.values.len() as u64).product()
    }
}

fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> usize {
    span.map(|s| text[..s.start.min(text.len())].lines().count().max(1))
        .unwrap_or(0)
}

/// A TOML value as the text fio or `--set` would be given.
fn value_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn int(v: Option<&toml::Value>, what: &str) -> Result<Option<i64>, String> {
    match v {
        None => Ok(None),
        Some(toml::Value::Integer(i)) => Ok(Some(*i)),
        Some(_) => Err(format!("{what}: expected a whole number")),
    }
}

/// An axis's values: a list, or `{ from, to, step }` / `{ from, to, times }`.
fn axis_values(v: &toml::Value, at: &str) -> Result<Vec<String>, String> {
    let out = match v {
        toml::Value::Array(a) => a
            .iter()
            .map(|x| {
                value_text(x)
                    .ok_or_else(|| format!("{at}: values must be strings, numbers or booleans"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        toml::Value::Table(t) => {
            for k in t.keys() {
                if !["from", "to", "step", "times"].contains(&k.as_str()) {
                    return Err(format!(
                        "{at}: unknown range key '{k}' (expected from, to, and step or times)"
                    ));
                }
            }
            let from =
                int(t.get("from"), at)?.ok_or_else(|| format!("{at}: a range needs 'from'"))?;
            let to = int(t.get("to"), at)?.ok_or_else(|| format!("{at}: a range needs 'to'"))?;
            let step = int(t.get("step"), at)?;
            let times = int(t.get("times"), at)?;
            if to < from {
                return Err(format!("{at}: 'to' ({to}) is below 'from' ({from})"));
            }
            let mut v = Vec::new();
            let mut x = from;
            match (step, times) {
                (Some(s), None) if s > 0 => {
                    while x <= to && v.len() <= MAX_VALUES {
                        v.push(x.to_string());
                        x = x.saturating_add(s);
                    }
                }
                (None, Some(m)) if m > 1 && from > 0 => {
                    while x <= to && v.len() <= MAX_VALUES {
                        v.push(x.to_string());
                        x = x.saturating_mul(m);
                    }
                }
                _ => {
                    return Err(format!(
                        "{at}: a range needs 'step' (above 0) or 'times' (above 1, with 'from' above 0), not both"
                    ))
                }
            }
            v
        }
        _ => {
            return Err(format!(
                "{at}: expected a list of values or a range {{ from, to, step|times }}"
            ))
        }
    };
    if out.is_empty() {
        return Err(format!("{at}: no values"));
    }
    if out.len() > MAX_VALUES {
        return Err(format!("{at}: more than {MAX_VALUES} values"));
    }
    Ok(out)
}

/// Read a sweep file.
pub fn load(path: &Path) -> Result<Spec, String> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    parse(&text, &shown, path.parent().unwrap_or(Path::new(".")))
}

/// Parse sweep text (`file` names it in messages; a `job` path is relative to `dir`).
pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Spec, String> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        format!(
            "{file}:{}: invalid TOML: {}",
            line_of(text, e.span()),
            e.message()
        )
    })?;
    for k in doc.keys() {
        if !["base", "axes", "sample"].contains(&k.as_str()) {
            return Err(format!(
                "{file}: unknown table '{k}' (expected [base], [axes], [sample])"
            ));
        }
    }
    let empty = toml::Table::new();
    let base = match doc.get("base") {
        Some(toml::Value::Table(t)) => t,
        Some(_) => return Err(format!("{file}: 'base' must be a table")),
        None => return Err(format!("{file}: missing [base] (job and device)")),
    };
    for k in base.keys() {
        if ![
            "job", "job_text", "device", "set", "options", "seed", "repeats",
        ]
        .contains(&k.as_str())
        {
            return Err(format!(
                "{file}: [base] unknown key '{k}' (expected job, job_text, device, set, options, seed, repeats)"
            ));
        }
    }
    let string = |k: &str| -> Result<Option<String>, String> {
        match base.get(k) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{file}: [base] {k}: expected a string")),
        }
    };
    let list = |k: &str| -> Result<Vec<String>, String> {
        match base.get(k) {
            None => Ok(Vec::new()),
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    toml::Value::String(s) => Ok(s.clone()),
                    _ => Err(format!("{file}: [base] {k}: expected a list of strings")),
                })
                .collect(),
            Some(_) => Err(format!("{file}: [base] {k}: expected a list of strings")),
        }
    };
    let (job_text, job_name) = match (string("job")?, string("job_text")?) {
        (Some(p), None) => {
            let path: PathBuf = dir.join(&p);
            let t = std::fs::read_to_string(&path)
                .map_err(|e| format!("{file}: [base] job = {p:?}: {}: {e}", path.display()))?;
            (t, path.display().to_string())
        }
        (None, Some(t)) => (t, format!("{file} [base] job_text")),
        _ => {
            return Err(format!(
                "{file}: [base] needs one of job (a fio job file) or job_text"
            ))
        }
    };
    let device = string("device")?.unwrap_or_else(|| blksim_sim::DEFAULT_DEVICE.to_string());
    let seed = match int(base.get("seed"), &format!("{file}: [base] seed"))? {
        Some(s) if s >= 0 => s as u64,
        Some(_) => {
            return Err(format!(
                "{file}: [base] seed: expected a whole number from 0"
            ))
        }
        None => blksim_sim::setup::DEFAULT_SEED,
    };
    let repeats = match int(base.get("repeats"), &format!("{file}: [base] repeats"))? {
        Some(r) if (1..=MAX_REPEATS as i64).contains(&r) => r as u64,
        Some(_) => {
            return Err(format!(
                "{file}: [base] repeats: expected 1 to {MAX_REPEATS}"
            ))
        }
        None => 1,
    };
    let mut axes = Vec::new();
    let ax = match doc.get("axes") {
        Some(toml::Value::Table(t)) => t,
        Some(_) => return Err(format!("{file}: 'axes' must be a table")),
        None => &empty,
    };
    for k in ax.keys() {
        if !["device", "job", "set"].contains(&k.as_str()) {
            return Err(format!(
                "{file}: [axes] unknown key '{k}' (expected device = [...], [axes.job], [axes.set])"
            ));
        }
    }
    if let Some(v) = ax.get("device") {
        axes.push(Axis {
            kind: AxisKind::Device,
            key: "device".into(),
            values: axis_values(v, &format!("{file}: [axes] device"))?,
        });
    }
    for (group, kind) in [("job", AxisKind::Job), ("set", AxisKind::Set)] {
        match ax.get(group) {
            None => {}
            Some(toml::Value::Table(t)) => {
                for (k, v) in t {
                    let at = format!("{file}: [axes.{group}] {k}");
                    if kind == AxisKind::Job && blksim_job::options::find_option(k).is_none() {
                        let hint = blksim_job::suggest(k)
                            .map(|s| format!(" (did you mean '{s}'?)"))
                            .unwrap_or_default();
                        return Err(format!("{at}: not a fio option{hint}"));
                    }
                    axes.push(Axis {
                        kind,
                        key: k.clone(),
                        values: axis_values(v, &at)?,
                    });
                }
            }
            Some(_) => return Err(format!("{file}: [axes.{group}] must be a table")),
        }
    }
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.key == a.key) {
            return Err(format!("{file}: axis '{}' is given twice", a.key));
        }
    }
    let sample = match doc.get("sample") {
        None => None,
        Some(toml::Value::Table(t)) => {
            let count = int(t.get("count"), &format!("{file}: [sample] count"))?
                .filter(|c| *c >= 1)
                .ok_or_else(|| format!("{file}: [sample] count: expected a whole number from 1"))?;
            let seed = int(t.get("seed"), &format!("{file}: [sample] seed"))?.unwrap_or(0);
            Some((count as u64, seed as u64))
        }
        Some(_) => return Err(format!("{file}: 'sample' must be a table")),
    };
    let spec = Spec {
        file: file.to_string(),
        job_text,
        job_name,
        device,
        sets: list("set")?,
        options: list("options")?,
        seed,
        repeats,
        axes,
        sample,
    };
    let cells = spec
        .axes
        .iter()
        .try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64))
        .unwrap_or(u64::MAX);
    let cells = spec.sample.map_or(cells, |(c, _)| c.min(cells));
    if cells.saturating_mul(spec.repeats) > MAX_POINTS {
        return Err(format!(
            "{file}: {cells} grid points x {} repeats is more than {MAX_POINTS} runs; sample the grid ([sample] count = N) or split it",
            spec.repeats
        ));
    }
    Ok(spec)
}

/// The sweep as one self-contained file (the job inlined as `job_text`): what remote
/// workers parse, with no access to the files the sweep names. `parse` of it gives the same
/// points and rows.
pub fn bundle(spec: &Spec) -> String {
    use toml::Value as V;
    let strings = |v: &[String]| V::Array(v.iter().map(|s| V::String(s.clone())).collect());
    let mut base = toml::Table::new();
    base.insert("job_text".into(), V::String(spec.job_text.clone()));
    base.insert("device".into(), V::String(spec.device.clone()));
    base.insert("set".into(), strings(&spec.sets));
    base.insert("options".into(), strings(&spec.options));
    base.insert("seed".into(), V::Integer(spec.seed as i64));
    base.insert("repeats".into(), V::Integer(spec.repeats as i64));
    let mut axes = toml::Table::new();
    let (mut job, mut set) = (toml::Table::new(), toml::Table::new());
    for a in &spec.axes {
        let v = strings(&a.values);
        match a.kind {
            AxisKind::Device => {
                axes.insert("device".into(), v);
            }
            AxisKind::Job => {
                job.insert(a.key.clone(), v);
            }
            AxisKind::Set => {
                set.insert(a.key.clone(), v);
            }
        }
    }
    if !job.is_empty() {
        axes.insert("job".into(), V::Table(job));
    }
    if !set.is_empty() {
        axes.insert("set".into(), V::Table(set));
    }
    let mut doc = toml::Table::new();
    doc.insert("base".into(), V::Table(base));
    doc.insert("axes".into(), V::Table(axes));
    if let Some((count, seed)) = spec.sample {
        let mut t = toml::Table::new();
        t.insert("count".into(), V::Integer(count as i64));
        t.insert("seed".into(), V::Integer(seed as i64));
        doc.insert("sample".into(), V::Table(t));
    }
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> Result<Spec, String> {
        parse(t, "s.toml", Path::new("."))
    }

    #[test]
    fn axes_in_their_order_with_ranges() {
        let s = p(r#"
[base]
job_text = "[j]\nrw=randread\n"
device = "null_blk"
repeats = 2
[axes]
device = ["null_blk", "emmc-hbg4a2"]
[axes.job]
numjobs = { from = 1, to = 16, times = 2 }
bs = ["4k", "64k"]
[axes.set]
"queue.scheduler" = ["none", "mq-deadline"]
"#)
        .unwrap();
        let names: Vec<&str> = s.axes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(names, ["device", "bs", "numjobs", "queue.scheduler"]);
        assert_eq!(s.axes[2].values, ["1", "2", "4", "8", "16"]);
        assert_eq!(s.grid_cells(), 2 * 2 * 5 * 2);
        assert_eq!(s.repeats, 2);
    }

    #[test]
    fn a_bundle_parses_to_the_same_sweep() {
        let s = p("[base]\njob_text = \"[j]\\nrw=read\\n\"\nrepeats = 3\nseed = 9\n[axes]\ndevice = [\"null_blk\"]\n[axes.job]\nbs = [\"4k\", 8192]\n[axes.set]\n\"queue.nomerges\" = [0, 2]\n[sample]\ncount = 2\nseed = 1\n").unwrap();
        let b = parse(&bundle(&s), "b.toml", Path::new("/nonexistent")).unwrap();
        assert_eq!(crate::grid::points(&b), crate::grid::points(&s));
        assert_eq!(b.job_text, s.job_text);
        let keys = |x: &Spec| {
            x.axes
                .iter()
                .map(|a| (a.key.clone(), a.values.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&b), keys(&s));
    }

    #[test]
    fn mistakes_name_the_file_and_what_is_expected() {
        let base = "[base]\njob_text = \"[j]\\n\"\n";
        let e = |t: &str| p(&format!("{base}{t}")).unwrap_err();
        assert!(e("[axes.job]\nnumjob = [1]\n").contains("did you mean 'numjobs'"));
        assert!(e("[axes.job]\nnumjobs = { from = 4, to = 1, step = 1 }\n").contains("below"));
        assert!(e("[axes.job]\nnumjobs = { from = 1, to = 4 }\n").contains("needs 'step'"));
        assert!(e("[axes.job]\nnumjobs = []\n").contains("no values"));
        assert!(
            e("[axes.job]\nbs = { from = 1, to = 100000, step = 1 }\n").contains("more than 10000")
        );
        assert!(e("[bogus]\n").contains("unknown table 'bogus'"));
        assert!(e("[axes]\njob = 3\n").contains("[axes.job] must be a table"));
        let big = "[axes.job]\nnumjobs = { from = 1, to = 1000, step = 1 }\nbs = { from = 1, to = 1000, step = 1 }\niodepth = { from = 1, to = 10, step = 1 }\n";
        assert!(e(big).contains("more than 1000000 runs"));
        assert!(p("[base]\ndevice = \"x\"\n")
            .unwrap_err()
            .contains("needs one of job"));
        assert!(p("[base\n")
            .unwrap_err()
            .starts_with("s.toml:1: invalid TOML"));
    }
}
