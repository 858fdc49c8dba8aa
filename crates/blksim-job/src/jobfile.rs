//! fio job files: INI sections in, [`JobSet`] out.
//!
//! Two stages, as fio's `parse_jobs_ini` (init.c): read lines into sections (comments,
//! `include`, `${VAR}`, keywords), then build jobs: each job starts as a copy of the `[global]`
//! state at that point in the files, so a `[global]` applies only to jobs below it and several
//! globals accumulate. Within a section the options are applied in priority order (fio
//! `sort_options`: `kb_base` first), stable otherwise, so a later option wins over an earlier
//! one (`rwmixread`/`rwmixwrite`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::ParseError;
use crate::options::{apply_option, finalize, find_option, unknown_option_message, OptionDesc};
use crate::spec::{JobSet, JobSpec};

/// Values of fio's reserved keywords `$pagesize`, `$ncpus` and `$mb_memory` (init.c
/// `fio_keywords`). fio reads them from the host; a simulation uses fixed values so a job file
/// means the same thing everywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keywords {
    /// `$pagesize`: bytes per page. Default 4096.
    pub pagesize: u64,
    /// `$ncpus`: online CPUs. Default 2.
    pub ncpus: u32,
    /// `$mb_memory`: memory in MiB. Default 24576 (24 GiB).
    pub mb_memory: u64,
}

impl Default for Keywords {
    fn default() -> Self {
        Keywords {
            pagesize: 4096,
            ncpus: 2,
            mb_memory: 24576,
        }
    }
}

/// Includes may nest; this bounds it (and stops a file including itself).
const MAX_INCLUDE_DEPTH: usize = 16;
/// Larger files are refused rather than read (a job file is a few KiB).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// One `key[=value]` as read, with where it came from.
#[derive(Clone, Debug)]
pub(crate) struct RawOpt {
    pub key: String,
    pub value: Option<String>,
    pub file: String,
    pub line: usize,
}

/// One `[section]` (or `--name=` on the command line).
#[derive(Clone, Debug)]
pub(crate) struct Section {
    pub name: String,
    pub is_global: bool,
    /// `file:line` of the header, for [`JobSpec::origin`].
    pub origin: String,
    pub opts: Vec<RawOpt>,
    /// First job of the second or later job file: fio puts a stonewall between files.
    pub implicit_stonewall: bool,
}

/// fio tests `strncmp(name, "global", 6)`, so `[global-foo]` is a global section too.
pub(crate) fn is_global_name(name: &str) -> bool {
    name.starts_with("global")
}

/// Resolve, apply (in priority order) and record a section's options. Returns the
/// `(canonical name, value)` pairs for the JSON options object.
pub(crate) fn apply_opts(
    spec: &mut JobSpec,
    opts: &[RawOpt],
) -> Result<Vec<(String, String)>, ParseError> {
    let mut resolved: Vec<(&'static OptionDesc, &RawOpt)> = Vec::with_capacity(opts.len());
    for o in opts {
        let Some(d) = find_option(&o.key) else {
            // An engine's own options (dfs's `pool`, netio's `port`) are unknown because
            // the engine is: fio loads them with the engine. Name the engine, not its option.
            if let Some(e) = unsupported_engine(spec, opts) {
                return Err(e);
            }
            return Err(ParseError::new(
                &o.file,
                o.line,
                None,
                unknown_option_message(&o.key),
            ));
        };
        resolved.push((d, o));
    }
    let mut order: Vec<usize> = (0..resolved.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(resolved[i].0.prio));
    for i in order {
        let (d, o) = resolved[i];
        apply_option(spec, d, o.value.as_deref())
            .map_err(|m| ParseError::new(&o.file, o.line, Some(d.name), m))?;
        spec.mark_set(d.name, &o.file, o.line);
    }
    Ok(resolved
        .iter()
        .filter_map(|(d, o)| o.value.as_ref().map(|v| (d.name.to_string(), v.clone())))
        .collect())
}

/// The error of the section's `ioengine`, if it names an engine blksim does not run.
pub(crate) fn unsupported_engine(spec: &JobSpec, opts: &[RawOpt]) -> Option<ParseError> {
    let d = find_option("ioengine")?;
    opts.iter().rev().find(|o| d.matches(&o.key)).and_then(|o| {
        apply_option(&mut spec.clone(), d, o.value.as_deref())
            .err()
            .map(|m| ParseError::new(&o.file, o.line, Some(d.name), m))
    })
}

/// Turns sections into jobs, carrying the global state along.
pub(crate) struct Builder {
    global: JobSpec,
    set: JobSet,
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            global: JobSpec::default(),
            set: JobSet::default(),
        }
    }

    pub fn add(&mut self, sec: &Section) -> Result<(), ParseError> {
        if sec.is_global {
            let raw = apply_opts(&mut self.global, &sec.opts)?;
            self.set.global_options.extend(raw);
            return Ok(());
        }
        // fio `get_new_job`: a job is a copy of the global options, then its own.
        let mut job = self.global.clone();
        job.raw_options.clear();
        job.name = sec.name.clone();
        job.origin = sec.origin.clone();
        if sec.implicit_stonewall {
            job.stonewall = true;
        }
        job.raw_options = apply_opts(&mut job, &sec.opts)?;
        job.bare_options = sec
            .opts
            .iter()
            .filter(|o| o.value.is_none())
            .filter_map(|o| find_option(&o.key).map(|d| d.name.to_string()))
            .collect();
        crate::options::drop_inherited_engine_options(&mut job, &self.global);
        finalize(&mut job);
        crate::options::check_engine_options(&job)?;
        crate::options::check_rate_options(&job)?;
        self.set.jobs.push(job);
        Ok(())
    }

    pub fn finish(self, file: &str) -> Result<JobSet, ParseError> {
        if self.set.jobs.is_empty() {
            // fio: "No job(s) defined".
            return Err(ParseError::new(file, 0, None, "no jobs defined"));
        }
        Ok(self.set)
    }
}

