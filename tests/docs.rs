//! `docs/guide/release-gates.md` stays true: its workflows are well-formed YAML (a structural check of the
//! subset they use; no YAML crate is in the lock) and every `toolcert` command they run names a
//! real subcommand and real flags, as `toolcert SUB --help` lists them.

use std::collections::BTreeSet;
use std::process::Command;

const DOC: &str = include_str!("../docs/guide/release-gates.md");

/// The fenced ```yaml blocks.
fn yaml_blocks(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```yaml") => current = Some(String::new()),
            (Some(block), "```") => {
                out.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(
        current.is_none(),
        "an unclosed ```yaml block in docs/guide/release-gates.md"
    );
    out
}

/// A structural check of the block-style YAML subset a workflow uses: no tabs; every line a
/// `key:` / `key: value` mapping entry, a `- ` sequence item, a comment, or a line of a `|`
/// block scalar (indented deeper than its key); a line deeper than the one before only under a
/// `key:` without a value;
/// flow collections, quotes and `${{ }}` balanced on their line. Returns the errors found.
fn yaml_errors(block: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let mut scalar_indent: Option<usize> = None; // inside a `|` block: its key's indent
    let mut expect_deeper: Option<usize> = None; // after `key:` with no value
    let mut last_indent = 0usize;
    for (n, line) in block.lines().enumerate() {
        let at = |what: &str| format!("line {}: {what}: {line:?}", n + 1);
        if line.contains('\t') {
            errors.push(at("a tab"));
        }
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(key_indent) = scalar_indent {
            if indent > key_indent {
                continue;
            }
            scalar_indent = None;
        }
        // Deeper than the line before only under a `key:` that opens a mapping or sequence.
        match expect_deeper.take() {
            Some(parent) if indent > parent => {}
            _ if indent > last_indent => errors.push(at("indented under a line with a value")),
            _ => {}
        }
        last_indent = indent;
        let text = line.trim_start();
        if text.starts_with('#') {
            continue;
        }
        let item = text.strip_prefix("- ").unwrap_or(text);
        let item_indent = indent + (text.len() - item.len());
        // `- key: value` then `  key2: value`: the item's keys sit at the item's indent.
        last_indent = last_indent.max(item_indent);
        let Some((key, value)) = item.split_once(':').filter(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        }) else {
            if text.starts_with("- ") {
                balanced(item)
                    .err()
                    .into_iter()
                    .for_each(|e| errors.push(at(&e)));
            } else {
                errors.push(at("neither `key: value` nor `- item`"));
            }
            continue;
        };
        let _ = key;
        let value = value.trim();
        if !value.is_empty() && !item[key.len() + 1..].starts_with(' ') {
            errors.push(at("no space after `key:`"));
        }
        match value {
            "" => expect_deeper = Some(item_indent),
            "|" | "|-" | ">" => scalar_indent = Some(item_indent),
            v => balanced(v)
                .err()
                .into_iter()
                .for_each(|e| errors.push(at(&e))),
        }
    }
    errors
}

/// Quotes, brackets, braces and `${{ }}` of one value are balanced.
fn balanced(v: &str) -> Result<(), String> {
    if v.matches("${{").count() != v.matches("}}").count() {
        return Err("unbalanced ${{ }}".into());
    }
    let (mut stack, mut quote) = (Vec::new(), None::<char>);
    for c in v.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') if stack.is_empty() || v.starts_with(['{', '[']) => quote = Some(c),
            (None, '[' | '{') => stack.push(c),
            (None, ']') if stack.pop() != Some('[') => return Err("unbalanced ]".into()),
            (None, '}') if stack.pop() != Some('{') => return Err("unbalanced }".into()),
            _ => {}
        }
    }
    // A plain scalar may hold a lone apostrophe; only a value that opens with a quote must
    // close it.
    if quote.is_some() && v.starts_with(['"', '\'']) {
        return Err("an unclosed quote".into());
    }
    if !stack.is_empty() {
        return Err("an unclosed [ or {".into());
    }
    Ok(())
}

