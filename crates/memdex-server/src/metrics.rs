//! Prometheus text exposition: requests per route and status, latency histograms per route,
//! and the engine's queue depths, batch sizes, commits and store size.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use memdex_runtime::{Engine, BATCH_BUCKETS};

/// Latency bucket upper bounds, seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Default)]
struct Route {
    by_status: BTreeMap<u16, u64>,
    buckets: [u64; LATENCY_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

/// Request counters, keyed by (method, route template).
#[derive(Debug, Default)]
pub struct Metrics {
    routes: Mutex<BTreeMap<(String, String), Route>>,
}

impl Metrics {
    pub fn observe(&self, method: &str, route: &str, status: u16, took: Duration) {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        let r = routes
            .entry((method.to_string(), route.to_string()))
            .or_default();
        *r.by_status.entry(status).or_insert(0) += 1;
        let s = took.as_secs_f64();
        r.buckets[LATENCY_BUCKETS.partition_point(|&b| b < s)] += 1;
        r.sum += s;
        r.count += 1;
    }

    /// The whole exposition.
    pub fn render(&self, engine: &Engine) -> String {
        let mut out = String::new();
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP memdex_http_requests_total HTTP requests by route and status.\n# TYPE memdex_http_requests_total counter\n");
        for ((m, path), r) in routes.iter() {
            for (status, n) in &r.by_status {
                let _ = writeln!(out, "memdex_http_requests_total{{method=\"{m}\",route=\"{path}\",status=\"{status}\"}} {n}");
            }
        }
        out.push_str("# HELP memdex_http_request_duration_seconds Request latency.\n# TYPE memdex_http_request_duration_seconds histogram\n");
        for ((m, path), r) in routes.iter() {
            let labels = format!("method=\"{m}\",route=\"{path}\"");
            let mut cum = 0;
            for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
                cum += r.buckets[i];
                let _ = writeln!(
                    out,
                    "memdex_http_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} {cum}"
                );
            }
            cum += r.buckets[LATENCY_BUCKETS.len()];
            let _ = writeln!(
                out,
                "memdex_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {cum}"
            );
            let _ = writeln!(
                out,
                "memdex_http_request_duration_seconds_sum{{{labels}}} {}",
                r.sum
            );
            let _ = writeln!(
                out,
                "memdex_http_request_duration_seconds_count{{{labels}}} {}",
                r.count
            );
        }
        drop(routes);
        let st = engine.stats();
        let gauge = |out: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        };
        let counter = |out: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
            );
        };
        gauge(
            &mut out,
            "memdex_embed_queue_depth",
            "Embedding jobs waiting for the model thread.",
            st.embed_queue_depth.load(Ordering::Relaxed) as u64,
        );
        gauge(
            &mut out,
            "memdex_write_queue_depth",
            "Write jobs waiting for the writer thread.",
            st.write_queue_depth.load(Ordering::Relaxed) as u64,
        );
        out.push_str("# HELP memdex_embed_batch_size Texts per model batch.\n# TYPE memdex_embed_batch_size histogram\n");
        let mut cum = 0;
        for (i, b) in BATCH_BUCKETS.iter().enumerate() {
            cum += st.batch_size_buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "memdex_embed_batch_size_bucket{{le=\"{b}\"}} {cum}");
        }
        cum += st.batch_size_buckets[BATCH_BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "memdex_embed_batch_size_bucket{{le=\"+Inf\"}} {cum}");
        let _ = writeln!(
            out,
            "memdex_embed_batch_size_sum {}",
            st.batch_texts.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "memdex_embed_batch_size_count {}",
            st.embed_batches.load(Ordering::Relaxed)
        );
        counter(
            &mut out,
            "memdex_store_commits_total",
            "Manifest commits (appends and deletes).",
            st.commits.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "memdex_append_requests_committed_total",
            "Append requests committed (several share one commit).",
            st.appends_grouped.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "memdex_compactions_total",
            "Compactions run.",
            st.compactions.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "memdex_busy_rejections_total",
            "Jobs refused because a queue was full.",
            st.busy_rejections.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "memdex_device_scan_batches_total",
            "Model batches whose searches were scored together on the model's device.",
            st.scan_batches.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "memdex_device_scan_queries_total",
            "Searches scored on the model's device (all tenants of a batch in one pass).",
            st.scan_queries.load(Ordering::Relaxed),
        );
        let view = engine.view();
        let s = view.summary();
        gauge(
            &mut out,
            "memdex_store_rows",
            "Live rows in the store.",
            s.rows,
        );
        gauge(
            &mut out,
            "memdex_store_bytes",
            "Bytes of committed segment files.",
            s.bytes,
        );
        gauge(
            &mut out,
            "memdex_store_segments",
            "Committed segments.",
            s.segments as u64,
        );
        gauge(
            &mut out,
            "memdex_store_deleted_pending",
            "Deleted rows waiting for compaction.",
            s.deleted_pending,
        );
        gauge(
            &mut out,
            "memdex_store_tenants",
            "Tenants with live rows.",
            s.tenants as u64,
        );
        gauge(
            &mut out,
            "memdex_store_manifest_version",
            "Committed manifest version.",
            s.manifest_version,
        );
        out.push_str(
            "# HELP memdex_store_tenant_rows Live rows per tenant.\n# TYPE memdex_store_tenant_rows gauge\n",
        );
        let rows = view.store().tenants();
        for (t, n) in rows {
            // tenant names are [A-Za-z0-9._@-]: nothing to escape
            let _ = writeln!(out, "memdex_store_tenant_rows{{tenant=\"{t}\"}} {n}");
        }
        out
    }
}
