//! Tenant names, one rule for every way in (the HTTP API's path and body, `memdex index`'s
//! JSONL `tenant`, the tenants generated for LongMemEval questions and LoCoMo conversations):
//! 1 to [`MAX_TENANT_BYTES`] of `A-Z a-z 0-9 . _ - @`. Such a name never needs escaping in a
//! URL path, a Prometheus label or a log line.

use std::borrow::Cow;

use crate::tenant_rule::{TenantProblem, MAX_TENANT_BYTES};
use crate::{content_hash, CoreError};

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@')
}

/// Checks `name` against the tenant rule. The error holds the name clipped to a short prefix
/// (see [`clip`]), its length and the first problem found.
pub fn check_tenant_name(name: &str) -> Result<(), CoreError> {
    let problem = if name.is_empty() {
        Some(TenantProblem::Empty)
    } else if let Some((at, ch)) = name.char_indices().find(|&(_, c)| !allowed(c)) {
        Some(TenantProblem::BadChar { ch, at })
    } else if name.len() > MAX_TENANT_BYTES {
        Some(TenantProblem::TooLong)
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(CoreError::InvalidTenant {
            name: clip(name, 64).into_owned(),
            bytes: name.len(),
            problem,
        }),
    }
}

/// A valid tenant name made from `raw` (a LongMemEval question id, a LoCoMo `sample_id`):
/// `raw` itself when it is valid; otherwise every character outside the alphabet becomes
/// `_`, the result is cut to 111 bytes and `-` plus 16 hex digits of `raw`'s content hash
/// are appended, so two different raw names never share a tenant.
pub fn tenant_name_from(raw: &str) -> String {
    if check_tenant_name(raw).is_ok() {
        return raw.to_string();
    }
    let mut out: String = raw
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .take(MAX_TENANT_BYTES - 17)
        .collect();
    out.push_str(&format!("-{:016x}", content_hash(raw.as_bytes())));
    out
}

/// `s` when it is at most `max` bytes; otherwise its longest prefix of at most `max` bytes
/// (cut on a character boundary) followed by `…(N bytes)`, N being `s`'s length. For quoting
/// user values in error messages without keeping them whole.
pub fn clip(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…({} bytes)", &s[..end], s.len()))
}

/// A parser's message cut to its first 160 and last 60 bytes when longer (serde and other
/// parsers quote whole values; the end holds the position).
pub fn clip_message(m: &str) -> String {
    const HEAD: usize = 160;
    const TAIL: usize = 60;
    if m.len() <= HEAD + TAIL + 32 {
        return m.to_string();
    }
    let mut head = HEAD;
    while !m.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = m.len() - TAIL;
    while !m.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…({} bytes cut)…{}", &m[..head], tail - head, &m[tail..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TENANT_RULE;

    #[test]
    fn the_api_rule() {
        for ok in ["a", "alice", "A.b_c-d@e", "0", &"x".repeat(128)] {
            assert_eq!(check_tenant_name(ok), Ok(()), "{ok}");
        }
        let e = check_tenant_name("").unwrap_err();
        assert!(matches!(
            e,
            CoreError::InvalidTenant {
                problem: TenantProblem::Empty,
                ..
            }
        ));
        let e = check_tenant_name(&"x".repeat(129)).unwrap_err();
        assert!(
            matches!(
                e,
                CoreError::InvalidTenant {
                    bytes: 129,
                    problem: TenantProblem::TooLong,
                    ..
                }
            ),
            "{e:?}"
        );
        for (bad, ch, at) in [
            ("a b", ' ', 1),
            ("a\"b", '"', 1),
            ("x\n", '\n', 1),
            ("é", 'é', 0),
            ("a/b", '/', 1),
            ("a{b}", '{', 1),
        ] {
            let e = check_tenant_name(bad).unwrap_err();
            assert_eq!(
                e,
                CoreError::InvalidTenant {
                    name: bad.into(),
                    bytes: bad.len(),
                    problem: TenantProblem::BadChar { ch, at }
                }
            );
            let msg = e.to_string();
            assert!(
                msg.contains(TENANT_RULE) && msg.contains("not allowed"),
                "{msg}"
            );
        }
        // a huge name is not kept whole in the error
        let huge = "a b".repeat(1 << 20);
        let msg = check_tenant_name(&huge).unwrap_err().to_string();
        assert!(msg.len() < 300 && msg.contains("(3145728 bytes)"), "{msg}");
    }

    #[test]
    fn generated_names_are_valid_and_distinct() {
        assert_eq!(tenant_name_from("gpt4_2655b836"), "gpt4_2655b836");
        assert_eq!(tenant_name_from("conv-26"), "conv-26");
        let raws = [
            "a b",
            "a/b",
            "a_b",
            "",
            "é",
            "ab",
            &"z".repeat(500),
            &"z".repeat(501),
        ];
        let names: Vec<String> = raws.iter().map(|r| tenant_name_from(r)).collect();
        for (r, n) in raws.iter().zip(&names) {
            assert_eq!(check_tenant_name(n), Ok(()), "{r:?} -> {n:?}");
        }
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert!(names[0].starts_with("a_b-"), "{}", names[0]);
    }

    #[test]
    fn clip_message_keeps_the_head_and_the_position_at_the_end() {
        let short = "invalid type: string \"x\", expected usize at line 1 column 9";
        assert_eq!(clip_message(short), short);
        let long = format!(
            "invalid type: string \"{}\", expected usize at line 3 column 9",
            "é".repeat(500)
        );
        let c = clip_message(&long);
        assert!(c.len() < 260, "{c}");
        assert!(c.starts_with("invalid type: string"), "{c}");
        assert!(c.ends_with("expected usize at line 3 column 9"), "{c}");
        assert!(c.contains("bytes cut"), "{c}");
    }

    #[test]
    fn clip_keeps_short_values_and_cuts_long_ones_on_a_char_boundary() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "abc…(4 bytes)");
        // 'é' is two bytes: a cut inside it moves back
        assert_eq!(clip("aé", 2), "a…(3 bytes)");
        assert_eq!(clip("ééé", 0), "…(6 bytes)");
    }
}
