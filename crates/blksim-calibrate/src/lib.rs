//! `blksim calibrate`: fit a device profile's parameters to fio results measured on a real
//! device.
//!
//! Each fio JSON result carries its jobs' options, so the jobs are rebuilt from the file
//! ([`fiojson`]); a base profile gives the structure (driver, device model, platform) and
//! the starting values; the named parameters ([`space`]) are fitted by Nelder–Mead on the
//! relative errors of IOPS, mean and p99 completion latency ([`fit`]); the result is the base
//! profile with the fitted values written in ([`profile_out`]), a residual table, a
//! leave-one-out table, and the parameters the runs pin to a bound or cannot tell apart.

pub mod fiojson;
pub mod fit;
pub mod ident;
pub mod profile_out;
pub mod space;

use fiojson::Run;
use fit::{rel_err, FitConfig, Problem};
use space::FitParam;
use std::fmt::Write as _;
use std::path::PathBuf;

pub const USAGE: &str = "\
usage: blksim calibrate RESULTS... --device=BASE [--fit=KEY[=LO..HI],...] [--out=PROFILE.toml]
                        [--set=KEY=VALUE] [--seed=N] [--runtime=S] [--max-iters=N] [--no-loo]

Fits a device profile to fio results measured on a real device. RESULTS are fio JSON outputs
(--output-format=json or json+; files, or folders whose *.json files are read in name
order). Each file's jobs are rebuilt from the options it echoes and simulated on BASE (a
bundled profile or a TOML file; its driver, device model and platform are kept, --set
changes them first).

  --fit=KEY,...     the parameters to fit (default: the device model's set, see README);
                    KEY=LO..HI gives a range (default: the base value /8 .. x8)
  --out=FILE        write the calibrated profile there (default: print it after the tables)
  --runtime=S       simulate each job for at most S seconds (default 1; 0 = as the job says)
  --seed=N          root seed of every simulation (default fixed)
  --max-iters=N     Nelder-Mead iterations of the fit (default 80)
  --no-loo          skip the leave-one-out table (one fit per run)

Loss: the mean of (simulated/measured - 1)^2 over every run, job, direction and figure
(IOPS, mean and p99 completion latency). Prints the fitted values, the residuals of every
run, and how well a fit on the other runs predicts each run (leave-one-out).
";

/// A direction of the parameters along which the loss grows by less than this over a tenth
/// of the range (a factor of 1.23 for the default range) is one the runs cannot tell apart:
/// at a loss near 0 that is an RMS relative error change of 1 %.
pub const IDENTIFIED_DLOSS: f64 = 1e-4;

/// Everything a calibration is asked.
#[derive(Clone, Debug)]
pub struct Options {
    pub device: String,
    pub sets: Vec<String>,
    /// Empty: the device model's default set.
    pub fit: Vec<String>,
    pub seed: u64,
    /// Cap of each simulated job's runtime, ns (0: as the job says).
    pub runtime_ns: u64,
    pub max_iters: u64,
    pub loo: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            device: blksim_sim::DEFAULT_DEVICE.to_string(),
            sets: Vec::new(),
            fit: Vec::new(),
            seed: blksim_sim::setup::DEFAULT_SEED,
            runtime_ns: 1_000_000_000,
            max_iters: 80,
            loo: true,
        }
    }
}

/// One fitted parameter's outcome.
#[derive(Clone, Debug)]
pub struct ParamResult {
    pub param: FitParam,
    pub value: u64,
    /// `lower` or `upper` when the fit ended within 1 % of the range's end.
    pub at_bound: Option<&'static str>,
    /// How much the loss grows when the parameter alone moves a tenth of its range away.
    pub dloss: f64,
    /// Whether the runs determine it: it takes part in no direction along which the loss
    /// barely changes ([`ident`]).
    pub identified: bool,
}

/// One figure's measured and simulated values.
#[derive(Clone, Debug)]
pub struct Residual {
    pub run: usize,
    pub figure: usize,
    pub measured: f64,
    /// Simulated with the base profile.
    pub base: f64,
    /// Simulated with the fitted profile (or, in the leave-one-out table, the profile fitted
    /// on the other runs).
    pub sim: f64,
}

