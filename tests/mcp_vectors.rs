//! The portable drift vectors (`fixtures/mcp-drift-vectors/`, exported from
//! `toolcert::mcp::cases`): they are current (regenerated from the gate's cases, byte for
//! byte; `TOOLCERT_BLESS=1` rewrites them), and each, run from its files alone, gives its
//! expected verdict and rule.

use std::path::{Path, PathBuf};

use toolcert::mcp::cases::{self, Vector};

/// The two tests read and (blessing) write the same directory: one at a time.
static FILES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-drift-vectors")
}

/// Every file under `dir` (relative path → bytes), the README left out.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "README.md") {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn the_vectors_are_current() {
    let _one = FILES.lock().await;
    let fresh = std::env::temp_dir().join(format!("toolcert-vectors-fresh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let n = cases::export_vectors(&fresh).await.unwrap();
    assert_eq!(n, cases::gate_cases().len());
    if std::env::var_os("TOOLCERT_BLESS").is_some() {
        for (rel, _) in files(&vectors_dir()) {
            std::fs::remove_file(vectors_dir().join(rel)).unwrap();
        }
        for (rel, bytes) in files(&fresh) {
            let to = vectors_dir().join(&rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(to, bytes).unwrap();
        }
    }
    let (on_disk, fresh_files) = (files(&vectors_dir()), files(&fresh));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&on_disk),
        names(&fresh_files),
        "fixtures/mcp-drift-vectors is stale: rerun with TOOLCERT_BLESS=1"
    );
    for ((name, a), (_, b)) in on_disk.iter().zip(&fresh_files) {
        assert!(a == b, "{name} is stale: rerun with TOOLCERT_BLESS=1");
    }
    let _ = std::fs::remove_dir_all(&fresh);
}

#[tokio::test]
async fn every_vector_run_from_its_files_gives_its_verdict() {
    let _one = FILES.lock().await;
    let scratch = std::env::temp_dir().join(format!("toolcert-vectors-run-{}", std::process::id()));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(vectors_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 30, "{} vectors", dirs.len());
    let mut wrong = Vec::new();
    let (mut passes, mut refusals) = (0, 0);
    for dir in &dirs {
        let vector: Vector =
            serde_json::from_str(&std::fs::read_to_string(dir.join("vector.json")).unwrap())
                .unwrap();
        let (observed, _) = cases::run_vector(dir, &scratch).await.unwrap();
        let got = observed.refused.map(|r| r.id().to_string());
        if got != vector.expect.rule
            || (vector.expect.verdict == "pass") != observed.refused.is_none()
        {
            wrong.push(format!(
                "{}: expected {:?}, got {got:?}: {}",
                dir.display(),
                vector.expect,
                observed.message
            ));
        }
        if observed.refused.is_some() {
            refusals += 1;
        } else {
            passes += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        passes >= 2 && refusals >= 25,
        "{passes} passes, {refusals} refusals"
    );
    let _ = std::fs::remove_dir_all(&scratch);
}
