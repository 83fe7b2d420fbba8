//! `ctx.http.safeFetch`: the host's guarded outbound HTTP client (the
//! `httpClient` capability record, RFC 0076).
//!
//! Every fetch passes the SSRF guard ([`Guard`]) BEFORE any connection is
//! attempted; a blocked fetch never opens a socket. The guard resolves no
//! names (no DNS): the host part must be an IP literal or `localhost`.
//! Allowed fetches use the host's shared outbound client construction (no
//! proxy, no redirects, bounded connect time; see
//! [`crate::domain::invoker::outbound_client_builder`]) with a whole-request timeout
//! of [`REQUEST_TIMEOUT_MS`] and at most [`MAX_RESPONSE_BODY_BYTES`] of the
//! answer read. The answer's content is counted and dropped: the host keeps
//! only its status and size (the events are content-free).
//!
//! The events of a fetch (HOOKS-EVT-4, HOOKS-EVT-5) are written by the seam
//! that drives it ([`crate::surface::seams::safe_fetch`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::domain::invoker::{millis, outbound_client_builder};

/// Most bytes of an answer read (`httpClient.maxResponseBodyBytes`).
pub const MAX_RESPONSE_BODY_BYTES: usize = 1_048_576;

/// Whole-request timeout (`httpClient.requestTimeoutMs`).
pub const REQUEST_TIMEOUT_MS: u64 = 5_000;

/// The methods safeFetch sends (`httpClient.methods`).
pub const METHODS: &[&str] = &["GET", "POST"];

/// `details.service` of a safeFetch refusal (HOOKS-AUTH-5).
pub const SERVICE: &str = "http";

/// The `toolName` of safeFetch's tool events (HOOKS-EVT-4).
pub const TOOL_NAME: &str = "http.safeFetch";

/// A request method safeFetch sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Method {
    /// `GET` (the default).
    #[default]
    Get,
    /// `POST`.
    Post,
}

impl Method {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
        }
    }

    /// Parses one of [`METHODS`].
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "GET" => Some(Self::Get),
            "POST" => Some(Self::Post),
            _ => None,
        }
    }
}

/// The `init` of a fetch: method, extra headers, body (POST only).
#[derive(Debug, Clone, Default)]
pub struct FetchInit {
    /// The method.
    pub method: Method,
    /// Extra request headers (already checked to be valid HTTP).
    pub headers: HeaderMap,
    /// The request body, if any.
    pub body: Option<String>,
}

/// Why the guard blocked a URL. Each has a lower-kebab name for
/// `details.reason` (HOOKS-AUTH-5: informative only, never a routing key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockReason {
    /// Not `http:`.
    SchemeNotAllowed,
    /// A host name other than `localhost`: the guard resolves no names.
    NameResolutionDisabled,
    /// `0.0.0.0/8` or `::`: "this host", which reaches local services.
    UnspecifiedAddress,
    /// Loopback while the seams are off (not test mode).
    LoopbackAddress,
    /// RFC 1918, shared (100.64/10) and unique-local (fc00::/7,
    /// fec0::/10) addresses.
    PrivateAddress,
    /// `169.254/16`, `fe80::/10`.
    LinkLocalAddress,
    /// `224/4`, `ff00::/8`.
    MulticastAddress,
    /// `255.255.255.255`.
    BroadcastAddress,
    /// Other special-purpose space that is never a public service
    /// (`240/4`, benchmarking, documentation, IETF protocol ranges).
    ReservedAddress,
}

