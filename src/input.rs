//! Bounded reading of everything that comes from outside the process: credential files, CA
//! files, images files, pod specs and stdin. A device (`/dev/zero`) reports no size and never
//! ends, and a file can grow while it is read, so every read goes through a byte limit here, in
//! one place that `config`, `keyring`, `node`, `route` and the credential sources use.
//!
//! A FIFO with no writer blocks `open` for ever, before any deadline or signal handler can act.
//! So every file is opened with `O_NONBLOCK` (which returns at once whatever the file is) and
//! looked at before it is read: configuration files, keys, certificates and tokens must be
//! regular files (a symlink to one, such as the `..data` links of the kubelet's projected
//! volumes, is followed); only images files and pod specs may also be pipes (`<(kubectl get …)`),
//! and those are read with blocking restored, so a FIFO nobody writes to reads as empty.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest images file or pod spec read (a Kubernetes object is at most ~1.5 MiB).
pub(crate) const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Why a bounded read failed.
pub(crate) enum LimitedReadError {
    /// More than the limit.
    TooLarge,
    /// The file could not be read.
    Io(std::io::Error),
}

/// What a path names, when it is not a regular file, for messages.
fn kind_of(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() || t.is_block_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// Opens `path` for reading without waiting for a writer (`O_NONBLOCK`); `regular_only`
/// refuses anything but a regular file, else pipes and devices are given back with blocking
/// reads restored.
fn open(path: &Path, regular_only: bool) -> Result<File, LimitedReadError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(LimitedReadError::Io)?;
    let meta = file.metadata().map_err(LimitedReadError::Io)?;
    match kind_of(&meta) {
        None => Ok(file),
        Some(kind) if regular_only || meta.is_dir() => {
            Err(LimitedReadError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{kind}, not a regular file (a FIFO or a device can block or never end)"),
            )))
        }
        Some(_) => {
            // A pipe's reads wait for its writer, who is expected; one with no writer ends.
            let flags =
                rustix::fs::fcntl_getfl(&file).map_err(|e| LimitedReadError::Io(e.into()))?;
            rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
                .map_err(|e| LimitedReadError::Io(e.into()))?;
            Ok(file)
        }
    }
}

/// Reads at most `max` bytes of a regular file (or a symlink to one), refusing a longer one,
/// whatever its reported size, and refusing FIFOs, devices, sockets and directories without
/// waiting on them.
pub(crate) fn read_limited_file(path: &Path, max: u64) -> Result<Vec<u8>, LimitedReadError> {
    read_limited(open(path, true)?, max)
}

/// Reads at most `max` bytes, refusing more.
pub(crate) fn read_limited(reader: impl Read, max: u64) -> Result<Vec<u8>, LimitedReadError> {
    let mut bytes = Vec::new();
    reader
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(LimitedReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(LimitedReadError::TooLarge);
    }
    Ok(bytes)
}

/// Why an input (manifests, a file named by a flag) cannot be read as text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InputError {
    /// Larger than [`MAX_INPUT_BYTES`].
    #[error("larger than {} MiB", MAX_INPUT_BYTES >> 20)]
    TooLarge,
    /// It cannot be opened or read.
    #[error("cannot read: {0}")]
    Io(std::io::Error),
    /// Not UTF-8: the offset of the first invalid byte.
    #[error("not UTF-8 text (invalid byte at offset {0})")]
    NotUtf8(usize),
}

/// Reads a file (or a pipe: `<(kubectl get …)`), or stdin for `-`: at most 16 MiB of UTF-8
/// text.
pub(crate) fn read_input(path: &Path, stdin: &mut dyn Read) -> Result<String, InputError> {
    let bytes = if path == Path::new("-") {
        read_limited(stdin, MAX_INPUT_BYTES)
    } else {
        open(path, false).and_then(|f| read_limited(f, MAX_INPUT_BYTES))
    }
    .map_err(|e| match e {
        LimitedReadError::TooLarge => InputError::TooLarge,
        LimitedReadError::Io(e) => InputError::Io(e),
    })?;
    String::from_utf8(bytes).map_err(|e| InputError::NotUtf8(e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO with no writer, made with mkfifo(1).
    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        let ok = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mkfifo");
        path
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_at_once_regular_files_and_symlinks_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo(dir.path());
        let regular = dir.path().join("token");
        std::fs::write(&regular, "t0ken").unwrap();
        // The kubelet's projected volumes: `token -> ..data/token`, `..data -> ..2024_…`.
        let data = dir.path().join("..2024_01_01");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("token"), "projected").unwrap();
        std::os::unix::fs::symlink(&data, dir.path().join("..data")).unwrap();
        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(dir.path().join("..data/token"), &linked).unwrap();
        let started = std::time::Instant::now();
        for (path, want) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a device"),
            (dir.path(), "a directory"),
        ] {
            match read_limited_file(path, 1024) {
                Err(LimitedReadError::Io(e)) => {
                    assert!(e.to_string().contains(want), "{}: {e}", path.display())
                }
                _ => panic!("{} was read", path.display()),
            }
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(matches!(read_limited_file(&regular, 1024), Ok(b) if b == b"t0ken"));
        assert!(matches!(read_limited_file(&linked, 1024), Ok(b) if b == b"projected"));
        // An images file may be a pipe; a FIFO nobody writes to reads as empty.
        assert_eq!(
            read_input(&fifo, &mut std::io::empty()).ok().as_deref(),
            Some("")
        );
        assert!(read_input(dir.path(), &mut std::io::empty()).is_err());
    }
}
