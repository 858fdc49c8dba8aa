//! Cases the simulation fuzzer found in the block layer, as fio job files run by the real
//! binary: each must finish with every request completed exactly once (the run ends with an
//! internal error otherwise), within its event bound, and without a panic.

use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    common::fresh_dir("liveness", name, false)
}

/// Write a job file (one option a line) and return its path.
fn job(d: &std::path::Path, name: &str, lines: &[&str]) -> String {
    let p = d.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p.display().to_string()
}

mod common;

/// Run and require success; returns the JSON report.
fn run_ok(args: &[&str]) -> serde_json::Value {
    common::blksim_json(None, args)
}

/// mq-deadline with `async_depth` 1 (0 is stored as 1): writers sleeping for a scheduler tag
/// must be woken by the frees the one allowed write makes (the wake batch follows the
/// minimum shallow depth, `dd_depth_updated` → `blk_mq_set_min_shallow_depth`).
#[test]
fn mq_deadline_async_depth_one_wakes_writers() {
    let d = dir("async-depth");
    let f = job(
        &d,
        "F3.fio",
        &[
            "[job0]",
            "rw=randwrite",
            "ioengine=libaio",
            "iodepth=2",
            "size=16k",
        ],
    );
    for seed in 1..=20 {
        let s = format!("--seed={seed}");
        for dev in ["emmc-512k-2009", "null_blk"] {
            let dv = format!("--device={dev}");
            run_ok(&[
                "run",
                &f,
                &dv,
                "--set=queue.scheduler=mq-deadline",
                "--set=queue.iosched.async_depth=0",
                &s,
            ]);
        }
    }
}

/// Several hardware queues of one driver tag each under an elevator shared by them: a
/// request pulled by another hctx's run waits on its own hctx's dispatch list and restarts
/// with it (`blk_mq_dispatch_hctx_list`).
#[test]
fn one_tag_hctxs_under_a_shared_elevator_lose_nothing() {
    let d = dir("one-tag");
    let a = job(
        &d,
        "F4a.fio",
        &[
            "[job0]",
            "bs=524288",
            "numjobs=3",
            "size=1m",
            "[job1]",
            "rw=randrw",
            "ioengine=io_uring",
            "iodepth=3",
            "bs=65536",
            "size=416k",
        ],
    );
    let b = job(
        &d,
        "F4b.fio",
        &["[job1]", "rw=trimwrite", "numjobs=3", "size=63k"],
    );
    for sched in ["mq-deadline", "kyber", "bfq", "eraseblock"] {
        let s = format!("--set=queue.scheduler={sched}");
        for seed in ["--seed=1", "--seed=2"] {
            for f in [&a, &b] {
                run_ok(&[
                    "run",
                    f,
                    "--device=null_blk-server",
                    &s,
                    "--set=hw_queue_depth=1",
                    seed,
                ]);
            }
        }
    }
}

/// bfq on two hardware queues with 1 KiB requests: the reads fill hctx 0's tags and the
/// trim job's run on hctx 1 pulls a read. It used to wait on hctx 1's dispatch list, which
/// nothing ran again, while bfq waited for that read: hctx 0 re-ran every 3 ms forever.
#[test]
fn bfq_on_two_hctxs_with_small_requests_finishes() {
    let d = dir("bfq-two");
    let f = job(
        &d,
        "F6.fio",
        &[
            "[job0]",
            "ioengine=io_uring",
            "iodepth=2",
            "bs=64k",
            "size=76k",
            "[job2]",
            "rw=trim",
            "size=76k",
        ],
    );
    for seed in ["--seed=60", "--seed=61"] {
        let v = run_ok(&[
            "run",
            &f,
            "--device=null_blk",
            "--set=queue.scheduler=bfq",
            "--set=submit_queues=2",
            "--set=max_sectors=2",
            seed,
            "--max-events=200000",
        ]);
        // 2 × 76 KiB in 1 KiB requests; nothing near the event bound.
        let events = v["blksim"]["events"].as_u64().unwrap();
        assert!(events < 20_000, "{seed}: {events} events");
    }
}

