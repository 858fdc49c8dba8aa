//! fio's normal (human) output, line for line: `init.c` job header lines,
//! `stat.c: show_thread_status_normal`, `show_ddir_status`, `display_lat`,
//! `show_clat_percentiles`, `show_latencies`, `show_group_stats`, `print_disk_util`.

use std::io::{self, Write};

use crate::hist::LatHist;
use crate::json::agg_percent;
use crate::num2str::{num2str, N2sUnit};
use crate::report::{GroupRunStats, JobHeader, JobReport, RunReport, UnitBase};
use crate::stats::{JobStats, LatStat, DDIR_RWDIR_CNT, DDIR_WRITE};

fn unit_n2s(u: UnitBase) -> N2sUnit {
    match u {
        UnitBase::Bytes => N2sUnit::BytePerSec,
        UnitBase::Bits => N2sUnit::BitPerSec,
    }
}

fn is_pow2(v: u32) -> bool {
    v != 0 && v & (v - 1) == 0
}

/// One header line (or nothing for FIO_NOIO engines), then `...` for numjobs clones.
pub fn write_job_header(h: &JobHeader, out: &mut dyn Write) -> io::Result<()> {
    if !h.noio {
        let i2p = is_pow2(h.kb_base);
        let s = |v: u64| num2str(v, h.sig_figs as usize, 1, i2p, N2sUnit::Byte);
        write!(out, "{}: (g={}): rw={}, ", h.name, h.groupid, h.rw)?;
        if h.bs_is_seq_rand {
            write!(
                out,
                "bs=(R) {}-{}, (W) {}-{}, bs_is_seq_rand, ",
                s(h.bs[0].0),
                s(h.bs[0].1),
                s(h.bs[1].0),
                s(h.bs[1].1)
            )?;
        } else {
            write!(
                out,
                "bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ",
                s(h.bs[0].0),
                s(h.bs[0].1),
                s(h.bs[1].0),
                s(h.bs[1].1),
                s(h.bs[2].0),
                s(h.bs[2].1)
            )?;
        }
        writeln!(out, "ioengine={}, iodepth={}", h.ioengine, h.iodepth)?;
    }
    if h.numjobs > 1 {
        writeln!(out, "...")?;
    }
    Ok(())
}

/// Everything fio prints before the run: job lines, version, "Starting N processes",
/// and any pre-run lines (file layout notices).
pub fn write_normal_header(r: &RunReport, out: &mut dyn Write) -> io::Result<()> {
    for h in &r.headers {
        write_job_header(h, out)?;
    }
    writeln!(out, "{}", r.fio_version)?;
    let threads: u32 = r
        .headers
        .iter()
        .filter(|h| h.thread)
        .map(|h| h.numjobs)
        .sum();
    let procs: u32 = r
        .headers
        .iter()
        .filter(|h| !h.thread)
        .map(|h| h.numjobs)
        .sum();
    // backend.c run_threads.
    write!(out, "Starting ")?;
    if threads > 0 {
        write!(
            out,
            "{} thread{}",
            threads,
            if threads > 1 { "s" } else { "" }
        )?;
    }
    if procs > 0 {
        if threads > 0 {
            write!(out, " and ")?;
        }
        write!(
            out,
            "{} process{}",
            procs,
            if procs > 1 { "es" } else { "" }
        )?;
    }
    writeln!(out)?;
    for l in &r.pre_run_lines {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// The results part (`__show_run_stats`, normal branch): a blank line, each job or
/// group block, each "Run status group" block, then "Disk stats".
pub fn write_normal_results(r: &RunReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    for j in &r.jobs {
        write_job_status(j, r.group(j.groupid), out)?;
    }
    for g in &r.groups {
        write_group_stats(g, out)?;
    }
    if !r.disk_util.is_empty() {
        write!(out, "\nDisk stats (read/write):\n")?;
        for d in &r.disk_util {
            // fio 3.33 print_disk_util (no sectors field yet).
            writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
                d.name,
                d.ios[0],
                d.ios[1],
                d.merges[0],
                d.merges[1],
                d.ticks[0],
                d.ticks[1],
                d.in_queue,
                d.util()
            )?;
        }
    }
    Ok(())
}

/// fio's `--output-format=normal`: header then results.
pub fn write_normal(r: &RunReport, out: &mut dyn Write) -> io::Result<()> {
    write_normal_header(r, out)?;
    write_normal_results(r, out)
}

/// `display_lat`: pick msec, usec or nsec, then `min/max` via num2str(…, 6, …).
fn display_lat(name: &str, st: &LatStat, out: &mut dyn Write) -> io::Result<()> {
    let Some((mut min, mut max, mut mean, mut dev)) = st.calc() else {
        return Ok(());
    };
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        base = "(msec)";
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        base = "(usec)";
    }
    writeln!(
        out,
        "    {} {}: min={}, max={}, avg={:5.2}, stdev={:5.2}",
        name,
        base,
        num2str(min, 6, 1, false, N2sUnit::None),
        num2str(max, 6, 1, false, N2sUnit::None),
        mean,
        dev
    )
}

