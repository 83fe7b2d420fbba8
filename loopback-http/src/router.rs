//! Routing by method and path, with `{name}` path parameters.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};

use crate::body::{RequestBody, Response};
use crate::response;

/// One request as a handler sees it.
#[derive(Debug)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The request target (path and query).
    pub uri: Uri,
    /// The headers.
    pub headers: HeaderMap,
    /// The client's address (always a loopback address).
    pub peer: SocketAddr,
    /// The body, not yet read.
    pub body: RequestBody,
    /// The route's path parameters, percent-decoded.
    params: Vec<(String, String)>,
}

impl Request {
    /// The path parameter `name` (`{name}` in the route), percent-decoded.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = Response> + Send>>;
type Handler<S> = Arc<dyn Fn(S, Request) -> BoxFuture + Send + Sync>;
type Guard = Arc<dyn Fn(&Request) -> Option<Response> + Send + Sync>;

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Literal(String),
    Param(String),
}

struct Route<S> {
    pattern: Vec<Segment>,
    /// `None`: any method.
    methods: Vec<(Option<Method>, Handler<S>)>,
}

/// Routes over a state `S` every handler gets a clone of.
///
/// A path no route matches goes to the fallback (default: `404` with an empty body); a path
/// that matches but not with the request's method is `405` with `allow` listing the methods
/// it serves. `GET` routes answer `HEAD` too.
pub struct Router<S> {
    state: S,
    routes: Vec<Route<S>>,
    fallback: Option<Handler<S>>,
    guard: Option<Guard>,
}

impl<S> std::fmt::Debug for Router<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("routes", &self.routes.len())
            .finish_non_exhaustive()
    }
}

impl<S: Clone + Send + Sync + 'static> Router<S> {
    /// No routes yet, over `state`.
    pub fn new(state: S) -> Router<S> {
        Router {
            state,
            routes: Vec::new(),
            fallback: None,
            guard: None,
        }
    }

    /// Serve `method` on `path` with `handler`. `path` is `/`-separated; a segment `{name}`
    /// matches any one non-empty segment and is read back with [`Request::param`].
    pub fn route<F, Fut>(self, method: Method, path: &str, handler: F) -> Router<S>
    where
        F: Fn(S, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        self.add(Some(method), path, boxed(handler))
    }

    /// Serve every method on `path` with `handler`.
    pub fn any<F, Fut>(self, path: &str, handler: F) -> Router<S>
    where
        F: Fn(S, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        self.add(None, path, boxed(handler))
    }

    /// [`Router::route`] with `GET`.
    pub fn get<F, Fut>(self, path: &str, handler: F) -> Router<S>
    where
        F: Fn(S, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        self.route(Method::GET, path, handler)
    }

    /// [`Router::route`] with `POST`.
    pub fn post<F, Fut>(self, path: &str, handler: F) -> Router<S>
    where
        F: Fn(S, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        self.route(Method::POST, path, handler)
    }

    /// [`Router::route`] with `DELETE`.
    pub fn delete<F, Fut>(self, path: &str, handler: F) -> Router<S>
    where
        F: Fn(S, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        self.route(Method::DELETE, path, handler)
    }

    /// Answer requests no route's path matches with `handler` instead of an empty `404`.
    pub fn fallback<F, Fut>(mut self, handler: F) -> Router<S>
    where
        F: Fn(S, Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        self.fallback = Some(boxed(handler));
        self
    }

    /// Run `guard` before routing every request; a response it returns is the answer.
    pub fn guard<G>(mut self, guard: G) -> Router<S>
    where
        G: Fn(&Request) -> Option<Response> + Send + Sync + 'static,
    {
        self.guard = Some(Arc::new(guard));
        self
    }

    fn add(mut self, method: Option<Method>, path: &str, handler: Handler<S>) -> Router<S> {
        let pattern = parse_pattern(path);
        match self.routes.iter_mut().find(|r| r.pattern == pattern) {
            Some(route) => route.methods.push((method, handler)),
            None => self.routes.push(Route {
                pattern,
                methods: vec![(method, handler)],
            }),
        }
        self
    }

    /// Answer one request.
    pub(crate) async fn dispatch(&self, mut request: Request) -> Response {
        if let Some(answer) = self.guard.as_ref().and_then(|guard| guard(&request)) {
            return answer;
        }
        let path = request.uri.path().to_string();
        let mut allowed: Option<&Route<S>> = None;
        for route in &self.routes {
            let Some(params) = match_path(&route.pattern, &path) else {
                continue;
            };
            let Some((_, handler)) = route.methods.iter().find(|(m, _)| match m {
                None => true,
                Some(m) => {
                    *m == request.method || (*m == Method::GET && request.method == Method::HEAD)
                }
            }) else {
                allowed.get_or_insert(route);
                continue;
            };
            let params = match params {
                Ok(params) => params,
                Err(()) => {
                    return response::text(
                        StatusCode::BAD_REQUEST,
                        "Invalid URL: a path parameter is not percent-encoded UTF-8",
                    );
                }
            };
            request.params = params;
            return handler(self.state.clone(), request).await;
        }
        if let Some(route) = allowed {
            return method_not_allowed(route);
        }
        match &self.fallback {
            Some(handler) => handler(self.state.clone(), request).await,
            None => response::status(StatusCode::NOT_FOUND),
        }
    }
}