impl BlockReason {
    /// The lower-kebab name (`details.reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SchemeNotAllowed => "scheme-not-allowed",
            Self::NameResolutionDisabled => "name-resolution-disabled",
            Self::UnspecifiedAddress => "unspecified-address",
            Self::LoopbackAddress => "loopback-address",
            Self::PrivateAddress => "private-address",
            Self::LinkLocalAddress => "link-local-address",
            Self::MulticastAddress => "multicast-address",
            Self::BroadcastAddress => "broadcast-address",
            Self::ReservedAddress => "reserved-address",
        }
    }

    /// Why, in words, for the refusal's message.
    fn why(self) -> &'static str {
        match self {
            Self::SchemeNotAllowed => "only http URLs are fetched",
            Self::NameResolutionDisabled => {
                "safeFetch resolves no host names (no DNS); send an IP literal"
            }
            Self::UnspecifiedAddress => "it is an unspecified (\"this host\") address",
            Self::LoopbackAddress => "it is a loopback address and the host is not in test mode",
            Self::PrivateAddress => "it is a private address",
            Self::LinkLocalAddress => "it is a link-local address",
            Self::MulticastAddress => "it is a multicast address",
            Self::BroadcastAddress => "it is the broadcast address",
            Self::ReservedAddress => "it is a reserved special-purpose address",
        }
    }
}

/// A URL the guard refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// Why.
    pub reason: BlockReason,
    /// Names the address (or scheme) and why; never the whole URL, whose
    /// path, query or userinfo may carry secrets.
    pub message: String,
}

impl Blocked {
    fn new(reason: BlockReason, what: &str) -> Self {
        Self {
            reason,
            message: format!("safeFetch refused {what}: {}", reason.why()),
        }
    }
}

/// What an IP address is, for the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// Loopback (`127/8`, `::1`).
    Loopback,
    /// Blocked whatever the mode.
    Blocked(BlockReason),
    /// Anything else: a public address.
    Public,
}

/// Classifies an IPv4 address.
pub fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    let reason = match (a, b, c) {
        (0, _, _) => BlockReason::UnspecifiedAddress,
        (127, _, _) => return AddressClass::Loopback,
        (10, _, _) => BlockReason::PrivateAddress,
        (172, 16..=31, _) => BlockReason::PrivateAddress,
        (192, 168, _) => BlockReason::PrivateAddress,
        // Shared address space (carrier-grade NAT): never a public service.
        (100, 64..=127, _) => BlockReason::PrivateAddress,
        (169, 254, _) => BlockReason::LinkLocalAddress,
        (224..=239, _, _) => BlockReason::MulticastAddress,
        _ if ip == Ipv4Addr::BROADCAST => BlockReason::BroadcastAddress,
        (240..=255, _, _) => BlockReason::ReservedAddress,
        // IETF protocol assignments, benchmarking, documentation.
        (192, 0, 0) | (192, 0, 2) | (198, 18..=19, _) | (198, 51, 100) | (203, 0, 113) => {
            BlockReason::ReservedAddress
        }
        _ => return AddressClass::Public,
    };
    AddressClass::Blocked(reason)
}

/// Classifies an IPv6 address; IPv4-mapped (`::ffff:a.b.c.d`) and NAT64
/// (`64:ff9b::/96`) addresses are classified by the IPv4 address inside.
pub fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = segments;
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        return classify_v4(Ipv4Addr::new(a, b, c, d));
    }
    let reason = if ip.is_unspecified() {
        BlockReason::UnspecifiedAddress
    } else if ip.is_loopback() {
        return AddressClass::Loopback;
    } else if segments[0] & 0xfe00 == 0xfc00 || segments[0] & 0xffc0 == 0xfec0 {
        // fc00::/7 unique-local; fec0::/10 the deprecated site-local.
        BlockReason::PrivateAddress
    } else if segments[0] & 0xffc0 == 0xfe80 {
        BlockReason::LinkLocalAddress
    } else if segments[0] & 0xff00 == 0xff00 {
        BlockReason::MulticastAddress
    } else if segments[..6] == [0, 0, 0, 0, 0, 0] || segments[..2] == [0x2001, 0x0db8] {
        // The deprecated IPv4-compatible ::/96, and documentation space.
        BlockReason::ReservedAddress
    } else {
        return AddressClass::Public;
    };
    AddressClass::Blocked(reason)
}

