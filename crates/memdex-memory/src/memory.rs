//! [`Memory`]: one store, one model, the one way in for every front end (HTTP, MCP, Python).
//! It owns a [`memdex_runtime::Engine`] (the model thread and the writer thread), so appends
//! are group-committed and idempotent, deletes visible when they return, searches ranked on
//! one committed view. Each call checks its input against the memory's [`Limits`] and answers
//! a [`MemoryError`]. Blocking calls may come from many threads at once (the model thread
//! batches their queries) but not from inside an async runtime: async callers use the
//! `*_async` variants (`memory_async.rs`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use memdex_core::{check_tenant_name, DeviceChoice, ModelInfo, Role, Session, TextKind};
use memdex_embed::{EmbedOptions, Embedder, Embeddings, Encoder};
use memdex_rank::{BatchRanker, Snapshot};
use memdex_runtime::{
    AppendReport, DeleteReport, DeleteTarget, Engine, EngineOptions, EngineStats, Health, Searched,
    Ticket,
};
use memdex_store::{CompactReport, Manifest, SnapshotOptions, SnapshotReport, VerifyReport};
use serde::Serialize;
use std::sync::Arc;

use crate::input::sessions_from_json;
use crate::limits::Limits;
use crate::rankers::{ranker, RankChoice};
use crate::request::{check_embed, SearchRequest, StageNames};
use crate::search::{check, Asked, Checked, SearchAnswer};
use crate::MemoryError;

/// How to open a memory.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// Model directory or a repo id in the local Hugging Face cache. None: the store's
    /// recorded model when it still resolves, else [`crate::DEFAULT_MODEL_DIR`]
    /// ([`crate::model_spec`]).
    pub model: Option<String>,
    pub device: DeviceChoice,
    pub embed: EmbedOptions,
    /// How the engine queues and commits.
    pub engine: EngineOptions,
    /// Where searches are ranked: the one setting that picks the ranker.
    pub rank: RankChoice,
    /// What one call may carry; None: [`Limits::in_process`].
    pub limits: Option<Limits>,
}

/// What `add` committed for one tenant.
#[derive(Debug, Clone, Serialize)]
pub struct TenantAppend {
    pub tenant: String,
    pub report: AppendReport,
}

/// One live session of a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionInfo {
    pub session_id: String,
    /// Session date, ms since the epoch (UTC).
    pub timestamp_ms: i64,
    /// Live items.
    pub items: u64,
}

/// One live item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ItemInfo {
    pub item_id: u64,
    pub session_id: String,
    /// The item's round (or turn) within its session, 0-based.
    pub turn: u32,
    /// Position in the tenant's history.
    pub position: u64,
    /// Session date, ms since the epoch (UTC).
    pub timestamp_ms: i64,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "user"))]
    pub role: Role,
    pub value: String,
}

/// One store and its model, open for calls from any thread.
#[derive(Debug)]
pub struct Memory {
    pub(crate) engine: Engine,
    pub(crate) limits: Limits,
    closed: AtomicBool,
}

impl Memory {
    /// Opens (or creates) the store in `dir`, loads the model and builds the ranker: the one
    /// way every front end opens a memory. Refused while another writer (a `memdex serve`,
    /// another `Memory`) holds the store.
    pub fn open(dir: &Path, opts: OpenOptions) -> Result<Memory, MemoryError> {
        let (encoder, spec) = open_model(dir, &opts)?;
        let mut opts = opts;
        if opts.engine.model_source.is_none() {
            opts.engine.model_source = Some(crate::model::source_of(&encoder, &spec));
        }
        Self::open_with_encoder(dir, Box::new(encoder), opts)
    }

