//! [`BlktraceWriter`]: per-CPU `<devname>.blktrace.<cpu>` files, as `blktrace -d /dev/X`
//! writes them (blktrace.c: `"%s.blktrace.%d"`), each a stream of v7 records.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use blksim_core::output::{Disk, OutputFiles};

use crate::record::{
    encode_event, mkdev, put_header, tn, TraceEvent, BLK_TN_MAX_MSG, MAX_EVENT_PDU, RECORD_LEN,
    TASK_COMM_LEN,
};

/// Command name used for pids that were never named with [`BlktraceWriter::set_comm`].
pub const DEFAULT_COMM: &str = "blksim";

/// Size of each per-CPU write buffer.
const BUF_CAPACITY: usize = 64 * 1024;

/// Path of the per-CPU file for `cpu`: `DIR/<devname>.blktrace.<cpu>`.
///
/// Slashes in `devname` become underscores, as `do_blk_trace_setup()` does for the relay
/// directory name (`strreplace(buts->name, '/', '_')`).
pub fn cpu_file_path(dir: &Path, devname: &str, cpu: u32) -> PathBuf {
    dir.join(format!("{}.blktrace.{}", sanitize(devname), cpu))
}

fn sanitize(devname: &str) -> String {
    devname.replace('/', "_")
}

/// A record held back until no earlier one can come.
enum Held {
    Event(TraceEvent),
    Message { cpu: u32, pid: u32, text: String },
}

struct CpuStream {
    out: Option<BufWriter<Box<dyn Write + Send>>>,
    /// Last data sequence number written (the kernel's per-cpu `bt->sequence`).
    seq: u32,
}

/// Writes simulated block-layer events as blktrace binary files.
///
/// Each CPU's file is in non-decreasing `time_ns`, as the kernel's relay buffers are (a CPU
/// runs one thing at a time; blkparse merges the files by time). Records may be given out
/// of order: the simulator runs a context to its end when its event comes up, its clock
/// ahead of the event time by the CPU time it charged, so a syscall's records can precede
/// the records of an interrupt that comes in during it. The writer holds records back until
/// [`Self::settle`] says no earlier one will come, and writes them in time order (in the
/// order given among equal times). A record earlier than a settled time is reported as
/// `io::ErrorKind::InvalidInput`.
pub struct BlktraceWriter {
    files: Arc<dyn OutputFiles>,
    dir: PathBuf,
    devname: String,
    device: u32,
    cpus: Vec<CpuStream>,
    comms: BTreeMap<u32, [u8; TASK_COMM_LEN]>,
    /// (cpu, pid) pairs whose PROCESS note has been written into that CPU's file.
    named: BTreeSet<(u32, u32)>,
    /// Records given but not yet written, by (time, order given).
    held: BTreeMap<(u64, u64), Held>,
    /// Records given so far (the tie-break among equal times).
    given: u64,
    /// No record earlier than this will be given.
    settled: u64,
}

impl BlktraceWriter {
    /// Start a trace of device `dev = (major, minor)` named `devname` (e.g. `"mmcblk0"`)
    /// in `dir`, which is created if needed. Existing `<devname>.blktrace.<N>` files in `dir`
    /// are removed first, so blkparse does not pick up CPUs from an older run.
    ///
    /// Like `blk_trace_start()` -> `trace_note_time()`, the trace begins with a
    /// `BLK_TN_TIMESTAMP` note in CPU 0's file; its wall-clock value is fixed at 0.0 so that
    /// output is deterministic.
    pub fn create(dir: &Path, devname: &str, dev: (u32, u32)) -> io::Result<Self> {
        Self::create_in(Arc::new(Disk), dir, devname, dev)
    }

