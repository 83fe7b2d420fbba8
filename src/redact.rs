//! The one redactor every string leaving toolcert passes: reports (JSON, JUnit, Markdown), the
//! console, transcripts and their `curl` reproducers.
//!
//! It knows every bearer token of the run (flags and profile), every canary secret of the run
//! (one per scenario, derived up front, so a host that echoes one scenario's canary into
//! another's answers is caught too), and any `Bearer <value>` a host writes back. Tokens become
//! `[redacted]`; a canary becomes `[canary]`, so a check compared against one says so without
//! printing it. A secret that an excerpt cut off (the 512-character prefix of a non-JSON body,
//! a value a check quotes up to 300 characters and `…`) goes too: a string that ends, or
//! reaches an `…`, with the first [`CUT_OFF_MIN`] or more characters of a secret has them
//! replaced, since half a token is still a leak.
//!
//! Every string of every observation passes here, so the secrets are compiled once into two
//! Aho-Corasick automata (whole secrets; the first [`CUT_OFF_MIN`] characters of each) and a
//! string is scanned once, not once per secret: a run has a canary per scenario, and scanning
//! per secret was half of a run's CPU time.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use serde_json::Value;

/// The marker that replaces a token.
pub const REDACTED: &str = "[redacted]";

/// The marker that replaces a canary secret.
pub const CANARY: &str = "[canary]";

/// The shortest head of a secret scrubbed where an excerpt ends (shorter ones say nothing
/// worth hiding, and would make ordinary text ending in a few common letters a false match).
pub const CUT_OFF_MIN: usize = 4;

/// The ellipsis excerpts end with.
const ELLIPSIS: char = '…';

/// RFC 6750 token68 characters after the scheme, in any spelling (`bearer`, `BEARER`).
static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bbearer[ \t]+[A-Za-z0-9\-._~+/]+=*")
        .unwrap_or_else(|_| Regex::new("$^").expect("an empty pattern compiles"))
});

/// One secret and the marker that replaces it.
#[derive(Debug)]
struct Secret {
    text: String,
    marker: &'static str,
}

/// The compiled secrets (shared by clones: a redactor is cloned into every scenario).
#[derive(Debug)]
struct Compiled {
    tokens: Vec<String>,
    canaries: Vec<String>,
    /// Tokens, then canaries, longest first within each.
    secrets: Vec<Secret>,
    /// Every secret whole, leftmost-longest, so one that contains another goes whole.
    whole: Option<AhoCorasick>,
    /// The first [`CUT_OFF_MIN`] characters of each secret that has a longer proper head;
    /// `heads_of[p]` lists the secrets that start with pattern `p`.
    heads: Option<AhoCorasick>,
    heads_of: Vec<Vec<usize>>,
    /// The longest secret's byte length: a cut-off head starts within this of its end.
    max_len: usize,
    /// An automaton could not be built (only past aho-corasick's size limits, far beyond any
    /// run's secrets): then every string is replaced whole, failing closed, never leaking.
    failed: bool,
}

/// Scrubs a run's secrets from text and JSON.
#[derive(Debug, Clone)]
pub struct Redactor {
    inner: Arc<Compiled>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(Vec::new(), Vec::new())
    }
}