pub struct Calibration {
    pub problem: Problem,
    pub opts: Options,
    pub base_text: String,
    pub base_loss: f64,
    pub loss: f64,
    pub iterations: u64,
    pub params: Vec<ParamResult>,
    /// Directions the runs cannot tell apart ([`ident::Identifiability::weak`]).
    pub weak: Vec<(f64, Vec<f64>)>,
    pub residuals: Vec<Residual>,
    pub loo: Vec<Residual>,
}

/// The fio JSON files `paths` name (folders: their `*.json`, in name order).
pub fn result_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "json"))
                .collect();
            v.sort();
            if v.is_empty() {
                return Err(format!(
                    "{}: no *.json fio results in this folder",
                    p.display()
                ));
            }
            out.extend(v);
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or folder", p.display()));
        }
    }
    if out.is_empty() {
        return Err("no fio results given (blksim calibrate RESULTS... --device=BASE)".into());
    }
    Ok(out)
}

/// The base profile's TOML text (bundled by name, or the file).
pub fn base_text(device: &str) -> Result<String, String> {
    blksim_sim::Profile::source(device).map(|(text, _)| text)
}

/// Read the runs and cap each job's runtime (fio's `runtime`: a job ends at its size or its
/// runtime, whichever comes first) at `runtime_ns`, or at the time the run's measured I/O
/// counts need ([`fiojson::Run::min_time_ns`]) when that is longer.
pub fn read_runs(files: &[PathBuf], runtime_ns: u64) -> Result<Vec<Run>, String> {
    let mut runs = Vec::new();
    for f in files {
        let mut r = fiojson::read_run(f)?;
        blksim_sim::setup::prepare_replay(&mut r.jobs).map_err(|e| format!("{}: {e}", r.path))?;
        if runtime_ns > 0 {
            let cap = runtime_ns.max(r.min_time_ns);
            for j in &mut r.jobs.jobs {
                if j.runtime_ns == 0 || j.runtime_ns > cap {
                    j.runtime_ns = cap;
                }
            }
        }
        runs.push(r);
    }
    Ok(runs)
}

/// Fit `opts.fit` (or the model's default set) of the base profile to `runs`.
pub fn calibrate(runs: Vec<Run>, opts: &Options) -> Result<Calibration, String> {
    calibrate_with(runs, opts, None)
}

/// [`calibrate`], telling `progress` the simulations run so far as the fit goes.
pub fn calibrate_with(
    runs: Vec<Run>,
    opts: &Options,
    progress: Option<fit::Progress>,
) -> Result<Calibration, String> {
    let mut base = blksim_sim::Profile::load(&opts.device)?;
    for s in &opts.sets {
        base.set(s)?;
    }
    let specs: Vec<String> = if opts.fit.is_empty() {
        blksim_sim::params::calibration_keys(&base.driver)
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        opts.fit.clone()
    };
    let params = space::fit_params(&base, &specs)?;
    let cfg = FitConfig {
        seed: opts.seed,
        max_iters: opts.max_iters,
    };
    let problem = Problem::new(runs, base, params, cfg).with_progress(progress);
    let all: Vec<usize> = (0..problem.runs.len()).collect();
    let base_values: Vec<u64> = problem.params.iter().map(|p| p.base).collect();
    // The base must simulate: an error here is the user's (jobs, profile), not the fit's.
    for i in &all {
        problem.simulate(&base_values, *i)?;
    }
    let base_loss = problem.loss(&base_values, &all);
    let (u, loss, iterations) = problem.fit(&all)?;
    let values = problem.values(&u);
    let id = ident::analyse(&problem, &u, &all)?;
    let mut params = Vec::new();
    for (k, p) in problem.params.iter().enumerate() {
        let at_bound = if u[k] <= 0.01 {
            Some("lower")
        } else if u[k] >= 0.99 {
            Some("upper")
        } else {
            None
        };
        params.push(ParamResult {
            param: p.clone(),
            value: values[k],
            at_bound,
            dloss: id.dloss[k],
            identified: !id.unidentified(k),
        });
    }
    let mut residuals = Vec::new();
    for &i in &all {
        residuals.extend(residual_rows(&problem, i, &base_values, &values)?);
    }
    let mut loo = Vec::new();
    if opts.loo && all.len() >= 2 {
        use rayon::prelude::*;
        let fits: Vec<Result<Vec<u64>, String>> = all
            .par_iter()
            .map(|&i| {
                let others: Vec<usize> = all.iter().copied().filter(|&j| j != i).collect();
                let (ui, _, _) = problem.minimise(&u, 0.1, &others, opts.max_iters / 2)?;
                Ok(problem.values(&ui))
            })
            .collect();
        for (&i, f) in all.iter().zip(fits) {
            loo.extend(residual_rows(&problem, i, &base_values, &f?)?);
        }
    }
    Ok(Calibration {
        base_text: base_text(&opts.device)?,
        problem,
        opts: opts.clone(),
        base_loss,
        loss,
        iterations,
        params,
        weak: id.weak,
        residuals,
        loo,
    })
}

