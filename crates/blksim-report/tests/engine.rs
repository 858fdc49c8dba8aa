//! Engine-facing API end to end: record I/Os in virtual time, merge for group_reporting,
//! print. Checks sums, the omission of idle directions, and determinism.
use blksim_report::{
    write_json, write_normal, JobHeader, JobReport, JobStats, RunReport, StatsOptions,
};

fn run_job(seed: u64, n: u64) -> JobStats {
    let mut js = JobStats::new(0, &StatsOptions::default());
    let mut t = 0u64;
    for i in 0..n {
        t += 10_000 + (i * seed) % 7_000;
        js.record_depth(t, 1);
        js.record_submit(t, 1);
        js.record_io(0, t, 4096, 300 + i % 50, 5_000 + (i * 31 + seed) % 20_000);
        js.record_complete(t, 1);
    }
    js.finish(t + 1000);
    js
}

fn report(group: bool) -> RunReport {
    let a = JobReport::new("a", 0, 0, 1, run_job(3, 2000));
    let b = JobReport::new("a", 0, 1, 1, run_job(5, 3000));
    let jobs = if group {
        vec![JobReport::merge_group(&[a, b]).unwrap()]
    } else {
        vec![a, b]
    };
    let mut h = JobHeader::new("a", "randread", 4096, "psync", 1);
    h.numjobs = 2;
    let mut r = RunReport {
        headers: vec![h],
        jobs,
        ..Default::default()
    };
    r.compute_groups();
    r
}

#[test]
fn group_reporting_merge_sums() {
    let a = run_job(3, 2000);
    let b = run_job(5, 3000);
    let g = JobReport::merge_group(&[
        JobReport::new("a", 0, 0, 1, a.clone()),
        JobReport::new("a", 0, 1, 1, b.clone()),
    ])
    .unwrap();
    let s = &g.stats;
    assert_eq!(g.members, 2);
    assert_eq!(g.pid, 1000);
    assert_eq!(s.dir[0].total_ios, 5000);
    assert_eq!(s.dir[0].io_bytes, 5000 * 4096);
    assert_eq!(
        s.dir[0].runtime_ms,
        a.dir[0].runtime_ms.max(b.dir[0].runtime_ms)
    );
    assert_eq!(s.dir[0].clat.samples, 5000);
    assert_eq!(s.dir[0].clat.min, a.dir[0].clat.min.min(b.dir[0].clat.min));
    let want_mean = (a.dir[0].clat.mean * 2000.0 + b.dir[0].clat.mean * 3000.0) / 5000.0;
    assert!((s.dir[0].clat.mean - want_mean).abs() < 1e-6);
    assert_eq!(s.dir[0].clat.hist.as_ref().unwrap().total(), 5000);
    // bw samples are summed (pure sum), iops too.
    assert_eq!(
        s.dir[0].bw.samples,
        a.dir[0].bw.samples + b.dir[0].bw.samples
    );
    assert_eq!(s.io_u_map[0], 5000);
    assert_eq!(s.total_submit, 5000);
    assert_eq!(s.io_u_lat_u.iter().sum::<u64>(), 5000);
}

#[test]
fn idle_directions_omitted_and_deterministic() {
    let r = report(false);
    let mut o1 = Vec::new();
    write_normal(&r, &mut o1).unwrap();
    let text = String::from_utf8(o1.clone()).unwrap();
    assert!(text.starts_with("a: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n...\nfio-3.33\nStarting 2 processes\n\n"));
    assert!(text.contains("  read: IOPS="));
    assert!(!text.contains("  write:"));
    assert!(!text.contains("  WRITE:"));
    assert!(text.contains("   READ: bw="));
    assert!(text.contains("pid=1001"));
    assert!(text.contains("    slat (nsec): min="));
    let mut o2 = Vec::new();
    write_normal(&report(false), &mut o2).unwrap();
    assert_eq!(o1, o2);
    let mut j1 = Vec::new();
    write_json(&r, true, &mut j1).unwrap();
    let mut j2 = Vec::new();
    write_json(&report(false), true, &mut j2).unwrap();
    assert_eq!(j1, j2);
    let g = report(true);
    let mut o = Vec::new();
    write_normal(&g, &mut o).unwrap();
    let t = String::from_utf8(o).unwrap();
    assert!(t.contains("a: (groupid=0, jobs=2): err= 0: pid=1000"));
}
