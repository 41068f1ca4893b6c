//! `memdex mcp`: the store as Model Context Protocol tools on stdio (crate `memdex-mcp`).

#[cfg(feature = "mcp")]
use std::sync::Arc;
#[cfg(feature = "mcp")]
use std::time::Duration;

#[cfg(feature = "mcp")]
use anyhow::Context;
use anyhow::Result;
#[cfg(feature = "mcp")]
use memdex_memory::{EngineOptions, Memory, RankChoice};

use crate::cli_serve::McpArgs;

#[cfg(not(feature = "mcp"))]
pub fn run(_: McpArgs) -> Result<()> {
    anyhow::bail!(
        "`memdex mcp` needs memdex built with the MCP server: \
         cargo build --release -p memdex-cli --features mcp"
    )
}

#[cfg(feature = "mcp")]
pub fn run(a: McpArgs) -> Result<()> {
    if let Some(t) = &a.tenant {
        memdex_core::check_tenant_name(t).with_context(|| format!("--tenant {t:?}"))?;
    }
    let rank = RankChoice {
        device: a.rank_device.into(),
        ..RankChoice::default()
    };
    let mut open = super::common::open_options(&a.model, rank);
    open.engine = EngineOptions {
        compact_every: (a.compact_every > 0).then(|| Duration::from_secs(a.compact_every)),
        ..EngineOptions::default()
    };
    let memory =
        Memory::open(&a.store, open).with_context(|| format!("opening {}", a.store.display()))?;
    let memory = Arc::new(memory);
    let server = memdex_mcp::MemoryServer::new(memory.clone(), a.tenant);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(memdex_mcp::serve_stdio(server))?;
    drop(rt);
    // every queued append is committed before the store is released
    memory.close();
    Ok(())
}
