//! `--output-format=html`: one self-contained page that opens offline. The charts are inline
//! SVG drawn by plotters (no scripts, no fonts, no network at view time):
//! * per job, the completion-latency CDF of each direction on a log axis, from fio's latency
//!   histogram (the json+ bins), with fio's p50, p90, p99 and p99.9 marked;
//! * per job, IOPS and bandwidth over time, a line per direction, from completions counted
//!   in bounded buckets ([`crate::timeline`]);
//! * queue depth over time at each stage (block layer, driver, host queue, hsq slots,
//!   device) and the device's busy fraction, from [`crate::depth`], with each stage's mean
//!   depth over the run in a table;
//! * the mean time a request spent at each layer (the `blksim` facts: block layer, host
//!   queue, hsq slot wait, bus, card, completion) as one stacked bar, with a table;
//! * with `--explain=N`, the slowest I/Os as rows of waits between the steps of their path,
//!   the longest outlined, and per I/O its steps and the I/Os that overtook it;
//! * tables: per job and direction IOPS, bandwidth and latencies; the job options; the device
//!   profile's values with where each came from.

use crate::depth::DepthTimeline;
use crate::json::JsonValue;
use crate::report::RunReport;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::io::{self, Write};

/// What the page shows besides the report: the device and its parameters.
#[derive(Clone, Debug, Default)]
pub struct HtmlExtra {
    pub device: String,
    pub description: String,
    /// (key, value, where it was set: `file:line` or `--set=...`).
    pub params: Vec<(String, String, String)>,
    /// `--explain=N`: the slowest I/Os, slowest first.
    pub explain: Vec<HtmlIo>,
}

/// One of the slowest I/Os (`blksim run --explain`).
#[derive(Clone, Debug, Default)]
pub struct HtmlIo {
    /// "job 'a' (1) read of 4096 B at offset 8192: latency 1.987 ms".
    pub title: String,
    /// (what happened, when in ns), in order.
    pub steps: Vec<(String, u64)>,
    /// The step that ends the longest wait.
    pub longest: usize,
    /// Its request's place (sector, hctx, driver tag), when it had one.
    pub request: Option<String>,
    /// Who overtook it.
    pub overtaken: String,
}

/// The pages' style sheet.
const STYLE: &str = "body{font-family:sans-serif;margin:24px;max-width:980px}table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}tr.longest{font-weight:bold;background:#fde}ul.legend{list-style:none;padding:0;font-size:13px}ul.legend span{display:inline-block;width:12px;height:12px;margin-right:6px}.chart{margin:12px 0}";

const DDIRS: [&str; 3] = ["read", "write", "trim"];
/// One palette for every chart (matplotlib's tab10), a series' colour by its index.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}
/// Percentiles marked on the CDFs.
const MARKS: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn chart_err<E: std::fmt::Debug>(e: E) -> io::Error {
    io::Error::other(format!("chart: {e:?}"))
}

/// The series names, boxed in the lower right corner.
fn legend<'a, DB, CT>(c: &mut ChartContext<'a, DB, CT>) -> io::Result<()>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(chart_err)
}

/// The CDF points (µs, fraction) of a direction's completion latencies, from the histogram.
fn cdf(hist: &crate::hist::LatHist) -> Vec<(f64, f64)> {
    let bins: Vec<(u64, u64)> = hist.bins().collect();
    let total: u64 = bins.iter().map(|b| b.1).sum();
    let mut acc = 0u64;
    bins.iter()
        .map(|&(v, n)| {
            acc += n;
            ((v.max(1)) as f64 / 1000.0, acc as f64 / total.max(1) as f64)
        })
        .collect()
}

