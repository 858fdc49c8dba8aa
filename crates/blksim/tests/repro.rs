//! Reproduction suite: runs the job files in `repro/` on the bundled eMMC profiles
//! with the blksim binary and compares with measurements.md. "fit" rows were used to choose the
//! profile's parameters; "check" rows must come out of a mechanism (hsq, the allocation-unit
//! FTL) without a second fit. Each test prints a published-vs-simulated table.
//!
//! Steady-state rates are run shortened (`--runtime=1 --time_based`, smaller `io_size`); the
//! full-length runs are `repro/run.sh`.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run blksim; returns the JSON report.
fn run(device: &str, args: &[&str]) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blksim"));
    cmd.arg("run").arg(format!("--device={device}"));
    for a in args {
        if a.ends_with(".fio") {
            cmd.arg(root().join("repro").join(a));
        } else {
            cmd.arg(a);
        }
    }
    cmd.arg("--output-format=json");
    let out = cmd.output().expect("run blksim");
    assert!(
        out.status.success(),
        "blksim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json report")
}

fn job<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

/// Bandwidth read + write in KiB/s.
fn kib_s(j: &Value) -> f64 {
    j["read"]["bw"].as_f64().unwrap() + j["write"]["bw"].as_f64().unwrap()
}

fn dir(j: &Value) -> &Value {
    if j["read"]["total_ios"].as_u64().unwrap() > 0 {
        &j["read"]
    } else {
        &j["write"]
    }
}

fn clat_mean_ms(j: &Value) -> f64 {
    dir(j)["clat_ns"]["mean"].as_f64().unwrap() / 1e6
}

fn clat_pct_us(j: &Value, p: &str) -> f64 {
    dir(j)["clat_ns"]["percentile"][p].as_f64().unwrap() / 1e3
}

struct Table {
    title: String,
    rows: Vec<(String, String, f64, f64, f64)>,
}

impl Table {
    fn new(t: &str) -> Self {
        Table {
            title: t.into(),
            rows: Vec::new(),
        }
    }
    /// A row compared at `tol` (fraction); `kind` is "fit" or "check".
    fn row(&mut self, label: &str, kind: &str, published: f64, sim: f64, tol: f64) {
        self.rows
            .push((label.into(), kind.into(), published, sim, tol));
    }
    fn finish(self) {
        println!("\n{}", self.title);
        println!(
            "| {:34} | {:5} | {:>10} | {:>10} | {:>7} | {:>5} |",
            "row", "kind", "published", "simulated", "error", "tol"
        );
        let mut bad = Vec::new();
        for (l, k, p, s, t) in &self.rows {
            let e = (s - p) / p;
            let tol = if *t > 0.0 {
                format!("±{:>2.0}%", t * 100.0)
            } else {
                "info".to_string()
            };
            println!(
                "| {l:34} | {k:5} | {p:>10.2} | {s:>10.2} | {:>+6.1}% | {tol:>5} |",
                e * 100.0
            );
            if *t > 0.0 && e.abs() > *t {
                bad.push(l.clone());
            }
        }
        assert!(bad.is_empty(), "{}: out of tolerance: {bad:?}", self.title);
    }
}

const SHORT: &[&str] = &["--runtime=1", "--time_based"];

