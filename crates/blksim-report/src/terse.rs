//! fio's terse output (`--minimal`, `--output-format=terse`), versions 2 to 5 (3 is fio's
//! default): one `;`-separated line per job or group, as stat.c's
//! `show_thread_status_terse_all` and `show_ddir_status_terse` print it.

use crate::report::{GroupRunStats, JobReport, RunReport};
use crate::stats::{DirStats, LatStat};
use std::fmt::Write as _;
use std::io::{self, Write};

/// `FIO_IO_U_LIST_MAX_LEN`: the percentile slots every direction prints.
const LIST_MAX_LEN: usize = 20;

/// `%f`: six decimals.
fn f6(v: f64) -> String {
    format!("{v:.6}")
}

/// `;min;max;mean;dev` in µs of a latency statistic, zeros without samples.
fn lat(o: &mut String, s: &LatStat) {
    match s.calc() {
        Some((min, max, mean, dev)) => {
            let _ = write!(
                o,
                ";{};{};{};{}",
                min / 1000,
                max / 1000,
                f6(mean / 1000.0),
                f6(dev / 1000.0)
            );
        }
        None => o.push_str(";0;0;0.000000;0.000000"),
    }
}

/// `show_ddir_status_terse`.
fn ddir(o: &mut String, jr: &JobReport, rs: Option<&GroupRunStats>, d: usize, ver: u32) {
    let st = &jr.stats;
    let ds: &DirStats = &st.dir[d];
    let bw = (1000 * ds.io_bytes).checked_div(ds.runtime_ms).unwrap_or(0) / 1024;
    let iops = (1000 * ds.total_ios)
        .checked_div(ds.runtime_ms)
        .unwrap_or(0);
    let _ = write!(o, ";{};{bw};{iops};{}", ds.io_bytes >> 10, ds.runtime_ms);
    lat(o, &ds.slat);
    lat(o, &ds.clat);
    // calc_clat_percentiles over the lat or clat histogram (lat_percentiles wins).
    let opts = &st.opts;
    let (hist, nr) = if opts.lat_percentiles {
        (ds.lat.hist.as_ref(), ds.lat.samples)
    } else if opts.clat_percentiles {
        (ds.clat.hist.as_ref(), ds.clat.samples)
    } else {
        (None, 0)
    };
    let plist = &opts.percentile_list;
    let vals = hist.map(|h| h.percentiles_with_nr(plist, nr));
    for i in 0..LIST_MAX_LEN {
        match &vals {
            Some(v) if i < v.len() => {
                let _ = write!(o, ";{}%={}", f6(plist[i]), v[i] / 1000);
            }
            _ => o.push_str(";0%=0"),
        }
    }
    lat(o, &ds.lat);
    let bw_stat = ds.bw.calc();
    match bw_stat {
        Some((min, max, mean, dev)) => {
            let mut p_of_agg = 100.0;
            if let Some(agg) = rs.map(|r| r.agg[d]).filter(|&a| a != 0) {
                p_of_agg = mean * 100.0 / (agg / 1024) as f64;
                if p_of_agg > 100.0 {
                    p_of_agg = 100.0;
                }
            }
            let _ = write!(o, ";{min};{max};{}%;{};{}", f6(p_of_agg), f6(mean), f6(dev));
        }
        None => o.push_str(";0;0;0.000000%;0.000000;0.000000"),
    }
    if ver == 5 {
        let _ = write!(o, ";{}", if bw_stat.is_some() { ds.bw.samples } else { 0 });
        match ds.iops.calc() {
            Some((min, max, mean, dev)) => {
                let _ = write!(
                    o,
                    ";{min};{max};{};{};{}",
                    f6(mean),
                    f6(dev),
                    ds.iops.samples
                );
            }
            None => o.push_str(";0;0;0.000000;0.000000;0"),
        }
    }
}

/// One job's (or group's) terse line, disk stats included (fio appends them to every line
/// from version 3 on).
pub fn terse_line(r: &RunReport, jr: &JobReport, ver: u32) -> String {
    let mut o = String::new();
    if ver == 2 {
        let _ = write!(o, "2;{};{};{}", jr.name, jr.groupid, jr.error);
    } else {
        let _ = write!(
            o,
            "{ver};{};{};{};{}",
            r.fio_version, jr.name, jr.groupid, jr.error
        );
    }
    let rs = r.group(jr.groupid);
    ddir(&mut o, jr, rs, 0, ver);
    ddir(&mut o, jr, rs, 1, ver);
    if ver == 2 || ver == 4 || ver == 5 {
        ddir(&mut o, jr, rs, 2, ver);
    }
    let st = &jr.stats;
    let (usr, sys) = st.cpu_pct();
    let _ = write!(
        o,
        ";{}%;{}%;{};{};{}",
        f6(usr),
        f6(sys),
        st.ctx,
        st.majf,
        st.minf
    );
    let depth = st.depth_dist();
    for v in depth.iter().take(7) {
        let _ = write!(o, ";{v:3.1}%");
    }
    // `stat_calc_lat_nu`: the ns buckets are added to the first µs bucket.
    let mut lat_u = st.lat_dist_u();
    let total = st.total_rw_ios();
    if total != 0 {
        let ntotal: u64 = st.io_u_lat_n.iter().sum();
        lat_u[0] += 100.0 * ntotal as f64 / total as f64;
    }
    for v in lat_u {
        let _ = write!(o, ";{v:3.2}%");
    }
    for v in st.lat_dist_m() {
        let _ = write!(o, ";{v:3.2}%");
    }
    if ver >= 3 {
        for du in &r.disk_util {
            let _ = write!(
                o,
                ";{};{};{};{};{};{};{};{};{:3.2}%",
                du.name,
                du.ios[0],
                du.ios[1],
                du.merges[0],
                du.merges[1],
                du.ticks[0],
                du.ticks[1],
                du.in_queue,
                du.util()
            );
        }
    }
    if jr.continue_on_error {
        let _ = write!(o, ";{};{}", jr.total_err_count, jr.first_error);
    }
    if !jr.description.is_empty() {
        if ver == 2 {
            o.push('\n');
        }
        let _ = write!(o, ";{}", jr.description);
    }
    o.push('\n');
    o
}

/// The terse report: a line per job (or group).
pub fn write_terse(r: &RunReport, ver: u32, out: &mut dyn Write) -> io::Result<()> {
    for jr in &r.jobs {
        out.write_all(terse_line(r, jr, ver).as_bytes())?;
    }
    Ok(())
}