/// Every `toolcert …` shell command of a workflow (continuation lines joined), as words.
fn commands(block: &str) -> Vec<Vec<String>> {
    let mut joined = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let t = line.trim();
        let t = t.strip_prefix("- ").unwrap_or(t);
        let t = t.strip_prefix("run:").map(str::trim).unwrap_or(t);
        if let Some(head) = t.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        joined.push(std::mem::take(&mut pending));
    }
    joined
        .into_iter()
        .filter(|l| l.starts_with("toolcert "))
        .map(|l| words(&l))
        .collect()
}

/// Shell words: split at blanks outside quotes, quotes removed (`--spawn 'a --port 1'` is
/// two words, and `--port` is the host's flag, not toolcert's).
fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

fn help(path: &[&str]) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(path)
        .arg("--help")
        .output()
        .expect("toolcert runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_workflows_in_docs_ci_md_are_well_formed_yaml() {
    let blocks = yaml_blocks(DOC);
    assert_eq!(blocks.len(), 2, "one job, and N parallel jobs");
    for (i, block) in blocks.iter().enumerate() {
        let errors = yaml_errors(block);
        assert!(errors.is_empty(), "workflow {}: {errors:#?}", i + 1);
        for key in ["name:", "on:", "jobs:", "runs-on:", "steps:"] {
            assert!(block.contains(key), "workflow {} has no {key}", i + 1);
        }
    }
    // The check can fail: a tab, a stray indent, an unclosed quote or expression.
    assert!(!yaml_errors("jobs:\n\tx: 1\n").is_empty());
    assert!(!yaml_errors("jobs:\n  a: 1\n    b: 2\n").is_empty());
    assert!(!yaml_errors("steps:\n  - run: x\n      y: 1\n").is_empty());
    assert!(yaml_errors("steps:\n  - run: x\n    if: y\n").is_empty());
    assert!(!yaml_errors("a: \"b\n").is_empty());
    assert!(!yaml_errors("a: ${{ x\n").is_empty());
}

#[test]
fn every_toolcert_command_in_docs_ci_md_is_real() {
    let blocks = yaml_blocks(DOC);
    let all: Vec<Vec<String>> = blocks.iter().flat_map(|b| commands(b)).collect();
    let subcommands: BTreeSet<&str> = all.iter().map(|c| c[1].as_str()).collect();
    for must in ["run", "merge", "recheck"] {
        assert!(
            subcommands.contains(must),
            "docs/guide/release-gates.md runs no `toolcert {must}`"
        );
    }
    for words in &all {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        // The subcommand path: `bundle verify` if toolcert knows it, else the first word. A
        // second word that is a flag or a file is never tried (`run --spawn --help` would run).
        let nested = words.len() > 2
            && words[2].chars().all(|c| c.is_ascii_lowercase() || c == '-')
            && !words[2].starts_with('-');
        let (path, help_text) = match nested.then(|| help(&words[1..3])).flatten() {
            Some(h) => (words[1..3].to_vec(), Some(h)),
            None => (words[1..2].to_vec(), help(&words[1..2])),
        };
        let Some(help_text) = help_text else {
            panic!(
                "`toolcert {}` is not a subcommand (in {words:?})",
                path.join(" ")
            );
        };
        for flag in words.iter().filter(|w| w.starts_with('-')) {
            let flag = flag.split('=').next().unwrap_or(flag);
            let listed = if flag.starts_with("--") {
                help_text.contains(&format!("{flag} ")) || help_text.contains(&format!("{flag}\n"))
            } else {
                help_text.contains(&format!("{flag}, "))
            };
            assert!(
                listed,
                "`toolcert {}` has no flag {flag} (in {words:?})",
                path.join(" ")
            );
        }
    }
}

#[test]
fn the_command_check_catches_a_made_up_flag() {
    let words = commands("      - run: toolcert run --no-such-flag r.json\n");
    assert_eq!(
        words,
        vec![vec!["toolcert", "run", "--no-such-flag", "r.json"]]
    );
    let spawn = commands("toolcert run \\\n  --spawn 'host --port {port}' --seed \"$X\"\n");
    assert_eq!(
        spawn,
        vec![vec![
            "toolcert",
            "run",
            "--spawn",
            "host --port {port}",
            "--seed",
            "$X"
        ]]
    );
    let help_text = help(&["run"]).expect("run --help");
    assert!(!help_text.contains("--no-such-flag "));
    assert!(help_text.contains("--html "), "--html is listed");
    assert!(help(&["no-such-subcommand"]).is_none());
}
