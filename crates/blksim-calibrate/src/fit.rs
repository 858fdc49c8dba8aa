//! The fit: simulate every run with candidate parameter values, compare with what was
//! measured, and let Nelder–Mead (argmin) move the values.
//!
//! Loss: the mean over every measured figure (per run, job entry, direction: IOPS, mean and
//! p99 completion latency, as far as the file has them) of the squared relative error
//! `(simulated / measured − 1)²`. Its square root is the RMS relative error the report
//! prints. Relative errors weigh a 30 µs latency and a 20 000 IOPS rate alike.
//!
//! Every simulation is deterministic for its seed, the runs of one evaluation simulate in
//! parallel (rayon) and are summed in run order, and the optimiser's start is fixed, so a fit
//! gives the same values on any number of cores.

use crate::fiojson::{figures, Figure, Run};
use crate::space::FitParam;
use argmin::core::{CostFunction, Executor};
use argmin::solver::neldermead::NelderMead;
use blksim_sim::setup::{self, RunOptions, WallClock};
use blksim_sim::Profile;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Events one simulated run may take before it counts as runaway (a bound, not a budget:
/// a one-second eMMC job takes about 10^6).
pub const MAX_EVENTS_PER_RUN: u64 = 2_000_000_000;

/// Loss of a point whose simulation failed: worse than any real fit, so the optimiser moves
/// away from it.
const FAILED_LOSS: f64 = 1e6;

/// One run's simulated figures at one point, or why it could not be simulated.
type Simulated = Result<Vec<f64>, String>;

/// Settings of a calibration.
#[derive(Clone, Debug)]
pub struct FitConfig {
    /// Root seed of every simulation.
    pub seed: u64,
    /// Nelder–Mead iterations of the main fit (the refinement and each leave-one-out fit take
    /// half as many).
    pub max_iters: u64,
}

/// What a set of runs and parameters are fitted with.
pub struct Problem {
    pub runs: Vec<Run>,
    pub base: Profile,
    pub params: Vec<FitParam>,
    pub cfg: FitConfig,
    /// Simulated figures per (parameter values, run), so the optimiser revisiting a point (its
    /// values are whole units) costs nothing.
    cache: Mutex<BTreeMap<(Vec<u64>, usize), Simulated>>,
    sims: AtomicU64,
    /// Told the simulations so far after every evaluation (a progress display).
    progress: Option<Progress>,
}

/// A progress display: called with the simulations run so far.
pub type Progress = std::sync::Arc<dyn Fn(u64) + Send + Sync>;

impl Problem {
    pub fn new(runs: Vec<Run>, base: Profile, params: Vec<FitParam>, cfg: FitConfig) -> Self {
        Problem {
            runs,
            base,
            params,
            cfg,
            cache: Mutex::new(BTreeMap::new()),
            sims: AtomicU64::new(0),
            progress: None,
        }
    }

    pub fn with_progress(mut self, p: Option<Progress>) -> Self {
        self.progress = p;
        self
    }

    /// Simulations run so far (cache hits not counted).
    pub fn simulations(&self) -> u64 {
        self.sims.load(Ordering::Relaxed)
    }

    pub fn values(&self, u: &[f64]) -> Vec<u64> {
        self.params
            .iter()
            .zip(u)
            .map(|(p, &x)| p.value(x))
            .collect()
    }

    pub fn profile_with(&self, values: &[u64]) -> Result<Profile, String> {
        let mut p = self.base.clone();
        for (fp, v) in self.params.iter().zip(values) {
            p.set(&fp.set_arg(*v))?;
        }
        Ok(p)
    }

    /// The simulated value of each of run `i`'s measured figures, in their order.
    pub fn simulate(&self, values: &[u64], i: usize) -> Result<Vec<f64>, String> {
        let key = (values.to_vec(), i);
        if let Some(r) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return r.clone();
        }
        self.sims.fetch_add(1, Ordering::Relaxed);
        let r = self.simulate_uncached(values, i);
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, r.clone());
        r
    }

    fn simulate_uncached(&self, values: &[u64], i: usize) -> Result<Vec<f64>, String> {
        let run = &self.runs[i];
        let profile = self.profile_with(values)?;
        let jobs = simulate_report(run, &profile, self.cfg.seed)?;
        let sim = figures(&jobs);
        Ok(run
            .measured
            .iter()
            .map(|m| lookup(&sim, m).unwrap_or(0.0))
            .collect())
    }

    /// Mean squared relative error over the figures of `runs` at `values`.
    pub fn loss(&self, values: &[u64], runs: &[usize]) -> f64 {
        let per_run: Vec<Result<Vec<f64>, String>> =
            runs.par_iter().map(|&i| self.simulate(values, i)).collect();
        if let Some(p) = &self.progress {
            p(self.simulations());
        }
        let (mut sum, mut n) = (0.0, 0usize);
        for (&i, r) in runs.iter().zip(&per_run) {
            let Ok(sim) = r else { return FAILED_LOSS };
            for (m, s) in self.runs[i].measured.iter().zip(sim) {
                sum += rel_err(*s, m.value).powi(2);
                n += 1;
            }
        }
        if n == 0 {
            0.0
        } else {
            sum / n as f64
        }
    }

    /// Nelder–Mead from `start` (positions in [0, 1]) over `runs`, its first simplex `step`
    /// wide along each parameter. Returns the best position and its loss.
    pub fn minimise(
        &self,
        start: &[f64],
        step: f64,
        runs: &[usize],
        iters: u64,
    ) -> Result<(Vec<f64>, f64, u64), String> {
        let mut simplex = vec![start.to_vec()];
        for k in 0..start.len() {
            let mut v = start.to_vec();
            v[k] = if v[k] + step <= 1.0 {
                v[k] + step
            } else {
                v[k] - step
            };
            simplex.push(v);
        }
        let solver = NelderMead::new(simplex)
            .with_sd_tolerance(1e-7)
            .map_err(|e| format!("optimiser: {e}"))?;
        let res = Executor::new(Objective { p: self, runs }, solver)
            .configure(|s| s.max_iters(iters))
            .run()
            .map_err(|e| format!("optimiser: {e}"))?;
        let st = res.state();
        let best = st.best_param.clone().unwrap_or_else(|| start.to_vec());
        let best: Vec<f64> = best.iter().map(|x| x.clamp(0.0, 1.0)).collect();
        let loss = self.loss(&self.values(&best), runs);
        Ok((best, loss, st.iter))
    }

    /// The full fit over `runs` from the base values: a wide simplex, then a narrow restart
    /// around the best point (Nelder–Mead's simplex can collapse; restarting is the standard
    /// remedy).
    pub fn fit(&self, runs: &[usize]) -> Result<(Vec<f64>, f64, u64), String> {
        let start: Vec<f64> = self.params.iter().map(|p| p.pos(p.base)).collect();
        let (u1, _, it1) = self.minimise(&start, 0.25, runs, self.cfg.max_iters)?;
        let (u2, l2, it2) = self.minimise(&u1, 0.05, runs, self.cfg.max_iters / 2)?;
        Ok((u2, l2, it1 + it2))
    }
}

