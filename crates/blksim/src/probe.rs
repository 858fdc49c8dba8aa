//! `blksim probe PATH|sim:PROFILE`: the command line of blksim-probe, then a calibration
//! on what it measured.

use blksim_probe::{Options, USAGE};
use std::path::{Path, PathBuf};

/// Operations per point on a simulated target (a real one stops at its time share).
const SIM_OPS_PER_POINT: usize = 2000;

pub fn main(args: &[String]) -> Result<String, String> {
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(USAGE.to_string());
    }
    let mut o = Options::default();
    let mut cal = blksim_calibrate::Options::default();
    let (mut size, mut results, mut out) = (None, None, None);
    let (mut destroy_ok, mut calibrate, mut target) = (false, true, None);
    for a in args {
        if crate::calibrate::fit_option(a, &mut cal)? {
            continue;
        }
        let (k, v) = crate::calibrate::split_flag(a);
        let val = || crate::calibrate::need(k, v);
        match k {
            "--size" => {
                size = Some(
                    blksim_core::value::parse_size(val()?, 1024)
                        .map_err(|e| format!("{a}: {e}"))?,
                )
            }
            "--time" => {
                o.time_ns = blksim_core::value::parse_time_ns(val()?, 1_000_000_000)
                    .map_err(|e| format!("{a}: {e}"))?;
                if !(1_000_000_000..=3_600_000_000_000).contains(&o.time_ns) {
                    return Err(format!("{a}: expected 1 s to 1 hour"));
                }
            }
            "--write" => o.write = true,
            "--i-know-this-destroys-data" => destroy_ok = true,
            "--results" => results = Some(PathBuf::from(val()?)),
            "--out" => out = Some(PathBuf::from(val()?)),
            "--no-calibrate" => calibrate = false,
            k if k.starts_with('-') => {
                return Err(format!(
                    "probe: unknown option '{a}' (see blksim probe --help)"
                ))
            }
            _ if target.is_none() => target = Some(a.clone()),
            _ => return Err(format!("probe: one target only ('{a}')")),
        }
    }
    // One seed for the probe's offsets and the calibration's simulations.
    o.seed = cal.seed;
    let target = target.ok_or("probe: give a block device, a file, or sim:PROFILE")?;
    let simulated = target.starts_with("sim:");
    let mut t: Box<dyn blksim_probe::target::Target> = match target.strip_prefix("sim:") {
        Some(dev) => {
            o.ops_per_point = SIM_OPS_PER_POINT;
            // Calibrating a simulated device starts from its own profile unless told.
            if !args.iter().any(|a| a.starts_with("--device=")) {
                cal.device = dev.to_string();
            }
            Box::new(blksim_probe::sim::SimTarget::new(dev, &[], size, o.seed)?)
        }
        None => {
            let r = blksim_probe::real::RealTarget::open(
                Path::new(&target),
                size,
                o.write,
                destroy_ok,
            )?;
            if let Some(why) = &r.uring_unavailable {
                eprintln!(
                    "blksim: probe: {why}; queue depths above one run as psync (one I/O at a time)"
                );
            }
            Box::new(r)
        }
    };
    let bar = crate::steps_bar("probe {bar:30} {pos}/{len} {msg} {elapsed}");
    let mut tick = |done: usize, total: usize, what: &str| {
        if let Some(b) = &bar {
            b.set_length(total as u64);
            b.set_position(done as u64);
            b.set_message(what.to_string());
        }
    };
    let report = blksim_probe::probe(t.as_mut(), &o, simulated, &mut tick)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut text = blksim_probe::report_text(&report);
    let dir = results.unwrap_or_else(|| {
        let base = Path::new(target.trim_start_matches("sim:"))
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "device".into());
        PathBuf::from(format!("probe-{base}"))
    });
    let files = blksim_probe::save(&report, &dir)?;
    text.push_str(&format!(
        "\n{} fio JSON results saved in {}/\n",
        files.len(),
        dir.display()
    ));
    if !calibrate {
        return Ok(text);
    }
    let base = blksim_sim::Profile::load(&cal.device)?;
    if base.driver == "mmc" {
        for s in blksim_probe::geometry_sets(&report) {
            if !cal
                .sets
                .iter()
                .any(|u| u.split('=').next() == s.split('=').next())
            {
                cal.sets.push(s);
            }
        }
    }
    let runs = blksim_calibrate::read_runs(&files, cal.runtime_ns)?;
    let c = crate::calibrate::fit_with_progress(runs, &cal)?;
    text.push('\n');
    text.push_str(&blksim_calibrate::report_text(&c));
    match &out {
        Some(p) => {
            let name = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            std::fs::write(p, blksim_calibrate::profile_text(&c, name.as_deref()))
                .map_err(|e| format!("--out={}: {e}", p.display()))?;
            text.push_str(&format!("\nprofile written to {}\n", p.display()));
        }
        None => {
            text.push_str("\ncalibrated profile:\n");
            text.push_str(&blksim_calibrate::profile_text(&c, None));
        }
    }
    Ok(text)
}
