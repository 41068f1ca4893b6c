use memdex_core::{Granularity, KeyRoles, MemoryItem, Role, Session, Turn};

/// How sessions are cut into items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemizeOptions {
    pub granularity: Granularity,
    /// Whose words form the key. Default: `user` for rounds and sessions, `all` for turns.
    pub key_roles: KeyRoles,
    /// Keep whitespace-only messages as items (benchmark corpora count them; default false).
    pub keep_blank: bool,
    /// Turn items only: how many of the messages right before a turn are appended to its key
    /// (the ones whose role makes keys; the last [`CONTEXT_WORDS`] words of each). A reply
    /// means little without what it answers. Default 0 here; a store records its own value
    /// and its appends use that one.
    pub context: usize,
}

/// How much of each preceding message a turn's key takes (its last words: what the turn
/// replies to), so that the turn's own words stay inside the embedder's window.
pub const CONTEXT_WORDS: usize = 64;

impl ItemizeOptions {
    /// The documented default key roles for a granularity.
    pub fn new(granularity: Granularity) -> Self {
        let key_roles = match granularity {
            Granularity::Turn => KeyRoles::All,
            Granularity::Round | Granularity::Session => KeyRoles::User,
        };
        Self {
            granularity,
            key_roles,
            keep_blank: false,
            context: 0,
        }
    }
}

/// Cuts one session into memory items, in session order.
///
/// * `turn`: one item per message (with `key_roles = user`, user messages only); value = the
///   message; key = the message, then the `context` messages right before it whose role makes
///   keys (each clipped to its last [`CONTEXT_WORDS`] words). The item's `content_hash` is
///   taken before the context is added, as for facts: it identifies the message as read.
/// * `round`: a user message and the assistant messages that follow it (assistant messages
///   before the first user message form a round of their own). Value = the role-labelled
///   messages; key = the user text (`user`) or the labelled value (`all`).
/// * `session`: one item; value = all messages labelled; key as for rounds (user messages
///   joined with a space, as LongMemEval does).
///
/// Whitespace-only messages carry no memory and are left out. A round or session whose key
/// would be empty (no user words) falls back to its value as key.
pub fn itemize(session: &Session, opts: &ItemizeOptions) -> Vec<MemoryItem> {
    let turns: Vec<(usize, &Turn)> = session
        .turns
        .iter()
        .enumerate()
        .filter(|(_, t)| opts.keep_blank || !t.content.trim().is_empty())
        .collect();
    let make = |index: usize, group: &[(usize, &Turn)]| -> MemoryItem {
        let value = if group.len() == 1 && opts.granularity == Granularity::Turn {
            group[0].1.content.clone()
        } else {
            labelled(group.iter().map(|(_, t)| *t))
        };
        let key = match opts.key_roles {
            KeyRoles::All => value.clone(),
            KeyRoles::User => {
                let user: Vec<&str> = group
                    .iter()
                    .filter(|(_, t)| t.role == Role::User)
                    .map(|(_, t)| t.content.as_str())
                    .collect();
                if user.is_empty() {
                    value.clone()
                } else {
                    // space-joined, as LongMemEval builds session keys
                    user.join(" ")
                }
            }
        };
        let role = group_role(group, opts.key_roles);
        MemoryItem {
            tenant: session.tenant.clone(),
            session_id: session.session_id.clone(),
            turn: index as u32,
            timestamp_ms: session.timestamp_ms,
            role,
            content_hash: MemoryItem::compute_hash(role, &key, &value),
            value,
            key,
        }
    };
    match opts.granularity {
        Granularity::Turn => turns
            .iter()
            .enumerate()
            .filter(|(_, (_, t))| opts.key_roles == KeyRoles::All || t.role == Role::User)
            .map(|(pos, &(i, t))| {
                let mut item = make(i, &[(i, t)]);
                let before = &turns[pos.saturating_sub(opts.context)..pos];
                add_context(&mut item.key, before, opts.key_roles);
                item
            })
            .collect(),
        Granularity::Session if turns.is_empty() => Vec::new(),
        Granularity::Session => vec![make(0, &turns)],
        Granularity::Round => {
            let mut rounds: Vec<Vec<(usize, &Turn)>> = Vec::new();
            for &(i, t) in &turns {
                match rounds.last_mut() {
                    Some(r) if t.role != Role::User => r.push((i, t)),
                    _ => rounds.push(vec![(i, t)]),
                }
            }
            rounds
                .iter()
                .enumerate()
                .map(|(ri, r)| make(ri, r))
                .collect()
        }
    }
}

/// Appends to `key` the messages of `before` (oldest first) whose role makes keys.
fn add_context(key: &mut String, before: &[(usize, &Turn)], roles: KeyRoles) {
    for (_, t) in before {
        if roles == KeyRoles::User && t.role != Role::User {
            continue;
        }
        let words: Vec<&str> = t.content.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        key.push('\n');
        key.push_str(&words[words.len().saturating_sub(CONTEXT_WORDS)..].join(" "));
    }
}

fn labelled<'a>(turns: impl Iterator<Item = &'a Turn>) -> String {
    turns
        .map(|t| format!("{}: {}", t.role, t.content))
        .collect::<Vec<_>>()
        .join("\n")
}

