//! `memdex thoughts` and `memdex tree`: what a tenant's structures hold, read from the store.

use anyhow::Result;
use memdex_rank::format_ms;
use memdex_store::Store;
use memdex_structures::report;

use crate::cli::{ThoughtsArgs, TreeArgs};
use crate::output::print_json;

pub fn thoughts(a: ThoughtsArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    if a.history {
        let lines = report::history(&store, &a.tenant)?;
        if a.json {
            return print_json(&lines);
        }
        for l in &lines {
            let item = l.item.map_or(String::new(), |i| format!(" item {i}"));
            println!(
                "{:>5} {:<7} #{:<5} {} {:?}{item}: {}",
                l.seq,
                l.op,
                l.thought,
                format_ms(l.time_ms),
                l.sentence,
                l.reason
            );
        }
        println!("{} changes", lines.len());
        return Ok(());
    }
    let lines = report::live_thoughts(&store, &a.tenant)?;
    if a.json {
        return print_json(&lines);
    }
    for l in &lines {
        println!(
            "#{:<5} {}  {} | {} | {}   (items {:?}, buckets {:?})",
            l.id,
            format_ms(l.time_ms),
            l.subject,
            l.relation,
            l.object,
            l.sources,
            l.buckets
        );
    }
    println!("{} live thoughts", lines.len());
    Ok(())
}

pub fn tree(a: TreeArgs) -> Result<()> {
    let store = Store::open(&a.store)?;
    let (stats, nodes) = report::tree(&store, &a.tenant, a.depth)?;
    if a.json {
        return print_json(&serde_json::json!({"stats": stats, "nodes": nodes}));
    }
    println!("MemTree of {:?}", a.tenant);
    println!("| property | value |\n|---|---|");
    println!("| #nodes (root included) | {} |", stats.nodes);
    println!("| #leaf nodes | {} |", stats.leaves);
    println!("| #branching nodes | {} |", stats.branching_nodes);
    println!("| depth (max) | {} |", stats.max_depth);
    println!("| depth (mean, below the root) | {:.1} |", stats.mean_depth);
    println!("| branching factor | {:.2} |", stats.branching_factor);
    println!("| children of the root | {} |", stats.root_children);
    let per: Vec<String> = stats
        .per_depth
        .iter()
        .map(|(d, n)| format!("{d}:{n}"))
        .collect();
    println!("nodes per depth: {}", per.join(" "));
    for n in &nodes {
        let what = match n.item {
            Some(i) => format!("item {i}"),
            None => format!("{} children", n.children),
        };
        let content = n.content.replace('\n', " / ");
        println!(
            "{}#{} [{what}] {}",
            "  ".repeat(n.depth as usize),
            n.id,
            memdex_structures::tree::clip(&content, 160)
        );
    }
    Ok(())
}
