//! The one error → HTTP status mapping. Every failure answers `{"error": {status, code,
//! message}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use memdex_engine::EngineError;
use thiserror::Error;

/// A request's failure, with its status.
#[derive(Debug, Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("missing or invalid API key (send `Authorization: Bearer KEY`)")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    TooMany(String),
    #[error("the server is shutting down")]
    Unavailable,
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::Conflict(_) => "conflict",
            ApiError::TooLarge(_) => "too_large",
            ApiError::TooMany(_) => "too_many_requests",
            ApiError::Unavailable => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let msg = e.to_string();
        match e {
            EngineError::UnknownTenant { tenant, .. } => {
                ApiError::NotFound(format!("tenant {tenant:?} has no memory"))
            }
            EngineError::NotFound { .. } => ApiError::NotFound(msg),
            EngineError::SessionConflict { .. } => ApiError::Conflict(msg),
            EngineError::EmptyQuery
            | EngineError::Invalid { .. }
            | EngineError::MissingColumns { .. } => ApiError::BadRequest(msg),
            EngineError::Ingest(_) => ApiError::BadRequest(msg),
            EngineError::Busy { .. } => ApiError::TooMany(msg),
            EngineError::ShuttingDown => ApiError::Unavailable,
            EngineError::Embed(_) | EngineError::Store(_) | EngineError::Internal { .. } => {
                tracing::error!("{msg}");
                ApiError::Internal(msg)
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = serde_json::json!({"error": {
            "status": status.as_u16(),
            "code": self.code(),
            "message": self.to_string(),
        }});
        (status, axum::Json(body)).into_response()
    }
}

/// A JSON body parse failure as a 400 naming what is wrong (unknown fields by name, wrong
/// types, bad UTF-8), with line and column. serde quotes a mistyped value whole; the message
/// keeps a short prefix of it.
pub fn bad_json(e: &serde_json::Error) -> ApiError {
    let m = e.to_string();
    if m.len() <= 300 {
        return ApiError::BadRequest(format!("invalid JSON body: {m}"));
    }
    ApiError::BadRequest(format!(
        "invalid JSON body: {} (at line {} column {})",
        memdex_core::clip(&m, 240),
        e.line(),
        e.column()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_quote_a_prefix_of_huge_values() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Body {
            turns: Vec<String>,
        }
        let huge = format!("{{\"turns\": \"{}\"}}", "x".repeat(1 << 20));
        let e = serde_json::from_str::<Body>(&huge).unwrap_err();
        let m = bad_json(&e).to_string();
        assert!(m.len() < 400, "{} bytes", m.len());
        assert!(
            m.contains("invalid type") && m.contains("line 1 column"),
            "{m}"
        );
        let e = serde_json::from_str::<Body>("{\"turns\": 3}").unwrap_err();
        assert_eq!(
            bad_json(&e).to_string(),
            "invalid JSON body: invalid type: integer `3`, expected a sequence at line 1 column 11"
        );
    }
}
