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

use std::borrow::Cow;

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

/// Scrubs a run's secrets from text and JSON.
#[derive(Debug, Clone)]
pub struct Redactor {
    tokens: Vec<String>,
    canaries: Vec<String>,
    bearer: Regex,
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
        Redactor {
            tokens: clean(tokens),
            canaries: clean(canaries),
            // RFC 6750 token68 characters; any scheme spelling (`bearer`, `BEARER`).
            bearer: Regex::new(r"(?i)\bbearer[ \t]+[A-Za-z0-9\-._~+/]+=*")
                .unwrap_or_else(|_| Regex::new("$^").expect("an empty pattern compiles")),
        }
    }

    /// The same redactor, also scrubbing `canaries`.
    pub fn with_canaries(&self, canaries: impl IntoIterator<Item = String>) -> Redactor {
        let mut all = self.canaries.clone();
        all.extend(canaries);
        Redactor::new(self.tokens.clone(), all)
    }

    /// Scrub one string.
    pub fn text<'s>(&self, s: &'s str) -> Cow<'s, str> {
        let mut out = Cow::Borrowed(s);
        for token in &self.tokens {
            if out.contains(token.as_str()) {
                out = Cow::Owned(out.replace(token.as_str(), REDACTED));
            }
        }
        for canary in &self.canaries {
            if out.contains(canary.as_str()) {
                out = Cow::Owned(out.replace(canary.as_str(), CANARY));
            }
        }
        if let Some(cut) = self.cut_off(&out) {
            out = Cow::Owned(cut);
        }
        if self.bearer.is_match(&out) {
            // `Bearer [redacted]` itself must stay as it is: the scheme word is kept.
            let replaced = self
                .bearer
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
        // Where an excerpt may end: before each ellipsis, and at the end, right to left so
        // the earlier positions stay valid while the later ones are rewritten.
        let mut ends: Vec<usize> = s.match_indices(ELLIPSIS).map(|(i, _)| i).collect();
        ends.push(s.len());
        let mut out: Option<String> = None;
        for &end in ends.iter().rev() {
            let text = out.as_deref().unwrap_or(s);
            let before = &text[..end];
            // The longest head of any secret that `before` ends with.
            let hit = [(&self.tokens, REDACTED), (&self.canaries, CANARY)]
                .into_iter()
                .flat_map(|(secrets, marker)| secrets.iter().map(move |x| (x, marker)))
                .filter_map(|(secret, marker)| cut_head(before, secret).map(|n| (n, marker)))
                .max_by_key(|(n, _)| *n);
            if let Some((n, marker)) = hit {
                let mut rewritten = text.to_string();
                rewritten.replace_range(end - n..end, marker);
                out = Some(rewritten);
            }
        }
        out
    }

    /// Scrub every string of a JSON value, object keys included.
    pub fn value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.text(s).into_owned()),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value(x)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (self.text(k).into_owned(), self.value(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Scrub a serializable value by round-tripping it through JSON (transcripts, check
    /// outcomes); a value that does not round-trip is returned unchanged.
    pub fn serde<T>(&self, v: T) -> T
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        match serde_json::to_value(&v) {
            Ok(json) => serde_json::from_value(self.value(&json)).unwrap_or(v),
            Err(_) => v,
        }
    }
}

/// The byte length of the longest proper head of `secret`, at least [`CUT_OFF_MIN`]
/// characters long, that `text` ends with.
fn cut_head(text: &str, secret: &str) -> Option<usize> {
    let first = secret.chars().next()?;
    let mut from = text.len().saturating_sub(secret.len());
    while !text.is_char_boundary(from) {
        from += 1;
    }
    // The earliest start is the longest head.
    text[from..]
        .match_indices(first)
        .map(|(i, _)| &text[from + i..])
        .find(|tail| {
            tail.len() < secret.len()
                && tail.chars().count() >= CUT_OFF_MIN
                && secret.starts_with(tail)
        })
        .map(str::len)
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
