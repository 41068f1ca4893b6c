use memdex_core::{Granularity, KeyRoles, MemoryItem, Role, Session, Turn};

/// How sessions are cut into items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemizeOptions {
    pub granularity: Granularity,
    /// Whose words form the key. Default: `user` for rounds and sessions, `all` for turns.
    pub key_roles: KeyRoles,
    /// Keep whitespace-only messages as items (benchmark corpora count them; default false).
    pub keep_blank: bool,
}

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
        }
    }
}

/// Cuts one session into memory items, in session order.
///
/// * `turn`: one item per message (with `key_roles = user`, user messages only); key = value =
///   the message.
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
            .filter(|(_, t)| opts.key_roles == KeyRoles::All || t.role == Role::User)
            .map(|&(i, t)| make(i, &[(i, t)]))
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
                keep_blank: false,
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