impl Redactor {
    /// A redactor for these tokens and canaries (empty ones are ignored; longer secrets are
    /// replaced first, so one that contains another is never half-redacted).
    pub fn new(tokens: Vec<String>, canaries: Vec<String>) -> Redactor {
        let clean = |mut v: Vec<String>| {
            v.retain(|s| !s.is_empty());
            v.sort_by_key(|s| std::cmp::Reverse(s.len()));
            v.dedup();
            v
        };
        let tokens = clean(tokens);
        let canaries = clean(canaries);
        let secrets: Vec<Secret> = tokens
            .iter()
            .map(|t| (t, REDACTED))
            .chain(canaries.iter().map(|c| (c, CANARY)))
            .map(|(text, marker)| Secret {
                text: text.clone(),
                marker,
            })
            .collect();
        let mut failed = false;
        let mut build = |patterns: &[&str], kind: MatchKind| {
            if patterns.is_empty() {
                return None;
            }
            let built = AhoCorasick::builder().match_kind(kind).build(patterns);
            failed |= built.is_err();
            built.ok()
        };
        let whole_patterns: Vec<&str> = secrets.iter().map(|s| s.text.as_str()).collect();
        let mut head_patterns: Vec<&str> = Vec::new();
        let mut heads_of: Vec<Vec<usize>> = Vec::new();
        for (i, s) in secrets.iter().enumerate() {
            // A proper head of at least CUT_OFF_MIN characters needs one more character.
            let Some((cut, _)) = s.text.char_indices().nth(CUT_OFF_MIN) else {
                continue;
            };
            let head = &s.text[..cut];
            match head_patterns.iter().position(|p| *p == head) {
                Some(p) => heads_of[p].push(i),
                None => {
                    head_patterns.push(head);
                    heads_of.push(vec![i]);
                }
            }
        }
        let whole = build(&whole_patterns, MatchKind::LeftmostLongest);
        let heads = build(&head_patterns, MatchKind::Standard);
        let max_len = secrets.iter().map(|s| s.text.len()).max().unwrap_or(0);
        Redactor {
            inner: Arc::new(Compiled {
                tokens,
                canaries,
                secrets,
                whole,
                heads,
                heads_of,
                max_len,
                failed,
            }),
        }
    }

    /// The same redactor, also scrubbing `canaries`.
    pub fn with_canaries(&self, canaries: impl IntoIterator<Item = String>) -> Redactor {
        let mut all = self.inner.canaries.clone();
        all.extend(canaries);
        Redactor::new(self.inner.tokens.clone(), all)
    }

