//! The on-disk record (`struct blk_io_trace`, version 7), the kernel's constants, and the
//! mapping from a simulated [`TraceEvent`] to the `action` word the kernel would have written.
//!
//! Constants follow `include/uapi/linux/blktrace_api.h` (torvalds/linux); the action word is
//! built the way `__blk_add_trace()` in `kernel/trace/blktrace.c` builds it.

/// `BLK_IO_TRACE_MAGIC` (blktrace_api.h). The low byte of `magic` holds the version.
pub const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;
/// `BLK_IO_TRACE_VERSION`: the 48-byte `struct blk_io_trace` that blkparse 1.x reads.
pub const BLK_IO_TRACE_VERSION: u32 = 0x07;
/// Size of `struct blk_io_trace` (v7); `pdu_len` bytes of payload follow each record.
pub const RECORD_LEN: usize = 48;
/// `BLK_TC_SHIFT`: categories live in the upper 16 bits of `action`.
pub const BLK_TC_SHIFT: u32 = 16;
/// `BLK_TN_MAX_MSG` (kernel/trace/blktrace.c): a message is formatted into a buffer of this
/// size with `vscnprintf`, so at most 127 bytes of text reach the record.
pub const BLK_TN_MAX_MSG: usize = 128;
/// `TASK_COMM_LEN`: the kernel writes `sizeof(tsk->comm)` bytes as the PROCESS payload.
pub const TASK_COMM_LEN: usize = 16;
/// `MINORBITS` (include/linux/kdev_t.h): the kernel's `dev_t` is `major << 20 | minor`.
pub const MINORBITS: u32 = 20;

/// `BLK_TC_ACT(act)`.
pub const fn blk_tc_act(cat: u32) -> u32 {
    cat << BLK_TC_SHIFT
}

/// The kernel's `MKDEV(major, minor)`, as stored in `blk_io_trace.device`.
pub const fn mkdev(major: u32, minor: u32) -> u32 {
    (major << MINORBITS) | (minor & ((1 << MINORBITS) - 1))
}

/// `(MAJOR(dev), MINOR(dev))`.
pub const fn split_dev(dev: u32) -> (u32, u32) {
    (dev >> MINORBITS, dev & ((1 << MINORBITS) - 1))
}

/// Trace categories, `enum blktrace_cat` (blktrace_api.h).
pub mod tc {
    pub const READ: u32 = 1 << 0;
    pub const WRITE: u32 = 1 << 1;
    pub const FLUSH: u32 = 1 << 2;
    pub const SYNC: u32 = 1 << 3;
    pub const QUEUE: u32 = 1 << 4;
    pub const REQUEUE: u32 = 1 << 5;
    pub const ISSUE: u32 = 1 << 6;
    pub const COMPLETE: u32 = 1 << 7;
    pub const FS: u32 = 1 << 8;
    pub const PC: u32 = 1 << 9;
    pub const NOTIFY: u32 = 1 << 10;
    pub const AHEAD: u32 = 1 << 11;
    pub const META: u32 = 1 << 12;
    pub const DISCARD: u32 = 1 << 13;
    pub const DRV_DATA: u32 = 1 << 14;
    pub const FUA: u32 = 1 << 15;
}

/// Action codes, `enum blktrace_act` (the `__BLK_TA_*` values, low 16 bits of `action`).
pub mod ta {
    pub const QUEUE: u32 = 1;
    pub const BACKMERGE: u32 = 2;
    pub const FRONTMERGE: u32 = 3;
    pub const GETRQ: u32 = 4;
    pub const SLEEPRQ: u32 = 5;
    pub const REQUEUE: u32 = 6;
    pub const ISSUE: u32 = 7;
    pub const COMPLETE: u32 = 8;
    pub const PLUG: u32 = 9;
    pub const UNPLUG_IO: u32 = 10;
    pub const UNPLUG_TIMER: u32 = 11;
    pub const INSERT: u32 = 12;
    pub const SPLIT: u32 = 13;
    pub const BOUNCE: u32 = 14;
    pub const REMAP: u32 = 15;
    pub const ABORT: u32 = 16;
    pub const DRV_DATA: u32 = 17;
    /// `__BLK_TA_CGROUP`: a u64 cgroup id precedes the payload. We never write it.
    pub const CGROUP: u32 = 1 << 8;
}

