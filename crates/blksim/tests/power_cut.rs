//! Power cuts: the card loses its volatile cache and tears the program in progress; the job
//! reads back; the integrity oracle tells loss FLUSH/FUA allow (data never made durable) from
//! violations (durable data lost, or data that was never written there).

use std::process::Command;

fn run(args: &[&str]) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(args)
        .arg("--output-format=json")
        .output()
        .expect("run blksim");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let err = String::from_utf8_lossy(&o.stderr);
    // A run whose power cut broke a FLUSH/FUA promise fails and names the first sectors.
    let violations = v["blksim"]["integrity"]["violations"].as_u64().unwrap_or(0);
    assert_eq!(o.status.success(), violations == 0, "{args:?}: {err}");
    assert_eq!(
        err.contains("blksim: integrity violation: power cut: sectors "),
        violations > 0,
        "{err}"
    );
    if v["blksim"]["power_cut"].is_object() {
        assert!(err.contains("blksim: power cut at "), "{err}");
    }
    v
}

struct Cut {
    lost_allowed: u64,
    violations: u64,
    changed: u64,
    aborted: u64,
    reads_checked: u64,
    writes: u64,
}

/// 4 KiB random writes at depth 8 with a read-back, on a card whose cache drains slowly
/// (3 ms per page program), cut at `at`.
fn cut(extra: &[&str]) -> Cut {
    let mut a = vec![
        "run",
        "--name=p",
        "--rw=randwrite",
        "--bs=4k",
        "--size=4m",
        "--ioengine=libaio",
        "--iodepth=8",
        "--verify=crc32c",
    ];
    a.extend_from_slice(extra);
    let v = run(&a);
    let b = &v["blksim"];
    let i = &b["integrity"];
    assert_eq!(i["mismatches"], 0, "{extra:?}: reads after the cut");
    let pc = &b["power_cut"];
    assert!(pc.is_object(), "{extra:?}: no power cut happened");
    Cut {
        lost_allowed: i["lost_allowed"].as_u64().unwrap(),
        violations: i["violations"].as_u64().unwrap(),
        changed: pc["changed_sectors"].as_u64().unwrap(),
        aborted: pc["aborted_ios"].as_u64().unwrap(),
        reads_checked: i["reads_checked"].as_u64().unwrap(),
        writes: v["jobs"][0]["write"]["total_ios"].as_u64().unwrap(),
    }
}

const SLOW: &str = "--set=card.t_prog_ns=3ms";

#[test]
fn caching_without_fsync_loses_only_allowed_data_on_every_path() {
    for path in ["legacy", "hsq", "cqe"] {
        let q = format!("--set=host.queue={path}");
        let c = cut(&[
            "--device=emmc-hbg4a2",
            SLOW,
            &q,
            "--set=card.power_cut_ns=50ms",
        ]);
        // A full 1 MiB cache of acknowledged, unflushed writes goes.
        assert!(c.lost_allowed >= 1024, "{path}: lost {}", c.lost_allowed);
        assert_eq!(c.violations, 0, "{path}");
        assert!(c.changed >= c.lost_allowed);
        assert!(c.aborted > 0, "{path}: commands in flight fail");
        // fio's verify reads back what the job logged: every write issued, those the cut
        // failed included.
        assert_eq!(
            c.reads_checked,
            c.writes + c.aborted,
            "{path}: every logged write is read back"
        );
        // fsync every 4 writes: at most the writes since the last fsync (plus those
        // acknowledged while it was in flight) can go.
        let f = cut(&[
            "--device=emmc-hbg4a2",
            SLOW,
            &q,
            "--set=card.power_cut_ns=50ms",
            "--fsync=4",
        ]);
        assert!(
            f.lost_allowed <= (4 + 8) * 8 && f.lost_allowed < c.lost_allowed,
            "{path}: lost {} with fsync=4",
            f.lost_allowed
        );
        assert_eq!(f.violations, 0, "{path}");
    }
}

#[test]
fn flushed_and_fua_data_survive() {
    // After end_fsync everything written is durable: a cut during the read-back loses nothing.
    let c = cut(&[
        "--device=emmc-hbg4a2",
        SLOW,
        "--set=card.power_cut_ns=900ms",
        "--end_fsync=1",
    ]);
    assert_eq!(c.writes, 1024, "the write phase ended before the cut");
    assert_eq!((c.lost_allowed, c.violations), (0, 0));
    // O_SYNC: every acknowledged write was FUA (a reliable write on this card).
    let c = cut(&[
        "--device=emmc-hbg4a2",
        SLOW,
        "--set=card.power_cut_ns=50ms",
        "--sync=1",
    ]);
    assert_eq!((c.lost_allowed, c.violations), (0, 0));
    // The same with the block layer's POSTFLUSH instead of FUA (MMC_QUIRK_AVOID_REL_WRITE).
    let c = cut(&[
        "--device=emmc-hbg4a2",
        SLOW,
        "--set=card.power_cut_ns=50ms",
        "--sync=1",
        "--set=card.avoid_rel_write=1",
    ]);
    assert_eq!((c.lost_allowed, c.violations), (0, 0));
}

/// A flush that does not write the cache back breaks its promise: the oracle reports
/// violations, where the correct model reports none for the same run.
#[test]
fn a_broken_flush_shows_violations() {
    for path in ["legacy", "cqe"] {
        let q = format!("--set=host.queue={path}");
        let base = [
            "--device=emmc-hbg4a2",
            SLOW,
            &q,
            "--set=card.power_cut_ns=50ms",
            "--fsync=4",
        ];
        assert_eq!(cut(&base).violations, 0, "{path}");
        let mut broken = base.to_vec();
        broken.push("--set=card.debug_flush_skips_cache=1");
        let c = cut(&broken);
        assert!(
            c.violations > 0,
            "{path}: a broken flush must show violations"
        );
    }
}

