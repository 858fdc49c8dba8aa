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

Runs every point of the sweep file's grid (base job and device, axes over fio job options,
profile keys and devices, repeats over seeds; see README) on all cores, and writes one row
per point, job and direction to FILE.parquet (default: SWEEP.parquet in the current folder;
SWEEP.shard-K-of-N.parquet for a shard), in point order. Finished points are kept in
FILE.journal.csv as they end; running the sweep again skips them. --csv also writes the rows
as CSV. --shard=K/N runs the points whose number is K modulo N (K from 0).
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

/// Run `spec`; `progress(done, total)` after each point.
pub fn sweep(
    spec: &spec::Spec,
    o: &Options,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Summary, String> {
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
    let pending: Vec<&grid::Point> = points
        .iter()
        .filter(|p| !done.contains_key(&p.index))
        .collect();
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
    let fresh = !journal.exists()
        || std::fs::metadata(&journal)
            .map(|m| m.len() == 0)
            .unwrap_or(true);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&journal)
        .map_err(|e| format!("{}: {e}", journal.display()))?;
    if fresh {
        use std::io::Write;
        f.write_all(out::header(spec, true).as_bytes())
            .map_err(|e| format!("{}: {e}", journal.display()))?;
    }
    let f = Mutex::new(f);
    let total = points.len() as u64;
    let finished = std::sync::atomic::AtomicU64::new(done.len() as u64);
    progress(done.len() as u64, total);
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = o.threads {
        pool = pool.num_threads(t);
    }
    let pool = pool.build().map_err(|e| format!("threads: {e}"))?;
    pool.install(|| {
        pending.par_iter().try_for_each(|p| -> Result<(), String> {
            let mut rows = run::run_point(spec, p)?;
            if rows.is_empty() {
                // A point whose jobs moved no data still has its row, so it reads as done.
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
            let mut j = f.lock().unwrap_or_else(|e| e.into_inner());
            out::append(&mut j, &rows).map_err(|e| format!("{}: {e}", journal.display()))?;
            drop(j);
            let n = finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress(n, total);
            Ok(())
        })
    })?;
    let all = out::read_journal(&journal, spec)?;
    let rows: Vec<run::Row> = all.into_values().flat_map(|(_, r)| r).collect();
    out::write_parquet(&o.out, spec, &rows)?;
    if let Some(c) = &o.csv {
        let text = out::header(spec, false) + &out::csv_lines_sorted(&rows);
        std::fs::write(c, text).map_err(|e| format!("{}: {e}", c.display()))?;
    }
    Ok(Summary {
        points: total,
        skipped: done.len() as u64,
        ran: pending.len() as u64,
        rows: rows.len() as u64,
    })
}
