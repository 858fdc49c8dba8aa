//! blksim-trace: write the simulator's block-layer events as real blktrace binary files, so
//! the stock `blkparse` and `btt` (Debian package `blktrace`) read them, and read them back.
//!
//! ```no_run
//! use blksim_trace::{Action, BlktraceWriter, Op, ReqFlags, TraceEvent};
//! # fn main() -> std::io::Result<()> {
//! let mut w = BlktraceWriter::create("out".as_ref(), "mmcblk0", (179, 0))?;
//! w.set_comm(1000, "fio");
//! w.message(0, 0, 0, "blksim start")?; // anchors blkparse's clock at virtual time 0
//! let q = TraceEvent { pid: 1000, flags: ReqFlags::SYNC, ..TraceEvent::new(5_000, Action::Queue, Op::Write, 2048, 4096) };
//! w.write(&q)?;
//! w.write(&TraceEvent { time_ns: 5_400, action: Action::GetRq, ..q })?;
//! w.message(6_000, 0, 0, "mmc hsq slot=3 start tag=17")?;
//! w.finish()?;
//! # Ok(()) }
//! ```
//! Then: `blkparse -i out/mmcblk0 -d out/mmcblk0.bin -o out/mmcblk0.txt` and
//! `btt -i out/mmcblk0.bin -o out/mmcblk0.btt`.
//!
//! # Files
//! [`BlktraceWriter::create`]`(dir, devname, (major, minor))` writes one file per CPU,
//! `dir/<devname>.blktrace.<cpu>` exactly as `blktrace -d /dev/<devname>` names them
//! (`/` in the name becomes `_`). Every CPU number below the highest one used gets a file,
//! possibly empty, because blkparse stops at the first missing CPU file. Output is a pure
//! function of the calls made: the same events give byte-identical files (no wall clock;
//! the start TIMESTAMP note says 0.0).
//!
//! Records may be given out of time order; each CPU's file is written in time order. The
//! writer holds records until [`BlktraceWriter::settle`]`(t)` says none earlier than `t` will
//! come (or until `finish`), so a long trace should be settled as it goes.
//!
//! # Record layout (`struct blk_io_trace`, version 7, little-endian, 48 bytes + payload)
//! ```text
//! off size field     value written
//!   0  4  magic      0x65617407 = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION
//!   4  4  sequence   per-CPU counter from 1 for block events; 0 for notes (as the kernel)
//!   8  8  time       TraceEvent::time_ns (virtual ns since run start)
//!  16  8  sector     512-byte sector (0 for P/U/UT and notes)
//!  24  4  bytes      transfer size (0 for P/U/UT and notes)
//!  28  4  action     __BLK_TA_* code (low 16 bits) | BLK_TC_* categories << 16
//!  32  4  pid        TraceEvent::pid
//!  36  4  device     major << 20 | minor (kernel dev_t)
//!  40  4  cpu        TraceEvent::cpu (also selects the file)
//!  44  2  error      completion errno as u16 (C, X, A only), else 0
//!  46  2  pdu_len    payload length
//!  48  -  payload    U/UT: be64 request count; X: be64 remainder sector;
//!                    A: be32 dev_from, be32 dev_to, be64 sector_from;
//!                    PROCESS: 16-byte comm; TIMESTAMP: u32 sec, u32 nsec;
//!                    MESSAGE: the text, no NUL, at most 127 bytes
//! ```
//! The action word is built as `__blk_add_trace()` (kernel/trace/blktrace.c) builds it:
//! the fixed `BLK_TA_*` value (QUEUE category for Q M F G S P U UT I A; REQUEUE for R; ISSUE
//! for D; COMPLETE for C; none for X), `READ` or `WRITE` by `op_is_write()` (write and
//! discard are writes; read and flush are not), `SYNC`/`AHEAD`/`META`/`FLUSH`(preflush)/`FUA`
//! from the flags, `DISCARD` or `FLUSH` from the op, and `FS` for the request-based points
//! (I, D, R, C; `blk_add_trace_rq()`). Plug and unplug are recorded with no sector, size or
//! op, as `blk_add_trace_plug/unplug()` pass zeros. So blkparse prints e.g. `Q   R`,
//! `D  WS`, `C   W`, `Q FWS` (preflush write), `D  FN` (empty flush), `Q   D` (discard).
//!
//! Each (cpu, pid) pair's first event is preceded in that CPU's file by a `BLK_TN_PROCESS`
//! note carrying the name given to [`BlktraceWriter::set_comm`] (default `"blksim"`), so
//! blkparse prints `[fio]` rather than `[(null)]` (kernel `trace_note_tsk()`).
//!
//! # Which simulated events map to which actions
//! | simulator event (blk-mq path)                                  | action | blkparse |
//! |----------------------------------------------------------------|--------|----------|
//! | bio submitted (`submit_bio` -> `blk_mq_submit_bio`)              | Queue  | `Q`      |
//! | bio split to the queue limits (`bio_split_to_limits`)          | Split  | `X`      |
//! | partition bio remapped to the whole disk                        | Remap  | `A`      |
//! | bio merged at the back / front of a plugged or queued request  | BackMerge / FrontMerge | `M` / `F` |
//! | request (tag) allocated for the bio                             | GetRq  | `G`      |
//! | waiting for a tag (only if the simulator models sleeping)      | SleepRq | `S`     |
//! | plug started (`blk_start_plug` with the first request)         | Plug   | `P`      |
//! | plug flushed explicitly (`blk_finish_plug`), `pdu` = #requests | Unplug | `U`      |
//! | plug flushed from schedule / implicitly, `pdu` = #requests     | UnplugTimer | `UT` |
//! | request inserted into the elevator or hctx dispatch list        | Insert | `I`      |
//! | request handed to the driver (`->queue_rq`)                     | Issue  | `D`      |
//! | driver returned busy, request put back                          | Requeue | `R`     |
//! | request completed (`blk_mq_end_request`), `error` = -errno       | Complete | `C`    |
//!
//! btt pairs these by sector: Q2G, G2I, I2D (scheduler time), D2C (driver + device) and Q2C.
//! Requests issued directly without a scheduler have no `I`, as in the real blk-mq capture in
//! `tests/data/loop0.blktrace.*` (`blkparse -i loop0` in that folder prints it).
//!
//! # MMC-layer events are message records
//! blktrace has no action codes for the MMC host (legacy, hsq, CQE paths), so the MMC crate
//! writes them with [`BlktraceWriter::message`] as `BLK_TN_MESSAGE` notes, the way the kernel's
//! `blk_add_trace_msg()` lets drivers and schedulers annotate a trace (BFQ and CFQ do). Use
//! short `key=value` text, for example `mmc hsq slot=3 start tag=17`, `mmc cqe task=5 done`,
//! `mmc card busy 350us`. blkparse prints `179,0    1        0     0.000123456     0  m   N
//! mmc hsq slot=3 start tag=17`; btt lists messages in `<out>.msg`.
//!
//! # Clock
//! blkparse and btt print times relative to the first block event or message they see
//! (blkparse `genesis_time`). Write a message at time 0 first (e.g. `"blksim start"`) to make
//! their timestamps equal the simulator's virtual time.
//!
//! # What btt makes of it
//! btt ignores every record of a device before its first `Q` or `A` (`pre_culling` in
//! btt/devs.c), so a message written before the first Q is not in `<out>.msg`. Q2C is per
//! bio (every `Q`, merged or not); D2C is weighted by the number of bios merged into the
//! request (`update_d2c(iop, n, ...)` in btt/inlines.h), so with merges its N equals Q2C's.

pub mod reader;
pub mod record;
pub mod writer;

pub use reader::{
    is_blktrace, parse_records, read_messages, read_records, read_trace, read_trace_checked,
    RecordStream,
};
pub use record::{
    mkdev, rwbs_of, split_dev, Action, Op, RawRecord, RecordKind, ReqFlags, TraceEvent,
    BLK_IO_TRACE_MAGIC, BLK_IO_TRACE_VERSION, RECORD_LEN,
};
pub use writer::{cpu_file_path, BlktraceWriter, DEFAULT_COMM};

#[cfg(test)]
mod tests;