/// §1: fitted on the legacy column; the hsq column comes from host.queue=hsq.
#[test]
fn s1_hbg4a2_legacy_vs_hsq() {
    let published = [
        ("read", 59.66, 60.68),
        ("randread", 27.04, 31.36),
        ("write", 69.68, 71.66),
        ("randwrite", 35.96, 68.76),
    ];
    let mut t = Table::new("§1 emmc-hbg4a2, MiB/s (20 psync jobs, 4 KiB)");
    let mut rw_gain = 0.0;
    for (rw, legacy, hsq) in published {
        let f = format!("s1-hbg4a2/{rw}.fio");
        let mut a = vec![f.as_str()];
        a.extend_from_slice(SHORT);
        let l = kib_s(job(&run("emmc-hbg4a2", &a), "test")) / 1024.0;
        a.push("--set=host.queue=hsq");
        let h = kib_s(job(&run("emmc-hbg4a2", &a), "test")) / 1024.0;
        t.row(&format!("{rw} without hsq"), "fit", legacy, l, 0.10);
        t.row(&format!("{rw} with hsq"), "check", hsq, h, 0.15);
        if rw == "randwrite" {
            rw_gain = h / l;
        }
    }
    println!("randwrite hsq/legacy gain: {rw_gain:.2}x (published 1.91x, required >= 1.6x)");
    t.finish();
    assert!(rw_gain >= 1.6, "randwrite gain {rw_gain:.2}");
}