    /// [`Self::create`] through `files` (the file system, or memory for a library caller).
    pub fn create_in(
        files: Arc<dyn OutputFiles>,
        dir: &Path,
        devname: &str,
        dev: (u32, u32),
    ) -> io::Result<Self> {
        let name = sanitize(devname);
        files.remove_numbered(dir, &format!("{name}.blktrace."))?;
        let mut w = BlktraceWriter {
            files,
            dir: dir.to_path_buf(),
            devname: name,
            device: mkdev(dev.0, dev.1),
            cpus: Vec::new(),
            comms: BTreeMap::new(),
            named: BTreeSet::new(),
            held: BTreeMap::new(),
            given: 0,
            settled: 0,
        };
        // trace_note_time(): u32 words[2] = { tv_sec, tv_nsec }, pid 0, sequence 0.
        let mut rec = [0u8; RECORD_LEN + 8];
        put_header(&mut rec, 0, 0, 0, 0, tn::TIMESTAMP, 0, w.device, 0, 0, 8);
        w.stream(0)?.write_all(&rec)?;
        Ok(w)
    }

    /// Name `pid` (e.g. `set_comm(4242, "fio")`). Takes effect for the pid's next first
    /// appearance on a CPU; call it before writing the pid's first event. Names are cut to
    /// 15 bytes, like the kernel's `comm`.
    pub fn set_comm(&mut self, pid: u32, name: &str) {
        self.comms.insert(pid, comm_bytes(name));
    }

    /// The kernel `dev_t` written in every record (`major << 20 | minor`).
    pub fn device(&self) -> u32 {
        self.device
    }

    /// Path of the file for `cpu` (whether or not it has been written yet).
    pub fn cpu_path(&self, cpu: u32) -> PathBuf {
        cpu_file_path(&self.dir, &self.devname, cpu)
    }

    /// Append one block-layer event to the file of `ev.cpu` (written once settled).
    pub fn write(&mut self, ev: &TraceEvent) -> io::Result<()> {
        self.hold(ev.time_ns, Held::Event(*ev))
    }

    /// Append a `BLK_TN_MESSAGE` note, as `blk_add_trace_msg()` / `__blk_trace_note_message()`
    /// writes it: sector 0, bytes 0, sequence 0 (notes do not use the per-cpu sequence), the
    /// text without a terminating NUL as payload, at most `BLK_TN_MAX_MSG - 1` = 127 bytes.
    /// blkparse prints it as `maj,min cpu 0 time 0 m N <text>`; btt copies it to `<out>.msg`.
    pub fn message(&mut self, time_ns: u64, cpu: u32, pid: u32, text: &str) -> io::Result<()> {
        let mut n = text.len().min(BLK_TN_MAX_MSG - 1);
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        let text = text[..n].to_string();
        self.hold(time_ns, Held::Message { cpu, pid, text })
    }

    /// No record earlier than `time_ns` will be given: write the held ones up to it, in
    /// time order.
    pub fn settle(&mut self, time_ns: u64) -> io::Result<()> {
        self.settled = self.settled.max(time_ns);
        while let Some(e) = self.held.first_entry() {
            if e.key().0 > time_ns {
                break;
            }
            let ((time_ns, _), rec) = e.remove_entry();
            self.emit(time_ns, rec)?;
        }
        Ok(())
    }

