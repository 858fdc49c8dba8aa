//! Rebuild the stats behind real fio 3.33 normal outputs (parsing fio's own text) and
//! check that `write_normal` prints every line the same. The "Run status group" lines are
//! not parsed: they are recomputed from the per-job numbers, so they test the group math.
mod common;

use blksim_report::stats::DDIR_RWDIR_CNT;
use blksim_report::{
    write_normal, DiskUtil, JobHeader, JobReport, JobStats, LatStat, RunReport, StatsOptions,
};
use common::*;

fn after<'a>(s: &'a str, key: &str) -> &'a str {
    let i = s.find(key).unwrap_or_else(|| panic!("{key} in {s}")) + key.len();
    let rest = s[i..].trim_start();
    let end = rest.find([',', ' ', '%', ')', ':']).unwrap_or(rest.len());
    rest[..end].trim()
}

/// num2str(…, 6, …) values: "5693.0k" -> 5693000.
fn n2(s: &str) -> f64 {
    let (num, m) = match s.strip_suffix('k') {
        Some(n) => (n, 1000.0),
        None => match s.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (s, 1.0),
        },
    };
    num.parse::<f64>().unwrap() * m
}

fn bytes(s: &str) -> u64 {
    for (suf, m) in [("KiB", 1024.0), ("MiB", 1048576.0), ("B", 1.0)] {
        if let Some(n) = s.strip_suffix(suf) {
            return (n.parse::<f64>().unwrap() * m) as u64;
        }
    }
    panic!("{s}");
}

fn unit_mult(line: &str) -> (u64, u32) {
    if line.contains("(usec)") {
        (1000, 1)
    } else if line.contains("(msec)") {
        (1_000_000, 2)
    } else {
        (1, 0)
    }
}

struct Pending {
    report: JobReport,
    lat: Vec<(usize, usize, f64)>, // (unit 0=n 1=u 2=m, bucket, pct)
    depth: Vec<f64>,
    submit: Vec<f64>,
    complete: Vec<f64>,
    pct: [Vec<(f64, u64)>; DDIR_RWDIR_CNT],
    pct_steps: [u32; DDIR_RWDIR_CNT],
    /// (min, max, mean, stddev) of slat, clat, lat per direction.
    sums: [[Option<Summary>; 3]; DDIR_RWDIR_CNT],
}

/// (min, max, mean, stddev) of one latency kind.
type Summary = (u64, u64, f64, f64);

const RANGES: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

fn dist(line: &str) -> Vec<f64> {
    let body = &line[line.find(':').unwrap() + 1..];
    body.split(", ")
        .map(|kv| {
            kv.rsplit('=')
                .next()
                .unwrap()
                .trim_end_matches('%')
                .trim()
                .parse()
                .unwrap()
        })
        .collect()
}

fn finish(p: Pending, headers: &[JobHeader]) -> JobReport {
    let mut r = p.report;
    let js = &mut r.stats;
    let bs = headers.iter().find(|h| h.name == r.name).unwrap().bs;
    for (d, &(_, dir_bs)) in bs.iter().enumerate().take(DDIR_RWDIR_CNT) {
        js.dir[d].io_bytes = js.dir[d].total_ios * dir_bs;
        let n = js.dir[d].total_ios;
        let ds = &mut js.dir[d];
        for (k, st) in [&mut ds.slat, &mut ds.clat, &mut ds.lat]
            .into_iter()
            .enumerate()
        {
            *st = match p.sums[d][k] {
                Some((mn, mx, mean, dev)) => LatStat::from_summary(mn, mx, mean, dev, n),
                None => LatStat::default(),
            };
        }
        if !p.pct[d].is_empty() {
            let pv: Vec<(f64, u64)> = p.pct[d]
                .iter()
                .map(|(q, v)| {
                    (
                        *q,
                        if p.pct_steps[d] == 0 {
                            *v
                        } else {
                            bucket_for_scaled(*v, p.pct_steps[d])
                        },
                    )
                })
                .collect();
            js.dir[d].clat.hist = Some(hist_from_percentiles(&pv, n));
        }
    }
    let total = js.total_rw_ios();
    for (unit, b, v) in p.lat {
        let c = count_for(v, total, 2, 0.01).unwrap();
        match unit {
            0 => js.io_u_lat_n[b] = c,
            1 => js.io_u_lat_u[b] = c,
            _ => js.io_u_lat_m[b] = c,
        }
    }
    for (i, v) in p.depth.iter().enumerate() {
        js.io_u_map[i] =
            count_for(*v, total, 1, 0.1).unwrap_or_else(|| panic!("{v} of {total} {:?}", p.depth));
    }
    let (t, c) = find_total(&p.submit, 1, 0.1);
    js.total_submit = t;
    js.io_u_submit.copy_from_slice(&c);
    let (t, c) = find_total(&p.complete, 1, 0.1);
    js.total_complete = t;
    js.io_u_complete.copy_from_slice(&c);
    r
}

