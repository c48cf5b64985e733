//! Files in and out of the toolchain: outputs written all-or-nothing, input files opened
//! without blocking. Every file any `teil` subcommand or the fuzzer writes goes through
//! [`Staged`] (or [`write_atomically`], its one-file form); every `.npy` input is read by
//! [`read_regular`]. The guarantees are stated for users in spec/interpreter.md ("Output
//! files").
//!
//! **Writing.** [`Staged::add`] writes each file completely (and `fsync`s it) into a private
//! staging directory `.teil-tmp-XXXXXX` (mode 0700, an unpredictable name created exclusively
//! by the `tempfile` crate) inside the destination's own directory, so the final rename never
//! crosses a file system. Nothing is ever opened at a predictable path, so a symbolic link
//! planted by someone else cannot redirect a write. [`Staged::commit`] then checks every
//! destination (a directory or a write-protected file is refused), hard-links every existing
//! destination into the staging directory as a backup (when there are several files: one
//! rename needs no backup), and only then renames the files into
//! place, each rename replacing one directory entry atomically: a symbolic link at the
//! destination is replaced by the new file, never followed. If a rename fails midway, the
//! renamed destinations are restored from the backups (or removed if they did not exist).
//! Dropping a [`Staged`] without committing removes the staging directories.
//!
//! A whole directory is staged the same way ([`StagedDir`]: built inside a staging directory,
//! its files written by [`write_new`], renamed into place at once), and so are other writers'
//! temporaries (the C backend's kernel cache stages its compilations in a [`StagingDir`]): every
//! temporary entry the toolchain makes beside a destination is a `.teil-tmp-*` directory, and
//! [`remove_stale`] is the one cleanup of them.
//!
//! So: a failure before the first rename (any write error, a full disk, a refused destination)
//! leaves every destination as it was; a failure during the renames is rolled back; only a
//! failed rollback or a kill during the renames (microseconds) can leave some destinations new
//! and others old, each one a complete file, never a partial one.
//!
//! **Stale staging directories.** A run that is killed leaves its staging directory behind.
//! Each run holds an exclusive `flock` on its staging directory while it exists, and before
//! staging into a directory it removes the directories there that are named `.teil-tmp-*`, are
//! real directories (not symbolic links) owned by the same user, were last modified more than
//! [`STALE_AFTER`] ago, and are not locked: only a process that died leaves such a directory.
//! The age condition covers the instant between creating a directory and locking it.
//!
//! **Reading.** [`read_regular`] refuses a FIFO, directory, device or socket before opening it,
//! then opens with `O_NONBLOCK` and checks again on the open descriptor, so a file swapped for
//! a FIFO in between is refused too instead of blocking; it reads at most the size `fstat`
//! reported, with a fallible allocation.

use std::fs::{File, Metadata};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The name prefix of staging directories.
pub const STAGING_PREFIX: &str = ".teil-tmp-";

/// How old an unlocked staging directory must be before another run removes it.
pub const STALE_AFTER: Duration = Duration::from_secs(60);

