//! Scratch directories under cargo's per-target tmp dir that test processes running at once
//! never share (cargo nextest runs every test in a process of its own), and that do not pile
//! up: each run removes the directories of test processes that have ended.

use std::path::{Path, PathBuf};

/// `CARGO_TARGET_TMPDIR/<area>/<this process's id>/<name>`, created empty. Directories of
/// `area` left by processes that are no longer running are removed first.
pub fn process_scratch(area: &str, name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(area);
    let mine = std::process::id();
    if let Ok(entries) = std::fs::read_dir(&root) {
        for entry in entries.flatten() {
            let pid = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok());
            // A directory named by a pid with no /proc entry belongs to an ended process.
            if let Some(pid) = pid
                && pid != mine
                && !Path::new("/proc").join(pid.to_string()).exists()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = root.join(mine.to_string()).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
