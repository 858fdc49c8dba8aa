//! `blksim calibrate RESULTS... --device=BASE`: the command line of blksim-calibrate.

use blksim_calibrate::{Options, USAGE};
use std::path::PathBuf;

/// Run a calibration; returns the text for stdout.
pub fn main(args: &[String]) -> Result<String, String> {
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(USAGE.to_string());
    }
    let mut o = Options::default();
    let mut out: Option<PathBuf> = None;
    let mut inputs = Vec::new();
    let mut device_given = false;
    for a in args {
        let (k, v) = split_flag(a);
        if fit_option(a, &mut o)? {
            device_given |= k == "--device";
            continue;
        }
        match k {
            "--out" => out = Some(PathBuf::from(need(k, v)?)),
            k if k.starts_with('-') => {
                return Err(format!(
                    "calibrate: unknown option '{a}' (see blksim calibrate --help)"
                ))
            }
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    if !device_given {
        return Err("calibrate: --device=BASE is required: the bundled profile or TOML file whose driver, device model and platform the fit keeps (blksim devices lists the bundled ones)".into());
    }
    let files = blksim_calibrate::result_files(&inputs)?;
    let runs = blksim_calibrate::read_runs(&files, o.runtime_ns)?;
    let c = fit_with_progress(runs, &o)?;
    let mut text = blksim_calibrate::report_text(&c);
    match &out {
        Some(p) => {
            let name = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let profile = blksim_calibrate::profile_text(&c, name.as_deref());
            std::fs::write(p, profile).map_err(|e| format!("--out={}: {e}", p.display()))?;
            text.push_str(&format!("\nprofile written to {}\n", p.display()));
        }
        None => {
            text.push_str("\ncalibrated profile:\n");
            text.push_str(&blksim_calibrate::profile_text(&c, None));
        }
    }
    Ok(text)
}

/// A calibration with a spinner on stderr (when it is a terminal) counting simulations.
pub(crate) fn fit_with_progress(
    runs: Vec<blksim_calibrate::fiojson::Run>,
    o: &Options,
) -> Result<blksim_calibrate::Calibration, String> {
    let bar = crate::steps_bar("calibrate {spinner} {pos} simulations {elapsed}");
    let progress: Option<blksim_calibrate::fit::Progress> = bar.clone().map(|b| {
        std::sync::Arc::new(move |n: u64| {
            b.set_position(n);
            b.tick();
        }) as blksim_calibrate::fit::Progress
    });
    let c = blksim_calibrate::calibrate_with(runs, o, progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    c
}

/// `--key=value` as (`--key`, `Some(value)`), a bare flag as (`--flag`, `None`).
pub(crate) fn split_flag(a: &str) -> (&str, Option<&str>) {
    match a.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (a, None),
    }
}

/// The value of an option that needs one.
pub(crate) fn need<'a>(k: &str, v: Option<&'a str>) -> Result<&'a str, String> {
    v.ok_or_else(|| format!("{k} needs a value ({k}=...)"))
}

/// The options of a fit, shared by `calibrate` and `probe`: whether `a` was one of them.
pub(crate) fn fit_option(a: &str, o: &mut Options) -> Result<bool, String> {
    let (k, v) = split_flag(a);
    match k {
        "--device" => o.device = need(k, v)?.to_string(),
        "--set" => o.sets.push(need(k, v)?.to_string()),
        "--fit" => o.fit.extend(split_fit(need(k, v)?)),
        "--seed" => {
            o.seed = crate::parse_u64(need(k, v)?)
                .ok_or_else(|| format!("{a}: expected a whole number"))?
        }
        "--runtime" => {
            o.runtime_ns = blksim_core::value::parse_time_ns(need(k, v)?, 1_000_000_000)
                .map_err(|e| format!("{a}: {e}"))?;
            if o.runtime_ns > 3600 * 1_000_000_000 {
                return Err(format!("{a}: at most one hour of simulated time per job"));
            }
        }
        "--max-iters" => {
            o.max_iters = crate::parse_u64(need(k, v)?)
                .filter(|n| (1..=10_000).contains(n))
                .ok_or_else(|| format!("{a}: expected a count from 1 to 10000"))?
        }
        "--no-loo" => o.loo = false,
        _ => return Ok(false),
    }
    Ok(true)
}

/// `--fit=a,b=1..2,c`: keys separated by commas (a range has no comma in it).
fn split_fit(v: &str) -> Vec<String> {
    v.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}
