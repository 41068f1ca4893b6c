use anyhow::Result;
use memdex_store::Store;
use serde::Serialize;

use crate::cli::InfoArgs;
use crate::output::print_json;

#[derive(Serialize)]
struct Info<'a> {
    store: String,
    format_version: u32,
    manifest_version: u64,
    model: &'a memdex_core::ModelInfo,
    model_source: Option<&'a str>,
    granularity: String,
    /// What was derived at index time: events, the fact extractor, neighbours, key context.
    extraction: &'a memdex_store::Extraction,
    /// `shared` (contents once, in content files) or `inline`.
    layout: memdex_store::Layout,
    segments: usize,
    /// Content files and the distinct contents they hold (shared layout).
    content_files: usize,
    contents: usize,
    /// Live rows (deleted ones excluded).
    rows: u64,
    /// Deleted rows whose bytes compaction has not removed yet.
    deleted_pending: u64,
    tenants: usize,
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant_rows: Option<std::collections::BTreeMap<&'a str, u64>>,
}

pub fn run(a: InfoArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    let m = store.manifest();
    let tenants = store.tenants();
    let info = Info {
        store: a.store.display().to_string(),
        format_version: m.format_version,
        manifest_version: m.version,
        model: &m.model,
        model_source: m.model_source.as_deref(),
        granularity: m.granularity.to_string(),
        extraction: &m.extraction,
        layout: m.layout,
        segments: m.segments.len(),
        content_files: m.contents.len(),
        contents: store.contents().len(),
        rows: store.rows(),
        deleted_pending: store.stored_rows() - store.rows(),
        tenants: tenants.len(),
        bytes: m.bytes(),
        tenant_rows: a.tenants.then(|| tenants.clone()),
    };
    if a.json {
        return print_json(&info);
    }
    println!("store        {}", info.store);
    println!(
        "format       v{} (manifest version {})",
        info.format_version, info.manifest_version
    );
    println!(
        "model        {} (dim {}, {:?} pooling, normalize {}, max length {}, fingerprint {})",
        m.model.name,
        m.model.dim,
        m.model.pooling,
        m.model.normalize,
        m.model.max_length,
        &m.model.fingerprint[..m.model.fingerprint.len().min(12)]
    );
    println!("granularity  {}", info.granularity);
    let x = info.extraction;
    println!(
        "keys         facts {}, key context {}, event dates {}, neighbours {}",
        x.facts.as_deref().unwrap_or("off"),
        x.key_context,
        if x.events { "on" } else { "off" },
        x.neighbors
    );
    println!("layout       {}", info.layout);
    println!("segments     {}", info.segments);
    if info.layout == memdex_store::Layout::Shared {
        println!(
            "contents     {} distinct in {} content file(s)",
            info.contents, info.content_files
        );
    }
    println!("rows         {}", info.rows);
    if info.deleted_pending > 0 {
        println!(
            "deleted      {} (removed from disk by `memdex compact`)",
            info.deleted_pending
        );
    }
    println!("tenants      {}", info.tenants);
    println!("bytes        {}", info.bytes);
    if let Some(t) = &info.tenant_rows {
        for (tenant, rows) in t {
            println!("  {tenant}\t{rows}");
        }
    }
    Ok(())
}
