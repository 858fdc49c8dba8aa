//! The native half of the `blksim` Python package: thin calls into `blksim::api` and
//! `blksim_sweep`, with the interpreter lock released while simulating, so Python threads
//! run simulations in parallel. `python/blksim/__init__.py` wraps these in the public
//! functions and turns errors into typed exceptions.

use blksim::api::{self, Error, Job, Request};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::PathBuf;

pyo3::create_exception!(_blksim, NativeError, PyException);

/// An error as `(kind, message, file, line, option, key)` for the Python side to raise as
/// `JobError`, `DeviceError`, `SetError` or `RunError`.
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    let args = match e {
        Error::Job {
            file, line, option, ..
        } => ("job", msg, Some(file), Some(line), option, None),
        Error::Device { device, .. } => ("device", msg, None, None, None, Some(device)),
        Error::Set { key, .. } => ("set", msg, None, None, None, Some(key)),
        Error::Run { .. } => ("run", msg, None, None, None, None),
    };
    NativeError::new_err(args)
}

/// `job`: job-file text when it holds a newline or starts with `[`, else a path.
fn job_of(job: &str) -> Job {
    if job.contains('\n') || job.trim_start().starts_with('[') {
        Job::Text {
            text: job.to_string(),
            name: "<job>".to_string(),
        }
    } else {
        Job::Files(vec![PathBuf::from(job)])
    }
}

/// The request the Python arguments describe (None: the library's default).
fn request(
    job: &str,
    device: Option<String>,
    sets: Vec<String>,
    seed: Option<u64>,
    options: Vec<String>,
    max_events: Option<u64>,
) -> Request {
    let d = Request::default();
    Request {
        job: job_of(job),
        device: device.unwrap_or(d.device),
        sets,
        options,
        seed: seed.unwrap_or(d.seed),
        max_events,
        ..Request::default()
    }
}

/// A run's files: (path, contents).
type FileList = Vec<(String, Py<pyo3::types::PyBytes>)>;

/// Run fio jobs on a simulated device; returns fio's JSON output (`json+` with `plus`) and,
/// with `keep_files`, the run's files (fio logs, `write_iolog`, blktrace under `blktrace`),
/// kept in memory and nothing written to disk.
#[pyfunction]
#[pyo3(signature = (job, device=None, sets=Vec::new(), seed=None, options=Vec::new(), plus=false, max_events=None, keep_files=false, blktrace=None))]
#[allow(clippy::too_many_arguments)]
fn run_json(
    py: Python<'_>,
    job: &str,
    device: Option<String>,
    sets: Vec<String>,
    seed: Option<u64>,
    options: Vec<String>,
    plus: bool,
    max_events: Option<u64>,
    keep_files: bool,
    blktrace: Option<PathBuf>,
) -> PyResult<(String, Option<FileList>)> {
    let mut req = request(job, device, sets, seed, options, max_events);
    let mem = api::Memory::new();
    if keep_files {
        req.blktrace = blktrace;
        req.files = Some(api::Files(std::sync::Arc::new(mem.clone())));
    }
    let text = py
        .detach(|| api::run(&req).map(|r| api::json(&r, plus)))
        .map_err(to_py)?;
    let files = keep_files.then(|| {
        mem.files()
            .into_iter()
            .map(|(p, b)| {
                (
                    p.display().to_string(),
                    pyo3::types::PyBytes::new(py, &b).unbind(),
                )
            })
            .collect()
    });
    Ok((text, files))
}

/// The bundled device profiles: [(name, description)].
#[pyfunction]
fn devices() -> Vec<(String, String)> {
    api::devices()
}

/// Every model parameter: [(key, table, unit, default, min, max, doc, source)].
#[pyfunction]
#[allow(clippy::type_complexity)]
fn params() -> Vec<(String, String, String, String, u64, u64, String, String)> {
    api::params()
        .into_iter()
        .map(|p| {
            (
                p.key,
                p.table.to_string(),
                p.unit.to_string(),
                p.default.to_string(),
                p.min,
                p.max,
                p.doc.to_string(),
                p.source.to_string(),
            )
        })
        .collect()
}

