//! Feed a synthetic trace to the real `blkparse` and `btt` (Debian package `blktrace`) and
//! check what they report against the synthetic timings.
//!
//! Needs `blkparse` and `btt` on PATH: `apt-get update && apt-get install -y blktrace`
//! (the project's `.ci/run` does this). Without them the test fails. To skip it on purpose,
//! set `BLKSIM_SKIP_REAL_TOOLS=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use blksim_trace::{Action, BlktraceWriter, Op, ReqFlags, TraceEvent};

const DEV: &str = "mmcblk0";
const MAJ: u32 = 179;
const MIN: u32 = 0;
const FIO_PID: [u32; 2] = [2000, 2001];
const IRQ_PID: u32 = 0;

fn tools_available() -> bool {
    if std::env::var("BLKSIM_SKIP_REAL_TOOLS").as_deref() == Ok("1") {
        eprintln!("BLKSIM_SKIP_REAL_TOOLS=1: skipping the blkparse/btt test");
        return false;
    }
    for tool in ["blkparse", "btt"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(
            found,
            "`{tool}` is not on PATH. Install the real blktrace tools first: \
             `apt-get update && apt-get install -y blktrace` \
             (or set BLKSIM_SKIP_REAL_TOOLS=1 to skip this test deliberately)"
        );
    }
    true
}

/// One synthetic request and its timeline.
struct Req {
    cpu: u32,
    op: Op,
    flags: ReqFlags,
    /// (time, sector) of each bio's Q; the first one gets the G.
    qs: Vec<(u64, u64)>,
    /// Merge of the second bio, if any: (time, action).
    merge: Option<(u64, Action)>,
    g: u64,
    plug: Option<(u64, u64)>,
    i: u64,
    d: u64,
    c: u64,
    sector: u64,
    bytes: u32,
}

fn synthetic() -> Vec<Req> {
    let mut reqs = Vec::new();
    for i in 0..100u64 {
        let cpu = (i % 2) as u32;
        let (op, flags) = if i == 50 {
            (Op::Discard, ReqFlags::NONE)
        } else if i % 3 == 0 {
            (Op::Write, ReqFlags::SYNC)
        } else {
            (Op::Read, ReqFlags::NONE)
        };
        let t0 = 1_000 + i * 7_000; // several requests in flight at once
        let s = 8_192 + i * 256;
        let g = t0 + 300 + (i % 5) * 37;
        let mut qs = vec![(t0, s)];
        let mut merge = None;
        let (mut sector, mut bytes) = (s, 4096u32);
        if i % 10 == 3 || i % 10 == 7 {
            let back = i % 10 == 3;
            let qt = g + 100;
            let qsec = if back { s + 8 } else { s - 8 };
            qs.push((qt, qsec));
            merge = Some((
                qt + 80,
                if back {
                    Action::BackMerge
                } else {
                    Action::FrontMerge
                },
            ));
            bytes = 8192;
            if !back {
                sector = s - 8;
            }
        }
        let plug = (i % 4 != 0).then_some((g + 50, g + 250));
        let ins = g + 400 + (i % 3) * 111;
        let d = ins + 1_000 + (i % 11) * 173;
        let c = d + 20_000 + (i % 13) * 1_234;
        reqs.push(Req {
            cpu,
            op,
            flags,
            qs,
            merge,
            g,
            plug,
            i: ins,
            d,
            c,
            sector,
            bytes,
        });
    }
    reqs
}

