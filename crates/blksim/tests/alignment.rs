//! I/O out of the device's logical block alignment. O_DIRECT needs offset and length in
//! logical blocks and the syscall refuses anything else with EINVAL before a bio is built
//! (`blkdev_dio_unaligned`); so does BLKDISCARD, which fio's trims on a block device are,
//! buffered or not (`blk_ioctl_discard`). A buffered I/O is served by the page cache, which
//! blksim does not model: it sends the logical blocks the I/O touches, partial ones included, so the
//! device never serves less than fio counts. The live comparison with fio's own EINVAL
//! handling is in `live_fio.rs` (`unaligned_direct_io_fails_with_einval_as_in_fio`).

use std::process::Command;

use blksim_trace::{read_trace_checked, Action, Op};

mod common;

fn blksim(args: &[&str]) -> (serde_json::Value, String, Option<i32>) {
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .arg("--output-format=json")
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .output()
        .expect("run blksim");
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}\n{}",
            String::from_utf8_lossy(&o.stderr).into_owned()
        )
    });
    (
        v,
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code(),
    )
}

/// Ten buffered 1000-byte reads, one after the other: the device reads the 29 sectors they
/// touch (14848 bytes), fio counts 10000.
#[test]
fn buffered_unaligned_io_reads_the_sectors_it_touches() {
    let dir = common::fresh_dir("align", "buffered", false);
    let bt = format!("--blktrace={}", dir.display());
    let args = [
        "run",
        "--device=null_blk",
        "--name=a",
        "--rw=read",
        "--bs=1000",
        "--size=10000",
        &bt,
    ];
    let (v, _, code) = blksim(&args);
    assert_eq!(code, Some(0));
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 10_000);
    let touched: u64 = (0..10u64)
        .map(|k| ((1000 * k + 1000).div_ceil(512) - 1000 * k / 512) * 512)
        .sum();
    assert_eq!(touched, 14_848);
    let done: u64 = read_trace_checked(&dir, "nullb0")
        .unwrap()
        .iter()
        .filter(|e| e.action == Action::Complete && e.op == Op::Read)
        .map(|e| u64::from(e.bytes))
        .sum();
    assert_eq!(done, touched);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The logical block is the device's: 512-byte direct reads on a 4 KiB null_blk fail, and a
/// trim of 1000 bytes fails even buffered. Aligned, both run.
#[test]
fn direct_io_and_trims_need_the_devices_logical_block() {
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--device=null_blk", "--name=a", "--size=64k"];
        args.extend_from_slice(extra);
        blksim(&args)
    };
    // fio's error line: a read's error is an io_u's, logged when completed; a trim's is the
    // engine queue call's (`do_io_u_trim`), not logged as an io_u (real fio 3.33 on a loop
    // device: `err=22/file:ioengines.c:399, func=td_io_queue`, no `io_u error` line).
    let site = |trim: bool| {
        if trim {
            "err=22/file:ioengines.c:399, func=td_io_queue, error=Invalid argument"
        } else {
            "err=22/file:io_u.c:1876, func=io_u error, error=Invalid argument"
        }
    };
    let cases: [(&[&str], bool); 6] = [
        (&["--rw=randread", "--bs=512", "--direct=1"], true),
        (
            &[
                "--rw=randread",
                "--bs=512",
                "--direct=1",
                "--set=blocksize=4096",
            ],
            false,
        ),
        (
            &[
                "--rw=randread",
                "--bs=4k",
                "--direct=1",
                "--set=blocksize=4096",
            ],
            true,
        ),
        // Buffered, the 4 KiB block around each 512 bytes is read.
        (&["--rw=randread", "--bs=512", "--set=blocksize=4096"], true),
        (&["--rw=randtrim", "--bs=1000"], false),
        (&["--rw=randtrim", "--bs=1024"], true),
    ];
    for (extra, runs) in cases {
        let (v, err, code) = run(extra);
        let j = &v["jobs"][0];
        if runs {
            assert_eq!(
                (code, &j["error"]),
                (Some(0), &0.into()),
                "{extra:?}: {err}"
            );
        } else {
            assert_eq!(
                (code, &j["error"]),
                (Some(1), &22.into()),
                "{extra:?}: {err}"
            );
            let trim = extra.contains(&"--rw=randtrim");
            assert!(err.contains(site(trim)), "{extra:?}: {err}");
            assert_eq!(err.contains("fio: io_u error"), !trim, "{extra:?}: {err}");
            // Refused before the block layer: no bio.
            assert_eq!(v["blksim"]["bios"]["submitted"], 0, "{extra:?}");
        }
    }
}

/// A refused write on an O_SYNC file returns at once: `generic_write_sync` (the flush that
/// follows a synchronous engine's write) runs only after data was written.
#[test]
fn a_refused_osync_write_sends_no_flush() {
    let (v, err, code) = blksim(&[
        "run",
        "--device=emmc-hbg4a2",
        "--name=a",
        "--rw=write",
        "--bs=1000",
        "--direct=1",
        "--sync=1",
        "--size=100k",
    ]);
    assert_eq!(
        (code, &v["jobs"][0]["error"]),
        (Some(1), &22.into()),
        "{err}"
    );
    assert_eq!(v["blksim"]["bios"]["submitted"], 0);
    assert_eq!(v["blksim"]["diskstats"]["flush_ios"], 0);
}
