//! `blksim probe`: measure a block device or file (or a simulated device, `sim:PROFILE`),
//! save every measurement as a fio JSON result, and find the flash geometry a few timed
//! writes reveal (flashbench's method). `blksim probe` then calibrates a profile on the
//! saved results with `blksim calibrate`.

pub mod geometry;
pub mod points;
pub mod real;
pub mod sim;
pub mod target;

use geometry::Found;
use points::Point;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use target::{Batch, Target};

pub const USAGE: &str = "\
usage: blksim probe PATH|sim:PROFILE [--size=N] [--time=S] [--write [--i-know-this-destroys-data]]
                    [--results=DIR] [--device=BASE] [--fit=KEY,...] [--set=KEY=VALUE]
                    [--out=PROFILE.toml] [--no-calibrate] [--seed=N]
                    [--runtime=S] [--max-iters=N] [--no-loo]   (passed to the calibration)

Measures a block device or a file with O_DIRECT I/O (io_uring for queue depths above one,
pread/pwrite otherwise): random read latency against block size (4k..256k), sequential
against random, and 4k random reads at queue depth 1, 4, 16 and 64. With --write, also
writes (random 4k, sequential 128k, random 4k at depth 16) and the flashbench tests of the
allocation-unit size and the number of open units. Writes need --write, and on a block
device also --i-know-this-destroys-data. A file that does not exist is created with --size.
sim:PROFILE probes a bundled or TOML profile's simulated device the same way.

Every measurement is saved as a fio JSON result in --results (default probe-<name>/), then
`blksim calibrate` fits BASE (--device, default the bundled default device) on them and writes
the profile (--out, or printed) with the residual table; geometry found is set in the profile
when BASE is an eMMC profile. For sim:PROFILE, BASE defaults to PROFILE.

  --size=N     bytes of the device or file to use (default: all; size suffixes as fio)
  --time=S     wall-time budget of the measurements (default 60; the calibration adds its own)
";

#[derive(Clone, Debug)]
pub struct Options {
    pub write: bool,
    /// Wall-time budget of a real target's measurements, ns.
    pub time_ns: u64,
    /// I/Os per point at most (a real target usually stops at its share of the time first).
    pub ops_per_point: usize,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            write: false,
            time_ns: 60_000_000_000,
            ops_per_point: 100_000,
            seed: 1,
        }
    }
}

pub struct Measured {
    pub point: Point,
    pub batch: Batch,
    pub engine: &'static str,
}

pub struct Report {
    pub target: String,
    pub size: u64,
    pub simulated: bool,
    pub measured: Vec<Measured>,
    pub open_units: Option<Found>,
    pub au: Option<Found>,
}

/// Run every point of the plan (and the geometry tests with writes), calling `progress`
/// with (done, total, what) before each step.
pub fn probe(
    t: &mut dyn Target,
    o: &Options,
    simulated: bool,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Report, String> {
    if o.write && !t.writable() {
        return Err(format!("{}: opened read-only", t.name()));
    }
    let plan = points::plan(o.write);
    let steps = plan.len() + if o.write { 4 } else { 0 };
    let share = o.time_ns / steps as u64;
    let mut measured = Vec::new();
    for (i, p) in plan.iter().enumerate() {
        progress(i, steps, &p.name);
        let ops = points::ops(p, t.size(), o.ops_per_point, o.seed.wrapping_add(i as u64));
        let batch = t.run(&ops, p.qd, share)?;
        measured.push(Measured {
            point: p.clone(),
            engine: t.engine(p.qd),
            batch,
        });
    }
    let (mut open_units, mut au) = (None, None);
    if o.write {
        let mut regions = geometry::Regions::new(t.size())?;
        progress(plan.len(), steps, "open allocation units");
        open_units = Some(geometry::open_units(t, &mut regions, 2 * share)?);
        progress(plan.len() + 2, steps, "allocation-unit size");
        au = Some(geometry::au_size(t, &mut regions, 2 * share)?);
    }
    progress(steps, steps, "done");
    Ok(Report {
        target: t.name(),
        size: t.size(),
        simulated,
        measured,
        open_units,
        au,
    })
}

/// Save each point as `<name>.json` in `dir`; returns the files.
pub fn save(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for m in &r.measured {
        let f = dir.join(format!("{}.json", m.point.name));
        let text = points::fio_json(&m.point, &m.batch, m.engine, &r.target, r.size, r.simulated);
        std::fs::write(&f, text).map_err(|e| format!("{}: {e}", f.display()))?;
        files.push(f);
    }
    Ok(files)
}

/// The geometry found, as `--set` keys of an eMMC profile (allocation-unit FTL).
pub fn geometry_sets(r: &Report) -> Vec<String> {
    let au = r.au.as_ref().and_then(|f| f.value);
    let open = r.open_units.as_ref().and_then(|f| f.value);
    let mut s = Vec::new();
    if let Some(au) = au {
        s.push("card.ftl=au".to_string());
        s.push(format!("card.au_kib={}", au / 1024));
        if let Some(n) = open {
            s.push(format!("card.au_open={n}"));
        }
    }
    s
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

pub fn report_text(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "probe: {} ({}), {} MiB",
        r.target,
        if r.simulated { "simulated" } else { "O_DIRECT" },
        r.size >> 20
    );
    let _ = writeln!(
        o,
        "\n  {:<22} {:<9} {:>8} {:>10} {:>11} {:>10} {:>10} {:>10}",
        "point", "engine", "I/Os", "IOPS", "MiB/s", "mean us", "p50 us", "p99 us"
    );
    for m in &r.measured {
        let b = &m.batch;
        let _ = writeln!(
            o,
            "  {:<22} {:<9} {:>8} {:>10.0} {:>11.2} {:>10} {:>10} {:>10}",
            m.point.name,
            m.engine,
            b.lat_ns.len(),
            b.iops(),
            b.iops() * m.point.bs as f64 / (1 << 20) as f64,
            us(b.mean_ns()),
            us(b.percentile_ns(50.0) as f64),
            us(b.percentile_ns(99.0) as f64)
        );
    }
    if let Some(f) = &r.open_units {
        let _ = writeln!(
            o,
            "\nopen allocation units (N streams written round robin, median write):"
        );
        for row in &f.rows {
            let _ = writeln!(
                o,
                "  {:>2} streams  {:>12} us",
                row.x,
                us(row.median_ns as f64)
            );
        }
        let _ = match f.value {
            Some(n) => writeln!(
                o,
                "  -> {n} open unit(s): one stream more makes every write a merge"
            ),
            None => writeln!(
                o,
                "  -> no limit up to {} streams (no allocation-unit behaviour)",
                geometry::MAX_STREAMS
            ),
        };
    }
    if let Some(f) = &r.au {
        let _ = writeln!(o, "\nallocation-unit size (S bytes written from a region's start, then its first chunk again):");
        for row in &f.rows {
            let _ = writeln!(
                o,
                "  S = {:>5} KiB  rewrite {:>12} us",
                row.x / 1024,
                us(row.median_ns as f64)
            );
        }
        let _ = match f.value {
            Some(b) => writeln!(o, "  -> allocation unit {} KiB: the rewrite is a merge below it", b / 1024),
            None => writeln!(o, "  -> no size where the rewrite turns into a merge (a page-mapped FTL, or units above 8 MiB)"),
        };
    }
    o
}