/// §1 again, by `blksim calibrate`: the published "without hsq" column as fio results
/// (repro/s1-hbg4a2/published/, the figures of measurements.md §1 in fio's JSON shape), fitted
/// from the card table's defaults for the three times the hand fit chose (read and write
/// firmware time, read-buffer hit). The calibrated profile must reproduce the column it saw
/// (fit rows, ±10 % as above) and predict the hsq column it did not see. The model's hsq gain
/// on sequential reads is 1.17x against the published 1.02x (the hand-fitted profile is
/// already +9 % there), so the read row of that column is held at ±20 %, the others at ±15 %.
#[test]
fn s1_calibrated_from_the_published_column() {
    let dir = std::env::temp_dir().join(format!("blksim-repro-cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = dir.join("hbg4a2-calibrated.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .arg("calibrate")
        .arg(root().join("repro/s1-hbg4a2/published"))
        .args([
            "--device=emmc-hbg4a2",
            "--set=card.read_fw_ns=20000",
            "--set=card.write_fw_ns=10000",
            "--set=card.read_buffer_ns=20000",
            "--fit=card.read_fw_ns,card.write_fw_ns,card.read_buffer_ns",
            "--runtime=0.5",
            "--no-loo",
        ])
        .arg(format!("--out={}", profile.display()))
        .output()
        .expect("run blksim calibrate");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "calibrate: {}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    let device = profile.display().to_string();
    let published = [
        ("read", 59.66, 60.68, 0.20),
        ("randread", 27.04, 31.36, 0.15),
        ("write", 69.68, 71.66, 0.15),
        ("randwrite", 35.96, 68.76, 0.15),
    ];
    let mut t = Table::new("§1 emmc-hbg4a2 calibrated on the legacy column, MiB/s");
    for (rw, legacy, hsq, tol) in published {
        let f = format!("s1-hbg4a2/{rw}.fio");
        let mut a = vec![f.as_str()];
        a.extend_from_slice(SHORT);
        let l = kib_s(job(&run(&device, &a), "test")) / 1024.0;
        a.push("--set=host.queue=hsq");
        let h = kib_s(job(&run(&device, &a), "test")) / 1024.0;
        t.row(&format!("{rw} without hsq"), "fit", legacy, l, 0.10);
        t.row(&format!("{rw} with hsq"), "check", hsq, h, tol);
    }
    t.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// §2: the four iozone rows (fit) and dd (check).
#[test]
fn s2_ux500_iozone() {
    // reclen KiB, write, read, rand read, rand write (kB/s as iozone prints, 1 kB = 1024 B).
    let rows = [
        (4, 2046.0, 5981.0, 5971.0, 40.0),
        (64, 6598.0, 16758.0, 16739.0, 695.0),
        (1024, 7339.0, 17695.0, 18472.0, 7441.0),
        (16384, 7412.0, 23070.0, 22849.0, 7913.0),
    ];
    let mut t = Table::new("§2 emmc-ux500, iozone kB/s (QD 1, O_DIRECT, 20 MiB)");
    for (rec, w, r, rr, rw) in rows {
        for (test, published) in [
            ("write", w),
            ("read", r),
            ("randread", rr),
            ("randwrite", rw),
        ] {
            let f = format!("s2-ux500/iozone-{rec}k-{test}.fio");
            let v = run("emmc-ux500", &[f.as_str()]);
            let sim = kib_s(job(&v, &format!("iozone-{rec}k-{test}")));
            t.row(&format!("{rec} KiB {test}"), "fit", published, sim, 0.10);
        }
    }
    let v = run("emmc-ux500", &["s2-ux500/dd.fio", "--size=64m"]);
    let mbs = kib_s(job(&v, "dd")) * 1024.0 / 1e6;
    t.row("dd bs=1M read, MB/s", "check", 22.7, mbs, 0.15);
    t.finish();
}

/// §4: erase-block behaviour of the allocation-unit card.
#[test]
fn s4_512k_erase_blocks() {
    let mut t = Table::new("§4 emmc-512k-2009, ms per write");
    // The card as it comes is a card in use (card.state=used): a unit is open elsewhere, so
    // the first write of any stream pays its merge. "~20 ms each" is the stream's per-write
    // time: the median.
    let v = run("emmc-512k-2009", &["s4-512k-2009/contiguous-write.fio"]);
    t.row(
        "contiguous 512 KiB write, median",
        "fit",
        20.0,
        clat_pct_us(job(&v, "contig"), "50.000000") / 1000.0,
        0.15,
    );
    let v = run("emmc-512k-2009", &["s4-512k-2009/random-write.fio"]);
    for name in ["rand-4k", "rand-64k"] {
        // Every write of the series merges the unit the one before it left open. "~250 ms
        // each" is the per-write time: the median, since a write that happens to land in the
        // unit its predecessor left open is fast (fio 3.33's draws for the 64 KiB job put two
        // of its twelve writes there: 23 and 3 ms, pulling the mean to 213 ms).
        t.row(
            &format!("{name} random EB, median"),
            "fit",
            250.0,
            clat_pct_us(job(&v, name), "50.000000") / 1000.0,
            0.15,
        );
    }
    // "Any size from 512 B to 512 KiB": one write on its own per size.
    for bs in ["512", "4k", "64k", "512k"] {
        let v = run(
            "emmc-512k-2009",
            &["s4-512k-2009/one-random-write.fio", &format!("--bs={bs}")],
        );
        t.row(
            &format!("one {bs} write alone, random EB"),
            "check",
            250.0,
            clat_mean_ms(job(&v, "one")),
            0.15,
        );
    }
    let v = run("emmc-512k-2009", &["s4-512k-2009/gap-write.fio"]);
    let g = job(&v, "gap");
    let total = clat_mean_ms(g) * dir(g)["total_ios"].as_f64().unwrap();
    t.row(
        "two writes, one EB, gap, alone",
        "check",
        510.0,
        total,
        0.15,
    );
    let v = run("emmc-512k-2009", &["s4-512k-2009/read.fio"]);
    t.row(
        "read 16 KiB MiB/s",
        "fit",
        11.0,
        kib_s(job(&v, "read-16k")) / 1024.0,
        0.15,
    );
    t.row(
        "read 2 MiB MiB/s",
        "fit",
        24.0,
        kib_s(job(&v, "read-2m")) / 1024.0,
        0.15,
    );
    t.finish();
}

/// §5: fitted on the "without hsq" figures.
#[test]
fn s5_allwinner_without_hsq() {
    let v = run(
        "emmc-allwinner",
        &["s5-allwinner/randread.fio", "--io_size=16M"],
    );
    let j = job(&v, "Rand_Read_IOPS_Test");
    let mut t = Table::new("§5 emmc-allwinner without hsq (8 psync jobs, 4 KiB randread)");
    t.row(
        "IOPS",
        "fit",
        7544.0,
        dir(j)["iops"].as_f64().unwrap(),
        0.10,
    );
    // p50 follows from Little's law and is held; the spread (p1..p99) is wider in the model
    // (mq-deadline's sector-sorted dispatch among 8 sync jobs) than on the board: printed only.
    for (p, us, tol) in [
        ("1.000000", 799.0, 0.0),
        ("50.000000", 1020.0, 0.10),
        ("90.000000", 1172.0, 0.0),
        ("99.000000", 1450.0, 0.0),
        ("99.990000", 9503.0, 0.0),
    ] {
        t.row(
            &format!("clat p{} us", &p[..5]),
            "fit",
            us,
            clat_pct_us(j, p),
            tol,
        );
    }
    t.finish();

    // With hsq, no refit: the old next-tag scan against the FIFO fix, at the published run
    // length (8 jobs x 64 MiB = 131072 reads, so p99.99 is about the 13th-worst read). The
    // scan's own figures are from the FIFO patch thread ("mmc: mmc-hsq: use fifo to dispatch
    // mmc_request", Michael Wu, linux-mmc, Nov 2022), same board and job; measurements.md
    // only says "one read waited about 200 ms while thousands of others were served".
    let full = |extra: &[&str]| {
        let mut args = vec!["s5-allwinner/randread.fio"];
        args.extend_from_slice(extra);
        let v = run("emmc-allwinner", &args);
        job(&v, "Rand_Read_IOPS_Test").clone()
    };
    let max_us = |j: &Value| dir(j)["clat_ns"]["max"].as_f64().unwrap() / 1000.0;
    let legacy = full(&[]);
    let scan = full(&["--set=host.queue=hsq", "--set=host.hsq_next_tag=scan"]);
    let fifo = full(&["--set=host.queue=hsq", "--set=host.hsq_next_tag=fifo"]);
    let (leg_p, scan_p, fifo_p) = (
        clat_pct_us(&legacy, "99.990000"),
        clat_pct_us(&scan, "99.990000"),
        clat_pct_us(&fifo, "99.990000"),
    );
    let mut t = Table::new(
        "§5 emmc-allwinner with hsq: old next-tag scan and FIFO (64 MiB per job, as published)",
    );
    let iops = |j: &Value| dir(j)["iops"].as_f64().unwrap();
    t.row("IOPS", "check", 5981.0, iops(&scan), 0.0);
    // The thread's AndroBench table (8 threads, 1 GiB file each, 64 MiB of 4 KiB random reads,
    // which the fio job above imitates): random read 5485.19 IOPS without hsq, 4764.45 with
    // the scan, 6786.42 with the FIFO fix. Its absolute figures are the app's, so the ratios
    // are compared. The profile is fitted without hsq only; FIFO's gain is a prediction.
    t.row(
        "IOPS FIFO / no hsq (AndroBench)",
        "check",
        6786.42 / 5485.19,
        iops(&fifo) / iops(&legacy),
        0.10,
    );
    t.row(
        "IOPS scan / no hsq (AndroBench)",
        "check",
        4764.45 / 5485.19,
        iops(&scan) / iops(&legacy),
        0.0,
    );
    t.row(
        "IOPS scan / no hsq (fio)",
        "check",
        5981.67 / 7544.62,
        iops(&scan) / iops(&legacy),
        0.0,
    );
    for (p, us) in [
        ("99.000000", 2769.0),
        ("99.900000", 31589.0),
        ("99.950000", 66323.0),
        ("99.990000", 200279.0),
    ] {
        t.row(
            &format!("clat p{} us", &p[..5]),
            "check",
            us,
            clat_pct_us(&scan, p),
            0.0,
        );
    }
    t.finish();
    println!(
        "§5 p99.99: scan {scan_p:.0} us, FIFO {fifo_p:.0} us, no hsq {leg_p:.0} us \
         (scan/FIFO {:.1}x, scan/no-hsq {:.1}x; required >= 10x); worst: scan {:.0} us, FIFO {:.0} us",
        scan_p / fifo_p,
        scan_p / leg_p,
        max_us(&scan),
        max_us(&fifo)
    );
    assert!(
        scan_p >= 10.0 * fifo_p && scan_p >= 10.0 * leg_p,
        "scan p99.99 {scan_p} us must be >= 10x FIFO ({fifo_p} us) and no hsq ({leg_p} us)"
    );
    // FIFO on the same platform (same workqueue latency tail) never starves a read.
    assert!(
        max_us(&fifo) < 50_000.0,
        "FIFO must not starve ({} us)",
        max_us(&fifo)
    );

    // The starvation is the scan's, not the platform's: without the workqueue latency tail the
    // scan still bypasses a slot (until the hsq drains at the end of the run), FIFO does not.
    let no_tail = [
        "--io_size=16M",
        "--set=host.queue=hsq",
        "--set=platform.kblockd_tail_ppm=0",
    ];
    let scan0 = full(&[&no_tail[..], &["--set=host.hsq_next_tag=scan"]].concat());
    let fifo0 = full(&[&no_tail[..], &["--set=host.hsq_next_tag=fifo"]].concat());
    println!(
        "§5 without the latency tail (16 MiB): worst scan {:.0} us vs FIFO {:.0} us",
        max_us(&scan0),
        max_us(&fifo0)
    );
    assert!(
        max_us(&scan0) >= 10.0 * max_us(&fifo0),
        "the scan policy must starve a request without the tail too"
    );
}

/// The MMC layer is visible: blktrace message records carry the driver's events, and the JSON
/// `blksim.driver_stats` reports per-layer time.
#[test]
fn mmc_events_in_blktrace_and_json() {
    let dir = std::env::temp_dir().join(format!("blksim-repro-bt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let v = run(
        "emmc-hbg4a2",
        &[
            "--name=t",
            "--rw=randwrite",
            "--bs=4k",
            "--size=4m",
            "--direct=1",
            "--number_ios=64",
            "--numjobs=4",
            "--group_reporting",
            "--set=host.queue=hsq",
            &format!("--blktrace={}", dir.display()),
        ],
    );
    let mut text = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        text.extend(std::fs::read(e.unwrap().path()).unwrap());
    }
    let has = |s: &str| text.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(
        has("mmc-hsq hsq start tag="),
        "no hsq start message records"
    );
    assert!(has("mmc-hsq done rq="), "no MMC completion message records");
    let _ = std::fs::remove_dir_all(&dir);
    let ds = &v["blksim"]["driver_stats"];
    for k in [
        "mmc_queue_wait_ns",
        "mmc_bus_ns",
        "mmc_card_ns",
        "mmc_hsq_slot_wait_ns",
    ] {
        assert!(
            ds[k].as_u64().unwrap() > 0,
            "driver_stats.{k} missing or zero: {ds}"
        );
    }
    assert_eq!(ds["mmc_completed"].as_u64(), Some(256));
    assert!(v["blksim"]["block"]["block_wait_ns"].is_u64());
}

/// §6: an A1 microSD card in a Raspberry Pi 4 (DDR50), fitted on the four published rows
/// (hdparm, dd, iozone 4K random read and write) by `blksim calibrate`; the SD Association's
/// A1 minimums are checks the fitted card must meet (their test conditions are not public,
/// so they are run as 4 KiB random I/O at queue depth 1 over the iozone file).
#[test]
fn s6_sd_a1_pi4() {
    let (r, w, seq_mb_s) = s6_card(
        "sd-a1-pi4",
        "SanDisk Extreme Pro A1 32 GB",
        [43.87, 38.8, 9.82, 4.70],
        ("A1", 1500.0, 500.0),
    );
    assert!(r >= 1500.0 && w >= 500.0, "A1 minimums: {r} and {w} IOPS");
    assert!(
        seq_mb_s >= 10.0,
        "A1 sustained sequential write: {seq_mb_s} MB/s"
    );
}

/// One card of §6's table: hdparm and dd (MiB/s, and dd's MB/s as published), iozone's 4K
/// random read and write (MiB/s), fitted at ±10 %; then the random IOPS against the card's
/// application-class minimums (`class`, read, write), as information. Returns the random
/// read and write IOPS and dd's MB/s.
fn s6_card(
    device: &str,
    card: &str,
    published: [f64; 4],
    class: (&str, f64, f64),
) -> (f64, f64, f64) {
    let mut t = Table::new(&format!("§6 {device}, MiB/s ({card}, Raspberry Pi 4)"));
    let mib = |v: &Value, name: &str| kib_s(job(v, name)) / 1024.0;
    let [hdparm, dd_mb_s, randread, randwrite] = published;
    let v = run(device, &["s6-sd-pi4/hdparm-read.fio", "--runtime=1"]);
    t.row("hdparm -t read", "fit", hdparm, mib(&v, "hdparm"), 0.10);
    let dd = run(device, &["s6-sd-pi4/dd-write.fio", "--size=64m"]);
    t.row(
        &format!("dd write ({dd_mb_s} MB/s)"),
        "fit",
        dd_mb_s * 1e6 / 1048576.0,
        mib(&dd, "dd"),
        0.10,
    );
    let rr = run(device, &["s6-sd-pi4/iozone-randread.fio", "--runtime=1"]);
    t.row(
        "iozone 4K random read",
        "fit",
        randread,
        mib(&rr, "randread"),
        0.10,
    );
    let rw = run(device, &["s6-sd-pi4/iozone-randwrite.fio", "--runtime=1"]);
    t.row(
        "iozone 4K random write",
        "fit",
        randwrite,
        mib(&rw, "randwrite"),
        0.10,
    );
    let iops = |v: &Value, name: &str| dir(job(v, name))["iops"].as_f64().unwrap();
    let (r, w) = (iops(&rr, "randread"), iops(&rw, "randwrite"));
    let (name, min_r, min_w) = class;
    t.row(
        &format!("{name} random read IOPS (min {min_r})"),
        "min",
        min_r,
        r,
        0.0,
    );
    t.row(
        &format!("{name} random write IOPS (min {min_w})"),
        "min",
        min_w,
        w,
        0.0,
    );
    t.finish();
    (r, w, kib_s(job(&dd, "dd")) * 1024.0 / 1e6)
}

/// §7: a PCIe 4.0 NVMe SSD on a 10-core server. The device is the datasheet's; two values
/// (`ssd.read_ctrl_ns`, `ssd.t_r_ns`) are fitted on the three `none` rows of Ren et al.
/// (ICPE 2024) by `blksim calibrate`. The mq-deadline, kyber and bfq rows at queue depth 32
/// on one pinned core are predictions of the CPU/lock model.
#[test]
fn s7_nvme_980pro() {
    let dev = "nvme-980pro-1tb";
    let job = "s7-nvme-980pro/randread.fio";
    let iops = |v: &Value| dir(&v["jobs"][0])["iops"].as_f64().unwrap();
    let mut t = Table::new("§7 nvme-980pro-1tb, IOPS (4 KiB random read, io_uring)");
    let mut sched = Vec::new();
    for (s, published) in [
        ("none", 343_172.0),
        ("mq-deadline", 293_570.0),
        ("kyber", 275_678.0),
        ("bfq", 229_737.0),
    ] {
        let v = run(
            dev,
            &[job, "--runtime=0.3", &format!("--set=queue.scheduler={s}")],
        );
        let (kind, tol) = if s == "none" {
            ("fit", 0.12)
        } else {
            ("check", 0.20)
        };
        t.row(
            &format!("QD 32, one core, {s}"),
            kind,
            published,
            iops(&v),
            tol,
        );
        sched.push(iops(&v));
    }
    let v = run(dev, &[job, "--runtime=0.3", "--iodepth=1"]);
    t.row("QD 1, one core, none", "fit", 14_443.0, iops(&v), 0.12);
    let v = run(
        dev,
        &[
            job,
            "--runtime=0.2",
            "--numjobs=8",
            "--cpus_allowed=0-7",
            "--cpus_allowed_policy=split",
            "--group_reporting",
        ],
    );
    t.row("QD 32 x 8 jobs, none", "fit", 775_158.0, iops(&v), 0.12);
    t.finish();
    // The elevators cost CPU time on the one core: each is below none, bfq the lowest, as
    // published.
    assert!(sched[1..].iter().all(|&x| x < sched[0]), "{sched:?}");
    assert!(sched[3] < sched[1] && sched[3] < sched[2], "{sched:?}");

    // The datasheet's figures (as reviews quote them), within ±15 %.
    let mut d = Table::new("§7 nvme-980pro-1tb against its datasheet");
    let mbps = |v: &Value| {
        let j = &v["jobs"][0];
        (j["read"]["bw"].as_f64().unwrap() + j["write"]["bw"].as_f64().unwrap()) * 1024.0 / 1e6
    };
    let base = [
        "--name=d",
        "--direct=1",
        "--size=10g",
        "--ioengine=io_uring",
        "--time_based",
    ];
    let go = |extra: &[&str]| {
        let a: Vec<&str> = base.iter().chain(extra).copied().collect();
        run(dev, &a)
    };
    let v = go(&["--rw=read", "--bs=128k", "--iodepth=32", "--runtime=0.1"]);
    d.row("sequential read, MB/s", "check", 7000.0, mbps(&v), 0.15);
    // Long enough that the 64 MiB DRAM buffer filling at the link's rate does not count.
    let v = go(&["--rw=write", "--bs=128k", "--iodepth=32", "--runtime=0.4"]);
    d.row(
        "sequential write (SLC cache), MB/s",
        "check",
        5000.0,
        mbps(&v),
        0.15,
    );
    let many = [
        "--bs=4k",
        "--iodepth=32",
        "--numjobs=16",
        "--cpus_allowed=0-9",
        "--group_reporting",
        "--runtime=0.1",
    ];
    let v = go(&[&["--rw=randread"][..], &many[..]].concat());
    d.row(
        "random read QD 32 x 16, IOPS",
        "check",
        1_000_000.0,
        iops(&v),
        0.15,
    );
    let v = go(&[&["--rw=randwrite"][..], &many[..]].concat());
    d.row(
        "random write QD 32 x 16, IOPS",
        "check",
        1_000_000.0,
        iops(&v),
        0.15,
    );
    let v = go(&["--rw=randwrite", "--bs=4k", "--iodepth=1", "--runtime=0.2"]);
    d.row("random write QD 1, IOPS", "check", 60_000.0, iops(&v), 0.15);
    let v = go(&["--rw=randread", "--bs=4k", "--iodepth=1", "--runtime=0.2"]);
    d.row(
        "random read QD 1, IOPS (review's)",
        "info",
        22_000.0,
        iops(&v),
        0.0,
    );
    d.finish();
}

/// §8: an SD card with allocation units and a limit on open ones (flashbench on a Kingston
/// 4 GB microSDHC in a BeagleBone). Fitted on four --open-au rows; the open-unit count and
/// the unit size that `blksim probe` (flashbench's tests) finds on the simulated card are
/// checks.
#[test]
fn s8_sd_kingston_open_units() {
    let dev = "sd-kingston-4g-bbb";
    let job = "s8-sd-kingston/open-au.fio";
    let kib_s_of = |n: &str, bs: &str| {
        let v = run(
            dev,
            &[job, &format!("--numjobs={n}"), &format!("--bs={bs}")],
        );
        kib_s(&v["jobs"][0])
    };
    let mut t = Table::new("§8 sd-kingston-4g-bbb, flashbench --open-au, KiB/s");
    t.row(
        "3 open units, 256 KiB writes",
        "fit",
        4.96 * 1024.0,
        kib_s_of("3", "256k"),
        0.15,
    );
    t.row(
        "3 open units, 16 KiB writes",
        "fit",
        3.36 * 1024.0,
        kib_s_of("3", "16k"),
        0.15,
    );
    t.row(
        "4 open units, 256 KiB writes",
        "fit",
        607.0,
        kib_s_of("4", "256k"),
        0.15,
    );
    t.row(
        "4 open units, 128 KiB writes",
        "fit",
        302.0,
        kib_s_of("4", "128k"),
        0.15,
    );
    t.row(
        "1 open unit, 256 KiB writes",
        "info",
        5.15 * 1024.0,
        kib_s_of("1", "256k"),
        0.0,
    );
    t.finish();
    // The measurements go to a scratch directory, not the working directory.
    let results = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("repro-s8-probe-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args([
            "probe",
            "sim:sd-kingston-4g-bbb",
            "--write",
            "--no-calibrate",
            "--time=60",
        ])
        .arg(format!("--results={}", results.display()))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&results);
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("-> 3 open unit(s)"),
        "flashbench found 3 open units:\n{text}"
    );
    assert!(
        text.contains("-> allocation unit 4096 KiB"),
        "preferred_erase_size 4 MiB:\n{text}"
    );
}