#[derive(Clone)]
enum Item {
    Ev(TraceEvent),
    Msg(u64, u32, &'static str),
}

fn items(reqs: &[Req]) -> Vec<Item> {
    let mut v = vec![Item::Msg(0, 0, "blksim start")];
    for (n, r) in reqs.iter().enumerate() {
        let pid = FIO_PID[r.cpu as usize];
        let base = TraceEvent {
            pid,
            cpu: r.cpu,
            flags: r.flags,
            ..TraceEvent::new(0, Action::Queue, r.op, 0, 0)
        };
        let (q0, s0) = r.qs[0];
        v.push(Item::Ev(TraceEvent {
            time_ns: q0,
            sector: s0,
            bytes: 4096,
            ..base
        }));
        v.push(Item::Ev(TraceEvent {
            time_ns: r.g,
            action: Action::GetRq,
            sector: s0,
            bytes: 4096,
            ..base
        }));
        if let Some((p, _)) = r.plug {
            v.push(Item::Ev(TraceEvent {
                time_ns: p,
                action: Action::Plug,
                ..base
            }));
        }
        if let (Some(&(qt, qsec)), Some((mt, ma))) = (r.qs.get(1), r.merge) {
            v.push(Item::Ev(TraceEvent {
                time_ns: qt,
                sector: qsec,
                bytes: 4096,
                ..base
            }));
            v.push(Item::Ev(TraceEvent {
                time_ns: mt,
                action: ma,
                sector: qsec,
                bytes: 4096,
                ..base
            }));
        }
        if let Some((_, u)) = r.plug {
            v.push(Item::Ev(TraceEvent {
                time_ns: u,
                action: Action::Unplug,
                pdu: 1,
                ..base
            }));
        }
        let rq = TraceEvent {
            sector: r.sector,
            bytes: r.bytes,
            ..base
        };
        v.push(Item::Ev(TraceEvent {
            time_ns: r.i,
            action: Action::Insert,
            ..rq
        }));
        v.push(Item::Ev(TraceEvent {
            time_ns: r.d,
            action: Action::Issue,
            ..rq
        }));
        if n == 10 {
            v.push(Item::Msg(r.d + 5, r.cpu, "mmc hsq slot=3 start tag=17"));
        }
        v.push(Item::Ev(TraceEvent {
            time_ns: r.c,
            action: Action::Complete,
            pid: IRQ_PID,
            cpu: 1 - r.cpu,
            ..rq
        }));
    }
    let time = |it: &Item| match it {
        Item::Ev(e) => e.time_ns,
        Item::Msg(t, _, _) => *t,
    };
    v.sort_by_key(time); // stable: keeps each request's order for equal times
    v
}

/// Write the trace; return, per written block event, its (per-CPU) sequence number.
fn write(dir: &Path, items: &[Item]) -> Vec<(TraceEvent, u32)> {
    let mut w = BlktraceWriter::create(dir, DEV, (MAJ, MIN)).unwrap();
    w.set_comm(FIO_PID[0], "fio");
    w.set_comm(FIO_PID[1], "fio");
    w.set_comm(IRQ_PID, "swapper/0");
    let mut seq = BTreeMap::<u32, u32>::new();
    let mut out = Vec::new();
    for it in items {
        match it {
            Item::Ev(e) => {
                w.write(e).unwrap();
                let s = seq.entry(e.cpu).or_default();
                *s += 1;
                out.push((*e, *s));
            }
            Item::Msg(t, cpu, text) => w.message(*t, *cpu, 0, text).unwrap(),
        }
    }
    w.finish().unwrap();
    out
}

fn run(dir: &Path, prog: &str, args: &[&str]) -> String {
    let out = Command::new(prog)
        .args(args)
        .current_dir(dir) // btt drops <dev>_iops_fp.dat etc. into the working directory
        .output()
        .unwrap_or_else(|e| panic!("running {prog}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{prog} {args:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// blkparse's default line prefix: `"%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s "`.
fn prefix(cpu: u32, seq: &str, t: u64, pid: u32, act: &str, rwbs: &str) -> String {
    format!(
        "{MAJ:>3},{MIN:<3} {cpu:>2} {seq:>8} {:>5}.{:09} {pid:>5} {act:>2} {rwbs:>3} ",
        t / 1_000_000_000,
        t % 1_000_000_000
    )
}

fn line_for(e: &TraceEvent, seq: u32) -> String {
    let p = prefix(
        e.cpu,
        &seq.to_string(),
        e.time_ns,
        e.pid,
        e.action.letter(),
        &e.rwbs(),
    );
    let sect = e.bytes >> 9;
    let comm = if e.pid == IRQ_PID { "swapper/0" } else { "fio" };
    match e.action {
        Action::Complete => format!("{p}{} + {sect} [{}]", e.sector, e.error),
        Action::Plug => format!("{p}[{comm}]"),
        Action::Unplug => format!("{p}[{comm}] {}", e.pdu),
        _ => format!("{p}{} + {sect} [{comm}]", e.sector),
    }
}

/// `(count, KiB)` of one blkparse summary field in the `Total (dev):` block.
fn summary(text: &str, field: &str) -> (u64, u64) {
    let total = text
        .split(&format!("Total ({DEV}):"))
        .nth(1)
        .expect("blkparse printed a Total block");
    for half in total.lines().flat_map(|l| l.split('\t')) {
        let half = half.trim();
        if let Some(rest) = half.strip_prefix(&format!("{field}:")) {
            let mut parts = rest.split(',');
            let n = parts
                .next()
                .unwrap()
                .trim()
                .replace(',', "")
                .parse()
                .unwrap();
            let kib = parts
                .next()
                .map(|k| k.trim().trim_end_matches("KiB").parse().unwrap())
                .unwrap_or(0);
            return (n, kib);
        }
    }
    panic!("no `{field}` in blkparse summary:\n{total}");
}

/// `(avg seconds, N)` of a row of btt's "All Devices" table.
fn btt_row(avg: &str, name: &str) -> (f64, u64) {
    let all = avg
        .split("==================== Device Overhead")
        .next()
        .unwrap();
    let line = all
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} row in btt output:\n{all}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[2].parse().unwrap(), f[4].parse().unwrap())
}

fn mean(xs: &[u64]) -> f64 {
    xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64 / 1e9
}

#[test]
fn blkparse_and_btt_read_our_trace() {
    if !tools_available() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("blksim-trace-real-tools");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let reqs = synthetic();
    let items = items(&reqs);
    let written = write(&dir, &items);

    // blkparse -i DIR/mmcblk0 -d DIR/mmcblk0.bin -o DIR/mmcblk0.txt
    let input = dir.join(DEV);
    let bin = dir.join(format!("{DEV}.bin"));
    let txt = dir.join(format!("{DEV}.txt"));
    let stdout = run(
        &dir,
        "blkparse",
        &[
            "-i",
            input.to_str().unwrap(),
            "-d",
            bin.to_str().unwrap(),
            "-o",
            txt.to_str().unwrap(),
        ],
    );
    assert!(
        stdout.contains(&format!("{DEV}.blktrace.0 added")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{DEV}.blktrace.1 added")),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&txt).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    // --- text lines ---------------------------------------------------------------------
    let has = |want: &str| {
        assert!(
            lines.contains(&want),
            "blkparse output lacks line\n{want:?}\n---\n{text}"
        );
    };
    // The clock anchor message at t=0 and the MMC message.
    has(&format!("{}blksim start", prefix(0, "0", 0, 0, "m", "N")));
    let d10 = reqs[10].d + 5;
    has(&format!(
        "{}mmc hsq slot=3 start tag=17",
        prefix(reqs[10].cpu, "0", d10, 0, "m", "N")
    ));
    // A handful of block events, one of each kind.
    let pick = |pred: &dyn Fn(&TraceEvent) -> bool| {
        written
            .iter()
            .find(|(e, _)| pred(e))
            .copied()
            .expect("event present")
    };
    let checks = [
        pick(&|e| e.action == Action::Queue && e.op == Op::Read),
        pick(&|e| e.action == Action::Queue && e.op == Op::Write),
        pick(&|e| e.action == Action::Queue && e.op == Op::Discard),
        pick(&|e| e.action == Action::GetRq),
        pick(&|e| e.action == Action::Plug),
        pick(&|e| e.action == Action::Unplug),
        pick(&|e| e.action == Action::BackMerge),
        pick(&|e| e.action == Action::FrontMerge),
        pick(&|e| e.action == Action::Insert && e.op == Op::Write),
        pick(&|e| e.action == Action::Issue && e.op == Op::Write),
        pick(&|e| e.action == Action::Issue && e.op == Op::Read),
        pick(&|e| e.action == Action::Complete && e.op == Op::Read && e.bytes == 8192),
        pick(&|e| e.action == Action::Complete && e.op == Op::Write),
    ];
    for (e, seq) in checks {
        has(&line_for(&e, seq));
    }
    // Spot-check the RWBS column of the kinds we expect to see.
    assert!(text.contains("  Q  WS 8192 + 8 [fio]"), "{text}");
    assert!(text.contains("  Q   D "), "discard shows as D");

    // Every block event and message appears once, in time order.
    let n_events = written.len() as u64;
    let n_msgs = 2;
    let body: Vec<&&str> = lines.iter().filter(|l| l.starts_with("179,0 ")).collect();
    assert_eq!(body.len() as u64, n_events + n_msgs);
    let times: Vec<f64> = body
        .iter()
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "blkparse output is time ordered"
    );

    // --- summary --------------------------------------------------------------------------
    let is_w = |e: &TraceEvent| matches!(e.op, Op::Write | Op::Discard);
    let tally = |pred: &dyn Fn(&TraceEvent) -> bool| -> (u64, u64) {
        let sel: Vec<_> = written.iter().map(|(e, _)| e).filter(|e| pred(e)).collect();
        (
            sel.len() as u64,
            sel.iter().map(|e| (e.bytes >> 10) as u64).sum(),
        )
    };
    let merges = |e: &TraceEvent| matches!(e.action, Action::BackMerge | Action::FrontMerge);
    assert_eq!(
        summary(&text, "Reads Queued"),
        tally(&|e| e.action == Action::Queue && !is_w(e))
    );
    assert_eq!(
        summary(&text, "Writes Queued"),
        tally(&|e| e.action == Action::Queue && is_w(e))
    );
    assert_eq!(
        summary(&text, "Read Dispatches"),
        tally(&|e| e.action == Action::Issue && !is_w(e))
    );
    assert_eq!(
        summary(&text, "Write Dispatches"),
        tally(&|e| e.action == Action::Issue && is_w(e))
    );
    assert_eq!(
        summary(&text, "Reads Completed"),
        tally(&|e| e.action == Action::Complete && !is_w(e))
    );
    assert_eq!(
        summary(&text, "Writes Completed"),
        tally(&|e| e.action == Action::Complete && is_w(e))
    );
    assert_eq!(
        summary(&text, "Read Merges"),
        tally(&|e| merges(e) && !is_w(e))
    );
    assert_eq!(
        summary(&text, "Write Merges"),
        tally(&|e| merges(e) && is_w(e))
    );
    assert_eq!(
        summary(&text, "IO unplugs").0,
        tally(&|e| e.action == Action::Unplug).0
    );
    assert_eq!(
        summary(&text, "Reads Queued").0 + summary(&text, "Writes Queued").0,
        120
    );
    assert!(
        text.contains(&format!("Events ({DEV}): {} entries", n_events + n_msgs)),
        "{text}"
    );
    assert!(text.contains("Skips: 0 forward"));

    // --- btt --------------------------------------------------------------------------------
    // btt -i DIR/mmcblk0.bin -o DIR/btt   (run in DIR)
    run(
        &dir,
        "btt",
        &[
            "-i",
            bin.to_str().unwrap(),
            "-o",
            dir.join("btt").to_str().unwrap(),
        ],
    );
    let avg = std::fs::read_to_string(dir.join("btt.avg")).unwrap();

    let q2c: Vec<u64> = reqs
        .iter()
        .flat_map(|r| r.qs.iter().map(move |(q, _)| r.c - q))
        .collect();
    // btt weights D2C by the number of bios (Qs) merged into the request:
    // update_d2c(iop, n, c_time) -> UPDATE_AVGS_N(d2c, ..., n) in btt/inlines.h.
    let d2c: Vec<u64> = reqs
        .iter()
        .flat_map(|r| r.qs.iter().map(move |_| r.c - r.d))
        .collect();
    let q2g: Vec<u64> = reqs.iter().map(|r| r.g - r.qs[0].0).collect();
    let i2d: Vec<u64> = reqs.iter().map(|r| r.d - r.i).collect();
    for (name, xs) in [("Q2C", &q2c), ("D2C", &d2c), ("Q2G", &q2g), ("I2D", &i2d)] {
        let (got, n) = btt_row(&avg, name);
        let want = mean(xs);
        assert_eq!(n, xs.len() as u64, "btt {name} N\n{avg}");
        assert!(
            (got - want).abs() < 1e-6,
            "btt {name} avg {got:.9} s, synthetic {want:.9} s\n{avg}"
        );
    }
    let msgs = std::fs::read_to_string(dir.join("btt.msg")).unwrap();
    assert!(
        msgs.contains("mmc hsq slot=3 start tag=17"),
        "btt.msg: {msgs}"
    );
}