/// Notify codes, `enum blktrace_notify`; full action is `code | BLK_TC_ACT(BLK_TC_NOTIFY)`.
pub mod tn {
    use super::{blk_tc_act, tc};
    pub const PROCESS: u32 = blk_tc_act(tc::NOTIFY);
    pub const TIMESTAMP: u32 = 1 | blk_tc_act(tc::NOTIFY);
    pub const MESSAGE: u32 = 2 | blk_tc_act(tc::NOTIFY);
}

/// The request operation (`REQ_OP_*`, include/linux/blk_types.h).
///
/// `op_is_write()` is `op & 1`: WRITE (1) and DISCARD (3) are writes, READ (0) and FLUSH (2)
/// are not, which is why the kernel records an empty flush as `FN` (READ|FLUSH category, no
/// bytes) and a discard as `D` (WRITE|DISCARD).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Op {
    #[default]
    Read,
    Write,
    /// `REQ_OP_FLUSH`: an empty cache flush.
    Flush,
    /// `REQ_OP_DISCARD` (trim).
    Discard,
}

/// Request flag bits that have a blktrace category (`MASK_TC_BIT` in `__blk_add_trace`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReqFlags(u8);

impl ReqFlags {
    pub const NONE: ReqFlags = ReqFlags(0);
    /// `REQ_SYNC` -> `BLK_TC_SYNC` (`S`).
    pub const SYNC: ReqFlags = ReqFlags(1 << 0);
    /// `REQ_META` -> `BLK_TC_META` (`M`).
    pub const META: ReqFlags = ReqFlags(1 << 1);
    /// `REQ_FUA` -> `BLK_TC_FUA` (`F` after the direction).
    pub const FUA: ReqFlags = ReqFlags(1 << 2);
    /// `REQ_PREFLUSH` -> `BLK_TC_FLUSH` (`F` before the direction).
    pub const PREFLUSH: ReqFlags = ReqFlags(1 << 3);
    /// `REQ_RAHEAD` -> `BLK_TC_AHEAD` (`A`).
    pub const RAHEAD: ReqFlags = ReqFlags(1 << 4);

    pub const fn bits(self) -> u8 {
        self.0
    }
    pub const fn union(self, other: ReqFlags) -> ReqFlags {
        ReqFlags(self.0 | other.0)
    }
    pub const fn contains(self, other: ReqFlags) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for ReqFlags {
    type Output = ReqFlags;
    fn bitor(self, rhs: ReqFlags) -> ReqFlags {
        self.union(rhs)
    }
}

impl std::ops::BitOrAssign for ReqFlags {
    fn bitor_assign(&mut self, rhs: ReqFlags) {
        *self = self.union(rhs);
    }
}

/// A block-layer trace point, with the letter blkparse prints for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `Q`: bio queued (`block_bio_queue`).
    Queue,
    /// `M`: bio back-merged into an existing request (`block_bio_backmerge`).
    BackMerge,
    /// `F`: bio front-merged into an existing request (`block_bio_frontmerge`).
    FrontMerge,
    /// `G`: request allocated for the bio (`block_getrq`).
    GetRq,
    /// `S`: waiting for a request/tag (`block_sleeprq`, older kernels).
    SleepRq,
    /// `R`: request requeued (`block_rq_requeue`).
    Requeue,
    /// `D`: request issued to the driver (`block_rq_issue`).
    Issue,
    /// `C`: request completed (`block_rq_complete`); `error` is the errno.
    Complete,
    /// `P`: plug started (`block_plug`).
    Plug,
    /// `U`: explicit unplug (`block_unplug`, explicit); `pdu` = number of requests.
    Unplug,
    /// `UT`: implicit/timer unplug (`block_unplug`, !explicit); `pdu` = number of requests.
    UnplugTimer,
    /// `I`: request inserted into the scheduler / dispatch list (`block_rq_insert`).
    Insert,
    /// `X`: bio split (`block_split`); `pdu` = the sector where the remainder starts.
    Split,
    /// `A`: bio remapped from another device (`block_bio_remap`); `pdu` = source sector.
    Remap { from_dev: (u32, u32) },
}

