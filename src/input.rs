//! Bounded reading of everything that comes from outside the process: credential files, CA
//! files, images files, pod specs and stdin. A device (`/dev/zero`) reports no size and never
//! ends, and a file can grow while it is read, so every read goes through a byte limit here, in
//! one place that both `config` and `keyring` use.

use std::io::Read;
use std::path::Path;

/// The largest images file or pod spec read (a Kubernetes object is at most ~1.5 MiB).
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Why a bounded read failed.
pub enum LimitedReadError {
    /// More than the limit.
    TooLarge,
    /// The file could not be read.
    Io(std::io::Error),
}

/// Reads at most `max` bytes of a file, refusing a longer one, whatever its reported size.
pub fn read_limited_file(path: &Path, max: u64) -> Result<Vec<u8>, LimitedReadError> {
    let file = std::fs::File::open(path).map_err(LimitedReadError::Io)?;
    read_limited(file, max)
}

/// Reads at most `max` bytes, refusing more.
pub fn read_limited(reader: impl Read, max: u64) -> Result<Vec<u8>, LimitedReadError> {
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

/// Reads a file, or stdin for `-`: at most 16 MiB of UTF-8 text.
pub fn read_input(path: &Path, stdin: &mut dyn Read) -> Result<String, String> {
    let bytes = if path == Path::new("-") {
        read_limited(stdin, MAX_INPUT_BYTES)
    } else {
        read_limited_file(path, MAX_INPUT_BYTES)
    }
    .map_err(|e| match e {
        LimitedReadError::TooLarge => format!("larger than {} MiB", MAX_INPUT_BYTES >> 20),
        LimitedReadError::Io(e) => format!("cannot read: {e}"),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}