/// `${VAR}` → the variable's value; unset → empty (fio `option_dup_subs`). An unterminated
/// `${` is kept as written.
pub(crate) fn expand_env(s: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) => {
                if let Some(v) = env(&after[..j]) {
                    out.push_str(&v);
                }
                rest = &after[j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `$pagesize`, `$mb_memory`, `$ncpus` → numbers (fio `fio_keyword_replace`). fio then hands
/// the value to `bc` if it contains `+ - * /`; we wrap it in parentheses for our evaluator.
pub(crate) fn replace_keywords(v: &str, kw: &Keywords) -> String {
    if !v.contains('$') {
        return v.to_string();
    }
    let mut s = v.to_string();
    let mut replaced = false;
    for (word, val) in [
        ("$pagesize", kw.pagesize.to_string()),
        ("$mb_memory", kw.mb_memory.to_string()),
        ("$ncpus", kw.ncpus.to_string()),
    ] {
        if s.contains(word) {
            s = s.replace(word, &val);
            replaced = true;
        }
    }
    let t = s.trim();
    if replaced && !t.starts_with('(') && t.contains(['+', '-', '*', '/']) {
        s = format!("({t})");
    }
    s
}

/// Cut an inline comment: fio's `strip_blank_end` ends the line at the first `;` and then at
/// the first `#`, and trims trailing blanks.
fn strip_comment(line: &str) -> &str {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    line[..cut].trim_end()
}

struct Reader<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    kw: &'a Keywords,
    sections: Vec<Section>,
    /// The next job section starts with a stonewall (set at each file after the first).
    pending_stonewall: bool,
}

impl Reader<'_> {
    fn read(&mut self, text: &str, file: &str, depth: usize) -> Result<(), ParseError> {
        let nested = depth > 0;
        for (idx, raw_line) in text.split('\n').enumerate() {
            let lineno = idx + 1;
            let err = |m: String| ParseError::new(file, lineno, None, m);
            let t = raw_line.trim();
            if t.is_empty() || t.starts_with(';') || t.starts_with('#') {
                continue;
            }
            let p = strip_comment(t);
            if p.is_empty() {
                continue;
            }
            if p.starts_with('[') {
                if nested {
                    return Err(err("no new sections in included files".into()));
                }
                let inner = p
                    .strip_prefix('[')
                    .and_then(|s| s.strip_suffix(']'))
                    .ok_or_else(|| {
                        err(format!("malformed section header '{p}' (expected [name])"))
                    })?;
                let name = inner.trim();
                if name.is_empty() {
                    return Err(err("empty section name '[]'".into()));
                }
                let is_global = is_global_name(name);
                let implicit_stonewall = !is_global && std::mem::take(&mut self.pending_stonewall);
                self.sections.push(Section {
                    name: name.to_string(),
                    is_global,
                    origin: format!("{file}:{lineno}"),
                    opts: Vec::new(),
                    implicit_stonewall,
                });
                continue;
            }
            if let Some(rest) = p.strip_prefix("include") {
                if rest.starts_with(char::is_whitespace) {
                    self.include(rest.trim(), file, lineno, depth)?;
                    continue;
                }
            }
            let line = expand_env(p, self.env);
            let (key, value) = match line.split_once('=') {
                Some((k, v)) => (k.trim(), Some(replace_keywords(v.trim(), self.kw))),
                None => (line.trim(), None),
            };
            if key.is_empty() {
                return Err(err(format!("missing option name in '{p}'")));
            }
            let Some(sec) = self.sections.last_mut() else {
                return Err(err(format!("option '{key}' outside of [] job section")));
            };
            sec.opts.push(RawOpt {
                key: key.to_string(),
                value,
                file: file.to_string(),
                line: lineno,
            });
        }
        Ok(())
    }

    /// `include file`: lines of another file, relative to the including file's directory.
    fn include(
        &mut self,
        target: &str,
        file: &str,
        lineno: usize,
        depth: usize,
    ) -> Result<(), ParseError> {
        let err = |m: String| ParseError::new(file, lineno, None, m);
        let target = expand_env(target, self.env);
        if target.is_empty() {
            return Err(err("include needs a file name".into()));
        }
        if depth + 1 > MAX_INCLUDE_DEPTH {
            return Err(err(format!(
                "includes nested too deeply (more than {MAX_INCLUDE_DEPTH})"
            )));
        }
        let path = Path::new(&target);
        let path: PathBuf = if path.is_absolute() {
            path.to_path_buf()
        } else {
            Path::new(file)
                .parent()
                .map_or_else(|| path.to_path_buf(), |d| d.join(path))
        };
        let text = read_text(&path)
            .map_err(|e| err(format!("cannot include '{}': {e}", path.display())))?;
        self.read(&text, &path.display().to_string(), depth + 1)
    }
}