/// Which kernel helper records an action; it decides the FS bit and what is zeroed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// `blk_add_trace_bio()` and friends: bio sector/size/opf, no FS bit.
    Bio,
    /// `blk_add_trace_rq()`: request sector/size/cmd_flags, plus `BLK_TC_FS`.
    Rq,
    /// `blk_add_trace_plug/unplug()`: `__blk_add_trace(bt, 0, 0, 0, ...)`.
    Queue,
}

impl Action {
    /// The `__BLK_TA_*` code.
    pub const fn code(self) -> u32 {
        match self {
            Action::Queue => ta::QUEUE,
            Action::BackMerge => ta::BACKMERGE,
            Action::FrontMerge => ta::FRONTMERGE,
            Action::GetRq => ta::GETRQ,
            Action::SleepRq => ta::SLEEPRQ,
            Action::Requeue => ta::REQUEUE,
            Action::Issue => ta::ISSUE,
            Action::Complete => ta::COMPLETE,
            Action::Plug => ta::PLUG,
            Action::Unplug => ta::UNPLUG_IO,
            Action::UnplugTimer => ta::UNPLUG_TIMER,
            Action::Insert => ta::INSERT,
            Action::Split => ta::SPLIT,
            Action::Remap { .. } => ta::REMAP,
        }
    }

    /// `BLK_TA_*`: the code with its fixed category (blktrace_api.h).
    pub const fn base_action(self) -> u32 {
        let cat = match self {
            Action::Requeue => tc::REQUEUE,
            Action::Issue => tc::ISSUE,
            Action::Complete => tc::COMPLETE,
            // BLK_TA_SPLIT and BLK_TA_BOUNCE carry no category of their own.
            Action::Split => 0,
            _ => tc::QUEUE,
        };
        self.code() | blk_tc_act(cat)
    }

    /// The blkparse action letter(s) (`blkparse.c` / `what2act[]` in kernel/trace/blktrace.c).
    pub const fn letter(self) -> &'static str {
        match self {
            Action::Queue => "Q",
            Action::BackMerge => "M",
            Action::FrontMerge => "F",
            Action::GetRq => "G",
            Action::SleepRq => "S",
            Action::Requeue => "R",
            Action::Issue => "D",
            Action::Complete => "C",
            Action::Plug => "P",
            Action::Unplug => "U",
            Action::UnplugTimer => "UT",
            Action::Insert => "I",
            Action::Split => "X",
            Action::Remap { .. } => "A",
        }
    }

    const fn source(self) -> Source {
        match self {
            Action::Requeue | Action::Issue | Action::Complete | Action::Insert => Source::Rq,
            Action::Plug | Action::Unplug | Action::UnplugTimer => Source::Queue,
            _ => Source::Bio,
        }
    }

    fn from_code(code: u32, pdu: &[u8]) -> Option<Action> {
        Some(match code {
            ta::QUEUE => Action::Queue,
            ta::BACKMERGE => Action::BackMerge,
            ta::FRONTMERGE => Action::FrontMerge,
            ta::GETRQ => Action::GetRq,
            ta::SLEEPRQ => Action::SleepRq,
            ta::REQUEUE => Action::Requeue,
            ta::ISSUE => Action::Issue,
            ta::COMPLETE => Action::Complete,
            ta::PLUG => Action::Plug,
            ta::UNPLUG_IO => Action::Unplug,
            ta::UNPLUG_TIMER => Action::UnplugTimer,
            ta::INSERT => Action::Insert,
            ta::SPLIT => Action::Split,
            ta::REMAP => {
                let from = be_u32(pdu, 0);
                Action::Remap {
                    from_dev: split_dev(from),
                }
            }
            _ => return None,
        })
    }
}

