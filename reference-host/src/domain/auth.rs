//! Caller authentication (`Authorization: Bearer <token>`) and caller scope checks.

use axum::http::{HeaderMap, header};

use crate::base::principals::{Principal, PrincipalDirectory};
use crate::domain::error::ApiError;

/// The principal a request's bearer token authenticates.
///
/// Missing header, a non-bearer scheme or an unknown token ⇒ 401
/// `unauthenticated`. The token is never echoed in the message.
pub fn authenticate<'d>(
    headers: &HeaderMap,
    directory: &'d PrincipalDirectory,
) -> Result<&'d Principal, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| {
            ApiError::unauthenticated(
                "missing Authorization header; send `Authorization: Bearer <token>`",
            )
        })?
        .to_str()
        .map_err(|_| {
            ApiError::unauthenticated(
                "Authorization header is not valid ASCII; send `Authorization: Bearer <token>`",
            )
        })?;
    let token = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
        .ok_or_else(|| {
            ApiError::unauthenticated(
                "Authorization header is not a bearer token; send `Authorization: Bearer <token>`",
            )
        })?;
    directory.by_token(token).ok_or_else(|| {
        ApiError::unauthenticated(
            "the bearer token is not recognised; use a token issued to a configured principal",
        )
    })
}

/// Requires the caller to hold `scope`, failing closed when its scopes
/// cannot be resolved (RFC 0064 §C: an unevaluable check denies).
pub fn require_scope(caller: &Principal, scope: &str) -> Result<(), ApiError> {
    let scopes = caller.resolve_scopes().map_err(|err| {
        ApiError::forbidden(format!(
            "{err}, so access is denied (authorization fails closed); retry when the resolver is available"
        ))
    })?;
    if scopes.iter().any(|held| held == scope) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "principal `{}` lacks scope `{scope}`; call with a token whose principal holds it",
            caller.id
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::principals::builtin;
    use crate::domain::error::ErrorCode;
    use axum::http::HeaderValue;

    fn headers(value: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = value {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn bearer_tokens_authenticate() {
        let dir = PrincipalDirectory::new(builtin()).expect("valid");
        let alice = authenticate(&headers(Some("Bearer refhost-alice-token")), &dir).expect("ok");
        assert_eq!(alice.id, "alice");
        let alice = authenticate(&headers(Some("bearer refhost-alice-token")), &dir).expect("ok");
        assert_eq!(alice.id, "alice");
    }

    #[test]
    fn missing_malformed_or_unknown_tokens_are_401() {
        let dir = PrincipalDirectory::new(builtin()).expect("valid");
        for value in [
            None,
            Some("Basic abc"),
            Some("Bearer "),
            Some("Bearer nope"),
        ] {
            let err = authenticate(&headers(value), &dir).unwrap_err();
            assert_eq!(err.code, ErrorCode::Unauthenticated, "{value:?}");
            assert!(!err.message.contains("nope"));
        }
    }

    #[test]
    fn scope_checks_fail_closed() {
        let dir = PrincipalDirectory::new(builtin()).expect("valid");
        let carol = dir.get("carol").expect("carol");
        assert!(require_scope(carol, "runs:read").is_ok());
        assert_eq!(
            require_scope(carol, "conformance:seams").unwrap_err().code,
            ErrorCode::Forbidden
        );
        let dave = dir.get("dave").expect("dave");
        assert_eq!(
            require_scope(dave, "runs:read").unwrap_err().code,
            ErrorCode::Forbidden
        );
    }
}
