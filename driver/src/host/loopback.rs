//! Loopback means loopback: every URL toolcert sends a token to (`--host`, a profile's
//! `baseUrl`, the URL a spawned host prints, and each request URL built from one of those) is
//! parsed whole, refused when it carries userinfo (`http://127.0.0.1:1@198.51.100.7/` reads as
//! a loopback URL to a prefix check and connects to 198.51.100.7), and accepted only when its
//! host part is an address on loopback: an IPv4 address in 127.0.0.0/8, `[::1]`, or the name
//! `localhost`, which toolcert resolves to 127.0.0.1 itself instead of asking the resolver.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// A base URL that passed [`parse_base_url`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopbackUrl {
    url: reqwest::Url,
}

impl LoopbackUrl {
    /// The URL as toolcert uses it: no trailing `/`.
    pub fn as_base(&self) -> String {
        self.url.as_str().trim_end_matches('/').to_string()
    }

    /// `Some((name, 127.0.0.1:port))` when the host is the name `localhost`: the resolution
    /// an HTTP client must be pinned to, so no resolver decides where a token goes.
    pub fn pinned(&self) -> Option<(String, SocketAddr)> {
        let host = self.url.host_str()?;
        host.eq_ignore_ascii_case("localhost").then(|| {
            let port = self.url.port_or_known_default().unwrap_or(80);
            (
                host.to_string(),
                SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            )
        })
    }
}

/// Why a URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not a URL at all (the parser's reason).
    #[error("{shown:?} is not a URL ({reason}); expected e.g. http://127.0.0.1:8080")]
    Parse {
        /// The text, credentials masked.
        shown: String,
        /// The parser's reason.
        reason: String,
    },
    /// A scheme toolcert does not speak here.
    #[error("{shown:?}: expected an {expected} URL")]
    Scheme {
        /// The text, credentials masked.
        shown: String,
        /// `http://` or `http:// or https://`.
        expected: &'static str,
    },
    /// Userinfo before the host (`user:password@`).
    #[error(
        "{shown:?} carries credentials (userinfo before `@`); toolcert sends a role's token itself and never puts credentials in a URL: remove them"
    )]
    UserInfo {
        /// The text, credentials masked.
        shown: String,
    },
    /// A query or a fragment, which a base URL cannot have (paths are appended to it).
    #[error(
        "{shown:?}: a base URL has no query or fragment; give only scheme, host, port and path"
    )]
    QueryOrFragment {
        /// The text, credentials masked.
        shown: String,
    },
    /// The host part is not on loopback.
    #[error(
        "{shown:?}: the host {host} is not a loopback address; toolcert sends tokens only to 127.0.0.0/8, [::1] or localhost"
    )]
    NotLoopback {
        /// The text, credentials masked.
        shown: String,
        /// The host part.
        host: String,
    },
}

/// `text` with anything between `://` and the last `@` of its authority masked: what an error
/// may quote of a URL that carries credentials.
pub fn masked(text: &str) -> String {
    let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
        return text.to_string();
    };
    let rest = &text[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!(
            "{}[credentials]{}",
            &text[..scheme_end],
            &text[scheme_end + at..]
        ),
        None => text.to_string(),
    }
}

/// Parse a base URL toolcert will send tokens to. `https` says whether `https://` is allowed
/// (a spawned host prints an `http://` URL).
pub fn parse_base_url(text: &str, https: bool) -> Result<LoopbackUrl, UrlError> {
    let shown = masked(text);
    let expected = if https {
        "http:// or https://"
    } else {
        "http://"
    };
    let url = reqwest::Url::parse(text).map_err(|e| UrlError::Parse {
        shown: shown.clone(),
        reason: e.to_string(),
    })?;
    match url.scheme() {
        "http" => {}
        "https" if https => {}
        _ => {
            return Err(UrlError::Scheme { shown, expected });
        }
    }
    // The authority as written too: the parser drops an empty userinfo (`http://@host`).
    if !url.username().is_empty() || url.password().is_some() || authority(text).contains('@') {
        return Err(UrlError::UserInfo { shown });
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(UrlError::QueryOrFragment { shown });
    }
    let host = url.host_str().unwrap_or("").to_string();
    // `host_str` is the parser's normal form: `127.1` and `0x7f.0.0.1` read as `127.0.0.1`.
    let on_loopback = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| {
            IpAddr::V6(ip).is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        })
    } else if let Ok(ip) = host.parse::<Ipv4Addr>() {
        ip.is_loopback()
    } else {
        host.eq_ignore_ascii_case("localhost")
    };
    if !on_loopback {
        return Err(UrlError::NotLoopback { shown, host });
    }
    Ok(LoopbackUrl { url })
}

