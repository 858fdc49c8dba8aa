//! Byte-identical outputs across refactoring: a fixed set of runs covering every layer (each
//! elevator, every MMC host path, the CPU/lock model, batch dispatch, flushes, faults, power
//! cuts, verify, several hardware queues) and the hash of each run's whole report (fio's
//! normal output followed by json+, wall-clock stamps pinned) kept in
//! `tests/data/golden.tsv`, with the run's `blksim.event_digest`.
//!
//! A change that is meant to leave the model alone (moving code, speeding it up) must leave
//! every line unchanged. A change to the model changes some lines on purpose: regenerate with
//! `BLKSIM_BLESS=1 cargo test -p blksim --test golden` and say in the commit which runs
//! changed and why.

use std::collections::BTreeMap;
use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/golden.tsv");
const REPRO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../repro");

/// (name, arguments). Each run stays small: the suite runs it in a debug build.
fn cases() -> Vec<(&'static str, Vec<String>)> {
    let s3 = format!("{REPRO}/section3/section3.fio");
    let s5 = format!("{REPRO}/s5-allwinner/randread.fio");
    let s1 = format!("{REPRO}/s1-hbg4a2/randwrite.fio");
    let s4 = format!("{REPRO}/s4-512k-2009/gap-write.fio");
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let null_rr = [
        "--device=null_blk",
        "--set=irqmode=2",
        "--set=completion_nsec=20000",
        "--name=r",
        "--rw=randrw",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=16",
        "--size=64m",
        "--number_ios=6000",
    ];
    let mut c = Vec::new();
    for sched in ["none", "mq-deadline", "kyber", "bfq", "eraseblock"] {
        let mut a = v(&null_rr);
        a.push(format!("--set=queue.scheduler={sched}"));
        c.push((leak(format!("null_blk randrw {sched}")), a));
    }
    c.push((
        "null_blk 4 hctx 4 jobs mq-deadline",
        v(&[
            "--device=null_blk",
            "--set=submit_queues=4",
            "--set=hw_queue_depth=8",
            "--set=irqmode=2",
            "--set=completion_nsec=5us",
            "--set=queue.scheduler=mq-deadline",
            "--name=m",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=io_uring",
            "--iodepth=32",
            "--iodepth_batch_submit=8",
            "--numjobs=4",
            "--size=16m",
            "--number_ios=1500",
        ]),
    ));
    for (sched, batch) in [
        ("none", "0"),
        ("mq-deadline", "0"),
        ("mq-deadline", "8"),
        ("bfq", "0"),
        ("bfq", "8"),
        ("kyber", "0"),
    ] {
        c.push((
            leak(format!("section3 {sched} batch={batch}")),
            vec![
                s3.clone(),
                "--device=null_blk-server".into(),
                format!("--set=queue.scheduler={sched}"),
                format!("--set=queue.sched_batch_dispatch={batch}"),
                "--runtime=3ms".into(),
            ],
        ));
    }
    let emmc_rr = [
        "--name=e",
        "--rw=randrw",
        "--bsrange=4k-64k",
        "--ioengine=libaio",
        "--iodepth=8",
        "--size=32m",
        "--number_ios=800",
    ];
    for dev in ["emmc-hbg4a2", "emmc-allwinner"] {
        for (q, t) in [
            ("legacy", "scan"),
            ("hsq", "scan"),
            ("hsq", "fifo"),
            ("cqe", "scan"),
        ] {
            let mut a = vec![
                format!("--device={dev}"),
                format!("--set=host.queue={q}"),
                format!("--set=host.hsq_next_tag={t}"),
                "--set=queue.scheduler=mq-deadline".into(),
            ];
            a.extend(v(&emmc_rr));
            c.push((leak(format!("{dev} {q}/{t} randrw")), a));
        }
    }
    c.push((
        "s1 randwrite hsq, 2 MiB per job",
        vec![s1, "--set=host.queue=hsq".into(), "--size=2m".into()],
    ));
    c.push((
        "s5 scan, 1 MiB per job",
        vec![
            s5,
            "--set=host.queue=hsq".into(),
            "--set=host.hsq_next_tag=scan".into(),
            "--size=1m".into(),
        ],
    ));
    c.push((
        "s4 gap write eraseblock",
        vec![s4, "--ioscheduler=eraseblock".into()],
    ));
    c.push((
        "ux500 bfq seq read and write",
        v(&[
            "--device=emmc-ux500",
            "--set=queue.scheduler=bfq",
            "--name=a",
            "--rw=read",
            "--bs=64k",
            "--size=4m",
            "--name=b",
            "--rw=write",
            "--bs=16k",
            "--size=4m",
            "--offset=8m",
        ]),
    ));
    for (q, extra) in [
        ("legacy", "--fsync=4"),
        ("hsq", "--sync=1"),
        ("cqe", "--end_fsync=1"),
    ] {
        c.push((
            leak(format!("hbg4a2 {q} flush {extra}")),
            vec![
                "--device=emmc-hbg4a2".into(),
                format!("--set=host.queue={q}"),
                "--name=f".into(),
                "--rw=randwrite".into(),
                "--bs=4k".into(),
                "--size=2m".into(),
                "--number_ios=300".into(),
                "--ioengine=psync".into(),
                extra.into(),
            ],
        ));
    }
    for q in ["legacy", "hsq", "cqe"] {
        c.push((
            leak(format!("hbg4a2 {q} faults 20000 ppm")),
            vec![
                "--device=emmc-hbg4a2".into(),
                format!("--set=host.queue={q}"),
                "--set=card.fault_crc_ppm=20000".into(),
                "--set=card.fault_timeout_ppm=5000".into(),
                "--set=card.fault_cmd_ppm=5000".into(),
                "--name=x".into(),
                "--rw=randrw".into(),
                "--bs=8k".into(),
                "--size=8m".into(),
                "--ioengine=libaio".into(),
                "--iodepth=8".into(),
                "--number_ios=600".into(),
                "--continue_on_error=all".into(),
            ],
        ));
    }
    c.push((
        "hbg4a2 power cut with verify",
        v(&[
            "--device=emmc-hbg4a2",
            "--set=card.t_prog_ns=3ms",
            "--set=card.power_cut_ns=50ms",
            "--name=p",
            "--rw=randwrite",
            "--bs=4k",
            "--size=4m",
            "--ioengine=libaio",
            "--iodepth=8",
            "--fsync=32",
            "--verify=crc32c",
        ]),
    ));
    c.push((
        "null_blk verify trim zipf",
        v(&[
            "--device=null_blk",
            "--name=t",
            "--rw=randtrim",
            "--bs=8k",
            "--size=2m",
            "--name=w",
            "--rw=randwrite",
            "--random_distribution=zipf:1.2",
            "--bs=4k",
            "--size=4m",
            "--verify=crc32c",
            "--ioengine=libaio",
            "--iodepth=4",
        ]),
    ));
    c
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// FNV-1a, 64 bits: a stable hash of the report bytes.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn run(args: &[String]) -> (String, String) {
    let mut a = vec!["run".to_string()];
    a.extend(args.iter().cloned());
    a.push("--output-format=normal,json+".into());
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args(&a)
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .output()
        .expect("run blksim");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success() || args.iter().any(|s| s.starts_with("--set=card.fault")),
        "blksim {a:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json_start = out.find("\n{").map(|i| i + 1).unwrap_or(0);
    let json_end = out[json_start..]
        .find("\n}\n")
        .map(|i| json_start + i + 2)
        .unwrap_or(out.len());
    let v: serde_json::Value = serde_json::from_str(&out[json_start..json_end])
        .unwrap_or_else(|e| panic!("{a:?}: no JSON report ({e}):\n{out}"));
    let digest = v["blksim"]["event_digest"]
        .as_str()
        .unwrap_or_else(|| panic!("{a:?}: no event_digest"))
        .to_string();
    (format!("{:016x}", fnv(out.as_bytes())), digest)
}

#[test]
fn reports_are_unchanged() {
    let mut got = BTreeMap::new();
    for (name, args) in cases() {
        got.insert(name.to_string(), run(&args));
    }
    let text: String = got
        .iter()
        .map(|(n, (h, d))| format!("{n}\t{h}\t{d}\n"))
        .collect();
    if std::env::var_os("BLKSIM_BLESS").is_some() {
        std::fs::write(DATA, &text).unwrap();
        return;
    }
    let want =
        std::fs::read_to_string(DATA).expect("tests/data/golden.tsv (BLKSIM_BLESS=1 writes it)");
    let mut diff = Vec::new();
    let want_map: BTreeMap<&str, &str> = want.lines().filter_map(|l| l.split_once('\t')).collect();
    for l in text.lines() {
        let (n, rest) = l.split_once('\t').unwrap();
        match want_map.get(n) {
            Some(w) if *w == rest => {}
            Some(w) => diff.push(format!("changed: {n}: {w} -> {rest}")),
            None => diff.push(format!("new: {n}")),
        }
    }
    for n in want_map.keys() {
        if !got.contains_key(*n) {
            diff.push(format!("gone: {n}"));
        }
    }
    assert!(
        diff.is_empty(),
        "reports differ from tests/data/golden.tsv:\n{}",
        diff.join("\n")
    );
}