/// §9: two UFS parts against their announced figures (no measurement on Linux was found).
/// Each figure set one parameter (channel rate, SLC program time, controller occupancy), so
/// the rows are fits, within ±15 %; what was not published is printed as the model's
/// prediction.
#[test]
fn s9_ufs_datasheets() {
    let mut t = Table::new("§9 UFS parts against their announcements");
    let go = |dev: &str, extra: &[&str]| {
        let base = [
            "--name=d",
            "--direct=1",
            "--size=8g",
            "--ioengine=io_uring",
            "--time_based",
            "--iodepth=32",
        ];
        let a: Vec<&str> = base.iter().chain(extra).copied().collect();
        run(dev, &a)
    };
    let mbps = |v: &Value| kib_s(&v["jobs"][0]) * 1024.0 / 1e6;
    let iops = |v: &Value| dir(&v["jobs"][0])["iops"].as_f64().unwrap();
    for (dev, read, write, rr, rw) in [
        (
            "ufs31-samsung-512g",
            2100.0,
            1200.0,
            Some(100_000.0),
            Some(70_000.0),
        ),
        ("ufs40-samsung-512g", 4200.0, 2800.0, None, None),
    ] {
        let v = go(dev, &["--rw=read", "--bs=512k", "--runtime=0.2"]);
        t.row(&format!("{dev} seq read MB/s"), "fit", read, mbps(&v), 0.15);
        let v = go(dev, &["--rw=write", "--bs=512k", "--runtime=0.2"]);
        t.row(
            &format!("{dev} seq write MB/s"),
            "fit",
            write,
            mbps(&v),
            0.15,
        );
        for (rw_name, published) in [("randread", rr), ("randwrite", rw)] {
            let v = go(
                dev,
                &[&format!("--rw={rw_name}"), "--bs=4k", "--runtime=0.1"],
            );
            match published {
                Some(p) => t.row(&format!("{dev} 4k {rw_name} IOPS"), "fit", p, iops(&v), 0.15),
                None => println!(
                    "{dev} 4k {rw_name} at QD 32: {:.0} IOPS (not published: the model's prediction)",
                    iops(&v)
                ),
            }
        }
    }
    t.finish();
}

/// §6, the A2 card of the same table: fitted as the A1 card was. Under Linux its command
/// queue and cache stay off, so it does not reach the A2 minimums (4000 / 2000 IOPS) at
/// queue depth 1, as measured; it does reach A1's.
#[test]
fn s6_sd_a2_pi4() {
    let (r, w, _) = s6_card(
        "sd-a2-pi4",
        "SanDisk Extreme A2 64 GB",
        [43.73, 36.3, 7.35, 3.70],
        ("A2", 4000.0, 2000.0),
    );
    assert!(r < 4000.0 && w < 2000.0, "{r} {w}");
    assert!(r >= 1500.0 && w >= 500.0, "A1 minimums: {r} {w}");
}