    /// Scrub one string.
    pub fn text<'s>(&self, s: &'s str) -> Cow<'s, str> {
        self.scrub_text(s, true)
    }

    /// Scrub an object key: whole secrets and `Bearer` values only. Keys are never excerpts
    /// (nothing cuts one off), and a short key such as `host` that happens to be the head of
    /// a token like `hostile-…` must stay readable.
    fn key<'s>(&self, s: &'s str) -> Cow<'s, str> {
        self.scrub_text(s, false)
    }

    /// Scrub toolcert's own text (a check's id and what it says, a row's rule, a scenario's
    /// title): whole secrets and `Bearer` values only, like a key. No excerpt ever cut such
    /// text, and a check id such as `still-open` ends with the head of a token like
    /// `openwop-…` without holding any of it.
    pub fn label<'s>(&self, s: &'s str) -> Cow<'s, str> {
        self.scrub_text(s, false)
    }

    fn scrub_text<'s>(&self, s: &'s str, excerpt: bool) -> Cow<'s, str> {
        let c = &*self.inner;
        if c.failed {
            return Cow::Borrowed(REDACTED);
        }
        let mut out = Cow::Borrowed(s);
        if let Some(whole) = &c.whole
            && whole.is_match(s)
        {
            let mut replaced = String::with_capacity(s.len());
            let mut last = 0;
            for m in whole.find_iter(s) {
                replaced.push_str(&s[last..m.start()]);
                replaced.push_str(c.secrets[m.pattern().as_usize()].marker);
                last = m.end();
            }
            replaced.push_str(&s[last..]);
            out = Cow::Owned(replaced);
        }
        if excerpt && let Some(cut) = self.cut_off(&out) {
            out = Cow::Owned(cut);
        }
        if BEARER.is_match(&out) {
            // `Bearer [redacted]` itself must stay as it is: the scheme word is kept.
            let replaced = BEARER
                .replace_all(&out, |caps: &regex::Captures<'_>| {
                    let m = &caps[0];
                    let scheme_end = m.find([' ', '\t']).unwrap_or(m.len());
                    format!("{} {REDACTED}", &m[..scheme_end])
                })
                .into_owned();
            out = Cow::Owned(replaced);
        }
        out
    }

    /// `s` with the head of any secret that ends it, or ends just before an `…`, replaced;
    /// `None` when there is none.
    fn cut_off(&self, s: &str) -> Option<String> {
        let c = &*self.inner;
        let heads = c.heads.as_ref()?;
        // Where an excerpt may end: before each ellipsis, and at the end, right to left so
        // the earlier positions stay valid while the later ones are rewritten.
        let mut ends: Vec<usize> = s.match_indices(ELLIPSIS).map(|(i, _)| i).collect();
        ends.push(s.len());
        let mut out: Option<String> = None;
        for &end in ends.iter().rev() {
            let text = out.as_deref().unwrap_or(s);
            let mut from = end.saturating_sub(c.max_len);
            while !text.is_char_boundary(from) {
                from += 1;
            }
            // The longest head of any secret that `text[..end]` ends with: the earliest
            // start of a secret's first characters whose rest runs on as the secret does.
            let hit = heads
                .find_overlapping_iter(&text[from..end])
                .flat_map(|m| {
                    let tail = &text[from + m.start()..end];
                    c.heads_of[m.pattern().as_usize()]
                        .iter()
                        .map(move |&i| (i, tail))
                })
                .filter(|(i, tail)| {
                    let secret = &c.secrets[*i].text;
                    tail.len() < secret.len() && secret.starts_with(tail)
                })
                .max_by_key(|(_, tail)| tail.len());
            if let Some((i, tail)) = hit {
                let n = tail.len();
                let mut rewritten = text.to_string();
                rewritten.replace_range(end - n..end, c.secrets[i].marker);
                out = Some(rewritten);
            }
        }
        out
    }

    /// Scrub every string of a JSON value, object keys included.
    pub fn value(&self, v: &Value) -> Value {
        let mut out = v.clone();
        self.scrub(&mut out);
        out
    }

    /// Scrub every string of a JSON value in place, object keys included. Only what a secret
    /// touches is rewritten: observations and transcripts are large and mostly clean, and
    /// rebuilding every one of them whole was a good part of a run's allocations.
    pub fn scrub(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                // Compared, not matched on `Cow::Owned`: a redactor that failed closed hands
                // back a borrowed marker.
                let clean = self.text(s);
                if clean != s.as_str() {
                    *s = clean.into_owned();
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.scrub(x)),
            Value::Object(m) => {
                if m.keys().any(|k| self.key(k) != k.as_str()) {
                    let taken = std::mem::take(m);
                    for (k, mut x) in taken {
                        self.scrub(&mut x);
                        m.insert(self.key(&k).into_owned(), x);
                    }
                } else {
                    m.values_mut().for_each(|x| self.scrub(x));
                }
            }
            _ => {}
        }
    }

    /// Scrub a serializable value by round-tripping it through JSON (transcripts, check
    /// outcomes); a value that does not round-trip is returned unchanged.
    pub fn serde<T>(&self, v: T) -> T
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        match serde_json::to_value(&v) {
            Ok(mut json) => {
                self.scrub(&mut json);
                serde_json::from_value(json).unwrap_or(v)
            }
            Err(_) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn tokens_canaries_and_bearer_values_are_scrubbed_everywhere() {
        let r = Redactor::new(vec!["tok-1".into(), String::new()], vec!["canary-9".into()]);
        let v = json!({"a": "Bearer tok-1", "tok-1": ["x canary-9 y", 3], "b": "bearer S3cr3t.value=="});
        assert_eq!(
            r.value(&v),
            json!({"a": "Bearer [redacted]", "[redacted]": ["x [canary] y", 3], "b": "bearer [redacted]"})
        );
        // A key is no excerpt: one that is a token's head stays; a whole token in it goes.
        let r2 = Redactor::new(vec!["hostile-token-1".into()], vec![]);
        assert_eq!(
            r2.value(&json!({"host": "host", "a hostile-token-1": 1})),
            json!({"host": "[redacted]", "a [redacted]": 1})
        );
        // Already-redacted text is left as it is.
        assert_eq!(r.text("Bearer [redacted]"), "Bearer [redacted]");
    }

    #[test]
    fn a_longer_secret_that_contains_a_shorter_one_goes_whole() {
        let r = Redactor::new(vec!["abc".into(), "abcdef".into()], vec![]);
        assert_eq!(r.text("x abcdef y abc"), "x [redacted] y [redacted]");
    }

    #[test]
    fn the_head_of_a_secret_an_excerpt_cut_off_goes_too() {
        let r = Redactor::new(
            vec!["abcdefghij".into()],
            vec!["tc-canary-0123456789".into()],
        );
        // A body excerpt that ends inside a token, a quoted value cut before `…`.
        assert_eq!(r.text("session abcdefg"), "session [redacted]");
        assert_eq!(
            r.text("found \"x tc-canary-01…, and more"),
            "found \"x [canary]…, and more"
        );
        // Fewer than CUT_OFF_MIN characters, or not at an excerpt's end: left as it is.
        assert_eq!(r.text("session abc"), "session abc");
        // toolcert's own labels are no excerpts: a head at their end stays, a whole token goes.
        let r2 = Redactor::new(vec!["openwop-inmem-dev-key".into()], vec![]);
        assert_eq!(r2.text("still-open"), "still-[redacted]");
        assert_eq!(r2.label("still-open"), "still-open");
        assert_eq!(r2.label("a openwop-inmem-dev-key b"), "a [redacted] b");
        assert_eq!(r.text("abcdefg session"), "abcdefg session");
        assert_eq!(r.text("x abcdefghij"), "x [redacted]");
    }

    proptest! {
        /// Wherever a token is cut off, at the end or before an `…`, a head of it at least
        /// CUT_OFF_MIN characters long goes.
        #[test]
        fn no_cut_off_token_head_survives(
            prefix in ".{0,40}",
            token in "[A-Za-z0-9_-]{8,40}",
            cut in 0usize..40,
            ellipsis in proptest::bool::ANY,
        ) {
            prop_assume!(!REDACTED.contains(token.as_str()) && !CANARY.contains(token.as_str()));
            let cut = cut.min(token.len());
            let head = &token[..cut];
            let r = Redactor::new(vec![token.clone()], vec![]);
            let tail = if ellipsis { "…" } else { "" };
            let text = format!("{prefix}{head}{tail}");
            let out = r.text(&text).into_owned();
            if cut >= CUT_OFF_MIN {
                prop_assert!(out.ends_with(&format!("{REDACTED}{tail}")), "{text:?} => {out:?}");
            }
        }

        /// With many secrets at once (a run has a canary per scenario), none survives whole
        /// and none survives cut off at the end, whichever secret shares a head with another.
        #[test]
        fn many_secrets_none_survives_whole_or_cut_off(
            tokens in proptest::collection::vec("[a-d0-3]{6,12}", 1..6),
            canaries in proptest::collection::vec("tc-canary-[0-9a-f]{4}", 0..6),
            picks in proptest::collection::vec((0usize..12, ".{0,6}"), 1..6),
            cut in 0usize..12,
        ) {
            let secrets: Vec<String> = tokens.iter().chain(&canaries).cloned().collect();
            prop_assume!(secrets.iter().all(|s| !REDACTED.contains(s.as_str()) && !CANARY.contains(s.as_str())));
            let r = Redactor::new(tokens.clone(), canaries.clone());
            let mut text = String::new();
            for (i, filler) in &picks {
                text.push_str(filler);
                text.push_str(&secrets[i % secrets.len()]);
            }
            let last = &secrets[cut % secrets.len()];
            let head = &last[..(cut % last.len()).max(CUT_OFF_MIN).min(last.len() - 1)];
            text.push(' ');
            text.push_str(head);
            let out = r.text(&text).into_owned();
            for s in &secrets {
                prop_assert!(!out.contains(s.as_str()), "{s} in {out:?} (from {text:?})");
            }
            prop_assert!(!out.ends_with(head), "{head} ends {out:?} (from {text:?})");
        }

        /// Whatever text surrounds a token, no byte of it survives.
        #[test]
        fn no_token_survives_any_surrounding_text(
            prefix in ".{0,40}",
            suffix in ".{0,40}",
            token in "[A-Za-z0-9_-]{8,40}",
        ) {
            prop_assume!(!REDACTED.contains(token.as_str()) && !CANARY.contains(token.as_str()));
            let r = Redactor::new(vec![token.clone()], vec![]);
            let out = r.text(&format!("{prefix}{token}{suffix}")).into_owned();
            prop_assert!(!out.contains(&token), "{out}");
        }
    }
}