/// A CDF line: label, colour, points (µs, fraction) and the marked percentiles.
type CdfSeries<'a> = (&'a str, RGBColor, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Completion-latency CDFs on a log axis, one line per series, its marks as dots.
fn cdf_chart(title: &str, series: &[CdfSeries]) -> io::Result<String> {
    let lo = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.0))
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    let (lo, hi) = (lo * 0.8, (hi * 1.25).max(lo * 2.0));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..1.0f64)
            .map_err(chart_err)?;
        c.configure_mesh()
            .x_labels(8)
            .max_light_lines(2)
            .x_desc("clat (µs, log scale)")
            .y_desc("fraction of I/Os")
            .draw()
            .map_err(chart_err)?;
        for (name, color, pts, marks) in series {
            let color = *color;
            c.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(chart_err)?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            c.draw_series(
                marks
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
            )
            .map_err(chart_err)?;
        }
        legend(&mut c)?;
        root.present().map_err(chart_err)?;
    }
    Ok(svg)
}

/// One job's CDF chart as SVG; `None` when no direction has latencies.
fn cdf_svg(r: &RunReport, job: usize) -> io::Result<Option<String>> {
    let js = &r.jobs[job].stats;
    let mut series = Vec::new();
    for (d, name) in DDIRS.iter().enumerate() {
        let st = &js.dir[d];
        if st.total_ios == 0 {
            continue;
        }
        if let Some(h) = st.clat.hist.as_ref() {
            let pts = cdf(h);
            if !pts.is_empty() {
                let marks: Vec<(f64, f64)> = h
                    .percentiles_with_nr(&MARKS, st.clat.samples)
                    .iter()
                    .zip(MARKS)
                    .map(|(&v, q)| (v.max(1) as f64 / 1000.0, q / 100.0))
                    .collect();
                series.push((*name, color(d), pts, marks));
            }
        }
    }
    if series.is_empty() {
        return Ok(None);
    }
    cdf_chart(
        &format!("{}: completion latency CDF", r.jobs[job].name),
        &series,
    )
    .map(Some)
}

/// A line: its label, colour and points.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// A chart of lines over time.
struct Lines<'a> {
    title: String,
    y_desc: &'a str,
    series: Vec<Series<'a>>,
    /// Upper end of the y axis when fixed (a fraction), else from the data.
    y_max: Option<f64>,
}

impl Lines<'_> {
    fn svg(&self) -> io::Result<String> {
        let x_hi = self
            .series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.0))
            .fold(0.0f64, f64::max);
        let y_hi = self.y_max.unwrap_or_else(|| {
            let m = self
                .series
                .iter()
                .flat_map(|s| s.2.iter().map(|p| p.1))
                .fold(0.0f64, f64::max);
            (m * 1.1).max(1.0)
        });
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (720, 260)).into_drawing_area();
            root.fill(&WHITE).map_err(chart_err)?;
            let mut c = ChartBuilder::on(&root)
                .caption(&self.title, ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(36)
                .y_label_area_size(64)
                .build_cartesian_2d(0f64..x_hi.max(1e-3), 0f64..y_hi)
                .map_err(chart_err)?;
            c.configure_mesh()
                .max_light_lines(2)
                .x_desc("time (s)")
                .y_desc(self.y_desc)
                .draw()
                .map_err(chart_err)?;
            for (label, color, pts) in &self.series {
                let color = *color;
                c.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                    .map_err(chart_err)?
                    .label(*label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            }
            legend(&mut c)?;
            root.present().map_err(chart_err)?;
        }
        Ok(svg)
    }
}

/// One job's IOPS (`bw` false) or bandwidth (`bw` true) over time as SVG, a line per
/// direction; `None` without a timeline.
fn rate_svg(r: &RunReport, job: usize, bw: bool) -> io::Result<Option<String>> {
    let Some(t) = r.jobs[job].stats.timeline.as_ref() else {
        return Ok(None);
    };
    let series: Vec<Series> = (0..3)
        .filter(|&d| t.ios.iter().any(|b| b[d] > 0))
        .map(|d| {
            let pts = t
                .rates(d, r.jobs[job].stats.end_ns)
                .into_iter()
                .map(|(x, iops, kib)| (x, if bw { kib / 1024.0 } else { iops }))
                .collect();
            (DDIRS[d], color(d), pts)
        })
        .collect();
    if series.is_empty() {
        return Ok(None);
    }
    let (what, unit) = if bw {
        ("bandwidth", "MiB/s")
    } else {
        ("IOPS", "I/Os per second")
    };
    Lines {
        title: format!(
            "{}: {what} over time ({} ms buckets)",
            r.jobs[job].name,
            t.width_ns as f64 / 1e6
        ),
        y_desc: unit,
        series,
        y_max: None,
    }
    .svg()
    .map(Some)
}