struct Objective<'a> {
    p: &'a Problem,
    runs: &'a [usize],
}

impl CostFunction for Objective<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, u: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        // Outside [0, 1] the loss is the clamped point's plus a penalty that grows with the
        // distance, so the simplex comes back into the range instead of sliding along it.
        let outside: f64 = u.iter().map(|x| (x - x.clamp(0.0, 1.0)).powi(2)).sum();
        Ok(self.p.loss(&self.p.values(u), self.runs) + 10.0 * outside)
    }
}

/// `simulated / measured − 1`.
pub fn rel_err(sim: f64, measured: f64) -> f64 {
    sim / measured - 1.0
}

fn lookup(sim: &[Figure], m: &Figure) -> Option<f64> {
    sim.iter()
        .find(|s| s.entry == m.entry && s.ddir == m.ddir && s.metric == m.metric)
        .map(|s| s.value)
}

/// Simulate a run's jobs on `profile` and return the report's `jobs` array, as
/// `blksim run --output-format=json` prints it.
pub fn simulate_report(
    run: &Run,
    profile: &Profile,
    seed: u64,
) -> Result<Vec<serde_json::Value>, String> {
    let opts = RunOptions {
        seed,
        max_events: Some(MAX_EVENTS_PER_RUN),
        ..Default::default()
    };
    let out = setup::run(&run.jobs, profile, &opts).map_err(|e| format!("{}: {e}", run.path))?;
    let report = setup::build_report(&run.jobs, profile, &opts, &out, &WallClock::default());
    let mut buf = Vec::new();
    blksim_report::json::write_json(&report, false, &mut buf).map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_slice(&buf).map_err(|e| e.to_string())?;
    let jobs = v
        .get("jobs")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    if jobs.len() != run.entries {
        return Err(format!(
            "{}: the rebuilt jobs report {} entries, the file has {}: the options do not describe the run that was measured",
            run.path,
            jobs.len(),
            run.entries
        ));
    }
    Ok(jobs)
}
