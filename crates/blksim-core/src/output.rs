//! Where a run's output files go: fio's log files, `write_iolog` and blktrace's per-CPU
//! files are written through [`OutputFiles`], the file system for the binary ([`Disk`]) or
//! memory for a library caller ([`Memory`]), so the library writes nowhere it is not told to.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub trait OutputFiles: Send + Sync {
    /// A new, empty file at `path` (an existing one is truncated).
    fn create(&self, path: &Path) -> io::Result<Box<dyn Write + Send>>;
    /// Append the file `part` to `to`, then remove `part` (fio's shared log files: each job
    /// clone writes its part, joined at the end of the run).
    fn append_and_remove(&self, part: &Path, to: &Path) -> io::Result<()>;
    /// Remove the files in `dir` named `prefix` + digits (a trace's per-CPU files from an
    /// earlier run, which blkparse would otherwise read too).
    fn remove_numbered(&self, dir: &Path, prefix: &str) -> io::Result<()>;
}

/// The file system.
pub struct Disk;

impl OutputFiles for Disk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn Write + Send>> {
        Ok(Box::new(std::fs::File::create(path)?))
    }

    fn append_and_remove(&self, part: &Path, to: &Path) -> io::Result<()> {
        let mut src = std::fs::File::open(part)?;
        let mut dst = std::fs::OpenOptions::new().append(true).open(to)?;
        io::copy(&mut src, &mut dst)?;
        std::fs::remove_file(part)
    }

    fn remove_numbered(&self, dir: &Path, prefix: &str) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(rest) = name.strip_prefix(prefix) {
                if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
                    std::fs::remove_file(entry.path())?;
                }
            }
        }
        Ok(())
    }
}

/// Files kept in memory, by path: what a library caller reads back after the run.
#[derive(Clone, Default)]
pub struct Memory {
    files: Arc<Mutex<BTreeMap<PathBuf, Vec<u8>>>>,
}

impl Memory {
    pub fn new() -> Memory {
        Memory::default()
    }

    /// The files written, by path.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A file being written: its bytes go into the map when it is flushed or dropped.
struct MemFile {
    files: Arc<Mutex<BTreeMap<PathBuf, Vec<u8>>>>,
    path: PathBuf,
    buf: Vec<u8>,
}

impl Write for MemFile {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let mut m = self.files.lock().unwrap_or_else(|e| e.into_inner());
            m.entry(self.path.clone())
                .or_default()
                .extend_from_slice(&self.buf);
            self.buf.clear();
        }
        Ok(())
    }
}

impl Drop for MemFile {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl OutputFiles for Memory {
    fn create(&self, path: &Path) -> io::Result<Box<dyn Write + Send>> {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), Vec::new());
        Ok(Box::new(MemFile {
            files: self.files.clone(),
            path: path.to_path_buf(),
            buf: Vec::new(),
        }))
    }

    fn append_and_remove(&self, part: &Path, to: &Path) -> io::Result<()> {
        let mut m = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = m.remove(part).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: no such file", part.display()),
            )
        })?;
        m.entry(to.to_path_buf())
            .or_default()
            .extend_from_slice(&bytes);
        Ok(())
    }

    fn remove_numbered(&self, dir: &Path, prefix: &str) -> io::Result<()> {
        let mut m = self.files.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|p, _| {
            let numbered = p.parent() == Some(dir)
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix(prefix))
                    .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()));
            !numbered
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_files_are_created_appended_and_removed() {
        let m = Memory::new();
        let mut a = m.create(Path::new("d/log.1.part")).unwrap();
        a.write_all(b"one\n").unwrap();
        drop(a);
        let b = m.create(Path::new("d/log")).unwrap();
        drop(b);
        m.append_and_remove(Path::new("d/log.1.part"), Path::new("d/log"))
            .unwrap();
        m.create(Path::new("t/sda.blktrace.0"))
            .unwrap()
            .write_all(b"x")
            .unwrap();
        m.remove_numbered(Path::new("t"), "sda.blktrace.").unwrap();
        let f = m.files();
        assert_eq!(f.len(), 1);
        assert_eq!(f[Path::new("d/log")], b"one\n");
    }
}
