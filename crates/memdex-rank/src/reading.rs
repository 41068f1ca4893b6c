//! The reading stage (LongMemEval §5.5): retrieved items as structured JSON sorted by time,
//! plus a Chain-of-Note prompt (LongMemEval, Figure 13) ready for any LLM.

use crate::SearchHit;

/// Chain-of-Note reading prompt (LongMemEval, Figure 13).
pub const CON_PROMPT: &str = "I will give you several history chats between you and a user. \
Please answer the question based on the relevant chat history. Answer the question step by step: \
first extract all the relevant information, and then reason over the information to get the answer.";

/// `{query, question_date, items (by time), prompt}` for the hits of `query` asked at `date_ms`.
pub fn reading_context(query: &str, date_ms: i64, hits: &[SearchHit]) -> serde_json::Value {
    let mut items: Vec<&SearchHit> = hits.iter().collect();
    items.sort_by_key(|h| (h.timestamp_ms, h.position));
    let history: Vec<serde_json::Value> = items
        .iter()
        .map(|h| {
            serde_json::json!({
                "date": format_ms(h.timestamp_ms),
                "session_id": h.session_id,
                "content": h.value,
            })
        })
        .collect();
    let history_text = serde_json::to_string_pretty(&history).unwrap_or_default();
    let prompt = format!(
        "{CON_PROMPT}\n\nHistory Chats: {history_text}\n\nCurrent Date: {}\n\nQuestion: {query}\n\nAnswer (step by step):",
        format_ms(date_ms)
    );
    serde_json::json!({
        "query": query,
        "question_date": format_ms(date_ms),
        "items": items,
        "prompt": prompt,
    })
}

/// `YYYY-MM-DD HH:MM` (UTC).
pub fn format_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}