/// `show_clat_percentiles`.
fn show_percentiles(
    hist: Option<&LatHist>,
    nr: u64,
    plist: &[f64],
    precision: u32,
    pre: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    if plist.is_empty() {
        return Ok(());
    }
    let empty = LatHist::new();
    let h = hist.unwrap_or(&empty);
    let mut vals = h.percentiles_with_nr(plist, nr);
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000u64, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    write!(out, "    {pre} percentiles ({unit}):\n     |")?;
    // time_width = max(5, (int)(log10(maxv / divisor) + 1)); log10(0) = -inf -> int min.
    let q = maxv / divisor;
    let digits = if q == 0 { 0 } else { q.ilog10() as usize + 1 };
    let time_width = digits.max(5);
    let precision = precision as usize;
    let per_line = (80 - 7) / (precision + 10 + time_width);
    let len = vals.len();
    for j in 0..len {
        if j != 0 && j % per_line == 0 {
            write!(out, "     |")?;
        }
        let is_last = j == len - 1;
        for _ in 0..scale_down {
            vals[j] = vals[j].div_ceil(1000);
        }
        write!(
            out,
            " {:w$.p$}th=[{:tw$}]{}",
            plist[j],
            vals[j],
            if is_last { '\n' } else { ',' },
            w = precision + 3,
            p = precision,
            tw = time_width
        )?;
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            writeln!(out)?;
        }
    }
    Ok(())
}

const DDIR_NAMES: [&str; DDIR_RWDIR_CNT] = ["read", "write", "trim"];

/// `show_ddir_status` for read/write/trim.
fn show_ddir_status(
    jr: &JobReport,
    rs: Option<&GroupRunStats>,
    ddir: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    let js = &jr.stats;
    let d = &js.dir[ddir];
    if d.runtime_ms == 0 {
        return Ok(());
    }
    let kb_base = rs.map(|g| g.kb_base).unwrap_or(jr.kb_base);
    let unit_base = rs.map(|g| g.unit_base).unwrap_or(jr.unit_base);
    let i2p = is_pow2(kb_base);
    let sf = jr.sig_figs as usize;
    let bw = d.bw_bytes();
    let io_p = num2str(d.io_bytes, sf, 1, i2p, N2sUnit::Byte);
    let bw_p = num2str(bw, sf, 1, i2p, unit_n2s(jr.unit_base));
    let bw_alt = num2str(bw, sf, 1, !i2p, unit_n2s(jr.unit_base));
    let iops_p = num2str(d.iops_int(), sf, 1, false, N2sUnit::None);
    // 3.33: zbd_write_status() is appended to every write line.
    let post = if ddir == DDIR_WRITE {
        "; 0 zone resets"
    } else {
        ""
    };
    writeln!(
        out,
        "  {}: IOPS={}, BW={} ({})({}/{}msec){}",
        DDIR_NAMES[ddir], iops_p, bw_p, bw_alt, io_p, d.runtime_ms, post
    )?;
    display_lat("slat", &d.slat, out)?;
    display_lat("clat", &d.clat, out)?;
    display_lat(" lat", &d.lat, out)?;
    let o = &js.opts;
    let (plist, prec) = (&o.percentile_list, o.percentile_precision);
    // Per priority, from two priorities with samples on (`get_nr_prios_with_samples`).
    let clat_type = if o.lat_percentiles { "lat" } else { "clat" };
    let by_prio = d.prios_with_samples() >= 2;
    let prio_name = |p: u32| format!("{clat_type} prio {}/{}", p >> 13, p & 7);
    if by_prio {
        for p in &d.prios {
            display_lat(&prio_name(p.ioprio), &p.lat, out)?;
        }
    }
    if o.slat_percentiles && d.slat.samples > 0 {
        show_percentiles(
            d.slat.hist.as_ref(),
            d.slat.samples,
            plist,
            prec,
            "slat",
            out,
        )?;
    }
    if o.clat_percentiles && d.clat.samples > 0 {
        show_percentiles(
            d.clat.hist.as_ref(),
            d.clat.samples,
            plist,
            prec,
            "clat",
            out,
        )?;
    }
    if o.lat_percentiles && d.lat.samples > 0 {
        show_percentiles(d.lat.hist.as_ref(), d.lat.samples, plist, prec, "lat", out)?;
    }
    if (o.clat_percentiles || o.lat_percentiles) && by_prio {
        let samples = if o.lat_percentiles {
            d.lat.samples
        } else {
            d.clat.samples
        };
        for p in d.prios.iter().filter(|p| p.lat.samples > 0) {
            let name = format!(
                "{} ({:.2}% of IOs)",
                prio_name(p.ioprio),
                100.0 * p.lat.samples as f64 / samples as f64
            );
            show_percentiles(p.lat.hist.as_ref(), p.lat.samples, plist, prec, &name, out)?;
        }
    }
    // A replayed trace's own response times, beside the simulated ones (not in fio).
    if d.recorded.samples > 0 {
        display_lat("recorded lat", &d.recorded, out)?;
        show_percentiles(
            d.recorded.hist.as_ref(),
            d.recorded.samples,
            plist,
            prec,
            "recorded lat",
            out,
        )?;
    }
    if let Some((min, max, mean, dev)) = d.bw.calc() {
        let fkb = kb_base as f64;
        let mut bw_str = match (unit_base, i2p) {
            (UnitBase::Bits, true) => "Kibit",
            (UnitBase::Bits, false) => "kbit",
            (UnitBase::Bytes, true) => "KiB",
            (UnitBase::Bytes, false) => "kB",
        };
        let p_of_agg = agg_percent(rs, ddir, mean);
        // fio does these on unsigned long long min/max with double factors: truncating.
        let (mut min, mut max, mut mean, mut dev) = (min, max, mean, dev);
        if unit_base == UnitBase::Bits {
            min = (min as f64 * 8.0) as u64;
            max = (max as f64 * 8.0) as u64;
            mean *= 8.0;
            dev *= 8.0;
        }
        if mean > fkb * fkb {
            min = (min as f64 / fkb) as u64;
            max = (max as f64 / fkb) as u64;
            mean /= fkb;
            dev /= fkb;
            bw_str = if unit_base == UnitBase::Bits {
                "Mibit"
            } else {
                "MiB"
            };
        }
        writeln!(
            out,
            "   bw ({:>5}/s): min={:5}, max={:5}, per={:3.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
            bw_str, min, max, p_of_agg, mean, dev, d.bw.samples
        )?;
    }
    if let Some((min, max, mean, dev)) = d.iops.calc() {
        writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            min, max, mean, dev, d.iops.samples
        )?;
    }
    Ok(())
}