/// A job file's text; a regular file of bounded size, invalid UTF-8 replaced.
fn read_text(path: &Path) -> Result<String, String> {
    let meta = fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("file is larger than {MAX_FILE_BYTES} bytes"));
    }
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Parse job text. `file_name` is used in messages and to resolve `include` (relative to its
/// directory); `env` answers `${VAR}`. Keywords take their [`Keywords::default`] values.
pub fn parse_job_str(
    text: &str,
    file_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobSet, ParseError> {
    parse_job_str_with(text, file_name, env, &Keywords::default())
}

/// [`parse_job_str`] with explicit keyword values.
pub fn parse_job_str_with(
    text: &str,
    file_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
    kw: &Keywords,
) -> Result<JobSet, ParseError> {
    let mut r = Reader {
        env,
        kw,
        sections: Vec::new(),
        pending_stonewall: false,
    };
    r.read(text, file_name, 0)?;
    let mut b = Builder::new();
    for s in &r.sections {
        b.add(s)?;
    }
    b.finish(file_name)
}

/// Parse one job file, with the process environment for `${VAR}`.
pub fn parse_job_file(path: &Path) -> Result<JobSet, ParseError> {
    parse_job_files(&[path.to_path_buf()])
}

/// Parse several job files as one run: fio puts an implicit stonewall before the first job of
/// each file after the first, and `[global]` state carries over from file to file (fio's
/// `def_thread`).
pub fn parse_job_files(paths: &[PathBuf]) -> Result<JobSet, ParseError> {
    parse_job_files_with(paths, &process_env, &Keywords::default())
}

/// [`parse_job_files`] with an explicit environment and keyword values.
pub fn parse_job_files_with(
    paths: &[PathBuf],
    env: &dyn Fn(&str) -> Option<String>,
    kw: &Keywords,
) -> Result<JobSet, ParseError> {
    let mut r = Reader {
        env,
        kw,
        sections: Vec::new(),
        pending_stonewall: false,
    };
    for (i, path) in paths.iter().enumerate() {
        let name = path.display().to_string();
        let text = read_text(path)
            .map_err(|e| ParseError::new(&name, 0, None, format!("cannot read job file: {e}")))?;
        r.pending_stonewall = i > 0;
        r.read(&text, &name, 0)?;
    }
    let mut b = Builder::new();
    for s in &r.sections {
        b.add(s)?;
    }
    let last = paths
        .last()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    b.finish(&last)
}
