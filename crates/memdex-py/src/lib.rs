//! `memdex._memdex`, the native half of the `memdex` Python package (the Python half,
//! `python/memdex/__init__.py`, is the public API and its documentation).
//!
//! One class, `Native`, over [`memdex_memory::Memory`]: every method copies its arguments out
//! of Python objects, then releases the GIL (`py.detach`, PyO3's name for `allow_threads`)
//! for the work, so Python threads search concurrently and the model thread batches their
//! queries. Structured values cross as JSON text (the wire shapes memdex already documents);
//! embeddings cross as one `bytearray` of little-endian f32 (numpy views it without a copy).
//! Every failure raises `NativeError(code, message)` with memdex's message; the Python half
//! turns it into `memdex.InvalidInput`, `memdex.NotFound`, ….

use std::path::PathBuf;

use memdex_memory::input::{file_limits, read_file, sessions_from_json_as};
use memdex_memory::{
    Builder, DeleteTarget, DeviceChoice, EngineOptions, Granularity, Memory, MemoryError,
    OpenOptions, RankChoice, SearchRequest, Stages, TextKind,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;

create_exception!(
    _memdex,
    NativeError,
    PyException,
    "A memdex failure: args are (code, message)."
);

fn err(e: MemoryError) -> PyErr {
    NativeError::new_err((e.code(), e.to_string()))
}

fn invalid(message: String) -> PyErr {
    err(MemoryError::Invalid(message))
}

fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| err(MemoryError::Internal(e.to_string())))
}

/// One open store and its model.
#[pyclass(frozen, module = "memdex._memdex")]
struct Native {
    memory: Memory,
}

#[pymethods]
impl Native {
    #[new]
    #[pyo3(signature = (store, model=None, device="auto", compact_every=30.0, rank_device="auto"))]
    fn new(
        py: Python<'_>,
        store: PathBuf,
        model: Option<String>,
        device: &str,
        compact_every: Option<f64>,
        rank_device: &str,
    ) -> PyResult<Native> {
        let device: DeviceChoice = device.parse().map_err(|e| invalid(format!("{e}")))?;
        let rank = RankChoice {
            device: rank_device.parse().map_err(err)?,
            ..RankChoice::default()
        };
        let compact_every = match compact_every {
            Some(s) if !(s.is_finite() && s >= 0.0) => {
                return Err(invalid(format!(
                    "compact_every must be a number of seconds ≥ 0, got {s}"
                )))
            }
            Some(s) if s > 0.0 => Some(std::time::Duration::from_secs_f64(s.min(1e9))),
            _ => None,
        };
        let opts = OpenOptions {
            model,
            device,
            engine: EngineOptions {
                compact_every,
                ..EngineOptions::default()
            },
            rank,
            ..OpenOptions::default()
        };
        let memory = py.detach(|| Memory::open(&store, opts)).map_err(err)?;
        Ok(Native { memory })
    }

    /// Stores sessions given as JSON text; answers the per-tenant reports as JSON text.
    #[pyo3(signature = (sessions_json, tenant=None))]
    fn add(&self, py: Python<'_>, sessions_json: &str, tenant: Option<String>) -> PyResult<String> {
        let value: serde_json::Value =
            serde_json::from_str(sessions_json).map_err(|e| invalid(format!("sessions: {e}")))?;
        let out = py
            .detach(|| self.memory.add_json(value, tenant.as_deref()))
            .map_err(err)?;
        json(&out)
    }

    /// Searches; answers the search answer (or, with `context`, the reading stage) as JSON.
    #[pyo3(signature = (tenant, query, k, date, recent_turns, stages_json, context, explain=false))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        tenant: String,
        query: String,
        k: usize,
        date: Option<String>,
        recent_turns: Vec<String>,
        stages_json: &str,
        context: bool,
        explain: bool,
    ) -> PyResult<String> {
        let stages: Stages =
            serde_json::from_str(stages_json).map_err(|e| invalid(format!("stages: {e}")))?;
        let req = SearchRequest {
            query,
            k,
            date,
            recent_turns,
            stages,
            explain,
            context,
        };
        let ans = py
            .detach(|| self.memory.search(&tenant, &req))
            .map_err(err)?;
        if context {
            json(&ans.context())
        } else {
            json(&ans)
        }
    }

    /// Forgets a whole tenant, one session or one item.
    #[pyo3(signature = (tenant, session_id=None, item_id=None))]
    fn delete(
        &self,
        py: Python<'_>,
        tenant: String,
        session_id: Option<String>,
        item_id: Option<u64>,
    ) -> PyResult<String> {
        let target = match (session_id, item_id) {
            (None, None) => DeleteTarget::Tenant { tenant },
            (Some(session_id), None) => DeleteTarget::Session { tenant, session_id },
            (None, Some(item_id)) => DeleteTarget::Item { tenant, item_id },
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "give a session_id or an item_id, not both".to_string(),
                ))
            }
        };
        let r = py.detach(|| self.memory.delete(target)).map_err(err)?;
        json(&r)
    }

    fn compact(&self, py: Python<'_>) -> PyResult<String> {
        let r = py.detach(|| self.memory.compact()).map_err(err)?;
        json(&r)
    }

    /// `(bytes of rows × dim little-endian f32, rows, dim)`.
    #[pyo3(signature = (texts, query=false))]
    fn embed<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        query: bool,
    ) -> PyResult<(Bound<'py, PyByteArray>, usize, usize)> {
        let kind = if query {
            TextKind::Query
        } else {
            TextKind::Passage
        };
        let e = py.detach(|| self.memory.embed(texts, kind)).map_err(err)?;
        let bytes: Vec<u8> = e.data.iter().flat_map(|x| x.to_le_bytes()).collect();
        Ok((PyByteArray::new(py, &bytes), e.len(), e.dim))
    }

    fn tenants(&self, py: Python<'_>) -> Vec<(String, u64)> {
        py.detach(|| self.memory.tenants())
    }

    fn sessions(&self, py: Python<'_>, tenant: String) -> PyResult<String> {
        let s = py.detach(|| self.memory.sessions(&tenant)).map_err(err)?;
        json(&s)
    }

    #[pyo3(signature = (tenant, session_id=None))]
    fn items(
        &self,
        py: Python<'_>,
        tenant: String,
        session_id: Option<String>,
    ) -> PyResult<String> {
        let s = py
            .detach(|| self.memory.items(&tenant, session_id.as_deref()))
            .map_err(err)?;
        json(&s)
    }

    fn close(&self, py: Python<'_>) {
        py.detach(|| self.memory.close());
    }

    #[getter]
    fn model(&self) -> String {
        self.memory.model().name.clone()
    }

    #[getter]
    fn dim(&self) -> usize {
        self.memory.model().dim
    }

    #[getter]
    fn device(&self) -> String {
        self.memory.device().to_string()
    }

    #[getter]
    fn store(&self) -> String {
        self.memory.dir().display().to_string()
    }
}