/// `show_lat`: non-zero buckets, five per line.
fn show_lat(vals: &[f64], ranges: &[&str], msg: &str, out: &mut dyn Write) -> io::Result<()> {
    let mut new_line = true;
    let mut shown = false;
    let mut line = 0;
    for (v, r) in vals.iter().zip(ranges) {
        if *v <= 0.0 {
            continue;
        }
        shown = true;
        if new_line {
            if line != 0 {
                writeln!(out)?;
            }
            write!(out, "  lat ({msg})   : ")?;
            new_line = false;
            line = 0;
        }
        if line != 0 {
            write!(out, ", ")?;
        }
        write!(out, "{r}{v:3.2}%")?;
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        writeln!(out)?;
    }
    Ok(())
}

const LAT_RANGES: [&str; 12] = [
    "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=", ">=2000=",
];

fn show_latencies(js: &JobStats, out: &mut dyn Write) -> io::Result<()> {
    show_lat(&js.lat_dist_n(), &LAT_RANGES[..10], "nsec", out)?;
    show_lat(&js.lat_dist_u(), &LAT_RANGES[..10], "usec", out)?;
    show_lat(&js.lat_dist_m(), &LAT_RANGES, "msec", out)
}

fn dist_line(prefix: &str, keys: &[&str], vals: &[f64], out: &mut dyn Write) -> io::Result<()> {
    write!(out, "{prefix}")?;
    for (i, (k, v)) in keys.iter().zip(vals).enumerate() {
        if i > 0 {
            write!(out, ", ")?;
        }
        write!(out, "{k}={v:3.1}%")?;
    }
    writeln!(out)
}