/// Every eMMC profile and path, cut in the middle of writing: whatever the cache, the FTL and
/// the write-through programs torn at the page, nothing durable is lost and the read-back
/// finds exactly what the card kept.
#[test]
fn every_profile_and_path_survives_a_cut() {
    for dev in [
        "emmc-hbg4a2",
        "emmc-ux500",
        "emmc-512k-2009",
        "emmc-allwinner",
    ] {
        for path in ["legacy", "hsq", "cqe"] {
            let d = format!("--device={dev}");
            let q = format!("--set=host.queue={path}");
            let v = run(&[
                "run",
                &d,
                &q,
                "--name=p",
                "--rw=randwrite",
                "--bsrange=4k-64k",
                "--size=2m",
                "--ioengine=libaio",
                "--iodepth=4",
                "--fsync=8",
                "--verify=crc32c",
                "--set=card.power_cut_after_ios=40",
            ]);
            let i = &v["blksim"]["integrity"];
            assert_eq!(i["violations"], 0, "{dev} {path}");
            assert_eq!(i["mismatches"], 0, "{dev} {path}");
            assert!(i["reads_checked"].as_u64().unwrap() > 0, "{dev} {path}");
            assert!(v["blksim"]["power_cut"].is_object(), "{dev} {path}");
        }
    }
}

/// A write-through card (no cache) keeps every acknowledged write; the program the cut
/// interrupts is torn at the NAND page, which is allowed (it was never acknowledged).
#[test]
fn write_through_tears_only_the_write_in_flight() {
    let c = cut(&["--device=emmc-512k-2009", "--set=card.power_cut_ns=300ms"]);
    assert_eq!((c.lost_allowed, c.violations), (0, 0));
    assert!(c.changed > 0, "the program in progress is torn");
}

/// `card.power_cut_after_ios`: the cut comes right after the card's N-th data command; what
/// fio saw complete is those N writes and the requests the block layer still held.
#[test]
fn power_cut_after_ios_cuts_after_that_many_commands() {
    let c = cut(&["--device=emmc-hbg4a2", "--set=card.power_cut_after_ios=300"]);
    // Completions at the same instant as the cut, and requests the block layer still held
    // (they reach the card after it is back), add at most a queue's worth.
    assert!(
        c.writes >= 300 - 8 && c.writes <= 300 + 2 * 8,
        "{} writes acknowledged",
        c.writes
    );
    assert!(c.aborted > 0 && c.aborted <= 8);
}

/// Three O_SYNC jobs discarding and writing the same sectors, cut right after the card's
/// first data command: a FUA write is on NAND once acknowledged, and a later write to the
/// same sectors whose data had not reached the card by the cut does not take it away. Every
/// profile and path, with discards in flight and acknowledged at the cut.
#[test]
fn acknowledged_fua_writes_survive_later_writes_and_discards() {
    let v = run(&[
        "run",
        "--device=emmc-512k-2009",
        "--set=card.power_cut_after_ios=1",
        "--seed=1",
        "--name=t",
        "--rw=trimwrite",
        "--numjobs=3",
        "--sync=sync",
        "--number_ios=3",
    ]);
    assert_eq!(v["blksim"]["integrity"]["violations"], 0);
    assert!(
        v["blksim"]["power_cut"]["changed_sectors"]
            .as_u64()
            .unwrap()
            > 0
    );
    for dev in [
        "emmc-hbg4a2",
        "emmc-ux500",
        "emmc-512k-2009",
        "emmc-allwinner",
    ] {
        for path in ["legacy", "hsq", "cqe"] {
            for after in ["1", "7"] {
                let d = format!("--device={dev}");
                let q = format!("--set=host.queue={path}");
                let a = format!("--set=card.power_cut_after_ios={after}");
                let v = run(&[
                    "run",
                    &d,
                    &q,
                    &a,
                    "--name=t",
                    "--rw=randtrimwrite",
                    "--bsrange=4k-64k",
                    "--size=1m",
                    "--numjobs=3",
                    "--sync=1",
                    "--ioengine=libaio",
                    "--iodepth=4",
                    "--verify=crc32c",
                ]);
                let i = &v["blksim"]["integrity"];
                assert_eq!(i["violations"], 0, "{dev} {path} {after}");
                assert_eq!(i["mismatches"], 0, "{dev} {path} {after}");
            }
        }
    }
}

/// A write-through card busy with background operations when a write arrives: the program of
/// the write before it, acknowledged, ended while the NAND engine was still held, and must be
/// on NAND before the new write's data supersedes what is still waiting. The new write's
/// program is torn by the cut; the first stays (it was lost, 8 sectors against FLUSH/FUA,
/// when the engine's clock ran ahead of the arrival and skipped the programs that had ended).
#[test]
fn a_program_that_ended_under_background_operations_survives_the_next_writes_cut() {
    let v = run(&[
        "run",
        "--name=a",
        "--rw=randwrite",
        "--numjobs=2",
        "--size=6k",
        "--device=sd-kingston-4g-bbb",
        "--set=card.bkops_interval_ns=2",
        "--set=card.bkops_ns=1",
        "--set=card.power_cut_after_ios=1",
        "--seed=1",
    ]);
    let b = &v["blksim"];
    assert!(b["power_cut"].is_object(), "no power cut happened");
    assert_eq!(b["integrity"]["violations"], 0);
    assert_eq!(
        b["driver_stats"]["card_write_through"], 2,
        "both writes reach the card"
    );
}
