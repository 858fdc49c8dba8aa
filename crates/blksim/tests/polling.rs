//! `hipri` on io_uring or pvsync2: with the NVMe driver's poll queues, a request is REQ_POLLED,
//! its submitter spins for the completion entry, and no interrupt or wake-up stands between
//! the device and the task; without poll queues the kernel completes it by interrupt, as if
//! hipri were not set.

mod common;
use common::blksim_json;

fn run(extra: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "run",
        "--device=nvme-980pro-1tb",
        "--name=j",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=1",
        "--direct=1",
        "--size=10g",
        "--runtime=0.1",
        "--time_based",
        "--cpus_allowed=0",
        // The three costs polling takes away, pinned here (the expected saving below).
        "--set=nvme.irq_ns=2000",
        "--set=platform.irq_ns=500",
        "--set=platform.ctxsw_ns=1000",
    ];
    a.extend_from_slice(extra);
    blksim_json(None, &a)
}

#[test]
fn polled_completions_skip_the_interrupt_and_the_wake_up() {
    let clat = |v: &serde_json::Value| v["jobs"][0]["read"]["clat_ns"]["mean"].as_f64().unwrap();
    for engine in ["--ioengine=io_uring", "--ioengine=pvsync2"] {
        let irq = run(&[engine]);
        // No poll queues (the module's default): the same run as without hipri.
        let fallback = run(&[engine, "--hipri"]);
        assert_eq!(clat(&fallback), clat(&irq), "{engine}");
        assert_eq!(fallback["jobs"][0]["ctx"], irq["jobs"][0]["ctx"]);
        let polled = run(&[engine, "--hipri", "--set=nvme.poll_queues=1"]);
        // Each I/O saves the interrupt delivery (nvme.irq_ns), the interrupt entry
        // (platform.irq_ns) and the switch back to the task (platform.ctxsw_ns).
        assert!(
            (clat(&irq) - clat(&polled) - (2000.0 + 500.0 + 1000.0)).abs() < 1.0,
            "{engine}: {} -> {}",
            clat(&irq),
            clat(&polled)
        );
        // The task never sleeps: no context switches, and its CPU is busy throughout.
        assert_eq!(polled["jobs"][0]["ctx"].as_u64(), Some(0), "{engine}");
        assert!(polled["jobs"][0]["sys_cpu"].as_f64().unwrap() > 95.0);
        assert!(irq["jobs"][0]["sys_cpu"].as_f64().unwrap() < 10.0);
    }
}