/// Classifies an IP address.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// The SSRF guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    allow_loopback: bool,
}

impl Guard {
    /// A guard that allows loopback only when `test_mode` (the conformance
    /// seams are on): the harness's doubles live on loopback. Outside test
    /// mode loopback is blocked like any other local address.
    pub fn new(test_mode: bool) -> Self {
        Self {
            allow_loopback: test_mode,
        }
    }

    /// Checks `url` before any connection: `Ok` when it may be fetched.
    pub fn check(&self, url: &Url) -> Result<(), Blocked> {
        // `https` is blocked too: this host's reqwest is built without a
        // TLS stack, and a certificate could not be verified for an IP
        // literal anyway; refusing up front is honest where a connection
        // attempt would only fail later.
        if url.scheme() != "http" {
            let what = format!("scheme `{}`", url.scheme());
            return Err(Blocked::new(BlockReason::SchemeNotAllowed, &what));
        }
        // The URL parser lower-cases names, brackets IPv6 literals and
        // normalises IPv4 forms (`127.1`, `0x7f.0.0.1`, `2130706433`) into
        // dotted quads, so no spelling slips past the checks below.
        let Some(host) = url.host_str().filter(|host| !host.is_empty()) else {
            return Err(Blocked::new(
                BlockReason::NameResolutionDisabled,
                "a URL without a host",
            ));
        };
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let ip = match literal.parse::<IpAddr>() {
            Ok(ip) => ip,
            Err(_) if host == "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Err(_) => {
                let what = format!("host `{host}`");
                return Err(Blocked::new(BlockReason::NameResolutionDisabled, &what));
            }
        };
        let shown = if host == "localhost" {
            host.to_owned()
        } else {
            ip.to_string()
        };
        match classify(ip) {
            AddressClass::Public => Ok(()),
            // Loopback is allowed ONLY because the seams are enabled (test
            // mode): the harness's doubles live on loopback. A host serving
            // real traffic blocks it like any other local address.
            AddressClass::Loopback if self.allow_loopback => Ok(()),
            AddressClass::Loopback => Err(Blocked::new(
                BlockReason::LoopbackAddress,
                &format!("address {shown}"),
            )),
            AddressClass::Blocked(reason) => Err(Blocked::new(reason, &format!("address {shown}"))),
        }
    }
}

/// How an allowed fetch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// An answer arrived (any status; a non-2xx answer is still an answer).
    Answered {
        /// Its HTTP status.
        http_status: u16,
        /// Body bytes read (at most [`MAX_RESPONSE_BODY_BYTES`]; the rest
        /// is not read).
        bytes: u64,
        /// Whole milliseconds around the fetch.
        duration_ms: u64,
    },
    /// No answer: the connection failed or the timeout passed.
    Failed {
        /// What happened, without the client's error text (which may
        /// carry the URL).
        message: String,
        /// Whole milliseconds around the fetch.
        duration_ms: u64,
    },
}

/// The safeFetch client: the guard and one HTTP client for the host's
/// lifetime.
#[derive(Debug, Clone)]
pub struct SafeFetch {
    guard: Guard,
    client: reqwest::Client,
}

