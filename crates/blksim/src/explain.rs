//! `blksim run --explain=N`: the slowest I/Os as text (stderr) and JSON (`blksim.explain`).

use blksim_report::JsonValue;
use blksim_sim::engine::explain::ExplainRec;
use blksim_sim::engine::SimOutput;
use std::fmt::Write as _;

const DDIR: [&str; 3] = ["read", "write", "trim"];

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The steps of an I/O's path: (what happened, when). Without a trail (no request: a
/// null engine), only fio's own.
fn steps(out: &SimOutput, r: &ExplainRec) -> Vec<(&'static str, u64)> {
    let labels = out.trail_labels;
    let mut s = vec![("prepared by fio", r.start), ("issued by fio", r.issue)];
    if let Some(t) = r.trail {
        // A bio merged into an older request: that request was made before this I/O.
        if t.alloc >= r.issue {
            s.push(("request made (blk_mq_submit_bio)", t.alloc));
        }
        if t.elv && t.insert >= r.issue {
            s.push(("inserted into the elevator", t.insert));
        }
        if t.started && t.issue >= r.issue {
            s.push(("issued to the driver (queue_rq)", t.issue));
        }
        if let Some(d) = t.drv.filter(|d| d.on_bus >= r.issue) {
            if d.queued >= t.issue && d.queued > 0 {
                s.push((labels.queued, d.queued));
            }
            s.push((labels.on_bus, d.on_bus));
            s.push((labels.device_done, d.device_done));
        }
        s.push(("ended by the driver (blk_mq_end_request)", t.complete));
    }
    s.push(("reaped by fio", r.reaped));
    s
}

fn job(out: &SimOutput, task: u32) -> String {
    let name = out
        .tasks
        .get(task as usize)
        .map_or("?", |t| t.name.as_str());
    format!("'{name}' ({})", task + 1)
}

/// "job 'a' (1) read of 4096 B at offset 8192: latency 1.987 ms".
fn headline(out: &SimOutput, r: &ExplainRec) -> String {
    format!(
        "job {} {} of {} B at offset {}: latency {}",
        job(out, r.task),
        DDIR[r.ddir.min(2)],
        r.len,
        r.offset,
        ms(r.latency())
    )
}

/// The block-layer request the I/O became, if it was traced.
fn request(r: &ExplainRec) -> Option<String> {
    r.trail.map(|t| {
        format!(
            "sector {} + {}, hctx {}, driver tag {}",
            t.sector, t.nr_sectors, t.hctx, t.tag
        )
    })
}

/// "overtaken by N I/Os issued after it; first: ...".
fn overtaken(out: &SimOutput, r: &ExplainRec) -> String {
    let mut o = format!("overtaken by {} I/Os issued after it", r.overtakers);
    if !r.named.is_empty() {
        let names: Vec<String> = r
            .named
            .iter()
            .map(|n| {
                format!(
                    "job {} {} at {} (tag {})",
                    job(out, n.task),
                    DDIR[n.ddir.min(2)],
                    n.offset,
                    n.tag
                )
            })
            .collect();
        let _ = write!(o, "; first: {}", names.join(", "));
    }
    o
}

/// The step that ends the longest wait (0 when there is none).
fn longest(st: &[(&'static str, u64)]) -> usize {
    (1..st.len())
        .max_by_key(|&i| (st[i].1.saturating_sub(st[i - 1].1), std::cmp::Reverse(i)))
        .unwrap_or(0)
}

/// The text report: per I/O its steps with the time since the previous one, the longest
/// marked, and who overtook it.
pub fn text(out: &SimOutput) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "slowest I/Os ({}):", out.explain.len());
    for (k, r) in out.explain.iter().enumerate() {
        let _ = writeln!(o, "#{} {}", k + 1, headline(out, r));
        let st = steps(out, r);
        let longest = longest(&st);
        for (i, (what, at)) in st.iter().enumerate() {
            let delta = if i == 0 {
                format!("t={:.6} s", *at as f64 / 1e9)
            } else {
                format!("+{}", ms(at.saturating_sub(st[i - 1].1)))
            };
            let mark = if i == longest && i > 0 {
                "   <- longest wait"
            } else {
                ""
            };
            let _ = writeln!(o, "    {delta:>16}  {what}{mark}");
        }
        if let Some(req) = request(r) {
            let _ = writeln!(o, "    request: {req}");
        }
        let _ = writeln!(o, "    {}", overtaken(out, r));
    }
    o
}

/// The same for the HTML report.
pub fn html(out: &SimOutput) -> Vec<blksim_report::html::HtmlIo> {
    out.explain
        .iter()
        .map(|r| {
            let st = steps(out, r);
            blksim_report::html::HtmlIo {
                title: headline(out, r),
                longest: longest(&st),
                steps: st.into_iter().map(|(w, t)| (w.to_string(), t)).collect(),
                request: request(r),
                overtaken: overtaken(out, r),
            }
        })
        .collect()
}

/// `blksim.explain`: the same as JSON.
pub fn json(out: &SimOutput) -> JsonValue {
    let mut arr = Vec::new();
    for r in &out.explain {
        let mut e = JsonValue::object();
        e.push("job", JsonValue::Str(job(out, r.task)))
            .push("ddir", JsonValue::Str(DDIR[r.ddir.min(2)].into()))
            .push("offset", JsonValue::UInt(r.offset))
            .push("len", JsonValue::UInt(r.len))
            .push("lat_ns", JsonValue::UInt(r.latency()));
        let mut steps_json = Vec::new();
        for (what, at) in steps(out, r) {
            let mut s = JsonValue::object();
            s.push("step", JsonValue::Str(what.into()))
                .push("t_ns", JsonValue::UInt(at));
            steps_json.push(s);
        }
        e.push("steps", JsonValue::Array(steps_json));
        if let Some(t) = r.trail {
            e.push("driver_tag", JsonValue::Int(t.tag as i64))
                .push("sector", JsonValue::UInt(t.sector));
        }
        e.push("overtakers", JsonValue::UInt(r.overtakers));
        let named = r
            .named
            .iter()
            .map(|n| {
                let mut x = JsonValue::object();
                x.push("job", JsonValue::Str(job(out, n.task)))
                    .push("ddir", JsonValue::Str(DDIR[n.ddir.min(2)].into()))
                    .push("offset", JsonValue::UInt(n.offset))
                    .push("driver_tag", JsonValue::Int(n.tag as i64));
                x
            })
            .collect();
        e.push("first_overtakers", JsonValue::Array(named));
        arr.push(e);
    }
    JsonValue::Array(arr)
}
