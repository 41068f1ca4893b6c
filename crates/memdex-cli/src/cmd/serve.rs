//! `memdex serve` (the HTTP memory service) and `memdex compact`.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, Result};
use std::sync::Arc;

use memdex_memory::{maintain, CompactOptions, EngineOptions, Memory, RankChoice, StartVerify};
use memdex_server::{HttpLimits, Keys, ServerConfig};

use crate::cli_serve::{CompactArgs, ServeArgs};
use crate::output::print_json;

pub fn run(a: ServeArgs) -> Result<()> {
    let tenants: HashMap<String, String> = match &a.tenant_keys {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("{}: cannot read", p.display()))?;
            serde_json::from_str(&text).with_context(|| {
                format!(
                    "{}: expected a JSON object {{\"tenant\": \"key\"}}",
                    p.display()
                )
            })?
        }
        None => HashMap::new(),
    };
    let config = ServerConfig {
        keys: Keys {
            admin: a.api_key.clone().filter(|k| !k.is_empty()),
            tenants,
        },
        limits: HttpLimits {
            max_body_bytes: a.max_body_bytes,
            max_in_flight: a.max_in_flight,
            max_connections: a.max_connections.max(1),
            header_timeout: Duration::from_secs(a.header_timeout.max(1)),
            body_timeout: Duration::from_secs(a.body_timeout.max(1)),
            ..HttpLimits::default()
        },
        no_ui: a.no_ui,
        snapshot_dir: a.snapshot_dir.clone(),
    };
    config.check_bind(&a.addr)?;
    // auto with a CUDA model: the fused kernel, tenants' rows resident on the device, each
    // batch placed by the cost model (docs/serving.md)
    let rank = RankChoice {
        device: a.rank_device.into(),
        device_scan: a.device_scan.choice(),
        ..RankChoice::default()
    };
    let mut open = super::common::open_options(&a.model, rank);
    open.engine = EngineOptions {
        token_budget: a.queue_tokens,
        model_workers: a.model_workers.engine().0,
        measure_model_workers: a.model_workers.engine().1,
        embed_queue: a.queue_jobs,
        compact_every: (a.compact_every > 0).then(|| Duration::from_secs(a.compact_every)),
        structures: super::common::structure_configs(&a.structures),
        cache_bytes: usize::try_from(a.cache_mb << 20).unwrap_or(usize::MAX),
        verify: match a.verify_on_start {
            true => StartVerify::Before,
            false => StartVerify::Background,
        },
        ..EngineOptions::default()
    };
    open.limits = Some(config.limits.memory);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(a.http_threads.max(1))
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async move {
        let listener = memdex_server::bind(a.addr, &config).await?;
        let store = a.store.clone();
        let memory = tokio::task::spawn_blocking(move || Memory::open(&store, open))
            .await
            .context("opening the store")?
            .with_context(|| format!("opening {}", a.store.display()))?;
        let memory = Arc::new(memory);
        let local = listener.local_addr().context("listening address")?;
        println!("{}", serde_json::json!({"listening": local.to_string()}));
        tracing::info!(
            "serving {} on http://{local} ({} on {})",
            a.store.display(),
            memory.model().name,
            memory.device()
        );
        memdex_server::serve(listener, memory, config, shutdown_signal()).await?;
        anyhow::Ok(())
    })
}

/// SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

pub fn compact(a: CompactArgs) -> Result<()> {
    let opts = CompactOptions {
        small_rows: a.small_rows,
        ..CompactOptions::default()
    };
    let report = maintain::compact(&a.store, &opts)?;
    if a.json {
        return print_json(&report);
    }
    println!(
        "{}: {} → {} segments ({} rewritten), {} deleted rows, {} unreferenced contents and {} unused terms removed, {} → {} bytes, {} checksums recorded (manifest v{})",
        a.store.display(),
        report.segments_before,
        report.segments_after,
        report.segments_rewritten,
        report.rows_removed,
        report.contents_removed,
        report.words_removed,
        report.bytes_before,
        report.bytes_after,
        report.checksums_recorded,
        report.manifest_version
    );
    Ok(())
}
