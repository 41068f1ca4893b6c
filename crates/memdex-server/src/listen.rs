//! The accept loop: HTTP/1.1 hyper connections with a header-read timeout and a cap on open
//! connections, so a peer that sends headers slowly (or never) cannot pin the server; graceful
//! shutdown waits for the connections' requests in flight.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1::Builder;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// Connection settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    /// How long shutdown waits for open connections' requests before it closes them.
    pub drain_timeout: Duration,
}

/// Accepts connections until `stop` resolves, then drains them (bounded by `drain_timeout`).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // out of file descriptors and the like: back off, keep serving
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = open.clone().try_acquire_owned() else {
            tracing::warn!(
                "{peer}: over {} open connections; closed",
                limits.max_connections
            );
            continue;
        };
        let app = app.clone();
        let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            app.clone().oneshot(req.map(Body::new))
        });
        let mut builder = Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout);
        let conn = builder.serve_connection(TokioIo::new(stream), svc);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("{peer}: connection ended: {e}");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "connections still open after {:?}; closing them",
            limits.drain_timeout
        );
    }
}
