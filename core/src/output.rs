//! The last step of everything toolcert writes: the console and every report file.
//!
//! Text is made safe, then redacted, and the redacted bytes are the ones written, so no later
//! transformation can reassemble a secret the redactor split (a terminal writer that drops a
//! DEL would otherwise join `tok\x7fen` back into `token` after redaction ran):
//!
//! - [`clean`] strips what a reader does not see ([`toolcert_base::redact::is_invisible`]: control
//!   characters but `\n` and `\t`, bidirectional overrides, zero-width characters) and then
//!   scrubs the run's secrets with the process's redactor ([`guard`]); the console and the
//!   text reports (Markdown, JUnit, HTML) go through it;
//! - a JSON file keeps its value exactly (its digest is over the value), so instead of being
//!   stripped, what a reader does not see is written as `\uXXXX` escapes ([`escape_json`]),
//!   then the text is scrubbed;
//! - [`write_atomic`] writes to a temporary file beside the target and renames it over the
//!   target, so a run that is killed while writing leaves the earlier report whole;
//! - [`check_report_path`] refuses, before any host is contacted, a report path that is not a
//!   regular file (a device, `/proc/version`) or whose directory takes no new file.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, RwLock};

use toolcert_base::redact::{Redactor, is_invisible};

/// The redactor every output passes last: the run's tokens and canaries once they are known.
static GUARD: LazyLock<RwLock<Redactor>> = LazyLock::new(|| RwLock::new(Redactor::default()));

/// Make `redactor` the one every output passes from now on (a run sets it as soon as it knows
/// its tokens, before anything a host sent can be printed).
pub fn guard(redactor: Redactor) {
    *GUARD.write().unwrap_or_else(|p| p.into_inner()) = redactor;
}

