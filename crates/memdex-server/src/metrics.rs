//! Prometheus text exposition: requests per route and status, latency histograms per route,
//! and the engine's queue depths, batch sizes, commits and store size.
//!
//! Bounded whatever clients send: the method label is one of the methods the routes serve
//! (`GET`, `HEAD`, `POST`, `DELETE`) or `other`, the route label is a route template, and
//! per-tenant rows are shown for at most [`DEFAULT_TENANT_SERIES`] tenants (the largest; the
//! rest are summed in `memdex_store_other_tenants_rows`). Label values are escaped as the
//! exposition format requires.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use memdex_memory::{EngineStats, Memory, Snapshot, BATCH_BUCKETS, SEARCH_STAGES, STAGES};

/// Latency bucket upper bounds, seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Tenants given a `memdex_store_tenant_rows` series of their own, by default.
pub const DEFAULT_TENANT_SERIES: usize = 100;

#[derive(Debug, Default)]
struct Route {
    by_status: BTreeMap<u16, u64>,
    buckets: [u64; LATENCY_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

/// Request counters, keyed by (method label, route template).
#[derive(Debug)]
pub struct Metrics {
    routes: Mutex<BTreeMap<(&'static str, String), Route>>,
    tenant_series: usize,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(DEFAULT_TENANT_SERIES)
    }
}

/// The method as a label: the methods the routes serve, anything else `other` (405s with
/// invented methods must not add series).
pub fn method_label(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "DELETE" => "DELETE",
        _ => "other",
    }
}

/// A label value escaped per the text exposition format: `\\`, `\"` and `\n`.
pub fn escape_label(v: &str) -> std::borrow::Cow<'_, str> {
    if !v.contains(['\\', '"', '\n']) {
        return std::borrow::Cow::Borrowed(v);
    }
    let mut out = String::with_capacity(v.len() + 8);
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

impl Metrics {
    /// `tenant_series`: how many tenants get a `memdex_store_tenant_rows` series of their own.
    pub fn new(tenant_series: usize) -> Self {
        Self {
            routes: Mutex::new(BTreeMap::new()),
            tenant_series,
        }
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, took: Duration) {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        let key = (method_label(method), route.to_string());
        let r = routes.entry(key).or_default();
        *r.by_status.entry(status).or_insert(0) += 1;
        let s = took.as_secs_f64();
        r.buckets[LATENCY_BUCKETS.partition_point(|&b| b < s)] += 1;
        r.sum += s;
        r.count += 1;
    }

    /// The whole exposition.
    pub fn render(&self, engine: &Memory) -> String {
        let mut out = String::new();
        self.render_requests(&mut out);
        let mut rows = render_engine(&mut out, engine);
        render_tenant_rows(&mut out, &mut rows, self.tenant_series);
        out
    }

    fn render_requests(&self, out: &mut String) {
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP memdex_http_requests_total HTTP requests by route and status.\n# TYPE memdex_http_requests_total counter\n");
        for ((m, path), r) in routes.iter() {
            let path = escape_label(path);
            for (status, n) in &r.by_status {
                let _ = writeln!(out, "memdex_http_requests_total{{method=\"{m}\",route=\"{path}\",status=\"{status}\"}} {n}");
            }
        }
        out.push_str("# HELP memdex_http_request_duration_seconds Request latency.\n# TYPE memdex_http_request_duration_seconds histogram\n");
        for ((m, path), r) in routes.iter() {
            let labels = format!("method=\"{m}\",route=\"{}\"", escape_label(path));
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
    }
}

/// One metric family: the HELP and TYPE lines, then its samples as (name suffix, labels,
/// value), e.g. `("_bucket", "{le=\"4\"}", "7")`.
#[derive(Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<(&'static str, String, String)>,
}

const GAUGE: &str = "gauge";
const COUNTER: &str = "counter";

impl Family {
    /// A family of one unlabelled sample.
    fn one(name: &'static str, kind: &'static str, value: u64, help: &'static str) -> Family {
        let samples = vec![("", String::new(), value.to_string())];
        Family {
            name,
            help,
            kind,
            samples,
        }
    }

    /// A family of samples labelled `label`, one per (label value, value).
    fn labelled(
        name: &'static str,
        kind: &'static str,
        label: &str,
        values: impl IntoIterator<Item = (String, String)>,
        help: &'static str,
    ) -> Family {
        let samples = (values.into_iter())
            .map(|(l, v)| ("", format!("{{{label}=\"{l}\"}}"), v))
            .collect();
        Family {
            name,
            help,
            kind,
            samples,
        }
    }

