//! The admin routes over the store's files (the guard requires the admin key for every
//! `/v1/admin/` path): `POST /v1/admin/verify` reads and checks every file of the served
//! store (a damaged one leaves the searches at once), `POST /v1/admin/snapshot` copies the
//! latest committed version into the server's snapshot directory while appends and deletes
//! go on. Both run on the blocking pool: they read the whole store.

use std::path::PathBuf;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Json;
use memdex_memory::{SnapshotOptions, SnapshotReport, VerifyReport};
use serde::{Deserialize, Serialize};

use crate::error::{bad_json, ApiError};
use crate::AppState;

/// `POST /v1/admin/verify` (admin key): every file of the store read and checked (size,
/// checksum, structure); each damaged one with what it holds. 200 either way: `damaged`
/// counts the damaged files.
#[utoipa::path(post, path = "/v1/admin/verify",
    responses((status = 200, body = Object, description = "the verification report (`damaged` > 0: files that fail, each with the tenants, sessions and rows it holds)")))]
pub async fn verify(State(st): State<AppState>) -> Result<Json<VerifyReport>, ApiError> {
    let memory = st.memory.clone();
    let report = tokio::task::spawn_blocking(move || memory.verify_store())
        .await
        .map_err(|e| ApiError::Internal(format!("verification stopped: {e}")))??;
    Ok(Json(report))
}

/// What `POST /v1/admin/snapshot` may be asked (the body may be empty).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotIn {
    /// Directory name inside the snapshot directory (`[A-Za-z0-9._@-]`, 1–128 characters;
    /// default `snapshot-<ms since the epoch>`). An existing one is 409.
    pub name: Option<String>,
    /// Copy every byte instead of hard-linking the immutable files.
    #[serde(default)]
    pub copy: bool,
}

/// The snapshot taken: where, and what was copied.
#[derive(Debug, Serialize)]
pub struct SnapshotOut {
    pub path: PathBuf,
    #[serde(flatten)]
    pub report: SnapshotReport,
}

/// `POST /v1/admin/snapshot` (admin key): a consistent copy of the latest committed version
/// in `--snapshot-dir` (default `snapshots/` in the store directory), taken while the server
/// keeps appending and deleting; the copy is opened and every file checked before it answers.
#[utoipa::path(post, path = "/v1/admin/snapshot", request_body(content = SnapshotIn, description = "optional"),
    responses((status = 200, body = Object, description = "`path` and the snapshot report"),
        (status = 409, body = crate::error::ErrorBody, description = "a snapshot of that name exists")))]
pub async fn snapshot(
    State(st): State<AppState>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Json<SnapshotOut>, ApiError> {
    let b = crate::api::body(b)?;
    let asked: SnapshotIn = match b.iter().all(u8::is_ascii_whitespace) {
        true => SnapshotIn::default(),
        false => serde_json::from_slice(&b).map_err(|e| bad_json(&e))?,
    };
    let name = match asked.name {
        Some(n) => n,
        None => format!("snapshot-{}", chrono::Utc::now().timestamp_millis()),
    };
    let dots = name.chars().all(|c| c == '.');
    if memdex_core::check_tenant_name(&name).is_err() || dots {
        return Err(ApiError::BadRequest(format!(
            "snapshot name {:?}: 1–128 of A-Z a-z 0-9 . _ - @, not only dots",
            memdex_core::clip(&name, 64)
        )));
    }
    let path = st.snapshot_dir.join(&name);
    let (memory, out) = (st.memory.clone(), path.clone());
    let opts = SnapshotOptions { copy: asked.copy };
    let report = tokio::task::spawn_blocking(move || memory.snapshot_store(&out, &opts))
        .await
        .map_err(|e| ApiError::Internal(format!("snapshot stopped: {e}")))??;
    Ok(Json(SnapshotOut { path, report }))
}
