//! The one error → HTTP status mapping: the front door's [`MemoryError`] classes, and the
//! failures only HTTP has (authentication, methods, bodies, the in-flight limit). Every
//! failure answers `{"error": {status, code, message}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use memdex_memory::MemoryError;
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
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    TooMany(String),
    #[error("{0}")]
    Timeout(String),
    #[error("{0}")]
    InsufficientStorage(String),
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
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::InsufficientStorage(_) => StatusCode::INSUFFICIENT_STORAGE,
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
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::Conflict(_) => "conflict",
            ApiError::TooLarge(_) => "too_large",
            ApiError::TooMany(_) => "too_many_requests",
            ApiError::Timeout(_) => "timeout",
            ApiError::InsufficientStorage(_) => "insufficient_storage",
            ApiError::Unavailable => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl From<MemoryError> for ApiError {
    fn from(e: MemoryError) -> Self {
        let msg = e.to_string();
        match e {
            MemoryError::Invalid(_) => ApiError::BadRequest(msg),
            MemoryError::TooLarge(_) => ApiError::TooLarge(msg),
            MemoryError::NotFound(_) => ApiError::NotFound(msg),
            MemoryError::Conflict(_) => ApiError::Conflict(msg),
            MemoryError::Busy(_) => ApiError::TooMany(msg),
            MemoryError::Closed => ApiError::Unavailable,
            MemoryError::DiskFull(_) => {
                tracing::error!("{msg}");
                ApiError::InsufficientStorage(msg)
            }
            MemoryError::NotCommitted(_) | MemoryError::Internal(_) => internal(msg),
        }
    }
}

fn internal(msg: String) -> ApiError {
    tracing::error!("{msg}");
    ApiError::Internal(msg)
}

/// The body of every error answer (for the OpenAPI document).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    pub status: u16,
    /// `bad_request`, `unauthorized`, `forbidden`, `not_found`, `method_not_allowed`,
    /// `conflict`, `too_large`, `too_many_requests`, `timeout`, `insufficient_storage`,
    /// `unavailable`, `internal`.
    pub code: String,
    pub message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody {
            error: ErrorDetail {
                status: status.as_u16(),
                code: self.code().into(),
                message: self.to_string(),
            },
        };
        let info = ErrorInfo {
            code: body.error.code.clone(),
            message: body.error.message.clone(),
            param: None,
        };
        let mut response = (status, axum::Json(body)).into_response();
        response.extensions_mut().insert(info);
        if status == StatusCode::TOO_MANY_REQUESTS {
            // a permit frees as soon as a request in flight ends: retry after a second
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        response
    }
}

/// The body of every error answer of the OpenAI-compatible route (`/v1/embeddings`).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct OpenAiErrorBody {
    pub error: OpenAiErrorDetail,
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct OpenAiErrorDetail {
    pub message: String,
    /// `invalid_request_error`, `rate_limit_error` or `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The body field the error is about, when there is one.
    pub param: Option<String>,
    /// memdex's error code (`bad_request`, `too_large`, …), or OpenAI's `invalid_api_key`,
    /// `model_not_found`, `rate_limit_exceeded`.
    pub code: Option<String>,
}

/// What an error answer says, kept with the response so a route may answer it in another
/// ecosystem's shape ([`openai_shape`]); `param`: the body field it is about, when known.
#[derive(Debug, Clone)]
pub struct ErrorInfo {
    pub code: String,
    pub message: String,
    pub param: Option<String>,
}

/// An error answer in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}` (for
/// the OpenAI-compatible route): the status and headers (`Allow`, `Retry-After`) stay, the
/// body is rewritten. Any other response is returned as it is.
pub fn openai_shape(response: Response) -> Response {
    let status = response.status();
    let Some(info) = response.extensions().get::<ErrorInfo>().cloned() else {
        return response;
    };
    let (kind, code) = match status.as_u16() {
        401 => ("invalid_request_error", "invalid_api_key".to_string()),
        404 if info.param.as_deref() == Some("model") => {
            ("invalid_request_error", "model_not_found".to_string())
        }
        429 => ("rate_limit_error", "rate_limit_exceeded".to_string()),
        s if s >= 500 => ("server_error", info.code.clone()),
        _ => ("invalid_request_error", info.code.clone()),
    };
    let body = serde_json::json!({"error": {
        "message": info.message,
        "type": kind,
        "param": info.param,
        "code": code,
    }});
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let mut out = Response::from_parts(parts, axum::body::Body::from(body.to_string()));
    out.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    out
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