    fn render(&self, out: &mut String) {
        let (name, help, kind) = (self.name, self.help, self.kind);
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (suffix, labels, value) in &self.samples {
            let _ = writeln!(out, "{name}{suffix}{labels} {value}");
        }
    }
}

/// Queue depths, caches, batch sizes, commits, the ranker and store totals, rendered family
/// by family; returns the rows per tenant of the same store version.
fn render_engine(out: &mut String, engine: &Memory) -> Vec<(String, u64)> {
    let view = engine.snapshot();
    for family in engine_families(engine, &view) {
        family.render(out);
    }
    let tenants = view.store().tenants();
    tenants
        .into_iter()
        .map(|(t, n)| (t.to_string(), n))
        .collect()
}

/// The engine's metric families, in exposition order: (name, type, value, help) rows and
/// the families with several samples.
#[rustfmt::skip]
fn engine_families(engine: &Memory, view: &Snapshot) -> Vec<Family> {
    let st = engine.stats();
    let (cache, s) = (view.cache_stats(), view.summary());
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let depth = |d: &AtomicUsize| d.load(Ordering::Relaxed) as u64;
    let mut table = vec![
        Family::one("memdex_embed_queue_depth", GAUGE, depth(&st.embed_queue_depth),
            "Embedding jobs waiting for a model worker."),
        Family::one("memdex_model_workers", GAUGE, depth(&st.model_workers),
            "Model workers taking batches from the embedding queue (--model-workers)."),
        Family::one("memdex_write_queue_depth", GAUGE, depth(&st.write_queue_depth),
            "Write jobs waiting for the writer thread."),
        Family::one("memdex_rank_cache_bytes", GAUGE, cache.bytes as u64,
            "Estimated bytes of the per-tenant ranking caches (BM25, importance, groups)."),
        Family::one("memdex_rank_cache_budget_bytes", GAUGE, cache.budget as u64,
            "Bytes the ranking caches hold at most (--cache-mb); least recently used tenants go."),
        Family::one("memdex_rank_cache_tenants", GAUGE, cache.tenants as u64,
            "Tenants with ranking caches built in the current store version."),
        batch_sizes(st),
        Family::one("memdex_store_commits_total", COUNTER, n(&st.commits),
            "Manifest commits (appends and deletes)."),
        Family::one("memdex_append_requests_committed_total", COUNTER, n(&st.appends_grouped),
            "Append requests committed (several share one commit)."),
        Family::one("memdex_compactions_total", COUNTER, n(&st.compactions),
            "Compactions run."),
        Family::one("memdex_busy_rejections_total", COUNTER, n(&st.busy_rejections),
            "Jobs refused because a queue was full."),
        Family::one("memdex_rank_stage_batches_total", COUNTER, n(&st.rank_batches),
            "Ranker calls of the rank stage (one per group of a model batch; a batching ranker)."),
        Family::one("memdex_rank_stage_queries_total", COUNTER, n(&st.rank_queries),
            "Searches the rank stage answered."),
    ];
    table.extend(rank_devices(engine));
    table.push(stage_seconds(st));
    table.push(search_stage_seconds(st));
    table.extend([
        Family::one("memdex_store_rows", GAUGE, s.rows, "Live rows in the store."),
        Family::one("memdex_store_bytes", GAUGE, s.bytes, "Bytes of committed segment files."),
        Family::one("memdex_store_segments", GAUGE, s.segments as u64, "Committed segments."),
        Family::one("memdex_store_deleted_pending", GAUGE, s.deleted_pending,
            "Deleted rows waiting for compaction."),
        Family::one("memdex_store_tenants", GAUGE, s.tenants as u64, "Tenants with live rows."),
        Family::one("memdex_store_manifest_version", GAUGE, s.manifest_version,
            "Committed manifest version."),
        Family::one("memdex_store_damaged_files", GAUGE, view.store().damage().len() as u64,
            "Store files found damaged (checksum mismatch); their rows are left out of searches."),
    ]);
    table
}

/// Texts per model batch, a histogram over [`BATCH_BUCKETS`].
fn batch_sizes(st: &EngineStats) -> Family {
    let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let bounds = BATCH_BUCKETS.iter().map(|b| b.to_string());
    let mut cum = 0;
    let mut samples = Vec::new();
    for (le, count) in bounds.chain(["+Inf".into()]).zip(&st.batch_size_buckets) {
        cum += n(count);
        samples.push(("_bucket", format!("{{le=\"{le}\"}}"), cum.to_string()));
    }
    samples.push(("_sum", String::new(), n(&st.batch_texts).to_string()));
    samples.push(("_count", String::new(), n(&st.embed_batches).to_string()));
    Family {
        name: "memdex_embed_batch_size",
        help: "Texts per model batch.",
        kind: "histogram",
        samples,
    }
}

fn stage_seconds(st: &EngineStats) -> Family {
    let secs = (STAGES.iter().zip(&st.stage_micros))
        .map(|(stage, us)| (stage, us.load(Ordering::Relaxed) as f64 / 1e6))
        .map(|(stage, s)| (stage.to_string(), format!("{s:.6}")));
    Family::labelled(
        "memdex_stage_seconds_total",
        COUNTER,
        "stage",
        secs,
        "Seconds spent per serving stage, summed over the stage's threads (embed: the model workers; rank: the rank stage's workers).",
    )
}

/// Each answered search's seconds per stage, summed (a summary without quantiles): a stage's
/// `_sum` over `_count` is a search's mean seconds in it.
fn search_stage_seconds(st: &EngineStats) -> Family {
    let answered = st.searches_answered.load(Ordering::Relaxed).to_string();
    let mut samples = Vec::new();
    for (stage, us) in SEARCH_STAGES.iter().zip(&st.search_stage_micros) {
        let secs = us.load(Ordering::Relaxed) as f64 / 1e6;
        let labels = format!("{{stage=\"{stage}\"}}");
        samples.push(("_sum", labels.clone(), format!("{secs:.6}")));
        samples.push(("_count", labels, answered.clone()));
    }
    Family {
        name: "memdex_search_stage_seconds",
        help: "Seconds answered searches spent per stage (tokenize: the caller's thread; model_queue: waiting for the model thread; embed: their model batch; rank_queue: waiting for a rank worker; rank: their ranker call).",
        kind: "summary",
        samples,
    }
}

/// `memdex_store_tenant_rows` for the `cap` tenants with the most rows (ties by name); the
/// others summed in `memdex_store_other_tenants_rows`, counted in `memdex_store_other_tenants`.
fn render_tenant_rows(out: &mut String, rows: &mut [(String, u64)], cap: usize) {
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let (shown, rest) = rows.split_at(cap.min(rows.len()));
    let mut shown = shown.to_vec();
    shown.sort();
    out.push_str(
        "# HELP memdex_store_tenant_rows Live rows per tenant (the tenants with the most rows).\n# TYPE memdex_store_tenant_rows gauge\n",
    );
    for (t, n) in &shown {
        let _ = writeln!(
            out,
            "memdex_store_tenant_rows{{tenant=\"{}\"}} {n}",
            escape_label(t)
        );
    }
    let _ = writeln!(
        out,
        "# HELP memdex_store_other_tenants_rows Live rows of the tenants without a series of their own.\n# TYPE memdex_store_other_tenants_rows gauge\nmemdex_store_other_tenants_rows {}",
        rest.iter().map(|r| r.1).sum::<u64>()
    );
    let _ = writeln!(
        out,
        "# HELP memdex_store_other_tenants Tenants without a series of their own.\n# TYPE memdex_store_other_tenants gauge\nmemdex_store_other_tenants {}",
        rest.len()
    );
}

/// Which ranker searches go through, and where it ran its batches, per device (with
/// `--rank-device auto`: the cost model's choices).
#[rustfmt::skip]
fn rank_devices(engine: &Memory) -> [Family; 3] {
    let ranker = engine.ranker();
    let name = ranker.describe().replace('"', "'");
    let counts = ranker.counts();
    let batches = counts.iter().map(|c| (c.device.clone(), c.batches.to_string()));
    let queries = counts.iter().map(|c| (c.device.clone(), c.queries.to_string()));
    [
        Family::labelled("memdex_ranker_info", GAUGE, "ranker", [(name, "1".into())],
            "The ranker searches go through."),
        Family::labelled("memdex_rank_batches_total", COUNTER, "device", batches,
            "Ranker calls per device (cpu, cuda:N)."),
        Family::labelled("memdex_rank_queries_total", COUNTER, "device", queries,
            "Searches ranked per device (cpu, cuda:N)."),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(m: &Metrics) -> String {
        let mut out = String::new();
        m.render_requests(&mut out);
        out
    }

    #[test]
    fn invented_methods_share_one_series() {
        let m = Metrics::default();
        let t = Duration::from_millis(1);
        for i in 0..1000 {
            m.observe(&format!("M{i}"), "/healthz", 405, t);
        }
        m.observe("GET", "/healthz", 200, t);
        m.observe("get", "/healthz", 405, t);
        m.observe("HEAD", "/healthz", 200, t);
        let keys: Vec<(&str, String)> = m
            .routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                ("GET", "/healthz".to_string()),
                ("HEAD", "/healthz".to_string()),
                ("other", "/healthz".to_string())
            ]
        );
        let out = requests(&m);
        assert!(
            out.contains(
                "memdex_http_requests_total{method=\"other\",route=\"/healthz\",status=\"405\"} 1001"
            ),
            "{out}"
        );
        assert!(!out.contains("M99"), "{out}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("plain/{tenant}"), "plain/{tenant}");
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        let m = Metrics::default();
        m.observe("POST", "/x\"}\nfake_metric 1", 200, Duration::ZERO);
        let out = requests(&m);
        assert!(
            !out.lines().any(|l| l.starts_with("fake_metric")),
            "no injected line: {out}"
        );
        assert!(out.contains("route=\"/x\\\"}\\nfake_metric 1\""), "{out}");
        let mut out = String::new();
        render_tenant_rows(&mut out, &mut [("q\"\\\n".to_string(), 3)], 10);
        assert!(
            out.contains("memdex_store_tenant_rows{tenant=\"q\\\"\\\\\\n\"} 3"),
            "{out}"
        );
    }

    #[test]
    fn tenant_series_are_capped_at_the_largest_tenants() {
        let mut rows: Vec<(String, u64)> = (0..1000).map(|i| (format!("t{i:04}"), i)).collect();
        let mut out = String::new();
        render_tenant_rows(&mut out, &mut rows, 3);
        let series: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("memdex_store_tenant_rows{"))
            .collect();
        assert_eq!(
            series,
            [
                "memdex_store_tenant_rows{tenant=\"t0997\"} 997",
                "memdex_store_tenant_rows{tenant=\"t0998\"} 998",
                "memdex_store_tenant_rows{tenant=\"t0999\"} 999"
            ]
        );
        let rest: u64 = (0..997).sum();
        assert!(
            out.contains(&format!("\nmemdex_store_other_tenants_rows {rest}\n")),
            "{out}"
        );
        assert!(out.contains("\nmemdex_store_other_tenants 997\n"), "{out}");
        // under the cap: every tenant, nothing aggregated
        let mut out = String::new();
        render_tenant_rows(&mut out, &mut [("a".into(), 1), ("b".into(), 2)], 100);
        assert!(out.contains("tenant=\"a\"} 1\n") && out.contains("tenant=\"b\"} 2\n"));
        assert!(out.contains("\nmemdex_store_other_tenants 0\n"), "{out}");
    }