    /// [`Self::open`] with an encoder the caller brings (a test double, an embedding
    /// application's own model) instead of `opts.model`; the ranker is built the same way.
    pub fn open_with_encoder(
        dir: &Path,
        encoder: Box<dyn Encoder>,
        opts: OpenOptions,
    ) -> Result<Memory, MemoryError> {
        let ranker = ranker(opts.rank, opts.device, encoder.as_ref())?;
        let engine = Engine::start(dir, encoder, ranker, opts.engine).map_err(|e| match e {
            memdex_runtime::RuntimeError::Pipeline(e) => {
                MemoryError::Internal(format!("opening {}: {e}", dir.display()))
            }
            e => e.into(),
        })?;
        Ok(Memory {
            engine,
            limits: opts.limits.unwrap_or_else(Limits::in_process),
            closed: AtomicBool::new(false),
        })
    }

    /// What one call may carry.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `Closed` once [`Self::close`] ran: every call checks this first.
    pub(crate) fn live(&self) -> Result<(), MemoryError> {
        if self.closed.load(Ordering::Acquire) {
            Err(MemoryError::Closed)
        } else {
            Ok(())
        }
    }

    pub fn dir(&self) -> &Path {
        self.engine.dir()
    }

    pub fn model(&self) -> &ModelInfo {
        self.engine.model()
    }

    /// The device the model runs on, in words.
    pub fn device(&self) -> &str {
        self.engine.device()
    }

    /// Whether the memory's threads run.
    pub fn health(&self) -> Health {
        self.engine.health()
    }

    /// Queues, batches, stage times and failures so far.
    pub fn stats(&self) -> &EngineStats {
        self.engine.stats()
    }