/// One simulated block-layer event, in the simulator's terms.
///
/// A plain value: build it with a struct literal or [`TraceEvent::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceEvent {
    /// Virtual time since the start of the run, in ns.
    pub time_ns: u64,
    pub action: Action,
    /// Start sector in 512-byte units.
    pub sector: u64,
    /// Transfer length in bytes (blkparse prints `bytes >> 9` sectors).
    pub bytes: u32,
    pub op: Op,
    pub flags: ReqFlags,
    /// Task that caused the event; name it with `BlktraceWriter::set_comm`.
    pub pid: u32,
    pub cpu: u32,
    /// Negative errno for a failed completion (e.g. `-5` for EIO), else 0.
    pub error: i16,
    /// Integer payload: request count for `Unplug`/`UnplugTimer` (the kernel's `depth`),
    /// remainder sector for `Split`, source sector for `Remap`; ignored otherwise.
    pub pdu: u64,
}

impl TraceEvent {
    /// An event with pid 0, cpu 0, no flags, no error and no payload.
    pub const fn new(time_ns: u64, action: Action, op: Op, sector: u64, bytes: u32) -> Self {
        TraceEvent {
            time_ns,
            action,
            sector,
            bytes,
            op,
            flags: ReqFlags::NONE,
            pid: 0,
            cpu: 0,
            error: 0,
            pdu: 0,
        }
    }

    /// The event as the kernel would record it: plug/unplug carry no sector, size or op
    /// (`__blk_add_trace(bt, 0, 0, 0, what, ...)`), and only completions, splits and remaps
    /// carry an error. This is what [`crate::read_trace`] returns for a written event.
    pub fn as_recorded(&self) -> TraceEvent {
        let mut ev = *self;
        if self.action.source() == Source::Queue {
            ev.sector = 0;
            ev.bytes = 0;
            ev.op = Op::Read;
            ev.flags = ReqFlags::NONE;
        }
        match self.action {
            Action::Complete | Action::Split | Action::Remap { .. } => {}
            _ => ev.error = 0,
        }
        match self.action {
            Action::Unplug | Action::UnplugTimer | Action::Split | Action::Remap { .. } => {}
            _ => ev.pdu = 0,
        }
        ev
    }

    /// The full 32-bit `action` word, built as `__blk_add_trace()` builds `what`:
    /// `BLK_TA_x | ddir_act[op_is_write] | MASK_TC_BIT(SYNC, RAHEAD, META, PREFLUSH, FUA)
    /// | DISCARD/FLUSH by op`, plus `BLK_TC_FS` for request-based actions
    /// (`blk_add_trace_rq()`).
    pub fn action_word(&self) -> u32 {
        let ev = self.as_recorded();
        let mut what = ev.action.base_action();
        if ev.action.source() == Source::Rq {
            what |= blk_tc_act(tc::FS);
        }
        let is_write = matches!(ev.op, Op::Write | Op::Discard);
        what |= blk_tc_act(if is_write { tc::WRITE } else { tc::READ });
        let f = ev.flags;
        if f.contains(ReqFlags::SYNC) {
            what |= blk_tc_act(tc::SYNC);
        }
        if f.contains(ReqFlags::RAHEAD) {
            what |= blk_tc_act(tc::AHEAD);
        }
        if f.contains(ReqFlags::META) {
            what |= blk_tc_act(tc::META);
        }
        if f.contains(ReqFlags::PREFLUSH) {
            what |= blk_tc_act(tc::FLUSH);
        }
        if f.contains(ReqFlags::FUA) {
            what |= blk_tc_act(tc::FUA);
        }
        match ev.op {
            Op::Discard => what |= blk_tc_act(tc::DISCARD),
            Op::Flush => what |= blk_tc_act(tc::FLUSH),
            Op::Read | Op::Write => {}
        }
        what
    }

    /// blkparse's RWBS column for this event (`fill_rwbs()` in kernel/trace/blktrace.c,
    /// same rules as blkparse_fmt.c).
    pub fn rwbs(&self) -> String {
        rwbs_of(self.action_word(), self.as_recorded().bytes)
    }