    #[test]
    fn a_family_is_help_type_then_its_samples() {
        let mut out = String::new();
        Family::one("m_x", GAUGE, 7, "An x.").render(&mut out);
        let cpu = [("cpu".to_string(), "2".to_string())];
        Family::labelled("m_y_total", COUNTER, "device", cpu, "Ys.").render(&mut out);
        assert_eq!(
            out,
            "# HELP m_x An x.\n# TYPE m_x gauge\nm_x 7\n\
             # HELP m_y_total Ys.\n# TYPE m_y_total counter\nm_y_total{device=\"cpu\"} 2\n"
        );
        let st = EngineStats::default();
        st.batch_size_buckets[0].store(2, Ordering::Relaxed);
        st.batch_size_buckets[BATCH_BUCKETS.len()].store(1, Ordering::Relaxed);
        st.batch_texts.store(300, Ordering::Relaxed);
        st.embed_batches.store(3, Ordering::Relaxed);
        let mut out = String::new();
        batch_sizes(&st).render(&mut out);
        let head = "# HELP memdex_embed_batch_size Texts per model batch.\n\
                    # TYPE memdex_embed_batch_size histogram\n\
                    memdex_embed_batch_size_bucket{le=\"1\"} 2\n";
        assert!(out.starts_with(head), "{out}");
        assert!(
            out.contains("memdex_embed_batch_size_bucket{le=\"256\"} 2\n"),
            "{out}"
        );
        let tail = "{le=\"+Inf\"} 3\n\
                    memdex_embed_batch_size_sum 300\nmemdex_embed_batch_size_count 3\n";
        assert!(out.ends_with(tail), "{out}");
    }
}
