//! The async variants of [`Memory`]'s calls, for callers inside an async runtime (the HTTP
//! server): the same checks and the same engine calls, awaited instead of blocked on.

use memdex_core::{Session, TextKind};
use memdex_embed::Embeddings;
use memdex_runtime::{DeleteReport, DeleteTarget, Ticket};
use memdex_store::CompactReport;

use crate::memory::{Begun, TenantAppend};
use crate::request::{check_embed, SearchRequest};
use crate::{Memory, MemoryError, SearchAnswer};

async fn done<T>(t: Ticket<T>) -> Result<T, MemoryError> {
    t.await
        .map_err(|_| MemoryError::Closed)?
        .map_err(MemoryError::from)
}

impl Memory {
    /// [`Memory::add_json`], awaited.
    pub async fn add_json_async(
        &self,
        value: serde_json::Value,
        tenant: Option<&str>,
    ) -> Result<Vec<TenantAppend>, MemoryError> {
        let sessions = self.sessions_of(value, tenant)?;
        self.add_async(sessions).await
    }

    /// [`Memory::add`], awaited.
    pub async fn add_async(
        &self,
        sessions: Vec<Session>,
    ) -> Result<Vec<TenantAppend>, MemoryError> {
        let mut out = Vec::new();
        for (tenant, t) in self.queue_appends(sessions)? {
            out.push(TenantAppend {
                tenant,
                report: done(t).await?,
            });
        }
        Ok(out)
    }

    /// [`Memory::search`], awaited.
    pub async fn search_async(
        &self,
        tenant: &str,
        req: &SearchRequest,
    ) -> Result<SearchAnswer, MemoryError> {
        match self.begin_search(tenant, req, false)? {
            Begun::Answered(answer) => Ok(answer),
            Begun::Queued(ready, ticket) => {
                let searched = done(ticket).await?;
                Ok(ready.answer(searched.hits, Some(searched.timings)))
            }
        }
    }

    /// [`Memory::delete`], awaited.
    pub async fn delete_async(&self, target: DeleteTarget) -> Result<DeleteReport, MemoryError> {
        done(self.queue_delete(target)?).await
    }

    /// [`Memory::compact`], awaited.
    pub async fn compact_async(&self) -> Result<CompactReport, MemoryError> {
        self.live()?;
        done(self.engine.compact()?).await
    }

    /// [`Memory::embed`], awaited; at least one text.
    pub async fn embed_async(
        &self,
        texts: Vec<String>,
        kind: TextKind,
    ) -> Result<Embeddings, MemoryError> {
        self.live()?;
        check_embed(&texts, &self.limits, false)?;
        done(self.engine.embed(texts, kind)?).await
    }
}
