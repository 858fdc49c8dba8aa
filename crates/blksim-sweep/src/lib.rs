//! `blksim sweep SWEEP.toml`: a grid (or a random sample of one) over job options, profile
//! keys, devices and seeds, run on all local cores, with one row per point, job and direction
//! in a Parquet file.
//!
//! Points are numbered in one fixed order ([`grid`]); each runs as an independent,
//! single-threaded simulation, so the rows of a point are the same whichever core ran it and
//! whenever. Finished points are appended to a journal as they end ([`out`]); a sweep run
//! again skips them (resume), and `--shard=K/N` splits the points among machines or batch
//! jobs without any coordination.

pub mod grid;
pub mod out;
pub mod run;
pub mod spec;

use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const USAGE: &str = "\
usage: blksim sweep SWEEP.toml [--out=FILE.parquet] [--csv=FILE] [--shard=K/N] [--threads=N]
                   [--ray=ADDRESS|auto [--python=PATH]]

Runs every point of the sweep file's grid (base job and device, axes over fio job options,
profile keys and devices, repeats over seeds; see README) on all cores, and writes one row
per point, job and direction to FILE.parquet (default: SWEEP.parquet in the current folder;
SWEEP.shard-K-of-N.parquet for a shard), in point order. Finished points are kept in
FILE.journal.csv as they end; running the sweep again skips them. --csv also writes the rows
as CSV. --shard=K/N runs the points whose number is K modulo N (K from 0). --ray runs the
points as tasks on a Ray cluster through the blksim Python package (python -m
blksim.ray_sweep, with PATH's interpreter, default python3); the output is the same.
";

#[derive(Clone, Debug)]
pub struct Options {
    pub out: PathBuf,
    pub csv: Option<PathBuf>,
    pub shard: Option<(u64, u64)>,
    /// Worker threads (default: one per core).
    pub threads: Option<usize>,
}

/// The default output of a sweep file: `<stem>.parquet` (or `<stem>.shard-K-of-N.parquet`)
/// in the current folder.
pub fn default_out(sweep: &Path, shard: Option<(u64, u64)>) -> PathBuf {
    let stem = sweep
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sweep".into());
    match shard {
        Some((k, n)) => PathBuf::from(format!("{stem}.shard-{k}-of-{n}.parquet")),
        None => PathBuf::from(format!("{stem}.parquet")),
    }
}

pub fn journal_path(out: &Path) -> PathBuf {
    out.with_extension("journal.csv")
}

#[derive(Clone, Debug)]
pub struct Summary {
    pub points: u64,
    pub skipped: u64,
    pub ran: u64,
    pub rows: u64,
}

/// A sweep's points still to run, with the journal ready to take their rows.
pub struct Plan {
    pub points: Vec<grid::Point>,
    /// Indices of the points the journal already holds.
    pub done: std::collections::BTreeSet<u64>,
    pub journal: PathBuf,
}

impl Plan {
    pub fn pending(&self) -> impl Iterator<Item = &grid::Point> {
        self.points.iter().filter(|p| !self.done.contains(&p.index))
    }
}

/// The points of `spec` (its shard), minus those the journal of `o.out` already holds; the
/// journal is created, or its torn last write cut.
pub fn plan(spec: &spec::Spec, o: &Options) -> Result<Plan, String> {
    let mut points = grid::points(spec);
    if let Some((k, n)) = o.shard {
        points = grid::shard(points, k, n);
    }
    let journal = journal_path(&o.out);
    let done = out::read_journal(&journal, spec)?;
    for (p, (key, _)) in &done {
        match points.iter().find(|x| x.index == *p) {
            Some(x) if x.key(spec) == *key => {}
            _ => {
                return Err(format!(
                    "{}: point {p} ({key}) is not this sweep's point {p}: the journal is of another sweep or shard; remove it or give another --out",
                    journal.display()
                ))
            }
        }
    }
    // A write torn by an interruption leaves a last line without its newline: cut it, so
    // the rows appended now start on a line of their own.
    if let Ok(bytes) = std::fs::read(&journal) {
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            std::fs::OpenOptions::new()
                .write(true)
                .open(&journal)
                .and_then(|f| f.set_len(keep as u64))
                .map_err(|e| format!("{}: {e}", journal.display()))?;
        }
    }
    let fresh = std::fs::metadata(&journal)
        .map(|m| m.len() == 0)
        .unwrap_or(true);
    if fresh {
        std::fs::write(&journal, out::header(spec, true))
            .map_err(|e| format!("{}: {e}", journal.display()))?;
    }
    Ok(Plan {
        points,
        done: done.into_keys().collect(),
        journal,
    })
}

/// One point's journal lines: its rows (a placeholder row when its jobs moved no data, so
/// it still reads as done), each with the point's row count.
pub fn point_lines(
    spec: &spec::Spec,
    p: &grid::Point,
    runner: &dyn run::Runner,
) -> Result<String, String> {
    let mut rows = run::run_point(spec, p, runner)?;
    if rows.is_empty() {
        rows.push(run::Row {
            point: p.index,
            seed: p.seed,
            axes: spec
                .axes
                .iter()
                .zip(&p.values)
                .map(|(a, &v)| a.values[v].clone())
                .collect(),
            job: String::new(),
            ddir: "none".into(),
            figures: [f64::NAN; 10],
        });
    }
    Ok(out::csv_lines(&rows, true))
}

/// Append one point's lines to the journal (one write, so a point is whole or torn).
pub fn append(journal: &Path, lines: &str) -> Result<(), String> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(journal)
        .and_then(|mut f| f.write_all(lines.as_bytes()).and_then(|()| f.flush()))
        .map_err(|e| format!("{}: {e}", journal.display()))
}

/// Write the journal's rows, in point order, as the Parquet (and CSV) outputs; returns the
/// row count.
pub fn finish(spec: &spec::Spec, o: &Options) -> Result<u64, String> {
    let all = out::read_journal(&journal_path(&o.out), spec)?;
    let rows: Vec<run::Row> = all.into_values().flat_map(|(_, r)| r).collect();
    out::write_parquet(&o.out, spec, &rows)?;
    if let Some(c) = &o.csv {
        let text = out::header(spec, false) + &out::csv_lines(&rows, false);
        std::fs::write(c, text).map_err(|e| format!("{}: {e}", c.display()))?;
    }
    Ok(rows.len() as u64)
}

/// Run `spec` on the local cores with `runner`; `progress(done, total)` after each point.
pub fn sweep(
    spec: &spec::Spec,
    o: &Options,
    runner: &dyn run::Runner,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Summary, String> {
    let plan = plan(spec, o)?;
    let pending: Vec<&grid::Point> = plan.pending().collect();
    let total = plan.points.len() as u64;
    let skipped = plan.done.len() as u64;
    let journal = Mutex::new(());
    let finished = std::sync::atomic::AtomicU64::new(skipped);
    progress(skipped, total);
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = o.threads {
        pool = pool.num_threads(t);
    }
    let pool = pool.build().map_err(|e| format!("threads: {e}"))?;
    pool.install(|| {
        pending.par_iter().try_for_each(|p| -> Result<(), String> {
            let lines = point_lines(spec, p, runner)?;
            let lock = journal.lock().unwrap_or_else(|e| e.into_inner());
            append(&plan.journal, &lines)?;
            drop(lock);
            let n = finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress(n, total);
            Ok(())
        })
    })?;
    let rows = finish(spec, o)?;
    Ok(Summary {
        points: total,
        skipped,
        ran: pending.len() as u64,
        rows,
    })
}