/// Queue depth over time, a line per stage requests passed through.
fn depth_svg(d: &DepthTimeline) -> io::Result<Option<String>> {
    let series: Vec<Series> = (0..d.names.len())
        .filter(|&s| d.seen(s))
        .map(|s| (d.names[s], color(s), d.depth(s)))
        .collect();
    if series.is_empty() {
        return Ok(None);
    }
    Lines {
        title: format!(
            "queue depth at each stage ({} ms buckets, time-weighted mean)",
            d.width_ns as f64 / 1e6
        ),
        y_desc: "requests",
        series,
        y_max: None,
    }
    .svg()
    .map(Some)
}

/// The fraction of each bucket with a request at the driver.
fn busy_svg(d: &DepthTimeline) -> io::Result<Option<String>> {
    if d.busy.is_empty() {
        return Ok(None);
    }
    Lines {
        title: format!("device busy ({} ms buckets)", d.width_ns as f64 / 1e6),
        y_desc: "fraction busy",
        series: vec![("busy", color(0), d.busy_fraction())],
        y_max: Some(1.05),
    }
    .svg()
    .map(Some)
}

/// (label, mean ns per request) of each layer the `blksim` facts time, disjoint so they stack:
/// the block layer (made to `queue_rq`), then inside an MMC driver the host queue less its
/// hsq slot wait, the hsq slot wait, the bus, the card, and the completion path. On a device
/// with one request per I/O they add up to the mean completion latency.
fn layers(b: &JsonValue) -> Vec<(&'static str, f64)> {
    let num = |v: Option<&JsonValue>| match v {
        Some(JsonValue::UInt(u)) => Some(*u as f64),
        Some(JsonValue::Int(i)) => Some(*i as f64),
        Some(JsonValue::Float(f)) => Some(*f),
        _ => None,
    };
    let block = b.get("block");
    let drv = b.get("driver_stats");
    let Some(n) = block
        .and_then(|x| num(x.get("requests_completed")))
        .filter(|&n| n > 0.0)
    else {
        return Vec::new();
    };
    let d = |k: &str| drv.and_then(|x| num(x.get(k)));
    let slot = d("mmc_hsq_slot_wait_ns");
    let mut out = Vec::new();
    for (label, v) in [
        (
            "block layer",
            block.and_then(|x| num(x.get("block_wait_ns"))),
        ),
        (
            "host queue",
            d("mmc_queue_wait_ns").map(|q| q - slot.unwrap_or(0.0)),
        ),
        ("hsq slot wait", slot),
        ("bus", d("mmc_bus_ns")),
        ("card", d("mmc_card_ns")),
        ("completion", d("mmc_completion_ns")),
    ] {
        if let Some(v) = v {
            out.push((label, v.max(0.0) / n));
        }
    }
    out
}

