//! An output folder that is always whole: what `ndvm search --out` and `ndvm.search_sharded`
//! write into.
//!
//! A run *claims* its folder before any work ([`Folder::claim`]): it creates it, takes an
//! exclusive lock on `DIR/.ndvm.lock` (a second run into the same folder is refused, the holder
//! named) and checks that every file it will write replaces only a regular file. Nothing in the
//! folder changes until the run has started — its first log line, else its results: then the
//! previous run's results are removed first and its log truncated, so a folder never mixes two
//! runs. The results are
//! written last ([`Folder::write_results`]), each to a temporary file renamed into place, the
//! log flushed before them. Whatever stops a run (an error, a signal, a full disk), the folder
//! holds either the previous run's files untouched, or this run's log (whole lines, every
//! calibration's program before it: the search's log writer sees to that) with or without its
//! results.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The lock file in a claimed folder (kept after the run: removing it would race a second run
/// that opened it already).
pub const LOCK: &str = ".ndvm.lock";

/// Why a folder cannot be claimed.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// Another run holds the folder.
    #[error(
        "the output folder {dir} is in use by another run ({holder}); wait for it, or choose another folder with --out"
    )]
    Busy { dir: String, holder: String },
    /// The folder or a file in it cannot be written.
    #[error("{0}")]
    Unusable(String),
}

/// A claimed output folder (see the module docs). The lock is released when this is dropped.
#[derive(Debug)]
pub struct Folder {
    dir: PathBuf,
    /// Holds the lock while open.
    _lock: File,
    /// The files a run writes besides its log, in the order they are written.
    results: Vec<String>,
    logs: Vec<String>,
    state: Mutex<State>,
}

/// Whether a claimed folder's run has begun ([`Folder::begin`]).
#[derive(Debug)]
enum State {
    Claimed,
    /// The log files, each until its writer takes it.
    Begun(Vec<Option<File>>),
    Failed(String),
}

/// A log file of a claimed folder: the folder's run begins with its first write.
#[derive(Debug)]
pub struct LogFile {
    folder: Arc<Folder>,
    index: usize,
    file: Option<File>,
}

impl Write for LogFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(self.folder.take(self.index)?),
        };
        file.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), File::flush)
    }
}

impl Folder {
    /// Creates `dir` if missing and claims it for a run that writes the log files `logs` as it
    /// goes and the `results` at its end; `holder` describes this run to a second one (the
    /// command, say).
    pub fn claim(
        dir: &Path,
        logs: &[&str],
        results: &[&str],
        holder: &str,
    ) -> Result<Folder, FolderError> {
        let unusable = |e: std::io::Error| {
            FolderError::Unusable(format!(
                "cannot create the output folder {}: {e}",
                dir.display()
            ))
        };
        std::fs::create_dir_all(dir).map_err(unusable)?;
        let lock_path = dir.join(LOCK);
        check_replaceable(&lock_path).map_err(FolderError::Unusable)?;
        let mut lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| {
                FolderError::Unusable(format!("cannot write {}: {e}", lock_path.display()))
            })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = lock.read_to_string(&mut text);
                let holder = text.trim();
                return Err(FolderError::Busy {
                    dir: dir.display().to_string(),
                    holder: if holder.is_empty() {
                        "starting".into()
                    } else {
                        holder.into()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(FolderError::Unusable(format!(
                    "cannot lock {}: {e}",
                    lock_path.display()
                )));
            }
        }
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let me = format!(
            "process {}, {holder}, started at {started} (seconds since 1970)\n",
            std::process::id()
        );
        let noted = (lock.set_len(0))
            .and_then(|()| lock.rewind())
            .and_then(|()| lock.write_all(me.as_bytes()))
            .and_then(|()| lock.flush());
        noted.map_err(|e| {
            FolderError::Unusable(format!("cannot write {}: {e}", lock_path.display()))
        })?;
        for name in logs.iter().chain(results) {
            check_replaceable(&dir.join(name)).map_err(FolderError::Unusable)?;
        }
        let probe = dir.join(format!(".ndvm-write-check.{}", std::process::id()));
        (File::create(&probe).and_then(|_| std::fs::remove_file(&probe))).map_err(|e| {
            FolderError::Unusable(format!("cannot write into {}: {e}", dir.display()))
        })?;
        Ok(Folder {
            dir: dir.to_path_buf(),
            _lock: lock,
            results: results.iter().map(|s| s.to_string()).collect(),
            logs: logs.iter().map(|s| s.to_string()).collect(),
            state: Mutex::new(State::Claimed),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Log file `index` of the claim's log files, written as the run goes; the run begins with
    /// its first line.
    pub fn log_file(self: &Arc<Self>, index: usize) -> LogFile {
        LogFile {
            folder: self.clone(),
            index,
            file: None,
        }
    }

    /// The run has started (once): the previous run's results are removed, then its log files
    /// are created empty.
    pub fn begin(&self) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let State::Claimed = *state {
            *state = match self.clear() {
                Ok(files) => State::Begun(files.into_iter().map(Some).collect()),
                Err(e) => State::Failed(e),
            };
        }
        match &*state {
            State::Failed(e) => Err(e.clone()),
            _ => Ok(()),
        }
    }

    fn clear(&self) -> Result<Vec<File>, String> {
        for name in &self.results {
            let path = self.dir.join(name);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot replace {}: {e}", path.display()));
                }
                _ => {}
            }
        }
        (self.logs.iter())
            .map(|name| {
                let path = self.dir.join(name);
                check_replaceable(&path)?;
                File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))
            })
            .collect()
    }

    /// Log file `index`, the run begun.
    fn take(&self, index: usize) -> std::io::Result<File> {
        self.begin().map_err(std::io::Error::other)?;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *state {
            State::Begun(files) => (files.get_mut(index).and_then(Option::take))
                .ok_or_else(|| std::io::Error::other("a log file taken twice")),
            _ => Err(std::io::Error::other("the run has not begun")),
        }
    }

    /// Writes the results (name, text), each whole ([`write_atomically`]), the run begun
    /// first if no log line did; the first that fails stops the writing and is the error.
    pub fn write_results<'a>(
        &self,
        files: impl IntoIterator<Item = (&'a str, String)>,
    ) -> Result<(), String> {
        self.begin()?;
        for (name, text) in files {
            write_atomically(&self.dir.join(name), text)?;
        }
        Ok(())
    }
}

