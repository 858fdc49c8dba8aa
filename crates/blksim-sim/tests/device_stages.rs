//! The device drivers without a host queue of their own (NVMe, UFS) report where their
//! requests spend the time at the driver, as the MMC driver does: the wait before the device
//! takes the command (UFS: the link's hibern8 exit) and the device's own time, for the
//! report's queue depth by stage and for `--explain`.

mod common;
use blksim_block::stage::Stage;
use blksim_sim::setup::RunOptions;
use common::*;

fn timeline() -> RunOptions {
    RunOptions {
        timeline: true,
        ..RunOptions::default()
    }
}

/// NVMe, 8 reads always in flight: the device holds each read from `queue_rq` until its
/// completion entry, so its mean depth is the driver's less the interrupt delay
/// (`nvme.irq_ns` against ~80 us of flash), and nothing waits before the device.
#[test]
fn nvme_time_at_the_driver_is_the_devices() {
    let out = run_on(
        "nvme-980pro-1tb",
        &[
            "--name=t",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=8",
            "--runtime=0.05",
            "--time_based",
        ],
        &[],
        &timeline(),
    );
    let d = out.depth.as_ref().expect("depth timeline");
    let (drv, hq, dev) = (
        d.mean_depth(Stage::Driver.index()),
        d.mean_depth(Stage::HostQueue.index()),
        d.mean_depth(Stage::Device.index()),
    );
    assert_eq!(hq, 0.0);
    assert!(dev <= drv && dev > 0.8 * drv, "device {dev}, driver {drv}");
}

/// UFS with auto-hibern8: a read every 10 ms (think time) finds the link asleep after 5 ms
/// idle (`ufs.ahit_ns`), so each waits the exit (`ufs.h8_exit_ns`, 300 us) before the device
/// sees it: the host-queue stage holds exactly that, per exit.
#[test]
fn ufs_hibern8_exit_is_the_host_queue_stage() {
    let out = run_on(
        "ufs40-samsung-512g",
        &[
            "--name=t",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=psync",
            "--direct=1",
            "--thinktime=10ms",
            "--number_ios=20",
        ],
        &[],
        &timeline(),
    );
    let d = out.depth.as_ref().expect("depth timeline");
    // The first read finds the link up (it has not been idle yet).
    let exits = out
        .driver_stats
        .iter()
        .find(|(k, _)| k == "ufs_hibern8_exits")
        .unwrap()
        .1;
    assert_eq!(exits, 19);
    let hq_ns = d.mean_depth(Stage::HostQueue.index()) * out.end_ns as f64;
    assert!(
        (hq_ns / exits as f64 - 300_000.0).abs() < 1_000.0,
        "{hq_ns} ns before the device over {exits} exits"
    );
    assert!(d.mean_depth(Stage::Device.index()) > 0.0);
}