/// A format of memdex-ingest's registry by name (None: detected).
fn format_named(name: Option<&str>) -> PyResult<Option<&'static memdex_memory::Format>> {
    name.map(|n| memdex_memory::format(n).map_err(invalid))
        .transpose()
}

/// The sessions of a file (`path`) or of JSON text (`value_json`: a session, a LongMemEval
/// instance, a LoCoMo conversation, or a list of them), read by the format registry as
/// `format` (None: detected), as JSON text of memdex's session shape.
#[pyfunction]
#[pyo3(signature = (path=None, value_json=None, format=None))]
fn read_sessions(
    py: Python<'_>,
    path: Option<PathBuf>,
    value_json: Option<&str>,
    format: Option<&str>,
) -> PyResult<String> {
    let format = format_named(format)?;
    let sessions = match (path, value_json) {
        (Some(p), None) => py.detach(|| read_file(&p, format)).map_err(err)?,
        (None, Some(text)) => {
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| invalid(format!("sessions: {e}")))?;
            let now = chrono::Utc::now().timestamp_millis();
            (py.detach(|| sessions_from_json_as(value, format, None, now, &file_limits())))
                .map_err(err)?
        }
        _ => return Err(invalid("give a path or a value, not both".into())),
    };
    let wire: Vec<serde_json::Value> = sessions
        .iter()
        .map(memdex_memory::session_to_wire)
        .collect();
    json(&wire)
}

/// Builds (or extends) the store in `store` from sessions given as JSON text (memdex's
/// session shape), cut and keyed as `format` does by default, through the batch build
/// `memdex index` uses; answers `{report, tenants}` as JSON text. Idempotent.
#[pyfunction]
#[pyo3(signature = (store, sessions_json, format="jsonl", model=None, device="auto", granularity="round"))]
fn build(
    py: Python<'_>,
    store: PathBuf,
    sessions_json: &str,
    format: &str,
    model: Option<String>,
    device: &str,
    granularity: &str,
) -> PyResult<String> {
    let format = memdex_memory::format(format).map_err(invalid)?;
    let device: DeviceChoice = device.parse().map_err(|e| invalid(format!("{e}")))?;
    let granularity: Granularity = granularity.parse().map_err(|e| invalid(format!("{e}")))?;
    let value: serde_json::Value =
        serde_json::from_str(sessions_json).map_err(|e| invalid(format!("sessions: {e}")))?;
    let opts = OpenOptions {
        model,
        device,
        ..OpenOptions::default()
    };
    let out = py.detach(|| -> Result<serde_json::Value, MemoryError> {
        let now = chrono::Utc::now().timestamp_millis();
        let sessions = sessions_from_json_as(value, None, None, now, &file_limits())?;
        let mut builder = Builder::open_default(&store, &opts, granularity)?;
        let report = builder.index_sessions(sessions, format)?;
        let tenants = builder.view()?.tenants().len();
        Ok(serde_json::json!({"report": report, "tenants": tenants}))
    });
    json(&out.map_err(err)?)
}

#[pymodule]
fn _memdex(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Native>()?;
    m.add_function(wrap_pyfunction!(read_sessions, m)?)?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_K", memdex_memory::MAX_K)?;
    m.add("DEFAULT_K", memdex_memory::DEFAULT_K)?;
    let formats: Vec<&str> = memdex_memory::FORMATS.iter().map(|f| f.name).collect();
    m.add("FORMATS", formats)?;
    Ok(())
}