/// Why files could not be written. Every variant but [`WriteError::Mixed`] means that no
/// destination was changed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write `{}`: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("cannot create `{}`: {source}", path.display())]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("cannot write `{}`: it is a directory", .0.display())]
    IsDirectory(PathBuf),
    #[error("cannot write `{}`: the file is write-protected", .0.display())]
    WriteProtected(PathBuf),
    #[error("cannot write `{}`: it does not name a file", .0.display())]
    NotAFile(PathBuf),
    #[error("cannot write `{}` twice in one run", .0.display())]
    Twice(PathBuf),
    #[error("internal error: no result for `{0}`")]
    NoResult(String),
    #[error(
        "cannot write `{}`: {source}; the files renamed before it were restored",
        path.display()
    )]
    RolledBack { path: PathBuf, source: io::Error },
    #[error(
        "cannot write `{}`: {source}; restoring the files renamed before it failed too \
         (`{}`: {restore}), so some outputs are new and others old",
        path.display(),
        restore_path.display()
    )]
    Mixed {
        path: PathBuf,
        source: io::Error,
        restore_path: PathBuf,
        restore: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A private staging directory `.teil-tmp-XXXXXX` (mode 0700, an unpredictable name created
/// exclusively) in a destination's directory, locked while it exists and removed with what it
/// holds when dropped (see the module documentation). [`Staged`] stages files in one; a writer
/// that must stage something else there (a whole directory, [`StagedDir`]; a compiler's
/// scratch files beside a cache it fills) makes its own, so that a killed run's leftovers are
/// removed by [`remove_stale`] whoever left them.
pub struct StagingDir {
    parent: PathBuf,
    /// Dropped (removed) before `_lock` is released, so no other run sees it unlocked.
    dir: tempfile::TempDir,
    /// Holds the `flock` that tells other runs this directory is alive.
    _lock: File,
}
struct StagedFile {
    dest: PathBuf,
    temp: tempfile::TempPath,
    staging: usize,
}

/// Files written completely under temporary names, renamed into place together by
/// [`Staged::commit`]. See the module documentation for the guarantees.
#[derive(Default)]
pub struct Staged {
    // Fields drop in order: the files' temporary paths before the directories holding them.
    files: Vec<StagedFile>,
    stagings: Vec<StagingDir>,
}

impl Staged {
    pub fn new() -> Staged {
        Staged::default()
    }

    /// Writes `bytes` for `dest` into a staging directory next to it; `dest`'s directory must
    /// exist (as for a shell redirection). `dest` itself is not touched before
    /// [`Staged::commit`].
    pub fn add(&mut self, dest: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        if self.files.iter().any(|f| f.dest == dest) {
            return Err(WriteError::Twice(dest.to_path_buf()));
        }
        let name = dest.file_name();
        if name.is_none() || dest.as_os_str().as_bytes().ends_with(b"/") {
            return Err(WriteError::NotAFile(dest.to_path_buf()));
        }
        let parent = parent_of(dest);
        let staging = match self.stagings.iter().position(|s| s.parent == parent) {
            Some(i) => i,
            None => {
                self.stagings
                    .push(StagingDir::new_in(&parent).map_err(io_err(dest))?);
                self.stagings.len() - 1
            }
        };
        // Mode 0666 less the umask, as `open` gives a new file (tempfile's default is 0600);
        // `commit` gives a replaced file the mode of the file it replaces.
        let mut temp = tempfile::Builder::new()
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(self.stagings[staging].dir.path())
            .map_err(io_err(dest))?;
        temp.write_all(bytes)
            .and_then(|()| temp.as_file().sync_all())
            .map_err(io_err(dest))?;
        self.files.push(StagedFile {
            dest: dest.to_path_buf(),
            temp: temp.into_temp_path(),
            staging,
        });
        Ok(())
    }

    /// Renames every staged file into place, all or nothing (module documentation).
    pub fn commit(self) -> Result<(), WriteError> {
        self.commit_with(&mut |from, to| std::fs::rename(from, to))
    }

    /// [`Staged::commit`] with the rename as a parameter, so tests can make one fail.
    fn commit_with(
        self,
        rename: &mut dyn FnMut(&Path, &Path) -> io::Result<()>,
    ) -> Result<(), WriteError> {
        // Check every destination and take the backups before the first rename.
        let mut backups: Vec<Option<PathBuf>> = Vec::with_capacity(self.files.len());
        for (i, f) in self.files.iter().enumerate() {
            let existing = match std::fs::symlink_metadata(&f.dest) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    backups.push(None);
                    continue;
                }
                Err(e) => return Err(io_err(&f.dest)(e)),
            };
            if existing.is_dir() {
                return Err(WriteError::IsDirectory(f.dest.clone()));
            }
            if existing.is_file() {
                if !writable(&f.dest) {
                    return Err(WriteError::WriteProtected(f.dest.clone()));
                }
                let mode = std::fs::Permissions::from_mode(existing.mode() & 0o777);
                std::fs::set_permissions(&f.temp, mode).map_err(io_err(&f.dest))?;
            }
            // One file needs no backup: its single rename is atomic.
            if self.files.len() == 1 {
                backups.push(None);
                continue;
            }
            let backup = self.stagings[f.staging]
                .dir
                .path()
                .join(format!("backup-{i}"));
            take_backup(&f.dest, &existing, &backup).map_err(io_err(&f.dest))?;
            backups.push(Some(backup));
        }
        for (i, f) in self.files.iter().enumerate() {
            if let Err(source) = rename(&f.temp, &f.dest) {
                // Undo in reverse order; the first failure to restore is reported.
                let mut failed = None;
                for (g, backup) in self.files[..i].iter().zip(&backups).rev() {
                    let undone = match backup {
                        Some(b) => std::fs::rename(b, &g.dest),
                        None => std::fs::remove_file(&g.dest),
                    };
                    if let Err(e) = undone {
                        failed.get_or_insert((g.dest.clone(), e));
                    }
                }
                let path = f.dest.clone();
                return Err(match failed {
                    None => WriteError::RolledBack { path, source },
                    Some((restore_path, restore)) => WriteError::Mixed {
                        path,
                        source,
                        restore_path,
                        restore,
                    },
                });
            }
        }
        // The renames are durable once the directories are; a failure here changes nothing
        // that a reader could see, so it is not reported.
        for s in &self.stagings {
            if let Ok(d) = File::open(&s.parent) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl StagingDir {
    /// A staging directory in `parent`, which must exist, after removing the stale ones there
    /// ([`remove_stale`]).
    pub fn new_in(parent: &Path) -> io::Result<StagingDir> {
        remove_stale(parent);
        let dir = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(parent)?;
        let lock = File::open(dir.path())?;
        // SAFETY: flock on a descriptor we own; no memory is passed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(StagingDir {
            parent: parent.to_path_buf(),
            dir,
            _lock: lock,
        })
    }

    /// A private scratch directory in the system's temporary directory (`$TMPDIR`, else
    /// `/tmp`), with the same guarantees: removed when dropped, and removed by a later run if
    /// this one is killed. The C runner compiles and runs its drivers in one.
    pub fn scratch() -> io::Result<StagingDir> {
        StagingDir::new_in(&std::env::temp_dir())
    }

    /// The staging directory itself.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Puts `bytes` at `dest` through this directory: written completely (and `fsync`ed) to a
    /// new private file (mode 0600) named `name` here, where nobody else can reach it, then
    /// renamed onto `dest`, replacing what is there in one step, or, without `replace`, linked
    /// there only if nothing is (an entry already at `dest` is `AlreadyExists` and stays as it
    /// was; a planted symbolic link is never followed). `dest` must be on this directory's file
    /// system (a staging directory is made beside its destinations). Nothing is left here
    /// afterwards, whatever the outcome. For a writer whose destinations are its own (the C
    /// backend's kernel cache); a set of output files goes through [`Staged`].
    pub fn place(&self, name: &str, bytes: &[u8], dest: &Path, replace: bool) -> io::Result<()> {
        let staged = self.path().join(name);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&staged)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
        let placed = written.and_then(|()| {
            if replace {
                std::fs::rename(&staged, dest)
            } else {
                std::fs::hard_link(&staged, dest)
            }
        });
        if !replace || placed.is_err() {
            let _ = std::fs::remove_file(&staged);
        }
        placed
    }

    /// Keeps the directory and what it holds, for a person to inspect (the source of a kernel
    /// that failed): it is renamed to a new name starting with `prefix` in the same parent,
    /// outside the names [`remove_stale`] removes, and that path is returned. If the rename
    /// fails, the directory stays where it is and that path is returned (a later run may then
    /// remove it as stale).
    pub fn keep(self, prefix: &str) -> PathBuf {
        let StagingDir { parent, dir, _lock } = self;
        let here = dir.keep();
        let kept = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(&parent)
            .map(tempfile::TempDir::keep);
        match kept {
            // Renaming a directory onto an empty one replaces it atomically.
            Ok(there) => match std::fs::rename(&here, &there) {
                Ok(()) => there,
                Err(_) => {
                    let _ = std::fs::remove_dir(&there);
                    here
                }
            },
            Err(_) => here,
        }
    }
}

