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

use memdex_memory::{
    DeleteTarget, DeviceChoice, EngineOptions, Memory, MemoryError, OpenOptions, RankChoice,
    SearchRequest, Stages, TextKind,
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

#[pymodule]
fn _memdex(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Native>()?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
