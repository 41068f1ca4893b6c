use anyhow::{Context, Result};
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
    /// TiM bucket ids (a hashing store): tables per row and a digest of every live row's ids.
    lsh: Option<LshDigest>,
}

/// The bucket ids of a store in one number: two builds hashed their rows alike exactly when
/// their digests agree (the device plan compares `--lsh-device cuda` with `cpu` this way).
#[derive(Serialize)]
struct LshDigest {
    tables: usize,
    rows: u64,
    /// xxh3-64 of every live row's ids (u16, little-endian), tenants in name order, rows in
    /// store order; hexadecimal.
    digest: String,
}

/// The digest, and the bytes it is of.
fn lsh_digest(store: &Store) -> Option<(LshDigest, Vec<u8>)> {
    let (mut bytes, mut tables, mut rows) = (Vec::new(), 0, 0u64);
    for tenant in store.tenants().keys() {
        for slice in store.tenant_slices(tenant) {
            let (ids, t) = slice.lsh_buckets()?;
            tables = t;
            rows += slice.rows as u64;
            for id in &ids[..slice.rows * t] {
                bytes.extend_from_slice(&id.to_le_bytes());
            }
        }
    }
    let digest = format!("{:016x}", memdex_core::content_hash(&bytes));
    let d = LshDigest {
        tables,
        rows,
        digest,
    };
    Some((d, bytes))
}

pub fn run(a: InfoArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    let lsh = lsh_digest(&store);
    if let Some(path) = &a.lsh_ids {
        let Some((_, bytes)) = &lsh else {
            anyhow::bail!(
                "{}: the store has no bucket ids (built without --lsh-buckets)",
                a.store.display()
            );
        };
        std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
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
        lsh: lsh.map(|(d, _)| d),
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
    if let Some(l) = &info.lsh {
        println!(
            "bucket ids   {} tables per row, digest {} over {} rows",
            l.tables, l.digest, l.rows
        );
    }
    if let Some(t) = &info.tenant_rows {
        for (tenant, rows) in t {
            println!("  {tenant}\t{rows}");
        }
    }
    Ok(())
}