    /// Decode a data record back into an event. `None` for notify records and unknown codes.
    pub fn decode(raw: &RawRecord) -> Option<TraceEvent> {
        if raw.action & blk_tc_act(tc::NOTIFY) != 0 {
            return None;
        }
        let pdu = raw.payload();
        let action = Action::from_code(raw.action & 0xffff & !ta::CGROUP, pdu)?;
        let cat = raw.action >> BLK_TC_SHIFT;
        let op = if cat & tc::DISCARD != 0 {
            Op::Discard
        } else if cat & tc::WRITE != 0 {
            Op::Write
        } else if cat & tc::FLUSH != 0 {
            Op::Flush
        } else {
            Op::Read
        };
        let mut flags = ReqFlags::NONE;
        if cat & tc::SYNC != 0 {
            flags |= ReqFlags::SYNC;
        }
        if cat & tc::META != 0 {
            flags |= ReqFlags::META;
        }
        if cat & tc::FUA != 0 {
            flags |= ReqFlags::FUA;
        }
        if cat & tc::AHEAD != 0 {
            flags |= ReqFlags::RAHEAD;
        }
        if cat & tc::FLUSH != 0 && op != Op::Flush {
            flags |= ReqFlags::PREFLUSH;
        }
        let pdu_int = match action {
            Action::Unplug | Action::UnplugTimer | Action::Split => be_u64(pdu, 0),
            Action::Remap { .. } => be_u64(pdu, 8),
            _ => 0,
        };
        Some(TraceEvent {
            time_ns: raw.time_ns,
            action,
            sector: raw.sector,
            bytes: raw.bytes,
            op,
            flags,
            pid: raw.pid,
            cpu: raw.cpu,
            error: raw.error as i16,
            pdu: pdu_int,
        })
    }
}

/// RWBS string from a raw action word (kernel `fill_rwbs()`; blkparse_fmt.c `fill_rwbs`).
pub fn rwbs_of(action: u32, bytes: u32) -> String {
    let mut s = String::with_capacity(6);
    if action & !(ta::CGROUP) == tn::MESSAGE {
        s.push('N');
        return s;
    }
    let cat = action >> BLK_TC_SHIFT;
    if cat & tc::FLUSH != 0 {
        s.push('F');
    }
    if cat & tc::DISCARD != 0 {
        s.push('D');
    } else if cat & tc::WRITE != 0 {
        s.push('W');
    } else if bytes != 0 {
        s.push('R');
    } else {
        s.push('N');
    }
    if cat & tc::FUA != 0 {
        s.push('F');
    }
    if cat & tc::AHEAD != 0 {
        s.push('A');
    }
    if cat & tc::SYNC != 0 {
        s.push('S');
    }
    if cat & tc::META != 0 {
        s.push('M');
    }
    s
}

/// One record as stored, header fields plus payload, for inspection and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRecord {
    pub magic: u32,
    pub sequence: u32,
    pub time_ns: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub pid: u32,
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    /// The `pdu_len` bytes that followed the header (including a cgroup id, if flagged).
    pub pdu: Vec<u8>,
}

/// What a record means, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKind {
    Event(TraceEvent),
    /// `BLK_TN_PROCESS`: pid -> command name.
    Process {
        pid: u32,
        comm: String,
    },
    /// `BLK_TN_TIMESTAMP`: wall-clock seconds and nanoseconds at trace start.
    Timestamp {
        sec: u32,
        nsec: u32,
    },
    /// `BLK_TN_MESSAGE`: free text (blkparse prints `m   N <text>`).
    Message(String),
    /// A notify or action code we do not model.
    Other,
}

impl RawRecord {
    /// The record's header as written (little-endian, version 7), `pdu_len` its payload's.
    pub fn header_bytes(&self) -> [u8; RECORD_LEN] {
        let mut h = [0u8; RECORD_LEN];
        put_header(
            &mut h,
            self.sequence,
            self.time_ns,
            self.sector,
            self.bytes,
            self.action,
            self.pid,
            self.device,
            self.cpu,
            self.error,
            self.pdu.len() as u16,
        );
        h
    }

    pub fn version(&self) -> u32 {
        self.magic & 0xff
    }

    pub fn is_notify(&self) -> bool {
        self.action & blk_tc_act(tc::NOTIFY) != 0
    }

    /// The payload without the u64 cgroup id the kernel prepends when `__BLK_TA_CGROUP` is set.
    pub fn payload(&self) -> &[u8] {
        if self.action & ta::CGROUP != 0 && self.pdu.len() >= 8 {
            &self.pdu[8..]
        } else {
            &self.pdu
        }
    }