/// An fdatasync due right after a commit whose submission slept on a scheduler tag: fio
/// issues the sync when io_submit returns. It was issued while the task still slept, a
/// second bio of a sleeping task, and the block layer panicked ("task resumed without a
/// pending bio").
#[test]
fn fdatasync_waits_for_the_commit_that_sleeps_on_a_tag() {
    let d = dir("fdatasync");
    let f = job(
        &d,
        "F9.fio",
        &[
            "[global]",
            "iodepth_batch_submit=2",
            "[job0]",
            "rw=randtrim:1",
            "ioengine=libaio",
            "iodepth=26",
            "size=256k",
            "[job1]",
            "rw=randrw",
            "ioengine=libaio",
            "iodepth=49",
            "size=630784",
            "fdatasync=20",
        ],
    );
    for q in ["cqe", "hsq", "legacy"] {
        let hq = format!("--set=host.queue={q}");
        for seed in ["--seed=47", "--seed=48"] {
            let v = run_ok(&["run", &f, "--device=emmc-ux500", &hq, seed]);
            // job1's writes are followed by fdatasyncs, every one reported.
            let j1 = &v["jobs"][1];
            assert!(
                j1["sync"]["lat_ns"]["N"].as_u64().unwrap() > 0,
                "{q} {seed}"
            );
        }
    }
}

/// fio 3.33 loops forever on a trimwrite job whose offsets wrap onto the block it wrote
/// (`rw=trimwrite:4096` over 8 KiB: trim 0, write 0, then trim 0 again and again, uncounted);
/// with the null engine every I/O takes no time, so neither the event bound nor the standstill
/// check of time-based jobs saw it. The job stops with an error that says why, while the same
/// pattern over a region it does not wrap in runs as fio's does.
#[test]
fn a_trimwrite_that_trims_one_block_forever_stops_with_an_error() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args([
            "run",
            "--name=j",
            "--rw=trimwrite:4096",
            "--ioengine=null",
            "--bs=4k",
            "--size=8k",
            "--output-format=terse",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the endless job ended well: {err}");
    assert!(
        err.contains("job 'j': 1048576 I/Os in a row without the bytes that end the job"),
        "{err}"
    );
    // (trims, writes) of the same pattern with more options, from its JSON report.
    let counts = |more: &[&str]| {
        let mut a = vec![
            "run",
            "--name=j",
            "--rw=trimwrite:4096",
            "--ioengine=null",
            "--bs=4k",
            "--output-format=json",
        ];
        a.extend_from_slice(more);
        let v = run_ok(&a);
        let job = &v["jobs"][0];
        (
            job["trim"]["total_ios"].as_u64(),
            job["write"]["total_ios"].as_u64(),
        )
    };
    // 64 KiB: trim and write every other block, twice over, 16 of each as fio 3.33 reports
    // (`fio --name=j --rw=trimwrite:4096 --ioengine=null --bs=4k --size=64k`).
    assert_eq!(counts(&["--size=64k"]), (Some(16), Some(16)));
    // Queued two at a time, the trims count toward the pass (`bytes_issued`, which fio's
    // trimwrite pass stretches by io_size): 8 KiB + 64 MiB of them, then the pass ends.
    // fio 3.33 issues 16385 trims and 1 write too.
    assert_eq!(
        counts(&["--size=8k", "--io_size=64m", "--iodepth=2"]),
        (Some(16385), Some(1))
    );
}

/// A pass that issues nothing ends the job whatever `io_size` asks for: fio's `thread_main`
/// marks a job whose `do_io` did no bytes terminated (`fio_mark_td_terminate`). A region
/// past the end of a 10 MiB device (the offset of a device is not checked against it when
/// `size=` is in bytes) has nothing to issue; with `io_size` above `size`, blksim started
/// pass after pass of nothing within one event, for ever. The same job with the offset
/// inside the device issues `io_size`.
#[test]
fn a_pass_that_issues_nothing_ends_the_job() {
    let run = |offset: &str| {
        // It used to loop for ever inside one event: a watchdog, not the event bound.
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_blksim"))
            .args([
                "run",
                "--device=loop-2cpu",
                "--set=size=10",
                "--name=j",
                "--rw=randwrite",
                "--ioengine=io_uring",
                "--iodepth=35",
                "--bs=16k",
                "--size=1920k",
                "--io_size=3840k",
                &format!("--offset={offset}"),
                "--output-format=json",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed().as_secs() > 120 {
                child.kill().unwrap();
                panic!("offset {offset}: no end after 120 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (
            v["jobs"][0]["write"]["total_ios"].as_u64(),
            v["jobs"][0]["error"].as_u64(),
        )
    };
    assert_eq!(run("19554304"), (Some(0), Some(0)));
    assert_eq!(run("1m"), (Some(240), Some(0)));
}
