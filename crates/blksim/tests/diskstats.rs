//! fio's disk statistics as the kernel's diskstats count them: `ticks` from the request's
//! making (`rq->start_time_ns`, `blk_account_io_done`), so time in the elevator and waiting
//! for the driver counts; `in_queue` the read, write, discard and flush nsecs together
//! (`diskstats_show`); `util` the time a request was at the driver.

mod common;

fn run(args: &[&str]) -> serde_json::Value {
    common::blksim_json(None, args)
}

/// 32 reads always outstanding on a device that serves one at a time in 10 µs: by Little's
/// law the requests' time adds up to 32 × the runtime (each waits ~31 services in the
/// elevator), while the driver holds one at a time (util 100 %).
#[test]
fn ticks_and_in_queue_count_time_in_the_elevator() {
    let v = run(&[
        "run",
        "--device=null_blk",
        "--set=hw_queue_depth=1",
        "--set=queue.scheduler=mq-deadline",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=32",
        "--number_ios=20000",
    ]);
    let du = &v["disk_util"][0];
    let runtime_ms = v["jobs"][0]["read"]["runtime"].as_f64().unwrap();
    assert_eq!(runtime_ms, 200.0, "20000 services of 10 us");
    let ticks = du["read_ticks"].as_f64().unwrap();
    let in_queue = du["in_queue"].as_f64().unwrap();
    assert!(
        (ticks / (32.0 * runtime_ms) - 1.0).abs() < 0.01,
        "read_ticks {ticks} ms, 32 x runtime {runtime_ms} ms"
    );
    assert_eq!(
        in_queue, ticks,
        "a read-only run: in_queue is the read ticks"
    );
    assert_eq!(du["util"].as_f64(), Some(100.0));
    // The mean clat is the same sum over the I/Os: 32 requests' worth of waiting.
    let clat_ms = v["jobs"][0]["read"]["clat_ns"]["mean"].as_f64().unwrap() / 1e6;
    assert!((clat_ms * 20000.0 / ticks - 1.0).abs() < 0.01);
}