    /// The latest committed snapshot (store version and ranking caches).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.engine.view()
    }

    /// The ranker every search goes through.
    pub fn ranker(&self) -> &dyn BatchRanker {
        self.engine.ranker()
    }

    /// Stores sessions (see [`crate::input`] for the shapes `value` may take), one append per
    /// tenant, in order of first appearance. `tenant`: the tenant of sessions naming none;
    /// sessions naming another are refused. Nothing is stored when any session is invalid.
    pub fn add_json(
        &self,
        value: serde_json::Value,
        tenant: Option<&str>,
    ) -> Result<Vec<TenantAppend>, MemoryError> {
        let sessions = self.sessions_of(value, tenant)?;
        self.add(sessions)
    }

    /// The sessions `value` holds, checked against the memory's limits; undated ones dated
    /// now.
    pub(crate) fn sessions_of(
        &self,
        value: serde_json::Value,
        tenant: Option<&str>,
    ) -> Result<Vec<Session>, MemoryError> {
        self.live()?;
        if let Some(t) = tenant {
            check_tenant_name(t).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        }
        let now = chrono::Utc::now().timestamp_millis();
        sessions_from_json(value, tenant, now, &self.limits)
    }

    /// Stores validated sessions, one append per tenant.
    pub fn add(&self, sessions: Vec<Session>) -> Result<Vec<TenantAppend>, MemoryError> {
        self.queue_appends(sessions)?
            .into_iter()
            .map(|(tenant, t)| {
                Ok(TenantAppend {
                    tenant,
                    report: wait(t)?,
                })
            })
            .collect()
    }

    /// Every tenant's append queued before any is waited for: they share one group commit.
    pub(crate) fn queue_appends(
        &self,
        sessions: Vec<Session>,
    ) -> Result<Vec<(String, Ticket<AppendReport>)>, MemoryError> {
        self.live()?;
        let mut groups: Vec<(String, Vec<Session>)> = Vec::new();
        for s in sessions {
            match groups.iter_mut().find(|(t, _)| *t == s.tenant) {
                Some((_, g)) => g.push(s),
                None => groups.push((s.tenant.clone(), vec![s])),
            }
        }
        groups
            .into_iter()
            .map(|(tenant, g)| Ok((tenant.clone(), self.engine.append(&tenant, g)?)))
            .collect()
    }

    /// The tenant's top items for a query; `NotFound` when the tenant has no memory.
    pub fn search(&self, tenant: &str, req: &SearchRequest) -> Result<SearchAnswer, MemoryError> {
        self.search_in(tenant, req, false)
    }

    /// [`Self::search`], but a tenant with no memory (yet, or any more) answers no hits, as
    /// an assistant's first search of a new user should. The request is checked all the same.
    pub fn search_or_empty(
        &self,
        tenant: &str,
        req: &SearchRequest,
    ) -> Result<SearchAnswer, MemoryError> {
        self.search_in(tenant, req, true)
    }

    fn search_in(
        &self,
        tenant: &str,
        req: &SearchRequest,
        unknown_is_empty: bool,
    ) -> Result<SearchAnswer, MemoryError> {
        let (ready, ticket) = match self.begin_search(tenant, req, unknown_is_empty)? {
            Begun::Answered(answer) => return Ok(answer),
            Begun::Queued(ready, ticket) => (ready, ticket),
        };
        let done = wait(ticket)?;
        Ok(ready.answer(done.hits, Some(done.timings)))
    }

    /// A search checked against the latest snapshot and handed to the engine, which embeds
    /// and ranks it.
    pub(crate) fn begin_search(
        &self,
        tenant: &str,
        req: &SearchRequest,
        unknown_is_empty: bool,
    ) -> Result<Begun, MemoryError> {
        self.live()?;
        let asked = Asked {
            limits: &self.limits,
            names: StageNames::Body,
            default_date: Some(chrono::Utc::now().timestamp_millis()),
            unknown_is_empty,
        };
        let snapshot = self.engine.view();
        match check(&snapshot, tenant, req, asked)? {
            Checked::Answered(answer) => Ok(Begun::Answered(answer)),
            Checked::Ready(ready) => {
                let ticket = self.engine.search(ready.job(snapshot))?;
                Ok(Begun::Queued(ready, ticket))
            }
        }
    }

    /// Forgets an item, a session or a whole tenant; `NotFound` when nothing live matches.
    /// Searches no longer see them when this returns; [`Self::compact`] removes the bytes.
    pub fn delete(&self, target: DeleteTarget) -> Result<DeleteReport, MemoryError> {
        wait(self.queue_delete(target)?)
    }

    pub(crate) fn queue_delete(
        &self,
        target: DeleteTarget,
    ) -> Result<Ticket<DeleteReport>, MemoryError> {
        self.live()?;
        let tenant = match &target {
            DeleteTarget::Item { tenant, .. }
            | DeleteTarget::Session { tenant, .. }
            | DeleteTarget::Tenant { tenant } => tenant,
        };
        check_tenant_name(tenant).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        Ok(self.engine.delete(target)?)
    }

    /// Removes deleted rows from disk and merges small segments.
    pub fn compact(&self) -> Result<CompactReport, MemoryError> {
        self.live()?;
        wait(self.engine.compact()?)
    }

    /// Reads every file of the store and checks it (as `memdex verify`); a damaged file is
    /// quarantined at once in this memory (its rows leave every search) if it was not yet.
    pub fn verify_store(&self) -> Result<VerifyReport, MemoryError> {
        self.live()?;
        let report = crate::maintain::verify(self.dir())?;
        let view = self.engine.view();
        let mut newly = false;
        for f in report.damaged_files() {
            let problem = f.problem.as_deref().unwrap_or("damaged");
            newly |= view.store().checks().mark_damaged(&f.file, problem);
        }
        if newly {
            // a file read before (sound then) is damaged now: the tenants' cached rankings
            // were built over rows that have left their slices
            view.cache().clear();
        }
        Ok(report)
    }

    /// A consistent copy of the latest committed version in `out` (see
    /// [`crate::maintain::snapshot`]); appends and deletes go on meanwhile.
    pub fn snapshot_store(
        &self,
        out: &Path,
        opts: &SnapshotOptions,
    ) -> Result<SnapshotReport, MemoryError> {
        self.live()?;
        crate::maintain::snapshot(self.dir(), out, opts)
    }

    /// Files of the store this memory found damaged (their rows left out of searches), with
    /// what was found.
    pub fn damage(&self) -> Vec<(String, String)> {
        self.engine.view().store().damage()
    }

    /// Embeds texts as passages (or queries, with the model's query prefix).
    pub fn embed(&self, texts: Vec<String>, kind: TextKind) -> Result<Embeddings, MemoryError> {
        self.live()?;
        check_embed(&texts, &self.limits, true)?;
        if texts.is_empty() {
            return Ok(Embeddings {
                dim: self.engine.model().dim,
                data: Vec::new(),
                tokens: Vec::new(),
            });
        }
        wait(self.engine.embed(texts, kind)?)
    }

    /// Every tenant with live items, and how many (none once closed).
    pub fn tenants(&self) -> Vec<(String, u64)> {
        if self.live().is_err() {
            return Vec::new();
        }
        let view = self.engine.view();
        let t = view.store().tenants();
        t.into_iter().map(|(k, n)| (k.to_string(), n)).collect()
    }

    /// The tenant's live sessions, oldest first.
    pub fn sessions(&self, tenant: &str) -> Result<Vec<SessionInfo>, MemoryError> {
        let items = self.items(tenant, None)?;
        let mut out: Vec<SessionInfo> = Vec::new();
        let mut index = std::collections::HashMap::new();
        for it in items {
            let i = *index.entry(it.session_id.clone()).or_insert_with(|| {
                out.push(SessionInfo {
                    session_id: it.session_id.clone(),
                    timestamp_ms: it.timestamp_ms,
                    items: 0,
                });
                out.len() - 1
            });
            out[i].items += 1;
        }
        out.sort_by(|a, b| (a.timestamp_ms, &a.session_id).cmp(&(b.timestamp_ms, &b.session_id)));
        Ok(out)
    }

    /// The tenant's live items in timeline order (of one session when `session` is given).
    /// `NotFound` when the tenant (or the session) has none.
    pub fn items(&self, tenant: &str, session: Option<&str>) -> Result<Vec<ItemInfo>, MemoryError> {
        self.live()?;
        check_tenant_name(tenant).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        let view = self.engine.view();
        let mut out = Vec::new();
        for s in view.store().tenant_slices(tenant) {
            for i in 0..s.rows {
                let it = s.item(i);
                if session.is_some_and(|id| id != it.session_id) {
                    continue;
                }
                out.push(ItemInfo {
                    item_id: it.item_id,
                    session_id: it.session_id.to_string(),
                    turn: it.turn,
                    position: it.position,
                    timestamp_ms: it.timestamp_ms,
                    role: it.role,
                    value: it.value.to_string(),
                });
            }
        }
        if out.is_empty() {
            return Err(MemoryError::NotFound(match session {
                Some(id) => format!("session {id:?} of tenant {tenant:?} not found"),
                None => format!("tenant {tenant:?} has no memory"),
            }));
        }
        out.sort_by_key(|it| it.position);
        Ok(out)
    }

    /// Stops taking calls, finishes what is queued (every queued append is committed) and
    /// releases the store. Idempotent; later calls fail with [`MemoryError::Closed`].
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.engine.shutdown();
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        self.engine.shutdown();
    }
}

/// A search's first half: answered already, or with the engine.
pub(crate) enum Begun {
    Answered(SearchAnswer),
    Queued(Box<crate::search::Ready>, Ticket<Searched>),
}

/// The model `opts` name (else the store's recorded one when it still resolves, else the
/// default directory), loaded, and the name it was found under.
pub(crate) fn open_model(
    dir: &Path,
    opts: &OpenOptions,
) -> Result<(Embedder, String), MemoryError> {
    let recorded = Manifest::load(dir).ok().and_then(|m| m.model_source);
    let given = opts.model.as_deref();
    crate::model::load_model(given, recorded.as_deref(), opts.device, &opts.embed)
}

pub(crate) fn wait<T>(t: Ticket<T>) -> Result<T, MemoryError> {
    t.blocking_recv()
        .map_err(|_| MemoryError::Closed)?
        .map_err(MemoryError::from)
}