/// Run `i`'s figures: measured, simulated at the base values and at `values`.
fn residual_rows(
    p: &Problem,
    i: usize,
    base: &[u64],
    values: &[u64],
) -> Result<Vec<Residual>, String> {
    let b = p.simulate(base, i)?;
    let s = p.simulate(values, i)?;
    Ok(p.runs[i]
        .measured
        .iter()
        .enumerate()
        .map(|(f, m)| Residual {
            run: i,
            figure: f,
            measured: m.value,
            base: b[f],
            sim: s[f],
        })
        .collect())
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

fn residual_table(o: &mut String, c: &Calibration, rows: &[Residual], sim_head: &str) {
    let _ = writeln!(
        o,
        "  {:<24} {:<12} {:<5} {:<12} {:>12} {:>12} {:>8} {:>12} {:>8}",
        "run", "job", "dir", "metric", "measured", "base", "error", sim_head, "error"
    );
    for r in rows {
        let run = &c.problem.runs[r.run];
        let m = &run.measured[r.figure];
        let _ = writeln!(
            o,
            "  {:<24} {:<12} {:<5} {:<12} {:>12.2} {:>12.2} {:>8} {:>12.2} {:>8}",
            run.label,
            m.jobname,
            m.ddir,
            m.metric.name(),
            r.measured,
            r.base,
            pct(rel_err(r.base, r.measured)),
            r.sim,
            pct(rel_err(r.sim, r.measured))
        );
    }
}

/// Mean absolute relative error of rows' simulated values (and of their base values).
pub fn mean_abs_err(rows: &[Residual]) -> (f64, f64) {
    let n = rows.len().max(1) as f64;
    let sim = rows
        .iter()
        .map(|r| rel_err(r.sim, r.measured).abs())
        .sum::<f64>()
        / n;
    let base = rows
        .iter()
        .map(|r| rel_err(r.base, r.measured).abs())
        .sum::<f64>()
        / n;
    (sim, base)
}

/// The tables `blksim calibrate` prints.
pub fn report_text(c: &Calibration) -> String {
    let mut o = String::new();
    let p = &c.problem;
    let nfig: usize = p.runs.iter().map(|r| r.measured.len()).sum();
    let _ = writeln!(
        o,
        "calibrate: {} runs, {nfig} measured figures, base {} ({} driver), {} parameters, seed {}",
        p.runs.len(),
        c.opts.device,
        p.base.driver,
        p.params.len(),
        c.opts.seed
    );
    let notes: Vec<String> = p
        .runs
        .iter()
        .flat_map(|r| r.notes.iter().map(move |n| format!("{}: {n}", r.label)))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o, "\nnot simulated as measured:");
        for n in notes {
            let _ = writeln!(o, "  {n}");
        }
    }
    let _ = writeln!(
        o,
        "\nfit: loss {:.5} -> {:.5} (RMS relative error {:.1}% -> {:.1}%), {} Nelder-Mead iterations, {} simulations",
        c.base_loss,
        c.loss,
        100.0 * c.base_loss.sqrt(),
        100.0 * c.loss.sqrt(),
        c.iterations,
        p.simulations()
    );
    let _ = writeln!(
        o,
        "\n  {:<24} {:>12} {:>12}  {:<26} {:>10}  note",
        "parameter", "base", "fitted", "range", "dloss"
    );
    for r in &c.params {
        let mut note = Vec::new();
        if let Some(b) = r.at_bound {
            note.push(format!(
                "at its {b} bound: widen the range (--fit={}=LO..HI)",
                r.param.key
            ));
        }
        if !r.identified {
            note.push("not identified (see below)".to_string());
        }
        let _ = writeln!(
            o,
            "  {:<24} {:>12} {:>12}  {:<26} {:>10.2e}  {}",
            r.param.key,
            r.param.base,
            r.value,
            format!("{}..{} {}", r.param.lo, r.param.hi, r.param.def.unit),
            r.dloss,
            note.join("; ")
        );
    }
    let _ = writeln!(
        o,
        "  (dloss: how much the loss grows when the value alone moves a tenth of its range)"
    );
    if p.params.len() > nfig {
        let _ = writeln!(
            o,
            "\n{} parameters from {nfig} figures: the runs cannot determine them all; measure more configurations or fit fewer keys",
            p.params.len()
        );
    }
    for (change, v) in &c.weak {
        let mut parts: Vec<(f64, &str)> = v
            .iter()
            .zip(&p.params)
            .filter(|(x, _)| x.abs() >= ident::SHARE / 2.0)
            .map(|(x, q)| (*x, q.key.as_str()))
            .collect();
        parts.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
        let text: Vec<String> = parts.iter().map(|(x, k)| format!("{x:+.2} {k}")).collect();
        let what = if parts.len() == 1 {
            "the runs barely change with it"
        } else {
            "these trade off: the runs cannot tell them apart"
        };
        let _ = writeln!(
            o,
            "not identified: {} ({what}; the loss changes by {change:.1e} over a tenth of the range along it)",
            text.join(" ")
        );
    }
    let _ = writeln!(o, "\nresiduals (measured vs simulated; latencies in us):");
    residual_table(&mut o, c, &c.residuals, "fitted");
    let (fit, base) = mean_abs_err(&c.residuals);
    let _ = writeln!(
        o,
        "  mean |error|: base {:.1}%, fitted {:.1}%",
        100.0 * base,
        100.0 * fit
    );
    if !c.loo.is_empty() {
        let _ = writeln!(
            o,
            "\nleave-one-out (each run predicted by a fit on the other runs):"
        );
        residual_table(&mut o, c, &c.loo, "predicted");
        let (pred, _) = mean_abs_err(&c.loo);
        let _ = writeln!(
            o,
            "  mean |error| of runs the fit did not see: {:.1}% (on the runs it saw: {:.1}%)",
            100.0 * pred,
            100.0 * fit
        );
        for (i, r) in p.runs.iter().enumerate() {
            let rows: Vec<Residual> = c.loo.iter().filter(|x| x.run == i).cloned().collect();
            let _ = writeln!(
                o,
                "    {:<24} {:.1}%",
                r.label,
                100.0 * mean_abs_err(&rows).0
            );
        }
    } else if c.opts.loo {
        let _ = writeln!(o, "\nleave-one-out: needs two runs or more");
    }
    o
}

