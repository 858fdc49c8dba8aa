//! A real block device or file as a probe target: O_DIRECT I/O (no page cache), through
//! io_uring when a batch has more than one I/O in flight (as fio's io_uring engine submits),
//! and pread/pwrite otherwise or when io_uring is not available (fio's psync).

use crate::target::{Batch, Op, Target};
use io_uring::{opcode, types, IoUring};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::Instant;

/// O_DIRECT wants buffers, offsets and lengths aligned to the logical block size; 4 KiB
/// covers every device of the last decade.
pub const ALIGN: usize = 4096;

/// A heap buffer aligned for O_DIRECT.
struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(ALIGN), ALIGN)
            .expect("probe buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // Writes carry incompressible bytes, so a device that compresses or deduplicates
        // does no less work than for real data.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..layout.size() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // SAFETY: i < layout.size(), inside the allocation.
            unsafe { *ptr.add(i) = s as u8 };
        }
        AlignedBuf { ptr, layout }
    }

    fn slice(&self, at: usize, len: usize) -> &[u8] {
        assert!(at + len <= self.layout.size());
        // SAFETY: in bounds (checked above) and initialised by `new`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(at), len) }
    }

    fn slice_mut(&mut self, at: usize, len: usize) -> &mut [u8] {
        assert!(at + len <= self.layout.size());
        // SAFETY: in bounds (checked above), and `&mut self` is the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at), len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

pub struct RealTarget {
    file: File,
    path: String,
    size: u64,
    writable: bool,
    ring: Option<IoUring>,
    /// Why io_uring is not used (batches then run one I/O at a time).
    pub uring_unavailable: Option<String>,
}

impl RealTarget {
    /// Open `path` for probing `size` bytes of it (default: all of it). Writes need `write`,
    /// and on a block device `destroy_ok` too. A file that does not exist is created and
    /// written to `size` first (nothing is lost by that), since reads of a file's holes never
    /// reach the device.
    pub fn open(
        path: &Path,
        size: Option<u64>,
        write: bool,
        destroy_ok: bool,
    ) -> Result<RealTarget, String> {
        let shown = path.display().to_string();
        let created = !path.exists();
        if created {
            let size = size.ok_or_else(|| {
                format!("{shown}: no such file; give --size=N to create a file of N bytes to probe")
            })?;
            create_file(path, size)?;
        }
        let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
        let block_device = meta.file_type().is_block_device();
        if !block_device && !meta.is_file() {
            return Err(format!("{shown}: not a block device or a regular file"));
        }
        check_write_allowed(&shown, block_device, write, destroy_ok)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|e| format!("{shown}: opening with O_DIRECT: {e}"))?;
        let len = file
            .seek(SeekFrom::End(0))
            .map_err(|e| format!("{shown}: {e}"))?;
        let size = match size {
            Some(s) if s > len => return Err(format!("--size={s}: {shown} has only {len} bytes")),
            Some(s) => s,
            None => len,
        };
        let size = size / ALIGN as u64 * ALIGN as u64;
        if size < 16 << 20 {
            return Err(format!(
                "{shown}: {size} bytes to probe; at least 16 MiB is needed"
            ));
        }
        let (ring, uring_unavailable) = match IoUring::new(64) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(format!("io_uring: {e}"))),
        };
        Ok(RealTarget {
            file,
            path: shown,
            size,
            writable: write,
            ring,
            uring_unavailable,
        })
    }

    fn run_sync(&mut self, ops: &[Op], t0: Instant, deadline_ns: u64) -> Result<Batch, String> {
        let max = ops.iter().map(|o| o.len as usize).max().unwrap_or(ALIGN);
        let mut buf = AlignedBuf::new(max);
        let mut lat_ns = Vec::with_capacity(ops.len());
        for (i, o) in ops.iter().enumerate() {
            if i > 0 && t0.elapsed().as_nanos() as u64 >= deadline_ns {
                break;
            }
            let len = o.len as usize;
            let s = Instant::now();
            let r = if o.write {
                self.file.write_at(buf.slice(0, len), o.offset)
            } else {
                self.file.read_at(buf.slice_mut(0, len), o.offset)
            };
            let n = r.map_err(|e| format!("{}: at {}: {e}", self.path, o.offset))?;
            if n != len {
                return Err(format!(
                    "{}: short I/O at {}: {n} of {len} bytes",
                    self.path, o.offset
                ));
            }
            lat_ns.push(s.elapsed().as_nanos() as u64);
        }
        Ok(Batch {
            lat_ns,
            elapsed_ns: t0.elapsed().as_nanos() as u64,
        })
    }

    fn run_uring(
        &mut self,
        ops: &[Op],
        qd: usize,
        t0: Instant,
        deadline_ns: u64,
    ) -> Result<Batch, String> {
        let ring = self.ring.as_mut().expect("checked by the caller");
        let max = ops.iter().map(|o| o.len as usize).max().unwrap_or(ALIGN);
        let slot_len = max.div_ceil(ALIGN) * ALIGN;
        let mut buf = AlignedBuf::new(slot_len * qd);
        let fd = types::Fd(self.file.as_raw_fd());
        let mut free: Vec<usize> = (0..qd).rev().collect();
        let mut started = vec![(t0, 0usize, 0u32); qd];
        let mut lat_ns = Vec::with_capacity(ops.len());
        let (mut next, mut inflight) = (0usize, 0usize);
        while next < ops.len() || inflight > 0 {
            let open = next == 0 || (t0.elapsed().as_nanos() as u64) < deadline_ns;
            while open && inflight < qd && next < ops.len() {
                let o = ops[next];
                let slot = free.pop().expect("a free slot while inflight < qd");
                let p = buf.slice_mut(slot * slot_len, o.len as usize).as_mut_ptr();
                let e = if o.write {
                    opcode::Write::new(fd, p, o.len).offset(o.offset).build()
                } else {
                    opcode::Read::new(fd, p, o.len).offset(o.offset).build()
                };
                started[slot] = (Instant::now(), next, o.len);
                // SAFETY: the buffer slot stays allocated and untouched until this entry's
                // completion is reaped below (the slot only returns to `free` then).
                unsafe {
                    ring.submission()
                        .push(&e.user_data(slot as u64))
                        .map_err(|_| "io_uring: submission queue full".to_string())?;
                }
                inflight += 1;
                next += 1;
            }
            if inflight == 0 {
                break;
            }
            ring.submit_and_wait(1)
                .map_err(|e| format!("{}: io_uring submit: {e}", self.path))?;
            for c in ring.completion() {
                let slot = c.user_data() as usize;
                let (s, idx, len) = started[slot];
                let done = s.elapsed().as_nanos() as u64;
                if c.result() < 0 {
                    return Err(format!(
                        "{}: at {}: {}",
                        self.path,
                        ops[idx].offset,
                        std::io::Error::from_raw_os_error(-c.result())
                    ));
                }
                if c.result() as u32 != len {
                    return Err(format!(
                        "{}: short I/O at {}: {} of {len} bytes",
                        self.path,
                        ops[idx].offset,
                        c.result()
                    ));
                }
                lat_ns.push(done);
                free.push(slot);
                inflight -= 1;
            }
        }
        Ok(Batch {
            lat_ns,
            elapsed_ns: t0.elapsed().as_nanos() as u64,
        })
    }
}