/// A directory built under a [`StagingDir`] next to its destination and renamed into place
/// whole by [`StagedDir::commit`], so that a directory at the destination is always complete
/// (test vectors, reproducer directories). Fill [`StagedDir::path`] with [`write_new`] and
/// `create_dir`: nobody else can reach it before the commit. Dropped without a commit, it is
/// removed.
pub struct StagedDir {
    staging: StagingDir,
    /// The directory being built, inside `staging` (created with the usual mode, not 0700).
    path: PathBuf,
    dest: PathBuf,
}

impl StagedDir {
    /// Starts building the directory `dest`; its parent is created if needed.
    pub fn new(dest: &Path) -> Result<StagedDir, WriteError> {
        if dest.file_name().is_none() || dest.as_os_str().as_bytes().ends_with(b"/") {
            return Err(WriteError::NotAFile(dest.to_path_buf()));
        }
        let parent = parent_of(dest);
        create_dir(&parent)?;
        let staging = StagingDir::new_in(&parent).map_err(io_err(dest))?;
        let path = staging.path().join("dir");
        std::fs::create_dir(&path).map_err(io_err(dest))?;
        Ok(StagedDir {
            staging,
            path,
            dest: dest.to_path_buf(),
        })
    }

    /// The directory to fill.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the directory into place. Whatever is at the destination is replaced when
    /// `replace` (it is moved aside first, a symbolic link as itself, and put back if the rename
    /// fails); otherwise the rename fails on anything but an empty directory there.
    pub fn commit(self, replace: bool) -> Result<(), WriteError> {
        let fail = io_err(&self.dest);
        let old = self.staging.path().join("old");
        let moved_aside = replace
            && std::fs::symlink_metadata(&self.dest).is_ok()
            && std::fs::rename(&self.dest, &old).is_ok();
        if let Err(e) = std::fs::rename(&self.path, &self.dest) {
            if moved_aside {
                let _ = std::fs::rename(&old, &self.dest);
            }
            return Err(fail(e));
        }
        // As in `Staged::commit`: not reported, nothing a reader sees depends on it.
        if let Ok(d) = File::open(&self.staging.parent) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// The directory holding `dest` (`.` for a bare name).
fn parent_of(dest: &Path) -> PathBuf {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes a new file at `path` (created exclusively: an entry already there, a planted
/// symbolic link included, is an error, never followed) and `fsync`s it. For files inside a
/// directory nobody else can reach before it is complete: a [`StagedDir`], a [`StagingDir`],
/// a private scratch directory.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .map_err(io_err(path))
}

fn create_dir(dir: &Path) -> Result<(), WriteError> {
    std::fs::create_dir_all(dir).map_err(|source| WriteError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// Keeps what `dest` is now at `backup`: a hard link (no copy), or a copy of a regular file or
/// of a symbolic link where the file system has no hard links.
fn take_backup(dest: &Path, existing: &Metadata, backup: &Path) -> io::Result<()> {
    // `hard_link` links a symbolic link itself, not its target (linkat without
    // AT_SYMLINK_FOLLOW).
    match std::fs::hard_link(dest, backup) {
        Ok(()) => Ok(()),
        Err(_) if existing.file_type().is_symlink() => {
            std::os::unix::fs::symlink(std::fs::read_link(dest)?, backup)
        }
        Err(_) if existing.is_file() => std::fs::copy(dest, backup).map(|_| ()),
        Err(e) => Err(e),
    }
}

/// Whether this process may write the file at `path` (as `open` for writing would decide),
/// so that `chmod a-w` protects a result as it would against `cp` or a shell redirection.
fn writable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// Removes the staging directories in `dir` that runs which were killed left behind (see the
/// module documentation for exactly which); returns how many it removed. Errors are ignored:
/// an entry that cannot be inspected or removed is left alone.
pub fn remove_stale(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .as_bytes()
            .starts_with(STAGING_PREFIX.as_bytes())
        {
            continue;
        }
        let path = entry.path();
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = m
            .modified()
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if !m.is_dir() || m.uid() != me || !old {
            continue;
        }
        let Ok(d) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(&path)
        else {
            continue;
        };
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(d.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0
            && std::fs::remove_dir_all(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Writes `bytes` to `dest` atomically: a reader sees the old file or the new one, never a
/// partial one, and a failure leaves `dest` as it was.
pub fn write_atomically(dest: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut staged = Staged::new();
    staged.add(dest, bytes)?;
    staged.commit()
}

/// `teil run --out DIR`: `DIR/NAME.npy` for each output, given with its element type (float32
/// for a variable declared `f32`), all or nothing. `DIR` is created if needed, even when there
/// are no outputs.
pub fn write_outputs(
    dir: &Path,
    outputs: &[(String, teil::ast::ElemType)],
    results: &std::collections::BTreeMap<String, crate::npy::Tensor>,
) -> Result<(), WriteError> {
    create_dir(dir)?;
    let mut staged = Staged::new();
    for (name, elem) in outputs {
        let t = results
            .get(name)
            .ok_or_else(|| WriteError::NoResult(name.clone()))?;
        staged.add(
            &dir.join(format!("{name}.npy")),
            &crate::npy::to_bytes_as(t, *elem),
        )?;
    }
    staged.commit()
}

/// Why an input file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the file has {0} bytes, more than this process can hold in memory")]
    TooLarge(u64),
    #[error("the file changed size while it was read")]
    Changed,
}

/// What kind of file `m` describes, for [`ReadError::NotRegular`]; `None` for a regular file.
fn special_kind(m: &Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a named pipe (FIFO)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("a special file")
    }
}

/// Refuses `path` if it is a FIFO, directory, device or socket (symbolic links followed),
/// without opening it. A path that cannot be examined passes: reading it will say why.
/// `teil run` calls this to report a special file as an I/O problem (exit 2) rather than as a
/// bad input; the refusal that cannot race is the one in [`read_regular`].
pub fn check_regular(path: &Path) -> Result<(), ReadError> {
    match std::fs::metadata(path).ok().as_ref().and_then(special_kind) {
        None => Ok(()),
        Some(kind) => Err(ReadError::NotRegular(kind)),
    }
}

/// The regular file at `path`, opened for reading, and its length; anything else is refused
/// without blocking. For readers that look at a file's head before deciding to read the rest
/// (`crate::npy::read_as`).
pub fn open_regular(path: &Path) -> Result<(std::fs::File, u64), ReadError> {
    // A stat first, so that a device is not even opened (opening some has side effects).
    check_regular(path)?;
    // O_NONBLOCK: should `path` have become a FIFO since, opening it does not wait for a
    // writer; the check below then refuses it.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let m = f.metadata()?;
    if let Some(kind) = special_kind(&m) {
        return Err(ReadError::NotRegular(kind));
    }
    Ok((f, m.len()))
}

/// The contents of the regular file at `path`; anything else is refused without blocking.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, ReadError> {
    let (mut f, len) = open_regular(path)?;
    let mut bytes = Vec::new();
    usize::try_from(len)
        .ok()
        .and_then(|n| bytes.try_reserve_exact(n).ok())
        .ok_or(ReadError::TooLarge(len))?;
    // One byte more than promised tells a file that grew from one that did not.
    Read::by_ref(&mut f)
        .take(len.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(ReadError::Changed);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staging_dirs(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .as_bytes()
                    .starts_with(STAGING_PREFIX.as_bytes())
            })
            .collect()
    }

    #[test]
    fn files_appear_only_on_commit_and_staging_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("sub/b"));
        std::fs::write(&a, "old a").unwrap();
        assert!(matches!(
            Staged::new().add(&b, b"x"),
            Err(WriteError::Io { ref path, .. }) if *path == b
        ));
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let mut s = Staged::new();
        s.add(&a, b"new a").unwrap();
        s.add(&b, b"new b").unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");
        assert!(!b.exists());
        assert_eq!(staging_dirs(d.path()).len(), 1);
        s.commit().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"new a");
        assert_eq!(std::fs::read(&b).unwrap(), b"new b");
        assert!(staging_dirs(d.path()).is_empty());
        assert!(staging_dirs(&d.path().join("sub")).is_empty());
    }

    #[test]
    fn new_files_get_the_usual_mode_and_replaced_ones_keep_theirs() {
        let d = tempfile::tempdir().unwrap();
        // Read, not set: setting the umask would race with the other tests' files.
        let umask = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("Umask:"))?;
                u32::from_str_radix(line["Umask:".len()..].trim(), 8).ok()
            })
            .unwrap_or(0o022);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        let new = d.path().join("new");
        write_atomically(&new, b"x").unwrap();
        assert_eq!(mode(&new), 0o666 & !umask);
        let old = d.path().join("old");
        std::fs::write(&old, "old").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&old, b"y").unwrap();
        assert_eq!(mode(&old), 0o640);
        assert_eq!(std::fs::read(&old).unwrap(), b"y");
    }

    #[test]
    fn dropping_without_commit_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::write(&a, "old").unwrap();
        let mut s = Staged::new();
        s.add(&a, b"new").unwrap();
        drop(s);
        assert_eq!(std::fs::read(&a).unwrap(), b"old");
        assert!(staging_dirs(d.path()).is_empty());
    }

    #[test]
    fn a_failed_rename_restores_the_renamed_files() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
        std::fs::write(&a, "old a").unwrap();
        std::fs::write(&c, "old c").unwrap();
        let mut s = Staged::new();
        for p in [&a, &b, &c] {
            s.add(p, b"new").unwrap();
        }
        let mut calls = 0;
        let err = s
            .commit_with(&mut |from, to| {
                calls += 1;
                if calls == 3 {
                    Err(io::Error::other("planted failure"))
                } else {
                    std::fs::rename(from, to)
                }
            })
            .unwrap_err();
        assert!(matches!(err, WriteError::RolledBack { ref path, .. } if *path == c));
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");
        assert!(
            !b.exists(),
            "a destination that did not exist is removed again"
        );
        assert_eq!(std::fs::read(&c).unwrap(), b"old c");
        assert!(staging_dirs(d.path()).is_empty());
    }

    #[test]
    fn a_failed_restore_is_reported_with_the_file_it_concerns() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, "old a").unwrap();
        let mut s = Staged::new();
        s.add(&a, b"new a").unwrap();
        s.add(&b, b"new b").unwrap();
        let mut calls = 0;
        let err = s
            .commit_with(&mut |from, to| {
                calls += 1;
                if calls == 2 {
                    // Lose the backup of `a`, so that restoring it fails.
                    std::fs::remove_file(from.parent().unwrap().join("backup-0"))?;
                    Err(io::Error::other("planted failure"))
                } else {
                    std::fs::rename(from, to)
                }
            })
            .unwrap_err();
        match err {
            WriteError::Mixed {
                path, restore_path, ..
            } => assert_eq!((path, restore_path), (b.clone(), a.clone())),
            other => panic!("{other}"),
        }
        // `a` is the complete new file, `b` the complete old state (absent).
        assert_eq!(std::fs::read(&a).unwrap(), b"new a");
        assert!(!b.exists());
    }

    #[test]
    fn refused_destinations_change_nothing() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, "old a").unwrap();
        std::fs::create_dir(&b).unwrap();
        let mut s = Staged::new();
        s.add(&a, b"new").unwrap();
        s.add(&b, b"new").unwrap();
        assert!(matches!(s.commit(), Err(WriteError::IsDirectory(p)) if p == b));
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");

        let p = d.path().join("protected");
        std::fs::write(&p, "old p").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        let mut s = Staged::new();
        s.add(&a, b"new").unwrap();
        s.add(&p, b"new").unwrap();
        let r = s.commit();
        // Root may write anything, as with `cp`.
        if unsafe { libc::geteuid() } != 0 {
            assert!(matches!(r, Err(WriteError::WriteProtected(ref q)) if *q == p));
            assert_eq!(std::fs::read(&a).unwrap(), b"old a");
            assert_eq!(std::fs::read(&p).unwrap(), b"old p");
        } else {
            r.unwrap();
        }

        let mut s = Staged::new();
        s.add(&a, b"x").unwrap();
        assert!(matches!(s.add(&a, b"y"), Err(WriteError::Twice(_))));
        assert!(matches!(
            Staged::new().add(Path::new("dir/"), b""),
            Err(WriteError::NotAFile(_))
        ));
    }

    #[test]
    fn a_symlink_at_the_destination_is_replaced_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, "precious").unwrap();
        let link = d.path().join("out");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomically(&link, b"result").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&link).unwrap(), b"result");
    }

    fn age(path: &Path, secs: u64) {
        let t = SystemTime::now() - Duration::from_secs(secs);
        File::open(path).unwrap().set_modified(t).unwrap();
    }

    #[test]
    fn only_old_unlocked_staging_directories_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let stale = d.path().join(".teil-tmp-stale");
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("big"), vec![0u8; 1 << 16]).unwrap();
        age(&stale, 3600);
        let young = d.path().join(".teil-tmp-young");
        std::fs::create_dir(&young).unwrap();
        let locked = d.path().join(".teil-tmp-locked");
        std::fs::create_dir(&locked).unwrap();
        age(&locked, 3600);
        let held = File::open(&locked).unwrap();
        assert_eq!(
            unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        let other = d.path().join(".teil-tmp-link");
        std::os::unix::fs::symlink(&young, &other).unwrap();
        let unrelated = d.path().join("keep");
        std::fs::create_dir(&unrelated).unwrap();
        age(&unrelated, 3600);

        assert_eq!(remove_stale(d.path()), 1);
        assert!(!stale.exists());
        assert!(young.exists() && locked.exists() && unrelated.exists());
        assert!(std::fs::symlink_metadata(&other).is_ok());
        drop(held);
        assert_eq!(remove_stale(d.path()), 1);
        assert!(!locked.exists());
    }

    #[test]
    fn a_staged_directory_appears_whole_and_replaces_only_when_asked() {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("sub/case");
        let staged = StagedDir::new(&dest).unwrap();
        write_new(&staged.path().join("a"), b"1").unwrap();
        assert!(matches!(
            write_new(&staged.path().join("a"), b"2"),
            Err(WriteError::Io { .. })
        ));
        assert!(!dest.exists());
        staged.commit(false).unwrap();
        assert_eq!(std::fs::read(dest.join("a")).unwrap(), b"1");
        assert!(staging_dirs(&d.path().join("sub")).is_empty());

        let again = StagedDir::new(&dest).unwrap();
        write_new(&again.path().join("b"), b"3").unwrap();
        assert!(
            again.commit(false).is_err(),
            "a full directory is not replaced"
        );
        assert_eq!(std::fs::read(dest.join("a")).unwrap(), b"1");
        let again = StagedDir::new(&dest).unwrap();
        write_new(&again.path().join("b"), b"3").unwrap();
        again.commit(true).unwrap();
        assert!(!dest.join("a").exists());
        assert_eq!(std::fs::read(dest.join("b")).unwrap(), b"3");

        drop(StagedDir::new(&d.path().join("never")).unwrap());
        assert!(!d.path().join("never").exists());
        assert!(staging_dirs(d.path()).is_empty());
        assert!(staging_dirs(&d.path().join("sub")).is_empty());
    }

    /// `StagingDir::place`: a private file at the destination, an existing one kept without
    /// `replace` and replaced with it, a planted symbolic link replaced and never followed, and
    /// nothing left in the staging directory either way.
    #[test]
    fn a_placed_file_is_private_and_replaces_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("secret");
        let staging = StagingDir::new_in(dir.path()).unwrap();
        let left = |s: &StagingDir| std::fs::read_dir(s.path()).unwrap().count();
        staging.place("s", b"one", &dest, false).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"one");
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let e = staging.place("s", b"two", &dest, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&dest).unwrap(), b"one");
        assert_eq!(left(&staging), 0);
        staging.place("s", b"two", &dest, true).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"two");
        assert_eq!(left(&staging), 0);
        // A symbolic link at the destination is replaced; its target is not written.
        let target = dir.path().join("target");
        std::fs::write(&target, b"untouched").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(
            staging.place("l", b"x", &link, false).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        staging.place("l", b"new", &link, true).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(std::fs::read(&target).unwrap(), b"untouched");
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert_eq!(left(&staging), 0);
    }

    #[test]
    fn special_files_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_regular(&fifo),
            Err(ReadError::NotRegular("a named pipe (FIFO)"))
        ));
        assert!(matches!(
            read_regular(d.path()),
            Err(ReadError::NotRegular("a directory"))
        ));
        assert!(matches!(
            read_regular(Path::new("/dev/null")),
            Err(ReadError::NotRegular("a character device"))
        ));
        assert!(matches!(
            read_regular(&d.path().join("missing")),
            Err(ReadError::Io(_))
        ));
        let f = d.path().join("f");
        std::fs::write(&f, b"contents").unwrap();
        assert_eq!(read_regular(&f).unwrap(), b"contents");
    }
}