impl SafeFetch {
    /// Builds the client. `test_mode` (seams on) lets loopback through
    /// the guard.
    pub fn new(test_mode: bool) -> Result<Self, reqwest::Error> {
        let client = outbound_client_builder()
            .timeout(Duration::from_millis(REQUEST_TIMEOUT_MS))
            // `localhost` never reaches a resolver (no DNS): it is pinned
            // to 127.0.0.1 (port 0 keeps the URL's port).
            .resolve("localhost", SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .build()?;
        Ok(Self {
            guard: Guard::new(test_mode),
            client,
        })
    }

    /// The guard.
    pub fn guard(&self) -> Guard {
        self.guard
    }

    /// Fetches `url`, which the caller has already passed through
    /// [`SafeFetch::guard`]; the answer's body is counted, never kept.
    pub async fn fetch_checked(&self, url: &Url, init: &FetchInit) -> Fetched {
        let started = Instant::now();
        let method = match init.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
        };
        let mut request = self
            .client
            .request(method, url.clone())
            .headers(init.headers.clone());
        if let Some(body) = &init.body {
            request = request.body(body.clone());
        }
        let exchange = async {
            let mut response = request.send().await.map_err(|err| failure(&err))?;
            let http_status = response.status().as_u16();
            let mut read = 0usize;
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        read = read.saturating_add(chunk.len());
                        if read >= MAX_RESPONSE_BODY_BYTES {
                            // The cap: the rest is not read.
                            read = MAX_RESPONSE_BODY_BYTES;
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(err) => return Err(failure(&err)),
                }
            }
            Ok((http_status, read))
        };
        // The client's own timeout bounds the request; the outer one is
        // belt and braces, as for tool receivers.
        let ended = tokio::time::timeout(Duration::from_millis(REQUEST_TIMEOUT_MS), exchange)
            .await
            .unwrap_or_else(|_| Err(timed_out()));
        let duration_ms = millis(started.elapsed());
        match ended {
            Ok((http_status, bytes)) => Fetched::Answered {
                http_status,
                bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
                duration_ms,
            },
            Err(message) => Fetched::Failed {
                message,
                duration_ms,
            },
        }
    }
}

fn timed_out() -> String {
    format!("the fetch got no complete answer within {REQUEST_TIMEOUT_MS} ms")
}

/// A client error in words, without its text.
fn failure(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        timed_out()
    } else if err.is_connect() {
        "the fetch could not connect (connection refused or unreachable)".to_owned()
    } else {
        "the connection failed before a complete answer arrived".to_owned()
    }
}