/// Run a sweep file; returns (points, ran, skipped, rows, parquet path).
#[pyfunction]
#[pyo3(signature = (path, out=None, csv=None, shard=None, threads=None))]
fn sweep(
    py: Python<'_>,
    path: PathBuf,
    out: Option<PathBuf>,
    csv: Option<PathBuf>,
    shard: Option<(u64, u64)>,
    threads: Option<usize>,
) -> PyResult<(u64, u64, u64, u64, String)> {
    let run = || -> Result<_, String> {
        let spec = blksim_sweep::spec::load(&path)?;
        let mut o = sweep_options(&path, out, csv, shard)?;
        o.threads = threads;
        let s = blksim_sweep::sweep(&spec, &o, &api::SweepRunner, &|_, _| {})?;
        Ok((
            s.points,
            s.ran,
            s.skipped,
            s.rows,
            o.out.display().to_string(),
        ))
    };
    py.detach(run).map_err(run_err)
}

fn run_err(m: String) -> PyErr {
    NativeError::new_err((
        "run",
        m,
        None::<String>,
        None::<usize>,
        None::<String>,
        None::<String>,
    ))
}

fn sweep_options(
    path: &std::path::Path,
    out: Option<PathBuf>,
    csv: Option<PathBuf>,
    shard: Option<(u64, u64)>,
) -> Result<blksim_sweep::Options, String> {
    if let Some((k, n)) = shard {
        if n == 0 || k >= n {
            return Err(format!("shard=({k}, {n}): expected 0 <= K < N"));
        }
    }
    Ok(blksim_sweep::Options {
        out: out.unwrap_or_else(|| blksim_sweep::default_out(path, shard)),
        csv,
        shard,
        threads: None,
    })
}

/// A sweep file as one self-contained text (remote workers parse it).
#[pyfunction]
fn sweep_bundle(path: PathBuf) -> PyResult<String> {
    let spec = blksim_sweep::spec::load(&path).map_err(run_err)?;
    Ok(blksim_sweep::spec::bundle(&spec))
}

/// The points a sweep still has to run: (journal, pending point indices, total, done).
#[pyfunction]
#[pyo3(signature = (path, out=None, shard=None))]
fn sweep_plan(
    path: PathBuf,
    out: Option<PathBuf>,
    shard: Option<(u64, u64)>,
) -> PyResult<(String, Vec<u64>, u64, u64)> {
    let go = || -> Result<_, String> {
        let spec = blksim_sweep::spec::load(&path)?;
        let o = sweep_options(&path, out, None, shard)?;
        let plan = blksim_sweep::plan(&spec, &o)?;
        let pending: Vec<u64> = plan.pending().map(|p| p.index).collect();
        Ok((
            plan.journal.display().to_string(),
            pending,
            plan.points.len() as u64,
            plan.done.len() as u64,
        ))
    };
    go().map_err(run_err)
}

/// Run point `index` of a bundled sweep; returns its journal lines.
#[pyfunction]
fn sweep_point(py: Python<'_>, bundle: String, index: u64) -> PyResult<String> {
    py.detach(|| -> Result<String, String> {
        let spec = blksim_sweep::spec::parse(&bundle, "<sweep bundle>", std::path::Path::new("."))?;
        let p = blksim_sweep::grid::point(&spec, index)
            .ok_or_else(|| format!("the sweep has no point {index}"))?;
        blksim_sweep::point_lines(&spec, &p, &api::SweepRunner)
    })
    .map_err(run_err)
}

/// Append a point's lines to the journal.
#[pyfunction]
fn sweep_append(journal: PathBuf, lines: &str) -> PyResult<()> {
    blksim_sweep::append(&journal, lines).map_err(run_err)
}

/// Write the journal's rows as the sweep's Parquet (and CSV); returns the row count.
#[pyfunction]
#[pyo3(signature = (path, out=None, csv=None, shard=None))]
fn sweep_finish(
    py: Python<'_>,
    path: PathBuf,
    out: Option<PathBuf>,
    csv: Option<PathBuf>,
    shard: Option<(u64, u64)>,
) -> PyResult<(u64, String)> {
    py.detach(|| -> Result<_, String> {
        let spec = blksim_sweep::spec::load(&path)?;
        let o = sweep_options(&path, out, csv, shard)?;
        let rows = blksim_sweep::finish(&spec, &o)?;
        Ok((rows, o.out.display().to_string()))
    })
    .map_err(run_err)
}

#[pymodule]
fn _blksim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(params, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_bundle, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_plan, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_point, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_append, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_finish, m)?)?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