/// The layers as one stacked bar of mean time per request.
fn layers_svg(l: &[(&'static str, f64)]) -> io::Result<String> {
    let total_us = l.iter().map(|x| x.1).sum::<f64>() / 1000.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 150)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption("mean time per request at each layer", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(10)
            .build_cartesian_2d(0f64..(total_us * 1.02).max(1e-3), 0f64..1f64)
            .map_err(chart_err)?;
        c.configure_mesh()
            .max_light_lines(2)
            .x_desc("µs")
            .y_labels(0)
            .disable_y_mesh()
            .draw()
            .map_err(chart_err)?;
        let mut at = 0.0;
        let mut rects = Vec::new();
        for (i, (_, ns)) in l.iter().enumerate() {
            let w = ns / 1000.0;
            rects.push(Rectangle::new(
                [(at, 0.2), (at + w, 0.8)],
                color(i).filled(),
            ));
            at += w;
        }
        c.draw_series(rects).map_err(chart_err)?;
        root.present().map_err(chart_err)?;
    }
    let mut t = String::from("<table id=\"layers\"><tr><th>layer</th><th>µs per request</th></tr>");
    for (i, (name, ns)) in l.iter().enumerate() {
        let RGBColor(r, g, b) = color(i);
        let _ = write!(
            t,
            "<tr><td><span style=\"display:inline-block;width:12px;height:12px;margin-right:6px;background:rgb({r},{g},{b})\"></span>{name}</td><td data-value=\"{}\">{:.1}</td></tr>",
            ns / 1000.0,
            ns / 1000.0
        );
    }
    let _ = write!(
        t,
        "<tr><td>total</td><td data-value=\"{total_us}\">{total_us:.1}</td></tr></table>"
    );
    Ok(svg + &t)
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// The slowest I/Os as rows of segments, one per wait between two steps of the path,
/// coloured by the step that ended the wait; the longest wait of each outlined.
fn explain_svg(ios: &[HtmlIo]) -> io::Result<String> {
    // Colours by the step that ends a segment, in order of first appearance.
    let mut kinds: Vec<&str> = Vec::new();
    for io in ios {
        for (w, _) in io.steps.iter().skip(1) {
            if !kinds.contains(&w.as_str()) {
                kinds.push(w);
            }
        }
    }
    let span = |io: &HtmlIo| {
        let t0 = io.steps.first().map_or(0, |s| s.1);
        io.steps.last().map_or(0, |s| s.1.saturating_sub(t0))
    };
    let max_ms = ios.iter().map(span).max().unwrap_or(0) as f64 / 1e6 * 1.05;
    let n = ios.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 90 + 30 * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let mut c = ChartBuilder::on(&root)
            .caption("the slowest I/Os: where each waited", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(40)
            .build_cartesian_2d(0f64..max_ms.max(1e-6), 0f64..n as f64)
            .map_err(chart_err)?;
        c.configure_mesh()
            .max_light_lines(2)
            .x_desc("ms since fio prepared the I/O")
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| {
                let i = y.floor() as usize;
                if (y - y.floor() - 0.5).abs() < 0.26 && i < n {
                    format!("#{}", n - i)
                } else {
                    String::new()
                }
            })
            .disable_y_mesh()
            .draw()
            .map_err(chart_err)?;
        for (k, kind) in kinds.iter().enumerate() {
            let color = color(k);
            let mut rects = Vec::new();
            for (row, io) in ios.iter().enumerate() {
                let t0 = io.steps.first().map_or(0, |s| s.1);
                let y = (n - 1 - row) as f64;
                for i in 1..io.steps.len() {
                    if io.steps[i].0 != *kind {
                        continue;
                    }
                    let a = io.steps[i - 1].1.saturating_sub(t0) as f64 / 1e6;
                    let b = io.steps[i].1.saturating_sub(t0) as f64 / 1e6;
                    rects.push(Rectangle::new([(a, y + 0.2), (b, y + 0.8)], color.filled()));
                    if i == io.longest {
                        rects.push(Rectangle::new(
                            [(a, y + 0.15), (b, y + 0.85)],
                            BLACK.stroke_width(2),
                        ));
                    }
                }
            }
            c.draw_series(rects).map_err(chart_err)?;
        }
        root.present().map_err(chart_err)?;
    }
    // The legend as HTML below the chart, so it never covers a bar.
    let mut legend = String::from("<ul class=\"legend\">");
    for (k, kind) in kinds.iter().enumerate() {
        let RGBColor(r, g, b) = color(k);
        let _ = write!(
            legend,
            "<li><span style=\"background:rgb({r},{g},{b})\"></span>until {}</li>",
            esc(kind)
        );
    }
    legend.push_str("</ul>");
    Ok(svg + &legend)
}

/// The slowest I/Os: the chart, then per I/O its steps and who overtook it.
fn explain_section(h: &mut String, ios: &[HtmlIo]) -> io::Result<()> {
    let _ = writeln!(
        h,
        "<h2>The slowest I/Os</h2>\n<div class=\"chart explain\">{}</div>",
        explain_svg(ios)?
    );
    for (k, io) in ios.iter().enumerate() {
        let _ = writeln!(
            h,
            "<h3>#{} {}</h3>\n<table class=\"explain\"><tr><th>step</th><th>t (s)</th><th>waited (ms)</th></tr>",
            k + 1,
            esc(&io.title)
        );
        for (i, (what, at)) in io.steps.iter().enumerate() {
            let waited = match i {
                0 => String::new(),
                _ => format!("{:.3}", at.saturating_sub(io.steps[i - 1].1) as f64 / 1e6),
            };
            let mark = if i == io.longest && i > 0 {
                " class=\"longest\""
            } else {
                ""
            };
            let _ = writeln!(
                h,
                "<tr{mark}><td>{}</td><td>{:.6}</td><td>{waited}</td></tr>",
                esc(what),
                *at as f64 / 1e9
            );
        }
        h.push_str("</table>\n");
        if let Some(r) = &io.request {
            let _ = writeln!(h, "<p>request: {}</p>", esc(r));
        }
        let _ = writeln!(h, "<p>{}</p>", esc(&io.overtaken));
    }
    Ok(())
}

/// Write the page.
pub fn write_html(r: &RunReport, x: &HtmlExtra, out: &mut dyn Write) -> io::Result<()> {
    let mut h = String::new();
    let title = format!(
        "blksim: {} on {}",
        r.jobs
            .iter()
            .map(|j| j.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        x.device
    );
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>{STYLE}</style></head><body>\n",
        esc(&title)
    );
    let _ = writeln!(
        h,
        "<h1>{}</h1>\n<p>{} · {}</p>",
        esc(&title),
        esc(&r.fio_version),
        esc(&r.time)
    );
    let _ = writeln!(
        h,
        "<p>Device <b>{}</b>: {}</p>",
        esc(&x.device),
        esc(&x.description)
    );
    let _ = writeln!(
        h,
        "<h2>Results</h2>\n<table id=\"results\"><tr><th>job</th><th>dir</th><th>IOPS</th><th>bw KiB/s</th><th>clat mean µs</th><th>clat p99 µs</th><th>I/Os</th></tr>"
    );
    for j in &r.jobs {
        for (d, name) in DDIRS.iter().enumerate() {
            let st = &j.stats.dir[d];
            if st.total_ios == 0 {
                continue;
            }
            let secs = st.runtime_ms.max(1) as f64 / 1000.0;
            let p99 = st
                .clat
                .hist
                .as_ref()
                .map(|hh| hh.percentiles_with_nr(&[99.0], st.clat.samples)[0] as f64)
                .unwrap_or(f64::NAN);
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{name}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&j.name),
                st.total_ios as f64 / secs,
                st.io_bytes as f64 / 1024.0 / secs,
                us(st.clat.mean),
                us(p99),
                st.total_ios
            );
        }
    }
    h.push_str("</table>\n<h2>Completion latency</h2>\n");
    for (i, j) in r.jobs.iter().enumerate() {
        if let Some(svg) = cdf_svg(r, i)? {
            let _ = writeln!(
                h,
                "<div class=\"chart cdf\" data-job=\"{}\">{svg}</div>",
                esc(&j.name)
            );
        }
    }
    h.push_str("<h2>IOPS and bandwidth over time</h2>\n");
    for (i, j) in r.jobs.iter().enumerate() {
        for (bw, class) in [(false, "iops"), (true, "bw")] {
            if let Some(svg) = rate_svg(r, i, bw)? {
                let _ = writeln!(
                    h,
                    "<div class=\"chart {class}\" data-job=\"{}\">{svg}</div>",
                    esc(&j.name)
                );
            }
        }
    }
    if let Some(d) = &r.depth {
        h.push_str("<h2>Queue depth and device busy over time</h2>\n");
        if let Some(svg) = depth_svg(d)? {
            let _ = writeln!(h, "<div class=\"chart depth\">{svg}</div>");
        }
        if let Some(svg) = busy_svg(d)? {
            let _ = writeln!(h, "<div class=\"chart busy\">{svg}</div>");
        }
        // The whole run's figures: Little's law makes each stage's mean depth its
        // throughput times its mean time.
        h.push_str("<table id=\"depth\"><tr><th>stage</th><th>mean requests</th></tr>\n");
        for s in (0..d.names.len()).filter(|&s| d.seen(s)) {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td data-value=\"{}\">{:.3}</td></tr>",
                esc(d.names[s]),
                d.mean_depth(s),
                d.mean_depth(s)
            );
        }
        let _ = writeln!(
            h,
            "<tr><td>device busy (util)</td><td data-value=\"{}\">{:.2} %</td></tr></table>",
            d.util(),
            d.util() * 100.0
        );
    }
    if !x.explain.is_empty() {
        explain_section(&mut h, &x.explain)?;
    }
    if let Some(b) = &r.blksim {
        let l = layers(b);
        if !l.is_empty() {
            let _ = writeln!(
                h,
                "<h2>Where the time went</h2>\n<div class=\"chart layers\">{}</div>",
                layers_svg(&l)?
            );
        }
    }
    h.push_str("<h2>Job options</h2>\n<table id=\"options\"><tr><th>job</th><th>option</th><th>value</th></tr>\n");
    for (k, v) in &r.global_options {
        let _ = writeln!(
            h,
            "<tr><td>[global]</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            esc(v)
        );
    }
    for j in &r.jobs {
        for (k, v) in &j.job_options {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&j.name),
                esc(k),
                esc(v)
            );
        }
    }
    h.push_str("</table>\n<h2>Device parameters (not table defaults)</h2>\n<table id=\"params\"><tr><th>key</th><th>value</th><th>set at</th></tr>\n");
    for (k, v, o) in &x.params {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            esc(v),
            esc(o)
        );
    }
    h.push_str("</table>\n</body></html>\n");
    out.write_all(h.as_bytes())
}

