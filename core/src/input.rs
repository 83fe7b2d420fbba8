//! Bounded file input: every file toolcert reads (a profile, a baseline, a CA certificate, a
//! key, a report, a bundle, a suite file) is read here, never with a bare `std::fs::read`.
//!
//! A file is opened without blocking (a FIFO given as `--profile` would otherwise hang the
//! open until a writer appears), refused unless it is a regular file (a FIFO, a socket, a
//! directory, `/dev/zero`), and read with a size bound, so a huge or endless input costs an
//! error naming the bound, never the machine's memory. Errors are [`std::io::Error`]s whose
//! message says what is wrong and what to give instead, so every reader keeps its own error
//! type and only swaps `std::fs::read` for [`read`].

use std::io::Read as _;
use std::path::Path;

/// The largest host profile read (a profile is a few kilobytes).
pub const MAX_PROFILE_BYTES: u64 = 1024 * 1024;

/// The largest expectation baseline read.
pub const MAX_BASELINE_BYTES: u64 = 16 * 1024 * 1024;

/// The largest PEM file of CA certificates read.
pub const MAX_PEM_BYTES: u64 = 4 * 1024 * 1024;

/// The largest key file read (a key file is one line and a few comments).
pub const MAX_KEY_BYTES: u64 = 64 * 1024;

/// The largest report or bundle read (`recheck`, `baseline`, `merge`, `bundle verify`): a
/// report of the whole suite against the reference host is about 5 MB, and one a run writes
/// is bounded by its memory budget, so this leaves room for `--repeat` reports.
pub const MAX_REPORT_BYTES: u64 = 512 * 1024 * 1024;

/// The largest suite file read from `--suite DIR`.
pub const MAX_SUITE_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Read a regular file of at most `limit` bytes.
pub fn read(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Err(too_large(size, limit));
    }
    // The length may change (or lie: /proc files say 0), so the read itself is bounded too.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, limit)?).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "is not UTF-8 text (invalid byte at offset {}); expected a text file",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Open `path` for reading without blocking, and refuse it unless it is a regular file.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a
        // writer; O_NOCTTY: a terminal device never becomes the controlling terminal.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "is not a regular file (it is {}); give the path of a file",
                kind_name(&kind)
            ),
        ));
    }
    Ok(file)
}

/// What a non-regular file is, in words.
pub fn kind_name(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

fn too_large(size: u64, limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "is larger than the {} toolcert reads ({} bytes or more)",
            human(limit),
            size
        ),
    )
}

/// A byte count as people write it (`4 MiB`, `64 KiB`).
pub fn human(bytes: u64) -> String {
    const KIB: u64 = 1024;
    if bytes >= KIB * KIB && bytes.is_multiple_of(KIB * KIB) {
        format!("{} MiB", bytes / (KIB * KIB))
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "toolcert-input-{}-{name}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_regular_file_within_the_bound_is_read() {
        let dir = scratch("ok");
        let f = dir.join("a.json");
        std::fs::write(&f, "{}").unwrap();
        assert_eq!(read_to_string(&f, 2).unwrap(), "{}");
        let e = read(&f, 1).unwrap_err();
        assert!(e.to_string().contains("larger than the 1 bytes"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn devices_directories_and_fifos_are_refused_at_once() {
        let started = std::time::Instant::now();
        let e = read(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let dir = scratch("kinds");
        let e = read(&dir, 1024).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        #[cfg(unix)]
        {
            let fifo = dir.join("fifo");
            let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let e = read(&fifo, 1024).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_that_lies_about_its_size_is_still_bounded() {
        // /proc files report size 0 and produce text when read.
        let e = read(Path::new("/proc/self/status"), 8).unwrap_err();
        assert!(e.to_string().contains("larger than the 8 bytes"), "{e}");
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let dir = scratch("utf8");
        let f = dir.join("a");
        std::fs::write(&f, [b'a', 0xff]).unwrap();
        let e = read_to_string(&f, 10).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