/// Writes to a block device destroy what is on it: they need the explicit confirmation.
pub fn check_write_allowed(
    shown: &str,
    block_device: bool,
    write: bool,
    destroy_ok: bool,
) -> Result<(), String> {
    if write && block_device && !destroy_ok {
        return Err(format!(
            "{shown}: --write on a block device overwrites its data (file systems, partitions, everything in the probed range); add --i-know-this-destroys-data to go on"
        ));
    }
    Ok(())
}

/// Write a new file of `size` bytes (rounded up to [`ALIGN`]) with O_DIRECT, so that every
/// block the probe reads is on the device.
fn create_file(path: &Path, size: u64) -> Result<(), String> {
    let shown = path.display();
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| format!("{shown}: creating: {e}"))?;
    const STEP: usize = 1 << 20;
    let buf = AlignedBuf::new(STEP);
    let size = size.div_ceil(ALIGN as u64) * ALIGN as u64;
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(STEP as u64) as usize;
        f.write_all_at(buf.slice(0, n), off)
            .map_err(|e| format!("{shown}: writing at {off}: {e}"))?;
        off += n as u64;
    }
    f.sync_all().map_err(|e| format!("{shown}: {e}"))
}

impl Target for RealTarget {
    fn name(&self) -> String {
        self.path.clone()
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn writable(&self) -> bool {
        self.writable
    }

    fn engine(&self, qd: u32) -> &'static str {
        if qd > 1 && self.ring.is_some() {
            "io_uring"
        } else {
            "psync"
        }
    }

    fn run(&mut self, ops: &[Op], qd: u32, deadline_ns: u64) -> Result<Batch, String> {
        for o in ops {
            if o.write && !self.writable {
                return Err(format!("{}: a write without --write", self.path));
            }
            if !o.offset.is_multiple_of(ALIGN as u64)
                || !(o.len as usize).is_multiple_of(ALIGN)
                || o.offset + o.len as u64 > self.size
            {
                return Err(format!(
                    "{}: probe I/O {}+{} not aligned to {ALIGN} or past {}",
                    self.path, o.offset, o.len, self.size
                ));
            }
        }
        let t0 = Instant::now();
        if qd > 1 && self.ring.is_some() {
            self.run_uring(ops, (qd as usize).min(64), t0, deadline_ns)
        } else {
            self.run_sync(ops, t0, deadline_ns)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_to_a_block_device_need_the_confirmation() {
        assert!(check_write_allowed("/dev/x", true, true, false)
            .unwrap_err()
            .contains("--i-know-this-destroys-data"));
        assert!(check_write_allowed("/dev/x", true, true, true).is_ok());
        assert!(check_write_allowed("/dev/x", true, false, false).is_ok());
        assert!(check_write_allowed("f", false, true, false).is_ok());
    }

    #[test]
    fn what_cannot_be_probed_says_why() {
        let e = |p: &str, size| {
            RealTarget::open(Path::new(p), size, false, false)
                .err()
                .unwrap()
        };
        assert!(e("/nonexistent/blksim-probe", None).contains("give --size=N"));
        assert!(e("/dev/null", None).contains("not a block device or a regular file"));
    }
}
