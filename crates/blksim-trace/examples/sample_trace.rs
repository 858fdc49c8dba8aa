//! Writes a small trace: `cargo run -p blksim-trace --example sample_trace -- DIR`.
use blksim_trace::{Action, BlktraceWriter, Op, ReqFlags, TraceEvent};

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "trace-out".into());
    let mut w = BlktraceWriter::create(dir.as_ref(), "mmcblk0", (179, 0))?;
    w.set_comm(1000, "fio");
    w.message(0, 0, 0, "blksim start")?;
    let q = TraceEvent {
        pid: 1000,
        flags: ReqFlags::SYNC,
        ..TraceEvent::new(5_000, Action::Queue, Op::Write, 2048, 4096)
    };
    w.write(&TraceEvent {
        time_ns: 4_000,
        action: Action::Remap { from_dev: (179, 1) },
        pdu: 0,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 4_500,
        action: Action::Split,
        pdu: 2056,
        ..q
    })?;
    w.write(&q)?;
    w.write(&TraceEvent {
        time_ns: 5_400,
        action: Action::GetRq,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 5_500,
        action: Action::Plug,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 5_600,
        action: Action::Queue,
        sector: 2056,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 5_700,
        action: Action::BackMerge,
        sector: 2056,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 5_800,
        action: Action::Unplug,
        pdu: 1,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 5_900,
        action: Action::Insert,
        bytes: 8192,
        ..q
    })?;
    w.message(6_000, 0, 0, "mmc hsq slot=3 start tag=17")?;
    w.write(&TraceEvent {
        time_ns: 6_100,
        action: Action::Issue,
        bytes: 8192,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 6_150,
        action: Action::Requeue,
        bytes: 8192,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 6_200,
        action: Action::Issue,
        bytes: 8192,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 9_000,
        action: Action::UnplugTimer,
        pdu: 3,
        cpu: 1,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 26_200,
        action: Action::Complete,
        bytes: 8192,
        pid: 0,
        cpu: 1,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 30_000,
        action: Action::Queue,
        op: Op::Flush,
        flags: ReqFlags::NONE,
        sector: 0,
        bytes: 0,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 30_100,
        action: Action::Queue,
        op: Op::Discard,
        flags: ReqFlags::NONE,
        sector: 4096,
        bytes: 1 << 20,
        ..q
    })?;
    w.write(&TraceEvent {
        time_ns: 30_200,
        action: Action::Complete,
        op: Op::Read,
        error: -5,
        flags: ReqFlags::FUA | ReqFlags::META,
        sector: 100,
        bytes: 512,
        ..q
    })?;
    w.finish()
}
