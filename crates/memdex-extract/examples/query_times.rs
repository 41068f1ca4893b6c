//! Reads `anchor-date<TAB>label<TAB>question` lines on stdin and prints, per label, how many
//! questions got a time range and how many ask "when" — the false-positive check for the
//! query time parser (questions without a time reference must get no range).
//! `python3 scripts/questions.py FILE | cargo run --release -p memdex-extract --example query_times`

use std::collections::BTreeMap;
use std::io::BufRead;

use chrono::NaiveDate;
use memdex_extract::parse_query;

fn main() {
    let mut stats: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    let verbose = std::env::args().any(|a| a == "-v");
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        let mut parts = line.splitn(3, '\t');
        let (Some(date), Some(label), Some(q)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(anchor) = NaiveDate::parse_from_str(date, "%Y-%m-%d") else {
            continue;
        };
        let t = parse_query(q, anchor);
        let e = stats.entry(label.to_string()).or_default();
        e.0 += 1;
        e.1 += u32::from(t.range.is_some());
        e.2 += u32::from(t.asks_when);
        if verbose && t.range.is_some() {
            let spans: Vec<&str> = t.exprs.iter().map(|x| &q[x.start..x.end]).collect();
            println!("{label}\t{q}\t{spans:?}\t{:?}", t.range);
        }
    }
    println!("label\tquestions\twith_range\tasks_when");
    for (label, (n, r, w)) in stats {
        println!("{label}\t{n}\t{r}\t{w}");
    }
}