/// One table of `blksim compare`, with the files' CDFs for its job and direction.
pub struct HtmlTable {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Per file: its label and completion-latency CDF (µs, fraction).
    pub cdfs: Vec<(String, Vec<(f64, f64)>)>,
}

/// `blksim compare --output-format=html`: the files, then per job and direction the
/// comparison table and the files' CDFs overlaid.
pub fn write_compare_html(
    files: &[String],
    tables: &[HtmlTable],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>blksim compare</title>\n<style>{STYLE}</style></head><body>\n<h1>blksim compare</h1>\n<ul id=\"files\">"
    );
    for f in files {
        let _ = write!(h, "<li>{}</li>", esc(f));
    }
    h.push_str("</ul>\n");
    for (k, t) in tables.iter().enumerate() {
        let _ = writeln!(
            h,
            "<h2>{}</h2>\n<table id=\"compare-{k}\"><tr>{}</tr>",
            esc(&t.title),
            t.header
                .iter()
                .map(|c| format!("<th>{}</th>", esc(c)))
                .collect::<String>()
        );
        for row in &t.rows {
            let _ = writeln!(
                h,
                "<tr>{}</tr>",
                row.iter()
                    .map(|c| format!("<td>{}</td>", esc(c)))
                    .collect::<String>()
            );
        }
        h.push_str("</table>\n");
        let series: Vec<CdfSeries> = t
            .cdfs
            .iter()
            .enumerate()
            .map(|(i, (label, pts))| (label.as_str(), color(i), pts.clone(), Vec::new()))
            .collect();
        if !series.is_empty() {
            let _ = writeln!(
                h,
                "<div class=\"chart cdf\">{}</div>",
                cdf_chart(&format!("{}: completion latency CDF", t.title), &series)?
            );
        }
    }
    h.push_str("</body></html>\n");
    out.write_all(h.as_bytes())
}