/// The authority of a URL's text (between `://` and the next `/`, `?` or `#`).
fn authority(text: &str) -> &str {
    let rest = text.find("://").map_or(text, |i| &text[i + 3..]);
    &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())]
}

/// Whether `url`, a request URL built from `base` and a path, still goes where `base` does:
/// same scheme, host and port, no userinfo. A path a host supplied (a run id such as
/// `@198.51.100.7/x`) can otherwise move the request, and its token, elsewhere.
pub fn same_origin(base: &str, url: &str) -> bool {
    let (Ok(b), Ok(u)) = (reqwest::Url::parse(base), reqwest::Url::parse(url)) else {
        return false;
    };
    u.username().is_empty()
        && u.password().is_none()
        && !authority(url).contains('@')
        && b.scheme() == u.scheme()
        && b.host() == u.host()
        && b.port_or_known_default() == u.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_accepted() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://127.0.0.2:1/",
            "https://127.0.0.1:8443/api/",
            "http://[::1]:9",
            "http://localhost:80",
            "http://LOCALHOST:81/x",
        ] {
            let u = parse_base_url(ok, true).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(!u.as_base().ends_with('/'), "{ok}");
        }
        let pinned = parse_base_url("http://localhost:81", true)
            .unwrap()
            .pinned();
        assert_eq!(
            pinned,
            Some(("localhost".into(), "127.0.0.1:81".parse().unwrap()))
        );
    }

    #[test]
    fn everything_else_is_refused_with_the_reason() {
        let cases = [
            ("http://127.0.0.1:99999", "not a URL"),
            ("http://[::1", "not a URL"),
            ("ftp://127.0.0.1", "expected an http:// or https:// URL"),
            ("http://127.0.0.1:1@127.0.0.2:8080/", "carries credentials"),
            ("http://user:s3cret@127.0.0.1:8080", "carries credentials"),
            ("http://@127.0.0.1:8080", "carries credentials"),
            ("http://127.0.0.1:8080/?a=1", "no query or fragment"),
            ("http://198.51.100.7:8080", "not a loopback address"),
            ("http://example.com", "not a loopback address"),
            ("http://localhost.example.com", "not a loopback address"),
            ("http://0.0.0.0:80", "not a loopback address"),
        ];
        for (text, why) in cases {
            let e = parse_base_url(text, true).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
        assert!(
            parse_base_url("https://127.0.0.1", false)
                .unwrap_err()
                .to_string()
                .contains("expected an http:// URL")
        );
    }

    #[test]
    fn a_request_url_must_stay_on_its_base() {
        let base = "http://127.0.0.1:8080";
        assert!(same_origin(base, "http://127.0.0.1:8080/runs/r1"));
        assert!(!same_origin(base, "http://127.0.0.1:8080@198.51.100.7/x"));
        assert!(!same_origin(base, "http://127.0.0.1:80801/x"));
        assert!(!same_origin(base, "https://127.0.0.1:8080/x"));
    }

    #[test]
    fn credentials_are_masked_in_what_errors_quote() {
        assert_eq!(
            masked("http://u:p@127.0.0.1:1/x@y"),
            "http://[credentials]@127.0.0.1:1/x@y"
        );
        assert_eq!(masked("http://127.0.0.1:1/"), "http://127.0.0.1:1/");
    }
}
