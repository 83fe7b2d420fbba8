//! Ending every process toolcert started, and removing its scratch directories, also when the
//! run is interrupted.
//!
//! A host toolcert starts runs in a process group of its own, with [`MARK_VAR`] in its
//! environment set to a mark of that start. Ending it ([`end_tree`]) kills the group, then
//! every process whose environment carries the mark: what the command forked into a new
//! session or group (a command that daemonizes and exits) inherited the mark, so it is found
//! by what toolcert started, never by name. A run also makes toolcert a child subreaper
//! ([`become_subreaper`]), so a descendant that escapes both (a new session and a scrubbed
//! environment) is re-parented to toolcert instead of init, and [`end_everything`] ends it as
//! one of toolcert's own children.
//!
//! Every live host and scratch directory is tracked here, so a signal handler can end them all
//! at once ([`end_everything`]) while the scenarios that own them are still running.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The environment variable that marks every process of one start of a spawned host.
pub const MARK_VAR: &str = "TOOLCERT_SPAWN_MARK";

/// How many rounds of "kill what carries the mark, look again" one end takes: a process that
/// forks while it is being killed is caught by the next round.
const ROUNDS: usize = 6;

#[derive(Debug)]
struct Live {
    pid: u32,
    mark: String,
}

static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());
static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Track a started host (its process, leader of its group, and its mark).
pub fn track(pid: u32, mark: &str) {
    lock(&LIVE).push(Live {
        pid,
        mark: mark.to_string(),
    });
}

/// Stop tracking a host that was ended.
pub fn untrack(pid: u32) {
    lock(&LIVE).retain(|l| l.pid != pid);
}

/// Track a scratch directory (removed by [`end_everything`] if still there).
pub fn track_dir(path: &Path) {
    lock(&DIRS).push(path.to_path_buf());
}

/// Stop tracking a scratch directory that was removed.
pub fn untrack_dir(path: &Path) {
    lock(&DIRS).retain(|d| d != path);
}

/// End one start of a host: SIGKILL its process group (`pid` leads it), then every process
/// carrying its mark, a few rounds over.
pub fn end_tree(pid: Option<u32>, mark: &str) {
    #[cfg(unix)]
    {
        if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
            // SAFETY: signalling a process group toolcert created; errors (already gone) are
            // ignored.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
        // One empty scan is not proof: a process in the middle of an `execve` (a daemon's
        // `setsid` becoming its server) may briefly have no readable environment, so an empty
        // scan ends the search only when a second one, a moment later, agrees.
        let mut empty_scans = 0;
        for _ in 0..ROUNDS {
            let marked = marked_by(mark);
            if marked.is_empty() {
                empty_scans += 1;
                if empty_scans == 2 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            }
            empty_scans = 0;
            for p in marked {
                // SAFETY: as above, a process that carries toolcert's mark.
                unsafe {
                    libc::kill(p, libc::SIGKILL);
                }
                reap(p);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (pid, mark);
}

/// End every host still tracked, every process that carries any toolcert mark of this run,
/// and (as a subreaper) every child left to toolcert; remove every tracked scratch directory.
/// What a signal handler calls before the run writes its partial report.
pub fn end_everything() {
    let live: Vec<(u32, String)> = lock(&LIVE).drain(..).map(|l| (l.pid, l.mark)).collect();
    for (pid, mark) in &live {
        end_tree(Some(*pid), mark);
    }
    end_children();
    let dirs: Vec<PathBuf> = lock(&DIRS).drain(..).collect();
    for dir in dirs {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// SIGKILL every child process toolcert has (its own, and descendants re-parented to it as a
/// subreaper). Only the CLI calls it, once every host it started should be gone: every child
/// of the toolcert process is a host it started.
pub fn end_children() {
    #[cfg(unix)]
    {
        let me = std::process::id();
        for _ in 0..ROUNDS {
            let children = children_of(me);
            if children.is_empty() {
                break;
            }
            for p in children {
                // SAFETY: a child of this process.
                unsafe {
                    libc::kill(p, libc::SIGKILL);
                }
                reap(p);
            }
        }
    }
}

/// Make this process a child subreaper (Linux): descendants orphaned by a host that
/// daemonized are re-parented here instead of to init, so they stay toolcert's to end.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Collect a killed process's exit status if it is a child of toolcert (a zombie otherwise);
/// never blocks, and never touches a process that is not a child.
#[cfg(unix)]
fn reap(pid: i32) {
    for _ in 0..20 {
        let mut status = 0;
        // SAFETY: WNOHANG on one pid; ECHILD for a process that is not a child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r != 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Live processes (not zombies) whose environment carries `MARK_VAR=mark`.
#[cfg(unix)]
pub fn marked_by(mark: &str) -> Vec<i32> {
    let needle = format!("{MARK_VAR}={mark}");
    processes()
        .filter(|pid| *pid != std::process::id() as i32)
        .filter(|pid| {
            toolcert_core::input::read(Path::new(&format!("/proc/{pid}/environ")), 1024 * 1024)
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

/// Live processes (not zombies) whose parent is `parent`.
#[cfg(unix)]
fn children_of(parent: u32) -> Vec<i32> {
    processes()
        .filter(|pid| {
            let Ok(stat) = toolcert_core::input::read_to_string(
                Path::new(&format!("/proc/{pid}/stat")),
                64 * 1024,
            ) else {
                return false;
            };
            // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after
            // the last `)`.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            ppid == parent && state != "Z" && state != "X"
        })
        .collect()
}

#[cfg(unix)]
fn processes() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_escapes_its_group_is_found_by_its_mark_and_ended() {
        let mark = uuid::Uuid::new_v4().simple().to_string();
        // The shell forks a daemon into a new session and exits at once.
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("setsid sleep 300 >/dev/null 2>&1 < /dev/null &")
            .env(MARK_VAR, &mark)
            .status()
            .unwrap();
        assert!(status.success());
        let mut found = Vec::new();
        for _ in 0..100 {
            found = marked_by(&mark);
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(found.len(), 1, "the daemon carries the mark");
        end_tree(None, &mark);
        for _ in 0..100 {
            if marked_by(&mark).is_empty() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the daemon is still alive");
    }
}