/// Checks one request header: a valid name and value, and not one the
/// client owns (`host`, `content-length`, `transfer-encoding`,
/// `connection`). `Err` says what is wrong, without echoing the value.
pub fn check_header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), &'static str> {
    let name =
        HeaderName::from_bytes(name.as_bytes()).map_err(|_| "is not a valid HTTP header name")?;
    if ["host", "content-length", "transfer-encoding", "connection"].contains(&name.as_str()) {
        return Err("is set by the client and cannot be sent");
    }
    let value =
        HeaderValue::from_str(value).map_err(|_| "has a value that is not valid in HTTP")?;
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(url: &str) -> Option<BlockReason> {
        let url = Url::parse(url).expect("url");
        Guard::new(true).check(&url).err().map(|b| b.reason)
    }

    #[test]
    fn guard_table_covers_every_address_class() {
        use BlockReason::*;
        let table: &[(&str, Option<BlockReason>)] = &[
            // Loopback: allowed in test mode.
            ("http://127.0.0.1:8080/x", None),
            ("http://127.9.9.9/", None),
            ("http://localhost:1/", None),
            ("http://LOCALHOST/", None),
            ("http://[::1]:9/", None),
            ("http://127.1/", None),
            ("http://[::ffff:127.0.0.1]/", None),
            // Public IP literals pass the guard (never fetched here).
            ("http://93.184.216.34/", None),
            ("http://[2606:4700::1]/", None),
            // Unspecified.
            ("http://0.0.0.0:80/", Some(UnspecifiedAddress)),
            ("http://0.1.2.3/", Some(UnspecifiedAddress)),
            ("http://[::]/", Some(UnspecifiedAddress)),
            ("http://0/", Some(UnspecifiedAddress)),
            // Private.
            ("http://10.0.0.1/", Some(PrivateAddress)),
            ("http://172.16.0.1/", Some(PrivateAddress)),
            ("http://172.31.255.255/", Some(PrivateAddress)),
            ("http://192.168.1.1/", Some(PrivateAddress)),
            ("http://100.64.0.1/", Some(PrivateAddress)),
            ("http://[fc00::1]/", Some(PrivateAddress)),
            ("http://[fd12:3456::1]/", Some(PrivateAddress)),
            ("http://[::ffff:10.1.2.3]/", Some(PrivateAddress)),
            ("http://[64:ff9b::a00:1]/", Some(PrivateAddress)),
            ("http://0xa.0.0.1/", Some(PrivateAddress)),
            ("http://167772161/", Some(PrivateAddress)),
            // Link-local.
            ("http://169.254.169.254/latest", Some(LinkLocalAddress)),
            ("http://[fe80::1]/", Some(LinkLocalAddress)),
            // Multicast and broadcast.
            ("http://224.0.0.1/", Some(MulticastAddress)),
            ("http://239.255.255.250/", Some(MulticastAddress)),
            ("http://[ff02::1]/", Some(MulticastAddress)),
            ("http://255.255.255.255/", Some(BroadcastAddress)),
            ("http://240.0.0.1/", Some(ReservedAddress)),
            ("http://192.0.2.1/", Some(ReservedAddress)),
            ("http://[2001:db8::1]/", Some(ReservedAddress)),
            // Schemes and names.
            ("https://127.0.0.1/", Some(SchemeNotAllowed)),
            ("file:///etc/passwd", Some(SchemeNotAllowed)),
            ("ftp://127.0.0.1/", Some(SchemeNotAllowed)),
            ("gopher://127.0.0.1:70/", Some(SchemeNotAllowed)),
            ("http://example.com/", Some(NameResolutionDisabled)),
            ("http://127.0.0.1.nip.io/", Some(NameResolutionDisabled)),
            (
                "http://localhost.localdomain/",
                Some(NameResolutionDisabled),
            ),
        ];
        for (url, expected) in table {
            assert_eq!(reason(url), *expected, "{url}");
        }
    }

    #[test]
    fn loopback_is_blocked_outside_test_mode() {
        let guard = Guard::new(false);
        for url in ["http://127.0.0.1/", "http://localhost/", "http://[::1]/"] {
            let url = Url::parse(url).expect("url");
            assert_eq!(
                guard.check(&url).err().map(|b| b.reason),
                Some(BlockReason::LoopbackAddress)
            );
        }
    }

    #[test]
    fn reasons_are_lower_kebab_and_messages_name_the_address_not_the_url() {
        let url = Url::parse("http://user:pw@10.0.0.1/secret?token=x").expect("url");
        let blocked = Guard::new(true).check(&url).expect_err("blocked");
        assert_eq!(blocked.reason.as_str(), "private-address");
        assert!(blocked.message.contains("10.0.0.1"), "{}", blocked.message);
        assert!(blocked.message.contains("private"), "{}", blocked.message);
        for secret in ["user", "pw", "secret", "token"] {
            assert!(!blocked.message.contains(secret), "{}", blocked.message);
        }
        for reason in [
            BlockReason::SchemeNotAllowed,
            BlockReason::NameResolutionDisabled,
            BlockReason::UnspecifiedAddress,
            BlockReason::LoopbackAddress,
            BlockReason::PrivateAddress,
            BlockReason::LinkLocalAddress,
            BlockReason::MulticastAddress,
            BlockReason::BroadcastAddress,
            BlockReason::ReservedAddress,
        ] {
            let name = reason.as_str();
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{name}"
            );
        }
    }

    #[test]
    fn headers_are_checked_without_echoing_values() {
        assert!(check_header("x-test", "1").is_ok());
        assert!(check_header("bad name", "1").is_err());
        assert!(check_header("Host", "evil").is_err());
        assert!(check_header("x-test", "a\nb").is_err());
    }

    #[test]
    fn methods_parse() {
        assert_eq!(Method::parse("GET"), Some(Method::Get));
        assert_eq!(Method::parse("POST").map(Method::as_str), Some("POST"));
        assert_eq!(Method::parse("get"), None);
        assert_eq!(Method::default(), Method::Get);
    }
}