    pub fn kind(&self) -> RecordKind {
        if !self.is_notify() {
            return match TraceEvent::decode(self) {
                Some(ev) => RecordKind::Event(ev),
                None => RecordKind::Other,
            };
        }
        let p = self.payload();
        match self.action & !ta::CGROUP {
            tn::PROCESS => {
                let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                RecordKind::Process {
                    pid: self.pid,
                    comm: String::from_utf8_lossy(&p[..end]).into_owned(),
                }
            }
            tn::TIMESTAMP if p.len() == 8 => RecordKind::Timestamp {
                sec: u32::from_le_bytes([p[0], p[1], p[2], p[3]]),
                nsec: u32::from_le_bytes([p[4], p[5], p[6], p[7]]),
            },
            tn::MESSAGE => RecordKind::Message(String::from_utf8_lossy(p).into_owned()),
            _ => RecordKind::Other,
        }
    }
}

/// Write the 48-byte header (little-endian, field order of `struct blk_io_trace`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn put_header(
    buf: &mut [u8],
    sequence: u32,
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    pid: u32,
    device: u32,
    cpu: u32,
    error: u16,
    pdu_len: u16,
) {
    buf[0..4].copy_from_slice(&(BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION).to_le_bytes());
    buf[4..8].copy_from_slice(&sequence.to_le_bytes());
    buf[8..16].copy_from_slice(&time.to_le_bytes());
    buf[16..24].copy_from_slice(&sector.to_le_bytes());
    buf[24..28].copy_from_slice(&bytes.to_le_bytes());
    buf[28..32].copy_from_slice(&action.to_le_bytes());
    buf[32..36].copy_from_slice(&pid.to_le_bytes());
    buf[36..40].copy_from_slice(&device.to_le_bytes());
    buf[40..44].copy_from_slice(&cpu.to_le_bytes());
    buf[44..46].copy_from_slice(&error.to_le_bytes());
    buf[46..48].copy_from_slice(&pdu_len.to_le_bytes());
}

/// Longest payload of a data record: `struct blk_io_trace_remap` (16 bytes).
pub(crate) const MAX_EVENT_PDU: usize = 16;

/// Encode `ev` into `buf`, returning the record length (header + payload).
pub(crate) fn encode_event(
    ev: &TraceEvent,
    device: u32,
    sequence: u32,
    buf: &mut [u8; RECORD_LEN + MAX_EVENT_PDU],
) -> usize {
    let rec = ev.as_recorded();
    let pdu_len = match rec.action {
        // blk_add_trace_unplug()/blk_add_trace_split(): `__be64 rpdu = cpu_to_be64(...)`.
        Action::Unplug | Action::UnplugTimer | Action::Split => {
            buf[RECORD_LEN..RECORD_LEN + 8].copy_from_slice(&rec.pdu.to_be_bytes());
            8
        }
        // blk_add_trace_bio_remap(): struct blk_io_trace_remap, all big-endian.
        Action::Remap { from_dev } => {
            let from = mkdev(from_dev.0, from_dev.1);
            buf[RECORD_LEN..RECORD_LEN + 4].copy_from_slice(&from.to_be_bytes());
            buf[RECORD_LEN + 4..RECORD_LEN + 8].copy_from_slice(&device.to_be_bytes());
            buf[RECORD_LEN + 8..RECORD_LEN + 16].copy_from_slice(&rec.pdu.to_be_bytes());
            16
        }
        _ => 0,
    };
    put_header(
        &mut buf[..RECORD_LEN],
        sequence,
        rec.time_ns,
        rec.sector,
        rec.bytes,
        rec.action_word(),
        rec.pid,
        device,
        rec.cpu,
        rec.error as u16,
        pdu_len as u16,
    );
    RECORD_LEN + pdu_len
}

fn be_u32(p: &[u8], off: usize) -> u32 {
    match p.get(off..off + 4) {
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

fn be_u64(p: &[u8], off: usize) -> u64 {
    match p.get(off..off + 8) {
        Some(b) => u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => 0,
    }
}
