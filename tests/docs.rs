//! The README and every page under `docs/` stay true to the code:
//!
//! - every `toolcert …` command they show (and every `cargo run --release -- …`, which runs
//!   toolcert), in a shell or YAML code block or in inline code, names a real subcommand and
//!   real flags, as `toolcert SUB --help` lists them;
//! - every relative Markdown link resolves to a file that exists;
//! - the workflows of `docs/guide/release-gates.md` are well-formed YAML (a structural check of
//!   the subset they use; no YAML crate is in the lock).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

const DOC: &str = include_str!("../docs/guide/release-gates.md");

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

/// The repository root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages checked: the README and every Markdown file under `docs/`, as (path relative to
/// the root, text).
fn pages() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let rel = path
                .strip_prefix(root())
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            (rel, text)
        })
        .collect()
}

/// A page split into its fenced code blocks (info string, text) and its prose (everything
/// outside them, fences removed, blank lines kept so paragraphs stay apart).
struct Split {
    blocks: Vec<(String, String)>,
    prose: String,
}

fn split(doc: &str) -> Split {
    let (mut blocks, mut prose) = (Vec::new(), String::new());
    let mut current: Option<(String, String)> = None;
    for line in doc.lines() {
        let t = line.trim();
        match &mut current {
            None if t.starts_with("```") => {
                current = Some((t.trim_start_matches('`').trim().to_string(), String::new()));
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some(_) if t == "```" => {
                blocks.extend(current.take());
                prose.push('\n');
            }
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    assert!(current.is_none(), "an unclosed code block");
    Split { blocks, prose }
}

/// The fenced ```yaml blocks.
fn yaml_blocks(doc: &str) -> Vec<String> {
    split(doc)
        .blocks
        .into_iter()
        .filter(|(info, _)| info == "yaml")
        .map(|(_, text)| text)
        .collect()
}

/// Code blocks whose lines are shell commands (a workflow's `run:` lines included).
fn is_shell(info: &str) -> bool {
    matches!(info, "" | "sh" | "bash" | "shell" | "console" | "yaml")
}

/// Every toolcert command of a shell or YAML block (continuation lines joined, comments
/// dropped, `run:` and list markers stripped), as words starting with `toolcert`.
fn block_commands(block: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let t = line.trim();
        let t = t.strip_prefix("- ").unwrap_or(t);
        let t = t.strip_prefix("run:").map(str::trim).unwrap_or(t);
        let t = t.strip_prefix("$ ").unwrap_or(t);
        let t = without_comment(t);
        if let Some(head) = t.trim_end().strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        out.extend(commands_in(&std::mem::take(&mut pending)));
    }
    out.extend(commands_in(&pending));
    out
}

/// A shell line without its `# comment` (a `#` at the start or after a blank, outside quotes).
fn without_comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev.is_whitespace() => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

/// The toolcert commands of one shell line: it is split at `&&`, `||`, `;`, `|` and `$(`
/// outside quotes, leading `NAME=value` words are dropped, and each piece that runs
/// `toolcert` (or `cargo run [--release] -- …`) is kept as words starting with `toolcert`.
fn commands_in(line: &str) -> Vec<Vec<String>> {
    let mut pieces = vec![String::new()];
    let mut quote = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                pieces.last_mut().expect("a piece").push(c);
            }
            (Some(_), c) => pieces.last_mut().expect("a piece").push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                pieces.last_mut().expect("a piece").push(c);
            }
            (None, ';' | '|' | '&' | '`') => pieces.push(String::new()),
            (None, '$') if chars.peek() == Some(&'(') => {
                chars.next();
                pieces.push(String::new());
            }
            (None, ')') => pieces.push(String::new()),
            (None, c) => pieces.last_mut().expect("a piece").push(c),
        }
    }
    pieces.iter().filter_map(|p| toolcert_words(p)).collect()
}

/// The words of one command if it runs toolcert: `toolcert …`, or `cargo run` with only
/// `--release`/`--locked`/`--quiet` before `--` (a `-p` or `--bin` runs another binary).
fn toolcert_words(command: &str) -> Option<Vec<String>> {
    let mut w = words(command);
    while w.first().is_some_and(|x| is_assignment(x)) {
        w.remove(0);
    }
    if w.first().is_some_and(|x| x == "toolcert") && w.len() > 1 {
        return Some(w);
    }
    if w.len() > 2 && w[0] == "cargo" && w[1] == "run" {
        let dashes = w.iter().position(|x| x == "--")?;
        let cargo_flags_ok = w[2..dashes]
            .iter()
            .all(|f| matches!(f.as_str(), "--release" | "--locked" | "--quiet" | "-q"));
        if cargo_flags_ok && w.len() > dashes + 1 {
            let mut out = vec!["toolcert".to_string()];
            out.extend(w[dashes + 1..].iter().cloned());
            return Some(out);
        }
    }
    None
}

/// `NAME=value`, a shell variable assignment before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The toolcert commands shown in inline code: every `` `…` `` span of the prose (a span may
/// run over a line break within its paragraph) that runs toolcert.
fn inline_commands(prose: &str) -> Vec<Vec<String>> {
    inline_spans(prose)
        .iter()
        .filter_map(|span| toolcert_words(span))
        .collect()
}