/// Fails when `path` exists and is not a regular file: an output replaces only a regular file,
/// never a symbolic link (whose target it would write), a device, a FIFO or a folder.
pub fn check_replaceable(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => {
            let what = if m.file_type().is_symlink() {
                "a symbolic link"
            } else if m.is_dir() {
                "a folder"
            } else {
                "not a regular file (a device, a FIFO or a socket)"
            };
            Err(format!(
                "cannot write {}: it is {what}; outputs replace only regular files",
                path.display()
            ))
        }
        _ => Ok(()),
    }
}

/// Writes `bytes` to a temporary file beside `path`, flushed to disk, then renames it over
/// `path`: an interrupted write never leaves a half-written file, nor destroys the previous
/// one. Only a regular file is replaced ([`check_replaceable`]).
pub fn write_atomically(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    check_replaceable(path)?;
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes.as_ref())?;
        f.sync_all()
    })();
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_is_refused_with_the_holder_named_until_the_first_ends() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let first = Folder::claim(dir.path(), &["a.log"], &["r.json"], "test one").expect("free");
        let second = Folder::claim(dir.path(), &["a.log"], &["r.json"], "test two");
        match second {
            Err(FolderError::Busy { holder, .. }) => {
                assert!(holder.contains("test one"), "{holder}");
                assert!(holder.contains(&std::process::id().to_string()), "{holder}");
            }
            other => panic!("a second claim: {other:?}"),
        }
        drop(first);
        Folder::claim(dir.path(), &["a.log"], &["r.json"], "test two").expect("free again");
    }

    #[test]
    fn nothing_changes_until_the_run_begins_and_then_the_old_results_go_first() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (log, result) = (dir.path().join("a.log"), dir.path().join("r.json"));
        std::fs::write(&log, "old log\n").expect("written");
        std::fs::write(&result, "old result").expect("written");
        let folder = Arc::new(
            Folder::claim(dir.path(), &["a.log", "b.log"], &["r.json"], "t").expect("free"),
        );
        let mut writer = folder.log_file(0);
        writer.flush().expect("nothing to send");
        assert_eq!(std::fs::read_to_string(&log).expect("kept"), "old log\n");
        assert_eq!(
            std::fs::read_to_string(&result).expect("kept"),
            "old result"
        );
        writer.write_all(b"{}\n").expect("begins");
        writer.flush().expect("sent");
        assert!(!result.exists(), "the old result outlived the new log");
        assert_eq!(std::fs::read_to_string(&log).expect("created"), "{}\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.log")).expect("created"),
            ""
        );
        folder
            .write_results([("r.json", "new".to_string())])
            .expect("written");
        assert_eq!(std::fs::read_to_string(&result).expect("written"), "new");
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_among_the_outputs_is_refused_before_the_run() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").expect("written");
        std::os::unix::fs::symlink(&target, dir.path().join("r.json")).expect("linked");
        let claim = Folder::claim(dir.path(), &["a.log"], &["r.json"], "t");
        match claim {
            Err(FolderError::Unusable(e)) => assert!(e.contains("symbolic link"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read_to_string(&target).expect("kept"), "keep");
    }
}
