//! `memdex verify`, `memdex snapshot` and `memdex restore`: a store's files checked, copied
//! while it is served, and put back.

use anyhow::{Context, Result};
use memdex_memory::maintain;
use memdex_store::{FileReport, Holds, RestoreOptions, SnapshotOptions, VerifyReport};

use crate::cli_store::{RestoreArgs, SnapshotArgs, VerifyArgs};
use crate::output::print_json;

/// Exits non-zero (after the report) when a file is damaged.
pub fn verify(a: VerifyArgs) -> Result<()> {
    let report =
        maintain::verify(&a.store).with_context(|| format!("verifying {}", a.store.display()))?;
    if a.json {
        print_json(&report)?;
    } else {
        print_verify(&report);
    }
    if !report.is_sound() {
        anyhow::bail!(
            "{}: {} damaged file(s); see docs/serving.md \"Damage\" (restore them with \
             `memdex restore --repair --from SNAPSHOT --store {}`)",
            a.store.display(),
            report.damaged,
            a.store.display()
        );
    }
    Ok(())
}

fn print_verify(r: &VerifyReport) {
    let version = r.manifest_version.map_or("?".into(), |v| v.to_string());
    println!(
        "{}: manifest version {version}, {} files, {} bytes read{}",
        r.store.display(),
        r.files.len(),
        r.bytes,
        match r.restarts {
            0 => String::new(),
            n => format!(" ({n} restarts: compacted meanwhile)"),
        }
    );
    for f in r.damaged_files() {
        print_damaged(f);
    }
    println!(
        "{} sound (checksum matches), {} with no checksum recorded (written before checksums: \
         size and structure checked; `memdex compact` records them), {} damaged",
        r.verified, r.unrecorded, r.damaged
    );
}

fn print_damaged(f: &FileReport) {
    println!("DAMAGED {} ({:?}, {} bytes)", f.file, f.kind, f.bytes);
    if let Some(p) = &f.problem {
        println!("  {p}");
    }
    if let Some(h) = &f.holds {
        print_holds(h);
    }
}

fn print_holds(h: &Holds) {
    if let Some(terms) = h.terms {
        println!("  holds the vectors of {terms} terms");
    } else if h.rows > 0 || h.deleted_rows > 0 {
        println!(
            "  holds {} live rows of {} tenants (+{} deleted rows):",
            h.rows,
            h.tenants.len(),
            h.deleted_rows
        );
    }
    for t in &h.tenants {
        let more = t.sessions.saturating_sub(t.session_ids.len() as u64);
        let ids = t.session_ids.join(", ");
        let more = if more > 0 {
            format!(", … {more} more")
        } else {
            String::new()
        };
        match t.sessions {
            0 => println!("    {}: {} rows", t.tenant, t.rows),
            n => println!(
                "    {}: {} rows in {n} sessions ({ids}{more})",
                t.tenant, t.rows
            ),
        }
    }
    if let Some(note) = &h.note {
        println!("  ({note})");
    }
}

pub fn snapshot(a: SnapshotArgs) -> Result<()> {
    let opts = SnapshotOptions { copy: a.copy };
    let r = maintain::snapshot(&a.store, &a.to, &opts)
        .with_context(|| format!("snapshot of {}", a.store.display()))?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "{} → {}: manifest version {}, {} files, {} bytes ({} hard links, {} copied: {} bytes); \
         the copy opens and {} files check out against their checksums ({} have none recorded)",
        a.store.display(),
        a.to.display(),
        r.manifest_version,
        r.files,
        r.bytes,
        r.linked,
        r.copied,
        r.bytes_copied,
        r.verified,
        r.unrecorded
    );
    Ok(())
}

pub fn restore(a: RestoreArgs) -> Result<()> {
    let opts = RestoreOptions { repair: a.repair };
    let r = maintain::restore(&a.from, &a.store, &opts)
        .with_context(|| format!("restoring {} from {}", a.store.display(), a.from.display()))?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "{} restored from {} ({}): manifest version {} (snapshot's {}), {} files copied ({} \
         bytes), {} kept, {} removed; every file checks out",
        a.store.display(),
        a.from.display(),
        r.mode,
        r.manifest_version,
        r.snapshot_version,
        r.copied.len(),
        r.bytes_copied,
        r.kept,
        r.removed
    );
    for f in &r.copied {
        println!("  copied {f}");
    }
    Ok(())
}