    fn hold(&mut self, time_ns: u64, rec: Held) -> io::Result<()> {
        if time_ns < self.settled {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "record at {time_ns} ns after the trace was settled up to {} ns",
                    self.settled
                ),
            ));
        }
        self.given += 1;
        self.held.insert((time_ns, self.given), rec);
        Ok(())
    }

    fn emit(&mut self, time_ns: u64, rec: Held) -> io::Result<()> {
        match rec {
            Held::Event(ev) => self.emit_event(&ev),
            Held::Message { cpu, pid, text } => self.emit_message(time_ns, cpu, pid, &text),
        }
    }

    fn emit_event(&mut self, ev: &TraceEvent) -> io::Result<()> {
        self.note_process(ev.cpu, ev.pid, ev.time_ns)?;
        let device = self.device;
        let s = self.stream_state(ev.cpu)?;
        // __blk_add_trace(): (*sequence)++ then relay_blktrace_event(bt, *sequence, ...).
        s.seq = s.seq.wrapping_add(1);
        let seq = s.seq;
        let mut buf = [0u8; RECORD_LEN + MAX_EVENT_PDU];
        let len = encode_event(ev, device, seq, &mut buf);
        self.stream(ev.cpu)?.write_all(&buf[..len])
    }

    fn emit_message(&mut self, time_ns: u64, cpu: u32, pid: u32, text: &str) -> io::Result<()> {
        let n = text.len();
        let mut hdr = [0u8; RECORD_LEN];
        put_header(
            &mut hdr,
            0,
            time_ns,
            0,
            0,
            tn::MESSAGE,
            pid,
            self.device,
            cpu,
            0,
            n as u16,
        );
        let out = self.stream(cpu)?;
        out.write_all(&hdr)?;
        out.write_all(text.as_bytes())
    }

    /// Flush everything and close the files. CPU files that received nothing but lie below
    /// the highest CPU used are created empty: blkparse opens `<dev>.blktrace.0, .1, ...` and
    /// stops at the first missing one (blkparse.c `do_file()` / `setup_file()`).
    pub fn finish(mut self) -> io::Result<()> {
        self.settle(u64::MAX)?;
        for cpu in 0..self.cpus.len() as u32 {
            self.stream(cpu)?;
        }
        for s in &mut self.cpus {
            if let Some(out) = s.out.as_mut() {
                out.flush()?;
            }
        }
        Ok(())
    }

    /// `trace_note_tsk()`: before a task's first event, a `BLK_TN_PROCESS` note with the
    /// 16-byte `comm`. We write one per (cpu, pid) rather than per pid so that every CPU file
    /// names its pids before using them, whatever order blkparse reads the files in.
    fn note_process(&mut self, cpu: u32, pid: u32, time_ns: u64) -> io::Result<()> {
        if !self.named.insert((cpu, pid)) {
            return Ok(());
        }
        let comm = self
            .comms
            .get(&pid)
            .copied()
            .unwrap_or_else(|| comm_bytes(DEFAULT_COMM));
        let mut rec = [0u8; RECORD_LEN + TASK_COMM_LEN];
        put_header(
            &mut rec,
            0,
            time_ns,
            0,
            0,
            tn::PROCESS,
            pid,
            self.device,
            cpu,
            0,
            TASK_COMM_LEN as u16,
        );
        rec[RECORD_LEN..].copy_from_slice(&comm);
        self.stream(cpu)?.write_all(&rec)
    }

    fn stream_state(&mut self, cpu: u32) -> io::Result<&mut CpuStream> {
        let idx = cpu as usize;
        if idx >= self.cpus.len() {
            if idx > 4095 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("cpu {cpu} out of range"),
                ));
            }
            self.cpus
                .resize_with(idx + 1, || CpuStream { out: None, seq: 0 });
        }
        Ok(&mut self.cpus[idx])
    }

    fn stream(&mut self, cpu: u32) -> io::Result<&mut BufWriter<Box<dyn Write + Send>>> {
        self.stream_state(cpu)?;
        let idx = cpu as usize;
        if self.cpus[idx].out.is_none() {
            // Opened once per CPU; nothing is allocated on the per-event path.
            let path = cpu_file_path(&self.dir, &self.devname, cpu);
            let f = self.files.create(&path)?;
            self.cpus[idx].out = Some(BufWriter::with_capacity(BUF_CAPACITY, f));
        }
        Ok(self.cpus[idx].out.as_mut().expect("just opened"))
    }
}

fn comm_bytes(name: &str) -> [u8; TASK_COMM_LEN] {
    let mut c = [0u8; TASK_COMM_LEN];
    let n = name.len().min(TASK_COMM_LEN - 1);
    c[..n].copy_from_slice(&name.as_bytes()[..n]);
    c
}