/// `show_thread_status_normal` for one job or group.
pub fn write_job_status(
    jr: &JobReport,
    rs: Option<&GroupRunStats>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let js = &jr.stats;
    if js.total_rw_bytes() == 0 && js.total_rw_ios() == 0 {
        return Ok(());
    }
    if jr.error == 0 {
        writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}",
            jr.name, jr.groupid, jr.members, jr.error, jr.pid, jr.ctime
        )?;
    } else {
        writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2} ({}): pid={}: {}",
            jr.name, jr.groupid, jr.members, jr.error, jr.verror, jr.pid, jr.ctime
        )?;
    }
    if !jr.description.is_empty() {
        writeln!(out, "  Description  : [{}]", jr.description)?;
    }
    for ddir in 0..DDIR_RWDIR_CNT {
        if js.dir[ddir].io_bytes != 0 {
            show_ddir_status(jr, rs, ddir, out)?;
        }
    }
    show_latencies(js, out)?;
    if js.sync.samples != 0 {
        // fio 3.33 show_ddir_status(DDIR_SYNC).
        writeln!(out, "  fsync/fdatasync/sync_file_range:")?;
        display_lat("sync", &js.sync, out)?;
        show_percentiles(
            js.sync.hist.as_ref(),
            js.sync.samples,
            &js.opts.percentile_list,
            js.opts.percentile_precision,
            "sync",
            out,
        )?;
    }
    let (usr, sys) = js.cpu_pct();
    writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        usr, sys, js.ctx, js.majf, js.minf
    )?;
    dist_line(
        "  IO depths    : ",
        &["1", "2", "4", "8", "16", "32", ">=64"],
        &js.depth_dist(),
        out,
    )?;
    let sub = ["0", "4", "8", "16", "32", "64", ">=64"];
    dist_line("     submit    : ", &sub, &js.submit_dist(), out)?;
    dist_line("     complete  : ", &sub, &js.complete_dist(), out)?;
    let d = &js.dir;
    writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        d[0].total_ios,
        d[1].total_ios,
        d[2].total_ios,
        js.sync_total_ios,
        d[0].short_ios,
        d[1].short_ios,
        d[2].short_ios,
        d[0].drop_ios,
        d[1].drop_ios,
        d[2].drop_ios
    )?;
    if jr.continue_on_error {
        writeln!(
            out,
            "     errors    : total={}, first_error={}/<{}>",
            jr.total_err_count,
            jr.first_error,
            crate::report::strerror(jr.first_error)
        )?;
    }
    if jr.latency_depth != 0 {
        // 3.33 prints the raw target/window numbers (HEAD scales them with units).
        writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            jr.latency_target, jr.latency_window, jr.latency_percentile, jr.latency_depth
        )?;
    }
    if let Some(ss) = jr.steadystate.as_ref().filter(|s| s.dur > 0) {
        // `show_ss_normal`.
        let kb = u64::from(jr.kb_base.max(1));
        let i2p = is_pow2(jr.kb_base);
        let sf = jr.sig_figs as usize;
        let u = unit_n2s(jr.unit_base);
        writeln!(
            out,
            "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={}{}",
            if ss.attained { "yes" } else { "no" },
            num2str(ss.bw_mean() / kb, sf, kb, i2p, u),
            num2str(ss.bw_mean() / kb, sf, kb, !i2p, u),
            num2str(ss.iops_mean(), sf, 1, false, N2sUnit::None),
            if ss.iops { "iops" } else { "bw" },
            if ss.slope { " slope" } else { " mean dev" },
            crate::json::fmt_c(ss.criterion, 3),
            if ss.pct { "%" } else { "" }
        )?;
    }
    Ok(())
}

/// `show_group_stats`.
pub fn write_group_stats(rs: &GroupRunStats, out: &mut dyn Write) -> io::Result<()> {
    const STR: [&str; DDIR_RWDIR_CNT] = ["   READ", "  WRITE", "   TRIM"];
    write!(out, "\nRun status group {} (all jobs):\n", rs.groupid)?;
    let i2p = is_pow2(rs.kb_base);
    let sf = rs.sig_figs as usize;
    let u = unit_n2s(rs.unit_base);
    for (i, name) in STR.iter().enumerate().take(DDIR_RWDIR_CNT) {
        if rs.max_run[i] == 0 {
            continue;
        }
        writeln!(
            out,
            "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            name,
            num2str(rs.agg[i], sf, 1, i2p, u),
            num2str(rs.agg[i], sf, 1, !i2p, u),
            num2str(rs.min_bw[i], sf, 1, i2p, u),
            num2str(rs.max_bw[i], sf, 1, i2p, u),
            num2str(rs.min_bw[i], sf, 1, !i2p, u),
            num2str(rs.max_bw[i], sf, 1, !i2p, u),
            num2str(rs.io_bytes[i], sf, 1, i2p, N2sUnit::Byte),
            num2str(rs.io_bytes[i], sf, 1, !i2p, N2sUnit::Byte),
            rs.min_run[i],
            rs.max_run[i]
        )?;
    }
    Ok(())
}
