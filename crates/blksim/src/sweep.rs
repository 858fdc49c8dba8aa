//! `blksim sweep SWEEP.toml`: the command line of blksim-sweep.

use blksim_sweep::{Options, USAGE};
use std::path::PathBuf;

pub fn main(args: &[String]) -> Result<String, String> {
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(USAGE.to_string());
    }
    let (mut file, mut out, mut csv, mut shard, mut threads) = (None, None, None, None, None);
    let (mut ray, mut python) = (None, "python3".to_string());
    for a in args {
        let (k, v) = crate::calibrate::split_flag(a);
        let val = || crate::calibrate::need(k, v);
        match k {
            "--out" => out = Some(PathBuf::from(val()?)),
            "--ray" => ray = Some(val()?.to_string()),
            "--python" => python = val()?.to_string(),
            "--csv" => csv = Some(PathBuf::from(val()?)),
            "--shard" => {
                let t = val()?;
                let parsed = t
                    .split_once('/')
                    .and_then(|(k, n)| {
                        Some((k.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?))
                    })
                    .filter(|&(k, n)| (1..=1_000_000).contains(&n) && k < n);
                shard = Some(parsed.ok_or_else(|| {
                    format!("{a}: expected K/N with 0 <= K < N (e.g. --shard=0/4, or $SLURM_ARRAY_TASK_ID/N)")
                })?);
            }
            "--threads" => {
                threads = Some(
                    crate::parse_u64(val()?)
                        .filter(|n| (1..=1024).contains(n))
                        .ok_or_else(|| format!("{a}: expected a count from 1 to 1024"))?
                        as usize,
                )
            }
            k if k.starts_with('-') => {
                return Err(format!(
                    "sweep: unknown option '{a}' (see blksim sweep --help)"
                ))
            }
            _ if file.is_none() => file = Some(PathBuf::from(a)),
            _ => return Err(format!("sweep: one sweep file only ('{a}')")),
        }
    }
    let file = file.ok_or("sweep: give a sweep file (blksim sweep SWEEP.toml)")?;
    if let Some(address) = ray {
        return on_ray(&python, &file, &address, out, csv, shard);
    }
    let spec = blksim_sweep::spec::load(&file)?;
    let o = Options {
        out: out.unwrap_or_else(|| blksim_sweep::default_out(&file, shard)),
        csv,
        shard,
        threads,
    };
    let bar = crate::steps_bar("sweep {bar:30} {pos}/{len} points, eta {eta}");
    let t0 = std::time::Instant::now();
    let s = blksim_sweep::sweep(&spec, &o, &blksim::api::SweepRunner, &|done, total| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    })?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let secs = t0.elapsed().as_secs_f64();
    let mut text = format!(
        "sweep: {} points ({} run now, {} from the journal), {} rows -> {}\n",
        s.points,
        s.ran,
        s.skipped,
        s.rows,
        o.out.display()
    );
    if s.ran > 0 {
        text.push_str(&format!(
            "  {:.1} s, {:.0} points per minute on {} threads\n",
            secs,
            s.ran as f64 * 60.0 / secs.max(1e-9),
            threads.unwrap_or_else(rayon_threads)
        ));
    }
    if let Some(c) = &o.csv {
        text.push_str(&format!("  CSV: {}\n", c.display()));
    }
    Ok(text)
}

/// `--ray=ADDRESS`: the sweep as Ray tasks, driven by the blksim Python package
/// (`python -m blksim.ray_sweep`), which writes the same journal and Parquet.
fn on_ray(
    python: &str,
    file: &std::path::Path,
    address: &str,
    out: Option<PathBuf>,
    csv: Option<PathBuf>,
    shard: Option<(u64, u64)>,
) -> Result<String, String> {
    let mut c = std::process::Command::new(python);
    c.args(["-m", "blksim.ray_sweep"])
        .arg(file)
        .arg(format!("--address={address}"));
    if let Some(o) = out {
        c.arg(format!("--out={}", o.display()));
    }
    if let Some(o) = csv {
        c.arg(format!("--csv={}", o.display()));
    }
    if let Some((k, n)) = shard {
        c.arg(format!("--shard={k}/{n}"));
    }
    let o = c.output().map_err(|e| {
        format!("--ray: running {python} -m blksim.ray_sweep: {e} (install the package: pip install ./crates/blksim-py ray; --python=PATH names the interpreter)")
    })?;
    if !o.status.success() {
        return Err(format!(
            "--ray: {python} -m blksim.ray_sweep failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
