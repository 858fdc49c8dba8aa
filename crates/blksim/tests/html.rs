//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, which
//! `scripts/test.sh` installs) loads the page offline and prints the DOM it built. The page
//! must load without console errors, and its charts must hold the expected series and
//! points: one CDF line per direction that did I/O with fio's four marked percentiles, and
//! one bar per timed layer.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn dir(name: &str) -> PathBuf {
    common::fresh_dir("html", name, true)
}

/// The DOM Chromium builds from `page`, and what it printed on stderr.
fn chromium_dom(page: &Path) -> (String, String) {
    let o = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium (scripts/test.sh installs Debian's chromium)");
    assert!(
        o.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The chart blocks of `class` in the DOM, each its own text.
fn charts<'a>(dom: &'a str, class: &str) -> Vec<&'a str> {
    let tag = format!("<div class=\"chart {class}\"");
    dom.match_indices(&tag)
        .map(|(i, _)| {
            let end = dom[i..].find("</svg>").map_or(dom.len(), |e| i + e);
            &dom[i..end]
        })
        .collect()
}

#[test]
fn the_html_report_renders_with_its_series_and_points() {
    let d = dir("render");
    let out = d.join("run.txt");
    // Job a reads and writes, job b only reads; hsq, so every layer is timed.
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args([
            "run",
            "--name=a",
            "--rw=randrw",
            "--size=16m",
            "--runtime=100ms",
        ])
        .args([
            "--ioengine=libaio",
            "--iodepth=8",
            "--name=b",
            "--rw=read",
            "--bs=64k",
        ])
        .args([
            "--size=8m",
            "--set=host.queue=hsq",
            "--output-format=normal,html",
        ])
        .arg(format!("--output={}", out.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("read: IOPS="));
    let page = d.join("run.txt.html");
    let (dom, log) = chromium_dom(&page);
    for bad in ["Uncaught", ":CONSOLE", "Refused to"] {
        assert!(!log.contains(bad), "browser said {bad}:\n{log}");
    }
    let cdfs = charts(&dom, "cdf");
    assert_eq!(cdfs.len(), 2, "one CDF chart per job");
    // Series are the 2-pixel lines; marks are circles (the legend draws no circles).
    let lines = |c: &str| c.matches("stroke-width=\"2\"").count();
    let marks = |c: &str| c.matches("<circle").count();
    assert_eq!(
        (lines(cdfs[0]), marks(cdfs[0])),
        (2, 8),
        "job a: read and write"
    );
    assert_eq!((lines(cdfs[1]), marks(cdfs[1])), (1, 4), "job b: read");
    assert!(cdfs[0].contains("data-job=\"a\"") && cdfs[1].contains("data-job=\"b\""));
    // IOPS and bandwidth over time: a line per direction, a point per bucket; the read/write
    // job's 100 ms run fits in 1 ms buckets, so about 100 points a line.
    for class in ["iops", "bw"] {
        let c = charts(&dom, class);
        assert_eq!(c.len(), 2, "{class}: one chart per job");
        assert_eq!(lines(c[0]), 2, "{class}: job a reads and writes");
        assert_eq!(lines(c[1]), 1, "{class}: job b reads");
        let pts = c[0]
            .split("stroke-width=\"2\" points=\"")
            .nth(1)
            .map(|p| p.split('"').next().unwrap().split_whitespace().count())
            .unwrap();
        assert!(
            (95..=105).contains(&pts),
            "{class}: {pts} points for a 100 ms run"
        );
    }
    let layers = charts(&dom, "layers");
    assert_eq!(layers.len(), 1);
    // Six layers timed on an MMC device, stacked; plotters draws each segment as one rect.
    let bars = layers[0].matches("<rect").count();
    assert_eq!(bars, 1 + 6, "background and six segments");
    for id in ["results", "options", "params"] {
        assert!(dom.contains(&format!("<table id=\"{id}\"")), "table {id}");
    }
    assert!(
        dom.contains("host.queue") && dom.contains("--set=host.queue=hsq"),
        "the --set is listed"
    );
    // And it paints: a screenshot of the window's size, far from blank (a white page of
    // that size compresses to a few KiB; scripts/html-screenshot.sh makes the README's).
    let shot = d.join("page.png");
    let o = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,2000",
        ])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let dim = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((dim(16), dim(20)), (1000, 2000), "IHDR width and height");
    assert!(png.len() > 60_000, "{} bytes: a blank page?", png.len());
    let _ = std::fs::remove_dir_all(&d);
}