fn group_role(group: &[(usize, &Turn)], key_roles: KeyRoles) -> Role {
    let first = group[0].1.role;
    let uniform = group.iter().all(|(_, t)| t.role == first);
    match (uniform, key_roles) {
        (true, _) => first,
        (false, KeyRoles::User) => Role::User,
        (false, KeyRoles::All) => Role::Mixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        let t = |role, c: &str| Turn {
            role,
            content: c.to_string(),
        };
        Session {
            tenant: "t".into(),
            session_id: "s1".into(),
            timestamp_ms: 7,
            turns: vec![
                t(Role::Assistant, "Welcome back!"),
                t(Role::User, "I adopted a dog."),
                t(Role::Assistant, "Congrats! Name?"),
                t(Role::User, "  "),
                t(Role::User, "Her name is Luna."),
                t(Role::Assistant, "Lovely."),
            ],
        }
    }

    #[test]
    fn rounds_pair_user_with_following_assistant() {
        let items = itemize(&session(), &ItemizeOptions::new(Granularity::Round));
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].key, "assistant: Welcome back!"); // no user words: key falls back
        assert_eq!(items[0].role, Role::Assistant);
        assert_eq!(items[1].key, "I adopted a dog.");
        assert_eq!(
            items[1].value,
            "user: I adopted a dog.\nassistant: Congrats! Name?"
        );
        assert_eq!(items[1].role, Role::User);
        assert_eq!(items[2].key, "Her name is Luna.");
        assert_eq!(items.iter().map(|i| i.turn).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(items
            .iter()
            .all(|i| i.timestamp_ms == 7 && i.session_id == "s1"));
    }

    #[test]
    fn turns_skip_blank_and_respect_key_roles() {
        let all = itemize(&session(), &ItemizeOptions::new(Granularity::Turn));
        assert_eq!(all.len(), 5);
        assert_eq!(all[3].turn, 4, "turn index is the position in the session");
        assert_eq!(all[3].key, "Her name is Luna.");
        let user = itemize(
            &session(),
            &ItemizeOptions {
                granularity: Granularity::Turn,
                key_roles: KeyRoles::User,
                ..ItemizeOptions::new(Granularity::Turn)
            },
        );
        assert_eq!(user.len(), 2);
        assert!(user.iter().all(|i| i.role == Role::User));
        let blank = itemize(
            &session(),
            &ItemizeOptions {
                keep_blank: true,
                ..ItemizeOptions::new(Granularity::Turn)
            },
        );
        assert_eq!(blank.len(), 6);
    }

    #[test]
    fn turn_keys_carry_the_message_they_answer() {
        let plain = itemize(&session(), &ItemizeOptions::new(Granularity::Turn));
        let opts = |context, key_roles| ItemizeOptions {
            context,
            key_roles,
            ..ItemizeOptions::new(Granularity::Turn)
        };
        let ctx = itemize(&session(), &opts(1, KeyRoles::All));
        assert_eq!(
            ctx[0].key, "Welcome back!",
            "nothing before the first message"
        );
        assert_eq!(ctx[1].key, "I adopted a dog.\nWelcome back!");
        // the blank message is not an item and gives no context
        assert_eq!(ctx[3].key, "Her name is Luna.\nCongrats! Name?");
        assert_eq!(
            itemize(&session(), &opts(2, KeyRoles::All))[3].key,
            "Her name is Luna.\nI adopted a dog.\nCongrats! Name?"
        );
        for (p, c) in plain.iter().zip(&ctx) {
            assert_eq!(p.value, c.value, "the value stays the message");
            assert_eq!(
                p.content_hash, c.content_hash,
                "the hash is the message as read"
            );
        }
        // user keys: the assistant message before a user turn is not key material
        let user = itemize(&session(), &opts(1, KeyRoles::User));
        assert_eq!(user[0].key, "I adopted a dog.");
        assert_eq!(user[1].key, "Her name is Luna.");
        // rounds and sessions already hold the exchange
        let round = ItemizeOptions {
            context: 1,
            ..ItemizeOptions::new(Granularity::Round)
        };
        assert_eq!(itemize(&session(), &round)[2].key, "Her name is Luna.");
    }

    #[test]
    fn context_keeps_the_last_words_of_a_long_message() {
        let long: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let mut s = session();
        s.turns[0].content = long.join("  ");
        let opts = ItemizeOptions {
            context: 1,
            ..ItemizeOptions::new(Granularity::Turn)
        };
        let key = &itemize(&s, &opts)[1].key;
        let tail = key
            .strip_prefix("I adopted a dog.\n")
            .expect("own text first");
        let words: Vec<&str> = tail.split(' ').collect();
        assert_eq!(words.len(), CONTEXT_WORDS);
        assert_eq!((words[0], words[CONTEXT_WORDS - 1]), ("w36", "w99"));
    }

    #[test]
    fn session_item_keys_on_user_words() {
        let s = itemize(&session(), &ItemizeOptions::new(Granularity::Session));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].key, "I adopted a dog. Her name is Luna.");
        assert!(s[0]
            .value
            .starts_with("assistant: Welcome back!\nuser: I adopted"));
        let mut other = session();
        other.tenant = "u".into();
        let o = itemize(&other, &ItemizeOptions::new(Granularity::Session));
        assert_eq!(s[0].content_hash, o[0].content_hash, "hash ignores tenant");
    }
}