impl Request {
    pub(crate) fn new(parts: http::request::Parts, body: RequestBody, peer: SocketAddr) -> Request {
        Request {
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            peer,
            body,
            params: Vec::new(),
        }
    }
}

fn boxed<S, F, Fut>(handler: F) -> Handler<S>
where
    F: Fn(S, Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    Arc::new(move |state, request| Box::pin(handler(state, request)))
}

fn method_not_allowed<S>(route: &Route<S>) -> Response {
    let mut methods: Vec<&str> = Vec::new();
    for (method, _) in &route.methods {
        if let Some(m) = method {
            methods.push(m.as_str());
            if *m == Method::GET {
                methods.push("HEAD");
            }
        }
    }
    let mut answer = response::status(StatusCode::METHOD_NOT_ALLOWED);
    if let Ok(value) = HeaderValue::from_str(&methods.join(",")) {
        answer.headers_mut().insert(header::ALLOW, value);
    }
    answer
}

fn parse_pattern(path: &str) -> Vec<Segment> {
    path.split('/')
        .map(
            |segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => Segment::Param(name.to_string()),
                None => Segment::Literal(segment.to_string()),
            },
        )
        .collect()
}

/// `None`: the path does not match. `Some(Err)`: it matches, but a parameter does not decode.
#[allow(clippy::type_complexity)]
fn match_path(pattern: &[Segment], path: &str) -> Option<Result<Vec<(String, String)>, ()>> {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() != pattern.len() {
        return None;
    }
    let mut params = Vec::new();
    let mut undecodable = false;
    for (want, got) in pattern.iter().zip(segments) {
        match want {
            Segment::Literal(literal) if literal == got => {}
            Segment::Literal(_) => return None,
            Segment::Param(_) if got.is_empty() => return None,
            Segment::Param(name) => match percent_decode(got) {
                Some(value) => params.push((name.clone(), value)),
                None => undecodable = true,
            },
        }
    }
    Some(if undecodable { Err(()) } else { Ok(params) })
}

/// `%XX` escapes decoded; `None` when an escape is malformed or the result is not UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_one_non_empty_segment_and_decode() {
        let pattern = parse_pattern("/_toolcert/scripts/{model}/requests");
        let matched = match_path(&pattern, "/_toolcert/scripts/a%2Fb/requests");
        assert_eq!(matched, Some(Ok(vec![("model".into(), "a/b".into())])));
        assert_eq!(match_path(&pattern, "/_toolcert/scripts//requests"), None);
        assert_eq!(match_path(&pattern, "/_toolcert/scripts/a"), None);
        assert_eq!(
            match_path(&pattern, "/_toolcert/scripts/%ff/requests"),
            Some(Err(()))
        );
        assert_eq!(match_path(&parse_pattern("/mcp"), "/mcp/"), None);
    }

    #[test]
    fn malformed_escapes_do_not_decode() {
        assert_eq!(percent_decode("a%2"), None);
        assert_eq!(percent_decode("a%zz"), None);
        assert_eq!(percent_decode("caf%C3%A9").as_deref(), Some("café"));
    }
}