/// The calibrated profile: the base profile's text with `--set` values and fitted values
/// written in, each annotated.
pub fn profile_text(c: &Calibration, name: Option<&str>) -> String {
    let n = c.problem.runs.len();
    let files: Vec<&str> = c.problem.runs.iter().map(|r| r.label.as_str()).collect();
    let mut t = format!(
        "# Calibrated by `blksim calibrate` on {n} fio runs ({}) from base {}, seed {}:\n# RMS relative error {:.1}% (base {:.1}%).\n",
        files.join(", "),
        c.opts.device,
        c.opts.seed,
        100.0 * c.loss.sqrt(),
        100.0 * c.base_loss.sqrt()
    );
    t.push_str(&c.base_text);
    for s in &c.opts.sets {
        if let Some((k, v)) = s.split_once('=') {
            t = profile_out::set_key(&t, k.trim(), v.trim(), &format!("--set on calibrate: {s}"));
        }
    }
    for r in &c.params {
        let p = &r.param;
        let mut comment = format!(
            "calib: fitted on {n} runs, bounds [{}, {}] {}",
            p.lo, p.hi, p.def.unit
        );
        if let Some(b) = r.at_bound {
            let _ = write!(comment, ", at its {b} bound");
        }
        if !r.identified {
            comment.push_str(", not identified by the runs");
        }
        t = profile_out::set_key(&t, &p.key, &r.value.to_string(), &comment);
    }
    if let Some(name) = name {
        t = profile_out::set_name(&t, name);
    }
    t
}