/// The inline code spans of some prose, paragraph by paragraph (a table row is a paragraph of
/// its own).
fn inline_spans(prose: &str) -> Vec<String> {
    let mut paragraphs: Vec<String> = vec![String::new()];
    for line in prose.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('|') {
            paragraphs.push(String::new());
        }
        let p = paragraphs.last_mut().expect("a paragraph");
        p.push_str(t);
        p.push(' ');
        if t.starts_with('|') {
            paragraphs.push(String::new());
        }
    }
    let mut spans = Vec::new();
    for p in paragraphs {
        let mut rest = p.as_str();
        while let Some(open) = rest.find('`') {
            let ticks = rest[open..].chars().take_while(|&c| c == '`').count();
            let fence = "`".repeat(ticks);
            let after = &rest[open + ticks..];
            let Some(close) = after.find(&fence) else {
                break;
            };
            spans.push(after[..close].trim().to_string());
            rest = &after[close + ticks..];
        }
    }
    spans
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

/// `toolcert PATH… --help`, when it succeeds; cached, every page asks for the same few.
fn help(path: &[&str]) -> Option<String> {
    static CACHE: Mutex<BTreeMap<String, Option<String>>> = Mutex::new(BTreeMap::new());
    let key = path.join(" ");
    if let Some(hit) = CACHE.lock().expect("cache").get(&key) {
        return hit.clone();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(path)
        .arg("--help")
        .output()
        .expect("toolcert runs");
    let text = out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned());
    CACHE.lock().expect("cache").insert(key, text.clone());
    text
}

/// The flag a shell word names, if it names one: `--strict`, `-q`, `--reference-upstream-only`
/// of `--reference-upstream-only[=v1|v2]`, `--exact` of a synopsis's `[--exact]`.
fn flag_of(word: &str) -> Option<&str> {
    let w = word.trim_start_matches(['[', '(']);
    let w = w.trim_end_matches([']', ')', ',', '.', ';', ':']);
    let w = w.split(['=', '[']).next().unwrap_or(w);
    let name = w.strip_prefix("--").or_else(|| w.strip_prefix('-'))?;
    (!name.is_empty() && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())).then_some(w)
}

/// Why a toolcert command (words starting with `toolcert`) is not real, if it is not: its
/// subcommand is unknown, or a flag is not one `--help` lists. A subcommand written as a
/// placeholder (`toolcert SUB --help`, `toolcert …`) names no command and is not checked.
fn check_command(words: &[String]) -> Result<(), String> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let first = words[1];
    if first.chars().all(|c| c.is_ascii_uppercase() || c == '_') || first.contains('…') {
        return Ok(());
    }
    // The subcommand path: `bundle verify` if toolcert knows it, else the first word. A
    // second word that is a flag, a file or a filter is never tried (`run --spawn --help`
    // would run).
    let nested = words.len() > 2
        && !words[2].is_empty()
        && words[2].chars().all(|c| c.is_ascii_lowercase() || c == '-')
        && !words[2].starts_with('-');
    let (path, help_text) = match nested.then(|| help(&words[1..3])).flatten() {
        Some(h) => (words[1..3].to_vec(), Some(h)),
        None => (words[1..2].to_vec(), help(&words[1..2])),
    };
    let Some(help_text) = help_text else {
        return Err(format!("`toolcert {}` is not a subcommand", path.join(" ")));
    };
    // Words after `--` are another program's (`mcp guard … -- node server.js`).
    let ours = words.iter().skip(1).take_while(|w| **w != "--");
    for flag in ours.filter_map(|w| flag_of(w)) {
        let listed = if flag.starts_with("--") {
            [" ", "\n", "[", "="]
                .iter()
                .any(|end| help_text.contains(&format!("{flag}{end}")))
        } else {
            help_text.contains(&format!("{flag}, "))
        };
        if !listed {
            return Err(format!("`toolcert {}` has no flag {flag}", path.join(" ")));
        }
    }
    Ok(())
}

/// Every toolcert command a page shows: in its shell and YAML blocks and in its inline code.
fn page_commands(doc: &str) -> Vec<Vec<String>> {
    let parts = split(doc);
    let mut all: Vec<Vec<String>> = parts
        .blocks
        .iter()
        .filter(|(info, _)| is_shell(info))
        .flat_map(|(_, text)| block_commands(text))
        .collect();
    all.extend(inline_commands(&parts.prose));
    all
}

/// The relative link targets of a page's prose: `[text](target)` outside code, without its
/// `#fragment`; web addresses, `mailto:` and in-page `#anchors` are left out.
fn relative_links(doc: &str) -> Vec<String> {
    let prose = split(doc).prose;
    // Inline code is not a link (`a[0](x)` in a span is code).
    let mut text = String::new();
    let mut in_code = false;
    for c in prose.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            text.push(c);
        }
    }
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].trim();
        let target = target.split_whitespace().next().unwrap_or("");
        let target = target.trim_start_matches('<').trim_end_matches('>');
        rest = &after[end..];
        if target.is_empty()
            || target.starts_with('#')
            || target.contains("://")
            || target.starts_with("mailto:")
        {
            continue;
        }
        let file = target.split('#').next().unwrap_or(target);
        out.push(file.to_string());
    }
    out
}