fn report_from_normal(text: &str) -> RunReport {
    let mut r = RunReport::default();
    let mut lines = text.lines().peekable();
    // Header part.
    let mut starting = 0;
    let mut with_dots = Vec::new();
    for l in lines.by_ref() {
        if l.is_empty() {
            break;
        }
        if l == "..." {
            with_dots.push(r.headers.len() - 1);
        } else if l.contains(": (g=") {
            let name = &l[..l.find(": (g=").unwrap()];
            let g: u32 = after(l, "(g=").parse().unwrap();
            let rw = after(l, "rw=");
            let bsr = after(l, "bs=(R) ");
            let mut h = JobHeader::new(
                name,
                rw,
                bytes(bsr.split('-').next().unwrap()),
                after(l, "ioengine="),
                after(l, "iodepth=").parse().unwrap(),
            );
            h.groupid = g;
            r.headers.push(h);
        } else if l.starts_with("fio-") {
        } else if let Some(s) = l.strip_prefix("Starting ") {
            starting = s.split(' ').next().unwrap().parse::<u32>().unwrap();
        } else {
            r.pre_run_lines.push(l.to_string());
        }
    }
    if !with_dots.is_empty() {
        let per = (starting - (r.headers.len() - with_dots.len()) as u32) / with_dots.len() as u32;
        for i in with_dots {
            r.headers[i].numjobs = per;
        }
    }
    let mut cur: Option<Pending> = None;
    let mut ddir = 0;
    let mut in_pct = false;
    let mut in_disk = false;
    for l in lines {
        if l.contains(": (groupid=") {
            if let Some(p) = cur.take() {
                r.jobs.push(finish(p, &r.headers));
            }
            let name = &l[..l.find(": (groupid=").unwrap()];
            let g: u32 = after(l, "groupid=").parse().unwrap();
            let mut js = JobStats::new(0, &StatsOptions::default());
            js.total_run_time_ms = 10_000;
            let mut rep = JobReport::new(name, g, 0, 0, js);
            rep.members = after(l, "jobs=").parse().unwrap();
            rep.pid = after(l, ": pid=").parse().unwrap();
            rep.ctime = l[l.rfind(": ").unwrap() + 2..].to_string();
            cur = Some(Pending {
                report: rep,
                lat: vec![],
                depth: vec![],
                submit: vec![],
                complete: vec![],
                pct: Default::default(),
                pct_steps: [0; 3],
                sums: [[None; 3]; 3],
            });
            continue;
        }
        if l.starts_with("Run status group") || l.is_empty() {
            in_pct = false;
            continue;
        }
        if l.starts_with("Disk stats") {
            in_disk = true;
            continue;
        }
        if in_disk {
            let name = l.trim_start()[..l.trim_start().find(':').unwrap()].to_string();
            let ios = after(l, "ios=");
            let two = |s: &str| -> [u64; 2] {
                let mut it = s.split('/').map(|x| x.parse().unwrap());
                [it.next().unwrap(), it.next().unwrap()]
            };
            let (io_ticks, msec) = util_parts(after(l, "util=").parse().unwrap(), 2);
            r.disk_util.push(DiskUtil {
                name,
                ios: two(ios),
                merges: two(after(l, "merge=")),
                sectors: [0, 0],
                ticks: two(after(l, "ticks=")),
                in_queue: after(l, "in_queue=").parse().unwrap(),
                io_ticks,
                msec,
            });
            continue;
        }
        let Some(p) = cur.as_mut() else { continue };
        let js = &mut p.report.stats;
        let t = l.trim_start();
        if let Some(name) = ["read", "write", "trim"]
            .iter()
            .position(|n| t.starts_with(&format!("{n}: IOPS=")))
        {
            ddir = name;
            let run = &l[l.rfind('/').unwrap() + 1..l.rfind("msec").unwrap()];
            js.dir[ddir].runtime_ms = run.parse().unwrap();
            in_pct = false;
        } else if t.starts_with("slat (")
            || t.starts_with("clat (")
            || t.starts_with("lat (") && l.starts_with("     lat")
        {
            let (m, _) = unit_mult(l);
            let half = m / 2;
            let min = (n2(after(l, "min=")) * m as f64) as u64 + half;
            let max = (n2(after(l, "max=")) * m as f64) as u64 + half;
            let mean = after(l, "avg=").parse::<f64>().unwrap() * m as f64;
            let dev = after(l, "stdev=").parse::<f64>().unwrap() * m as f64;
            let k = if t.starts_with("slat") {
                0
            } else if t.starts_with("clat") {
                1
            } else {
                2
            };
            p.sums[ddir][k] = Some((min, max, mean, dev));
        } else if t.starts_with("clat percentiles") {
            in_pct = true;
            p.pct_steps[ddir] = unit_mult(l).1;
        } else if in_pct && t.starts_with('|') {
            for e in t.trim_start_matches('|').split(',') {
                let e = e.trim();
                if e.is_empty() {
                    continue;
                }
                let q: f64 = e[..e.find("th=").unwrap()].trim().parse().unwrap();
                let v: u64 = e[e.find('[').unwrap() + 1..e.find(']').unwrap()]
                    .trim()
                    .parse()
                    .unwrap();
                p.pct[ddir].push((q, v));
            }
        } else if t.starts_with("bw (") || t.starts_with("iops ") {
            in_pct = false;
            let st = LatStat::from_summary(
                after(l, "min=").parse().unwrap(),
                after(l, "max=").parse().unwrap(),
                after(l, "avg=").parse().unwrap(),
                after(l, "stdev=").parse().unwrap(),
                after(l, "samples=").parse().unwrap(),
            );
            if t.starts_with("bw") {
                js.dir[ddir].bw = st;
            } else {
                js.dir[ddir].iops = st;
            }
        } else if t.starts_with("lat (") {
            in_pct = false;
            let unit = if t.contains("nsec") {
                0
            } else if t.contains("usec") {
                1
            } else {
                2
            };
            let body = &t[t.find(": ").unwrap() + 2..];
            for kv in body.split(", ") {
                let (k, v) = kv.rsplit_once('=').unwrap();
                let b = RANGES.iter().position(|r| *r == k).unwrap();
                p.lat
                    .push((unit, b, v.trim_end_matches('%').parse().unwrap()));
            }
        } else if t.starts_with("cpu ") {
            js.usr_time_ms = (after(l, "usr=").parse::<f64>().unwrap() * 100.0).round() as u64;
            js.sys_time_ms = (after(l, "sys=").parse::<f64>().unwrap() * 100.0).round() as u64;
            js.ctx = after(l, "ctx=").parse().unwrap();
            js.majf = after(l, "majf=").parse().unwrap();
            js.minf = after(l, "minf=").parse().unwrap();
        } else if t.starts_with("IO depths") {
            p.depth = dist(l);
        } else if t.starts_with("submit") {
            p.submit = dist(l);
        } else if t.starts_with("complete") {
            p.complete = dist(l);
        } else if t.starts_with("issued rwts") {
            let tot_s = &l[l.find("total=").unwrap() + 6..];
            let tot: Vec<u64> = tot_s[..tot_s.find(' ').unwrap()]
                .split(',')
                .map(|x| x.parse().unwrap())
                .collect();
            for (dir, &t) in js.dir.iter_mut().zip(&tot).take(3) {
                dir.total_ios = t;
            }
            js.sync_total_ios = tot[3];
        } else if t.starts_with("latency ") {
            p.report.latency_target = after(l, "target=").parse().unwrap();
            p.report.latency_window = after(l, "window=").parse().unwrap();
            p.report.latency_percentile = after(l, "percentile=").parse().unwrap();
            p.report.latency_depth = after(l, "depth=").parse().unwrap();
        }
    }
    if let Some(p) = cur.take() {
        r.jobs.push(finish(p, &r.headers));
    }
    r.compute_groups();
    r
}

fn check(file: &str) {
    let text = data(file);
    let r = report_from_normal(&text);
    let mut out = Vec::new();
    write_normal(&r, &mut out).unwrap();
    let ours = String::from_utf8(out).unwrap();
    for (n, (a, b)) in ours.lines().zip(text.lines()).enumerate() {
        assert_eq!(a, b, "{file}: line {}", n + 1);
    }
    assert_eq!(ours, text, "{file}");
}

#[test]
fn normal_null_randread() {
    check("null_randread.normal.txt");
}

#[test]
fn normal_file_mixed() {
    check("file_mixed.normal.txt");
}

#[test]
fn normal_libaio_direct_timed() {
    check("libaio_direct_timed.normal.txt");
}

#[test]
fn normal_numjobs_group() {
    check("numjobs_group.normal.txt");
}
