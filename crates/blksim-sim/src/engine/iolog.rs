//! `write_iolog=FILE`: the I/O a job issued, as a fio version 3 iolog (iolog.c
//! `init_iolog_write`, `log_file`, `log_io_u`), which the real fio replays with `read_iolog`
//! on real hardware:
//!
//! ```text
//! fio version 3 iolog
//! 0 <file> add
//! 0 <file> open
//! <usec> <file> read|write|trim|sync|datasync <offset> <length>
//! <usec> <file> close
//! ```
//!
//! Times are µs since the job started (fio: since the log was set up, at the job's start); an
//! I/O is logged when fio queues it (`td_io_queue`), in that order. The file is the job's
//! `filename`, or fio's default name for a job without one (`<job>.<clone>.0`). Clones of one
//! job write to one file, each clone's lines in one piece (a private part appended when it
//! ends), where fio's buffered appends would interleave them.

use blksim_core::output::OutputFiles;
use blksim_core::Ns;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) struct IoLogWriter {
    out: Option<BufWriter<Box<dyn Write + Send>>>,
    files: Arc<dyn OutputFiles>,
    file: String,
    start: Ns,
    path: PathBuf,
    part: Option<PathBuf>,
    pub error: Option<String>,
    /// The offset of the last I/O logged: a sync io_u keeps the offset its io_u last had.
    last_offset: u64,
}

impl IoLogWriter {
    /// The log of clone `clone` (0-based within its job) at `path`; `shared` tells whether
    /// the job has several clones (they then take turns in one file), `created` the files
    /// this run already started.
    pub fn create(
        path: &str,
        file: String,
        clone: u32,
        shared: bool,
        created: &mut super::logs::RunFiles,
    ) -> std::io::Result<Self> {
        let path = PathBuf::from(path);
        let part = if shared {
            created.create_shared(&path)?;
            Some(PathBuf::from(format!("{}.{clone}.part", path.display())))
        } else {
            None
        };
        let target = part.clone().unwrap_or_else(|| path.clone());
        let mut out = BufWriter::new(created.files.create(&target)?);
        // Only the first clone writes the version line (fio would write one per clone).
        if !shared || clone == 0 {
            writeln!(out, "fio version 3 iolog")?;
        }
        Ok(IoLogWriter {
            out: Some(out),
            files: created.files.clone(),
            file,
            start: 0,
            path,
            part,
            error: None,
            last_offset: 0,
        })
    }

    fn keep(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            self.error
                .get_or_insert_with(|| format!("write_iolog={}: {e}", self.path.display()));
        }
    }

    /// The job starts at `now`: its file is added and opened.
    pub fn start(&mut self, now: Ns) {
        self.start = now;
        let f = self.file.clone();
        let r = self.out.as_mut().map_or(Ok(()), |o| {
            writeln!(o, "0 {f} add")?;
            writeln!(o, "0 {f} open")
        });
        self.keep(r);
    }

    /// fio queued an I/O (`log_io_u`): `what` is `io_ddir_name`.
    /// A sync io_u (`sync`, `datasync`): fio logs it with length 0 and whatever offset the
    /// io_u held from its last I/O. With one io_u (iodepth 1) that is the last I/O's offset;
    /// deeper, fio reuses the io_u freed last, which this does not follow.
    pub fn sync(&mut self, now: Ns, what: &str) {
        self.io(now, what, self.last_offset, 0);
    }

    pub fn io(&mut self, now: Ns, what: &str, offset: u64, len: u64) {
        if len > 0 {
            self.last_offset = offset;
        }
        let t = now.saturating_sub(self.start) / 1000;
        let f = &self.file;
        let r = self
            .out
            .as_mut()
            .map_or(Ok(()), |o| writeln!(o, "{t} {f} {what} {offset} {len}"));
        self.keep(r);
    }

    /// The job ended at `now`: the file is closed, and a clone's part goes into the shared
    /// file.
    pub fn finish(&mut self, now: Ns) {
        let t = now.saturating_sub(self.start) / 1000;
        let f = self.file.clone();
        let Some(mut o) = self.out.take() else { return };
        let mut r = writeln!(o, "{t} {f} close").and_then(|()| o.flush());
        drop(o);
        if let Some(p) = self.part.take() {
            r = r.and_then(|()| self.files.append_and_remove(&p, &self.path));
        }
        self.keep(r);
    }
}