#[test]
fn the_workflows_in_release_gates_md_are_well_formed_yaml() {
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
fn the_release_gate_workflows_run_run_merge_and_recheck() {
    let all: Vec<Vec<String>> = yaml_blocks(DOC)
        .iter()
        .flat_map(|b| block_commands(b))
        .collect();
    let subcommands: BTreeSet<&str> = all.iter().map(|c| c[1].as_str()).collect();
    for must in ["run", "merge", "recheck"] {
        assert!(
            subcommands.contains(must),
            "docs/guide/release-gates.md runs no `toolcert {must}`"
        );
    }
}

#[test]
fn every_toolcert_command_in_the_docs_is_real() {
    let mut problems = Vec::new();
    let mut seen = 0;
    for (page, text) in pages() {
        for words in page_commands(&text) {
            seen += 1;
            if let Err(e) = check_command(&words) {
                problems.push(format!("{page}: {e} (in `{}`)", words.join(" ")));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    // The pages show commands in every form: blocks, workflows, inline code.
    eprintln!("{seen} toolcert commands checked");
    assert!(
        seen > 100,
        "only {seen} toolcert commands found in the docs"
    );
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut problems = Vec::new();
    let mut seen = 0;
    for (page, text) in pages() {
        let dir = root().join(&page);
        let dir = dir.parent().expect("a page is in a directory");
        for target in relative_links(&text) {
            seen += 1;
            if !dir.join(&target).exists() {
                problems.push(format!("{page}: link to {target}, which does not exist"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    eprintln!("{seen} relative links checked");
    assert!(seen > 50, "only {seen} relative links found in the docs");
}

#[test]
fn the_command_check_catches_a_made_up_flag_or_subcommand() {
    let made_up = block_commands("      - run: toolcert run --no-such-flag r.json\n");
    assert_eq!(
        made_up,
        vec![vec!["toolcert", "run", "--no-such-flag", "r.json"]]
    );
    assert!(check_command(&made_up[0]).is_err());
    let spawn = block_commands("toolcert run \\\n  --spawn 'host --port {port}' --seed \"$X\"\n");
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
    assert!(
        check_command(&spawn[0]).is_ok(),
        "--port is the host's flag"
    );
    let help_text = help(&["run"]).expect("run --help");
    assert!(!help_text.contains("--no-such-flag "));
    assert!(help_text.contains("--html "), "--html is listed");
    assert!(help(&["no-such-subcommand"]).is_none());
    let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert!(check_command(&words("toolcert no-such-subcommand")).is_err());
    assert!(check_command(&words("toolcert mcp capture --no-such-flag")).is_err());
    assert!(check_command(&words("toolcert run -z")).is_err());
    assert!(check_command(&words("toolcert mcp guard --server s -- node --inspect")).is_ok());
    assert!(
        check_command(&words(
            "toolcert run [--exact] --reference-upstream-only[=v1|v2]"
        ))
        .is_ok()
    );
}

#[test]
fn commands_are_found_in_every_form() {
    // Shell: comments, pipes, command substitution, variables, cargo run.
    let found = block_commands(
        "# toolcert run --nope\nSHA=$(toolcert mcp digest m.json) && echo \"$SHA\"\nX=1 toolcert coverage --verbose | tee c.txt # toolcert run --nope\ncargo run --release -- suite --expanded\ncargo run -p reference-host -- --port 8080\n",
    );
    let heads: Vec<String> = found.iter().map(|w| w[..2].join(" ")).collect();
    assert_eq!(
        heads,
        ["toolcert mcp", "toolcert coverage", "toolcert suite"],
        "{found:?}"
    );
    // Inline code, also across a line break, and in a table row.
    let prose = "Run `toolcert run\n--strict` or `cargo run -- coverage`.\n\n| `toolcert merge a b -o r` | x |\n";
    let inline = inline_commands(prose);
    assert_eq!(inline.len(), 3, "{inline:?}");
    assert_eq!(inline[0], ["toolcert", "run", "--strict"]);
    // Text and JSON blocks are output and data, not commands.
    let page =
        "```text\ntoolcert 0.1.0: certifying\n```\n```json\n{\"command\": \"toolcert\"}\n```\n";
    assert!(page_commands(page).is_empty());
}

#[test]
fn the_link_check_reads_links_and_only_links() {
    let page = "See [a](a.md#x), [b](../b/c.md \"t\"), [web](https://x.invalid/y), [here](#z).\n\n`[not](code.md)`\n\n```json\n[\"x\"](y)\n```\n";
    assert_eq!(relative_links(page), ["a.md", "../b/c.md"]);
    // A page that links to nothing real fails the check.
    let dir = root().join("docs/guide");
    assert!(!dir.join("no-such-page.md").exists());
    assert!(dir.join("../design/glossary.md").exists());
}
