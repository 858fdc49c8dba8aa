//! fio's CPU affinity (`cpus_allowed`, `cpumask`, `cpus_allowed_policy`): a job's threads
//! run on the CPUs it names, which the blktrace files show (each CPU's events go to its own
//! `<dev>.blktrace.<cpu>` file, as blktrace's per-CPU relay channels do), and which decide
//! how the CPU model shares the CPUs out.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .output()
        .expect("run blksim")
}

fn tmpdir(name: &str) -> PathBuf {
    common::fresh_dir("aff", name, false)
}

/// CPUs whose blktrace file holds at least one queue (`Q`) event: the CPUs the submitting
/// threads ran on. Records are read as blktrace writes them (`struct blk_io_trace`, 48
/// bytes, then `pdu_len` bytes); a Q is `__BLK_TA_QUEUE` (1) in the low 16 bits of `action`,
/// without the notify category (`BLK_TC_NOTIFY`, bit 10 of the high half), whose timestamp
/// records also carry 1 there.
fn cpus_with_queue_events(dir: &Path, nr_cpus: u32) -> Vec<u32> {
    let mut cpus = Vec::new();
    for c in 0..nr_cpus {
        let Ok(b) = std::fs::read(dir.join(format!("nullb0.blktrace.{c}"))) else {
            continue;
        };
        let mut off = 0;
        let mut q = 0;
        while off + 48 <= b.len() {
            let u32_at = |o: usize| u32::from_le_bytes(b[off + o..off + o + 4].try_into().unwrap());
            let action = u32_at(28);
            assert_eq!(
                u32_at(40),
                c,
                "record of CPU {} in CPU {c}'s file",
                u32_at(40)
            );
            let pdu = u16::from_le_bytes(b[off + 46..off + 48].try_into().unwrap()) as usize;
            if action & 0xffff == 1 && action & (1 << (16 + 10)) == 0 {
                q += 1;
            }
            off += 48 + pdu;
        }
        if q > 0 {
            cpus.push(c);
        }
    }
    cpus
}

fn traced(name: &str, job: &[&str]) -> Vec<u32> {
    let d = tmpdir(name);
    let mut args = vec![
        "run",
        "--device=null_blk",
        "--set=platform.nr_cpus=4",
        "--set=submit_queues=4",
        "--name=t",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=4",
        "--number_ios=200",
        "--output-format=json",
    ];
    args.extend_from_slice(job);
    let bt = format!("--blktrace={}", d.display());
    args.push(&bt);
    let o = run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    cpus_with_queue_events(&d, 4)
}

#[test]
fn threads_run_on_the_cpus_the_job_allows() {
    // Without affinity, clone i runs on CPU i mod nr_cpus.
    assert_eq!(traced("none", &["--numjobs=3"]), vec![0, 1, 2]);
    // One CPU for every clone, as a list or a mask.
    assert_eq!(traced("one", &["--numjobs=3", "--cpus_allowed=2"]), vec![2]);
    assert_eq!(traced("mask", &["--numjobs=3", "--cpumask=0x8"]), vec![3]);
    // split: clone n on the set's CPU (n - 1) % count (fio_cpus_split).
    assert_eq!(
        traced(
            "split",
            &[
                "--numjobs=2",
                "--cpus_allowed=1,3",
                "--cpus_allowed_policy=split"
            ]
        ),
        vec![1, 3]
    );
    assert_eq!(
        traced("range", &["--numjobs=4", "--cpus_allowed=2-3"]),
        vec![2, 3]
    );
}

#[test]
fn a_cpu_the_platform_lacks_is_a_located_error() {
    let o = run(&[
        "run",
        "--device=null_blk",
        "--set=platform.nr_cpus=4",
        "--name=t",
        "--rw=read",
        "--number_ios=10",
        "--cpus_allowed=1,4",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("cpus_allowed") && e.contains("CPU 4 too large (max=3)"),
        "{e}"
    );
    for (bad, want) in [
        ("--cpus_allowed=3-1", "empty CPU range"),
        ("--cpus_allowed=x", "invalid CPU 'x'"),
        ("--cpumask=0", "no CPUs set"),
        ("--cpus_allowed_policy=spread", "expected shared or split"),
    ] {
        let o = run(&[
            "run",
            "--device=null_blk",
            "--name=t",
            "--rw=read",
            "--number_ios=10",
            bad,
        ]);
        assert!(!o.status.success(), "{bad} accepted");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{bad}: {e}");
    }
}

/// On a platform with CPU costs, two jobs pinned to one CPU share its time (null_blk-server:
/// irqmode=0 completes inline, so submission and completion both run on the submitting CPU,
/// which is the bottleneck): together they do what one job alone does on that CPU, half of
/// what they do with a CPU each.
#[test]
fn jobs_pinned_to_one_cpu_share_it() {
    let iops = |extra: &[&str]| -> f64 {
        let mut args = vec![
            "run",
            "--device=null_blk-server",
            "--name=t",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=8",
            "--group_reporting",
            "--number_ios=30000",
        ];
        args.extend_from_slice(extra);
        let v = common::blksim_json(None, &args);
        v["jobs"][0]["read"]["iops"].as_f64().unwrap()
    };
    let spread = iops(&["--numjobs=2", "--cpus_allowed=0-1"]);
    let one_cpu = iops(&["--numjobs=2", "--cpus_allowed=0"]);
    let alone = iops(&["--numjobs=1", "--cpus_allowed=0"]);
    assert!(
        (one_cpu / alone - 1.0).abs() < 0.01 && (one_cpu / spread - 0.5).abs() < 0.01,
        "two jobs on CPU 0: {one_cpu:.0} IOPS; one job alone there: {alone:.0}; a CPU each: {spread:.0}"
    );
}

/// fio's `cpu` line from the CPU model (null_blk-server: submission and inline completion
/// run in the task's syscalls, so the task is the CPU's only work): a job alone on a CPU is
/// busy all the time (sys 100 %), two jobs on one CPU get half each, and each I/O batch reaped
/// after a sleep is a context switch. Without platform costs the line stays zero.
#[test]
fn the_cpu_line_follows_the_cpu_model() {
    let cpu = |extra: &[&str], device: &str| -> Vec<(f64, f64, u64)> {
        let mut args = vec![
            "run",
            device,
            "--name=t",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--iodepth=8",
            "--number_ios=30000",
        ];
        args.extend_from_slice(extra);
        let v = common::blksim_json(None, &args);
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["usr_cpu"].as_f64().unwrap(),
                    j["sys_cpu"].as_f64().unwrap(),
                    j["ctx"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let server = "--device=null_blk-server";
    let alone = cpu(&["--numjobs=1", "--cpus_allowed=0"], server);
    assert_eq!(alone, vec![(0.0, 100.0, 30000 / 8)]);
    for (usr, sys, _) in cpu(&["--numjobs=2", "--cpus_allowed=0"], server) {
        assert_eq!(usr, 0.0);
        assert!((sys - 50.0).abs() < 1.5, "{sys}");
    }
    assert_eq!(cpu(&[], "--device=null_blk"), vec![(0.0, 0.0, 0)]);
}
