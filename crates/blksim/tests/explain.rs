//! `blksim run --explain=N` on the case it was made for: the old hsq tag scan on the
//! Allwinner board (repro §5), where one read waits hundreds of ms at the driver while the
//! reads that came after it, in other hsq slots, are served. With FIFO the slowest read is
//! a card stall that few I/Os overtake.

use std::path::Path;
use std::process::Command;

fn explain(policy: &str) -> (serde_json::Value, String) {
    explain_as(policy, "json")
}

fn explain_as(policy: &str, format: &str) -> (serde_json::Value, String) {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../repro/s5-allwinner/randread.fio");
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .arg("run")
        .arg(&job)
        .args([
            "--io_size=16M",
            "--device=emmc-allwinner",
            "--set=host.queue=hsq",
            &format!("--set=host.hsq_next_tag={policy}"),
            "--explain=3",
            &format!("--output-format={format}"),
        ])
        .output()
        .expect("run blksim");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    (
        serde_json::from_str(&out).unwrap_or(serde_json::Value::String(out)),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// The HTML report shows the same: a row per explained I/O with its longest wait outlined,
/// and per I/O the steps with the longest marked and the overtakers named as in the text.
#[test]
fn the_html_report_shows_the_starved_read() {
    let (page, text) = explain_as("scan", "html");
    let page = page.as_str().unwrap();
    let chart = &page[page.find("<div class=\"chart explain\">").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    // One outline (an unfilled black rectangle) per I/O, around its longest wait.
    assert_eq!(chart.matches("fill=\"none\" stroke=\"#000000\"").count(), 3);
    assert_eq!(page.matches("<table class=\"explain\">").count(), 3);
    assert_eq!(page.matches("<tr class=\"longest\">").count(), 3);
    let first = &page[page.find("<h3>#1 ").unwrap()..];
    let first = &first[..first.find("<h3>#2 ").unwrap()];
    assert!(
        first.contains("<tr class=\"longest\"><td>command on the bus</td>"),
        "{first}"
    );
    // The overtakers line is the text report's.
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("overtaken by"))
        .unwrap()
        .trim();
    assert!(first.contains(line), "{line}");
}

#[test]
fn the_starved_read_and_the_tags_served_ahead_of_it() {
    let (v, text) = explain("scan");
    let ex = v["blksim"]["explain"].as_array().unwrap();
    assert_eq!(ex.len(), 3);
    let slowest = &ex[0];
    // It is the report's slowest read.
    assert_eq!(
        slowest["lat_ns"].as_u64(),
        v["jobs"][0]["read"]["lat_ns"]["max"].as_u64(),
        "{text}"
    );
    assert!(ex
        .windows(2)
        .all(|w| w[0]["lat_ns"].as_u64() >= w[1]["lat_ns"].as_u64()));
    // It waited at the driver, in its host software queue slot (queued there, and its
    // command went on the bus hundreds of ms later), not in the elevator.
    let steps = slowest["steps"].as_array().unwrap();
    let waits: Vec<(u64, &str)> = steps
        .windows(2)
        .map(|w| {
            (
                w[1]["t_ns"].as_u64().unwrap() - w[0]["t_ns"].as_u64().unwrap(),
                w[1]["step"].as_str().unwrap(),
            )
        })
        .collect();
    let longest = waits.iter().max().unwrap();
    assert_eq!(longest.1, "command on the bus", "{waits:?}");
    assert!(
        waits
            .iter()
            .any(|w| w.1.starts_with("queued to the host (hsq slot")),
        "{waits:?}"
    );
    assert!(longest.0 > 100_000_000, "{waits:?}");
    // Thousands of reads issued after it were served first, from other hsq slots.
    assert!(slowest["overtakers"].as_u64().unwrap() > 1000, "{text}");
    let tag = slowest["driver_tag"].as_i64().unwrap();
    let named = slowest["first_overtakers"].as_array().unwrap();
    assert_eq!(named.len(), 5);
    assert!(named.iter().all(|n| n["driver_tag"].as_i64() != Some(tag)));
    assert!(text.contains("<- longest wait") && text.contains("overtaken by"));

    // The legacy path has no queue of its own: no such step there.
    let legacy = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../repro/s5-allwinner/randread.fio"))
        .args([
            "--io_size=1M",
            "--device=emmc-allwinner",
            "--explain=3",
            "--output=/dev/null",
        ])
        .output()
        .unwrap();
    let ltext = String::from_utf8_lossy(&legacy.stderr);
    assert!(
        legacy.status.success() && ltext.contains("command on the bus"),
        "{ltext}"
    );
    assert!(!ltext.contains("queued to the host"), "{ltext}");

    let (f, _) = explain("fifo");
    let fifo = &f["blksim"]["explain"][0];
    assert!(slowest["lat_ns"].as_u64().unwrap() > 10 * fifo["lat_ns"].as_u64().unwrap());
    // With FIFO only the elevator's reordering passes a read: fewer than the 8 jobs twice.
    assert!(fifo["overtakers"].as_u64().unwrap() < 16, "{fifo}");
    // The same run explains the same way.
    assert_eq!(explain("scan").1, text);
}

/// On a device without a host queue (UFS), the driver's part of the path is the device's:
/// after a link asleep in hibern8, the command reaches the device only after the exit
/// (`ufs.h8_exit_ns`), then the device's own time; the steps keep their order.
#[test]
fn ufs_steps_name_the_device_and_the_hibern8_exit() {
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .env("BLKSIM_FAKE_TIME", "1795310737")
        .args([
            "run",
            "--device=ufs40-samsung-512g",
            "--name=t",
            "--rw=randread",
            "--ioengine=psync",
            "--thinktime=10ms",
            "--number_ios=4",
            "--explain=1",
            "--output-format=json",
        ])
        .output()
        .expect("run blksim");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = doc["blksim"]["explain"][0]["steps"].as_array().unwrap();
    let at = |name: &str| {
        steps
            .iter()
            .find(|s| s["step"] == name)
            .unwrap_or_else(|| panic!("no step {name}: {steps:?}"))["t_ns"]
            .as_u64()
            .unwrap()
    };
    let issued = at("issued to the driver (queue_rq)");
    let on_device = at("command at the device");
    let done = at("done in the device");
    let ended = at("ended by the driver (blk_mq_end_request)");
    assert_eq!(on_device - issued, 300_000, "the hibern8 exit");
    assert!(done > on_device && ended >= done, "{steps:?}");
}