/// HTML alone is the output itself.
#[test]
fn html_alone_is_the_output() {
    let d = dir("alone");
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args([
            "run",
            "--name=a",
            "--rw=read",
            "--size=4m",
            "--device=null_blk",
            "--output-format=html",
        ])
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(o.status.success());
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
    assert!(!d.join("blksim-report.html").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// The numbers in `<table id="{id}">`: (first cell, `data-value`) per row.
fn table_values(dom: &str, id: &str) -> Vec<(String, f64)> {
    let start = dom.find(&format!("<table id=\"{id}\"")).expect("the table");
    let end = start + dom[start..].find("</table>").unwrap();
    dom[start..end]
        .split("<tr>")
        .filter_map(|row| {
            let cell = row.strip_prefix("<td>")?.split("</td>").next()?;
            // Past a colour swatch, if the cell has one.
            let name = cell.rsplit("</span>").next()?.to_string();
            let v = row.split("data-value=\"").nth(1)?.split('"').next()?;
            Some((name, v.parse().ok()?))
        })
        .collect()
}

/// Queue depth over time: a line per stage the requests passed, a point per bucket; the
/// run's mean depths obey Little's law against the JSON report's own figures (requests in
/// the block layer and at the driver = IOPS × mean completion latency, every 4 KiB random
/// read one request), the driver's depth holds its host queue and device, and the busy
/// fraction is the disk util the JSON reports.
#[test]
fn queue_depth_over_time_follows_littles_law() {
    let d = dir("depth");
    let json = d.join("run.json");
    let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
        .args([
            "run",
            "--name=a",
            "--rw=randread",
            "--size=16m",
            "--runtime=200ms",
            "--ioengine=libaio",
            "--iodepth=8",
            "--set=host.queue=hsq",
            "--output-format=json,html",
        ])
        .arg(format!("--output={}", json.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (dom, log) = chromium_dom(&d.join("run.json.html"));
    assert!(!log.contains(":CONSOLE"), "{log}");
    let depth = charts(&dom, "depth");
    assert_eq!(depth.len(), 1);
    let lines = depth[0].matches("stroke-width=\"2\"").count();
    assert_eq!(
        lines, 5,
        "block layer, driver, host queue, hsq slot wait, device"
    );
    for line in depth[0].split("stroke-width=\"2\" points=\"").skip(1) {
        let pts = line.split('"').next().unwrap().split_whitespace().count();
        assert!((195..=205).contains(&pts), "{pts} points for a 200 ms run");
    }
    assert_eq!(charts(&dom, "busy").len(), 1);
    let v = table_values(&dom, "depth");
    let get = |k: &str| v.iter().find(|x| x.0.starts_with(k)).unwrap().1;
    let r = &doc["jobs"][0]["read"];
    let little = r["iops"].as_f64().unwrap() * r["clat_ns"]["mean"].as_f64().unwrap() / 1e9;
    let measured = get("block layer") + get("at the driver");
    assert!(
        (measured - little).abs() / little < 0.03,
        "block layer + driver {measured:.3} against IOPS x clat {little:.3}"
    );
    let (drv, hq, dev) = (get("at the driver"), get("host queue"), get("device"));
    assert!(
        hq + dev <= drv + 1e-9 && hq + dev > 0.9 * drv,
        "{hq} + {dev} within {drv}"
    );
    // One command at a time on the card: its depth is its busy fraction, at most 1.
    assert!(dev <= 1.0 && dev > 0.5, "device {dev}");
    // The stacked layers add up to the mean completion latency (one request per read).
    let l = table_values(&dom, "layers");
    let total = l.iter().find(|x| x.0 == "total").unwrap().1;
    let parts: f64 = l.iter().filter(|x| x.0 != "total").map(|x| x.1).sum();
    assert!((parts - total).abs() < 1e-6 * total);
    let clat_us = r["clat_ns"]["mean"].as_f64().unwrap() / 1000.0;
    assert!(
        (total - clat_us).abs() / clat_us < 0.02,
        "layers {total:.1} µs against clat {clat_us:.1} µs"
    );
    let util = doc["disk_util"][0]["util"].as_f64().unwrap() / 100.0;
    assert!(
        (get("device busy") - util).abs() < 0.01,
        "busy {} against disk util {util}",
        get("device busy")
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `blksim compare --output-format=html`: per job and direction a table with the text's
/// figures and the files' CDFs overlaid, from json+ bins (as many points as bins) or from a
/// plain report's percentiles (one point per percentile).
#[test]
fn compare_html_overlays_the_cdfs_and_matches_the_text() {
    let d = dir("compare");
    let run = |name: &str, fmt: &str, depth: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .args([
                "run",
                "--name=j",
                "--rw=randread",
                "--size=8m",
                "--device=null_blk",
                "--ioengine=libaio",
            ])
            .arg(format!("--iodepth={depth}"))
            .arg(format!("--output-format={fmt}"))
            .arg(format!("--output={}", d.join(name).display()))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run("a.json", "json+", "1");
    run("b.json", "json", "16");
    let cmp = |fmt: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_blksim"))
            .args(["compare", fmt, "a.json", "b.json"])
            .current_dir(&d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = cmp("--output-format=text");
    let page = d.join("compare.html");
    std::fs::write(&page, cmp("--output-format=html")).unwrap();
    let (dom, log) = chromium_dom(&page);
    assert!(!log.contains(":CONSOLE"), "{log}");
    // One table (job j, read); each text row's cells are the table row's cells.
    assert!(dom.contains("<table id=\"compare-0\"") && !dom.contains("compare-1"));
    for line in text
        .lines()
        .filter(|l| l.starts_with("  ") && !l.contains("metric"))
    {
        let (name, rest) = line.trim().split_at(line.trim().find("  ").unwrap());
        let cells: String = std::iter::once(name.trim())
            .chain(rest.split_whitespace())
            .map(|c| format!("<td>{c}</td>"))
            .collect();
        assert!(dom.contains(&cells), "row {line:?} not in the page");
    }
    let cdfs = charts(&dom, "cdf");
    assert_eq!(cdfs.len(), 1);
    let lines: Vec<usize> = cdfs[0]
        .split("stroke-width=\"2\" points=\"")
        .skip(1)
        .map(|p| p.split('"').next().unwrap().split_whitespace().count())
        .collect();
    let doc_a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("a.json")).unwrap()).unwrap();
    let bins = doc_a["jobs"][0]["read"]["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .len();
    let doc_b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("b.json")).unwrap()).unwrap();
    let pcts = doc_b["jobs"][0]["read"]["clat_ns"]["percentile"]
        .as_object()
        .unwrap()
        .len();
    assert_eq!(
        lines,
        vec![bins, pcts],
        "A from its bins, B from its percentiles"
    );
    let _ = std::fs::remove_dir_all(&d);
}
