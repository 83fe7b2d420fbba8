//! End-to-end: three `--partition K/3` shards of the embedded reference host, merged, equal an
//! unsharded run of the same seed once per-run values are normalized.

use std::path::PathBuf;

use super::common::{read, text, toolcert};

use serde_json::Value;

/// Drop what differs between any two runs, sharded or not: wall times and the time of
/// writing, the digest (it covers those) and the shard, the host's URL (each run's embedded
/// host listens on its own port), transcripts and observations (they carry per-process
/// nonces, canary markers and ports); then mask ports and nonces left in check details.
fn normalize(v: &mut Value, ports: &regex::Regex, nonces: &regex::Regex) {
    match v {
        Value::Object(map) => {
            for key in [
                "generatedAt",
                "digest",
                "partition",
                "elapsedMs",
                "transcript",
                "observations",
            ] {
                map.remove(key);
            }
            if map.contains_key("embedded") {
                map.remove("baseUrl");
            }
            for value in map.values_mut() {
                normalize(value, ports, nonces);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| normalize(i, ports, nonces)),
        Value::String(s) => {
            let masked = ports.replace_all(s, "127.0.0.1:PORT");
            *s = nonces.replace_all(&masked, "NONCE").into_owned();
        }
        _ => {}
    }
}

#[test]
fn three_shards_merge_into_the_unsharded_report() {
    let dir = scratch("merge");
    let whole = dir.join("whole.json");
    let out = toolcert(&[
        "run",
        "-q",
        "--seed",
        "11",
        "--report",
        whole.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));

    let mut shards = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for k in 1..=3 {
        let shard = dir.join(format!("shard{k}.json"));
        let partition = format!("{k}/3");
        let out = toolcert(&[
            "run",
            "-q",
            "--seed",
            "11",
            "--partition",
            &partition,
            "--report",
            shard.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "shard {k}: {}", text(&out));
        let report = read(&shard);
        assert_eq!(report["partition"]["index"], k);
        let ids: Vec<String> = report["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["scenarioId"].as_str().unwrap().to_string())
            .collect();
        assert!(!ids.is_empty(), "shard {k} ran nothing");
        assert!(
            ids.iter().all(|id| !seen.contains(id)),
            "shards overlap: {ids:?}"
        );
        seen.extend(ids);
        shards.push(shard);
    }

    // A partition that cannot be is refused before any host starts.
    for bad in ["0/3", "4/3", "1/0", "a/b", "3"] {
        let out = toolcert(&["run", "--partition", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
        assert!(
            text(&out).contains("expected K/N with 1 <= K <= N"),
            "{bad}: {}",
            text(&out)
        );
    }

    // A shard missing or given twice is refused.
    let merged = dir.join("merged.json");
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let out = toolcert(&["merge", &s(&shards[0]), &s(&shards[1]), "-o", &s(&merged)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("expected each of [1, 2, 3] exactly once"),
        "{}",
        text(&out)
    );

    let out = toolcert(&[
        "merge",
        &s(&shards[0]),
        &s(&shards[1]),
        &s(&shards[2]),
        "-o",
        &s(&merged),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let mut merged_report = read(&merged);
    let suite = toolcert::suite::Suite::embedded().unwrap();
    let violations = suite
        .schemas
        .violations("schemas/report.schema.json", &merged_report)
        .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    assert!(merged_report.get("partition").is_none());
    // The merged report is sealed: recheck accepts it and finds nothing different.
    let out = toolcert(&["recheck", &s(&merged)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let ports = regex::Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    let nonces = regex::Regex::new(r"\b[0-9a-f]{16}\b").unwrap();
    let mut whole_report = read(&whole);
    assert_eq!(
        merged_report["scenarios"].as_array().unwrap().len(),
        whole_report["scenarios"].as_array().unwrap().len()
    );
    normalize(&mut whole_report, &ports, &nonces);
    normalize(&mut merged_report, &ports, &nonces);
    if whole_report != merged_report {
        for key in ["summary", "rows", "scenarios", "host", "uncovered"] {
            assert_eq!(whole_report[key], merged_report[key], "{key} differs");
        }
    }
    assert_eq!(whole_report, merged_report);

    // An edited shard is refused.
    let mut edited = read(&shards[2]);
    edited["seed"] = 12.into();
    std::fs::write(&shards[2], edited.to_string()).unwrap();
    let out = toolcert(&[
        "merge",
        &s(&shards[0]),
        &s(&shards[1]),
        &s(&shards[2]),
        "-o",
        &s(&merged),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("digest mismatch"), "{}", text(&out));

    std::fs::remove_dir_all(dir).ok();
}

fn scratch(name: &str) -> std::path::PathBuf {
    super::common::scratch("partition", name)
}