/// The redactor outputs pass.
pub fn guarded() -> Redactor {
    GUARD.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `text` without the characters a reader does not see (`\n` and `\t` kept), then scrubbed of
/// every secret: what may reach a terminal or a text report.
pub fn clean(text: &str) -> String {
    let visible = strip(text);
    guarded().text(&visible).into_owned()
}

/// `text` without the characters a reader does not see, `\n` and `\t` kept.
pub fn strip(text: &str) -> std::borrow::Cow<'_, str> {
    if text
        .chars()
        .any(|c| is_invisible(c) && c != '\n' && c != '\t')
    {
        text.chars()
            .filter(|c| !is_invisible(*c) || *c == '\n' || *c == '\t')
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

/// JSON text with every raw character a reader does not see written as a `\uXXXX` escape:
/// the same JSON value, no raw bidirectional override or control character in the file.
/// Outside strings JSON has only ASCII whitespace, which is kept.
pub fn escape_json(json: &str) -> std::borrow::Cow<'_, str> {
    if !json
        .chars()
        .any(|c| is_invisible(c) && !matches!(c, '\n' | '\t' | '\r' | ' '))
    {
        return json.into();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_invisible(c) && !matches!(c, '\n' | '\t' | '\r') {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// A JSON report's pretty text is written while it stays under this size; past it the
/// compact text (pretty indentation of a deeply nested host value can multiply its size).
pub const MAX_PRETTY_JSON_BYTES: usize = 8 * 1024 * 1024;

/// The text a JSON report or bundle is written as: pretty, unless that passes
/// [`MAX_PRETTY_JSON_BYTES`], then compact; with a final newline.
pub fn json_text(value: &serde_json::Value) -> String {
    // Measured before it is built: the pretty text of deeply nested host values can be many
    // times the compact one, and building it only to drop it would cost that much memory.
    let mut pretty = crate::budget::ByteCount::default();
    let _ = serde_json::to_writer_pretty(&mut pretty, value);
    let mut text = if pretty.0 <= MAX_PRETTY_JSON_BYTES {
        serde_json::to_string_pretty(value).unwrap_or_default()
    } else {
        serde_json::to_string(value).unwrap_or_default()
    };
    text.push('\n');
    text
}

/// Print a line on stdout, cleaned ([`clean`]).
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", clean(line));
}

/// Print a line on stderr, cleaned ([`clean`]).
pub fn warn(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", clean(line));
}

/// How a report file's text is made safe before it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON: invisible characters escaped, the value unchanged.
    Json,
    /// Markdown, XML, HTML: invisible characters stripped.
    Text,
}

/// Make `text` safe for `format` and scrub it: the exact text [`write_atomic`] writes.
pub fn finish(text: &str, format: Format) -> String {
    let safe = match format {
        Format::Json => escape_json(text),
        Format::Text => strip(text),
    };
    guarded().written(&safe).into_owned()
}

/// Write a report: [`finish`] it, write it to a temporary file in the same directory, and
/// rename that over `path`. The earlier file at `path`, if any, stays whole until the rename.
pub fn write_atomic(path: &Path, text: &str, format: Format) -> std::io::Result<()> {
    let bytes = finish(text, format);
    let temp = temp_beside(path);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// A temporary file name beside `path` (same directory, so the rename is atomic).
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    dir.join(format!(
        ".{name}.toolcert-{}-{}.tmp",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// Why a report path cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path names something other than a regular file.
    #[error("{flag} {path}: is {kind}; expected a file path to a regular file (or none yet)")]
    NotAFile {
        /// The flag.
        flag: String,
        /// The path as given.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// The directory does not exist or is not one.
    #[error(
        "{flag} {path}: {dir} {what}; create the directory first or write the report elsewhere"
    )]
    NoDirectory {
        /// The flag.
        flag: String,
        /// The path as given.
        path: String,
        /// Its directory.
        dir: String,
        /// `does not exist` or `is not a directory`.
        what: &'static str,
    },
    /// No file can be created in the directory (reports are written to a temporary file there
    /// and renamed).
    #[error("{flag} {path}: cannot create a file in {dir}: {cause}")]
    NotWritable {
        /// The flag.
        flag: String,
        /// The path as given.
        path: String,
        /// Its directory.
        dir: String,
        /// The OS error.
        cause: std::io::Error,
    },
}

/// Check a report path before any host is contacted: absent or a regular file, in a
/// directory where a new file can be created (the temporary file [`write_atomic`] renames).
/// An existing report there is left as it was.
pub fn check_report_path(flag: &str, path: &Path) -> Result<(), PathError> {
    let shown = path.display().to_string();
    match std::fs::metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(PathError::NotAFile {
                flag: flag.into(),
                path: shown,
                kind: crate::input::kind_name(&meta.file_type()),
            });
        }
        _ => {}
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(PathError::NoDirectory {
            flag: flag.into(),
            path: shown,
            dir: dir.display().to_string(),
            what: if dir.exists() {
                "is not a directory"
            } else {
                "does not exist"
            },
        });
    }
    let probe = temp_beside(path);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(cause) => Err(PathError::NotWritable {
            flag: flag.into(),
            path: shown,
            dir: dir.display().to_string(),
            cause,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_strips_what_a_reader_does_not_see_then_redacts() {
        assert_eq!(strip("a\u{202e}b\u{0}c\u{7f}d\ne\tf\r"), "abcd\ne\tf");
        // A token split by a DEL is caught whole by the redactor, then the DEL is gone too.
        guard(Redactor::new(
            vec!["hostileOPabcdefgh12345678".into()],
            vec![],
        ));
        let out = clean("x hostileOP\u{7f}abcdefgh12345678 y");
        assert_eq!(out, "x [redacted] y");
        guard(Redactor::default());
    }

    #[test]
    fn json_keeps_its_value_and_loses_raw_invisible_characters() {
        let value = serde_json::json!({"a": "x\u{202e}y\u{7f}z\u{85}", "b": "é\n"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let escaped = escape_json(&text);
        assert!(!escaped.chars().any(|c| is_invisible(c) && c != '\n'));
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn report_paths_are_checked_and_written_atomically() {
        let dir = std::env::temp_dir().join(format!(
            "toolcert-output-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.md");
        check_report_path("--markdown", &path).unwrap();
        assert!(!path.exists(), "the check leaves nothing behind");
        write_atomic(&path, "one\n", Format::Text).unwrap();
        write_atomic(&path, "two\u{202e}\n", Format::Text).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temp file left"
        );
        for bad in ["/dev/full", "/dev/null"] {
            let e = check_report_path("--report", Path::new(bad)).unwrap_err();
            assert!(e.to_string().contains("character device"), "{e}");
        }
        // procfs takes no new file: its files are not reports.
        for bad in ["/proc/version", "/proc/self/comm"] {
            let e = check_report_path("--report", Path::new(bad)).unwrap_err();
            assert!(e.to_string().contains("cannot create a file"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
