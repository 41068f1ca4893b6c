//! Which live items a delete names.

use memdex_store::Store;

/// What to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteTarget {
    Item { tenant: String, item_id: u64 },
    Session { tenant: String, session_id: String },
    Tenant { tenant: String },
}

impl DeleteTarget {
    /// The tenant the target lies in.
    pub(crate) fn tenant(&self) -> &str {
        match self {
            DeleteTarget::Item { tenant, .. }
            | DeleteTarget::Session { tenant, .. }
            | DeleteTarget::Tenant { tenant } => tenant,
        }
    }
}

/// The live item ids `target` names in `store`, and the sessions whose idempotency hash
/// changes (None: every session of the tenant).
pub(crate) fn select(store: &Store, target: &DeleteTarget) -> (Vec<u64>, Option<Vec<String>>) {
    let tenant = target.tenant();
    let mut ids = Vec::new();
    let mut sessions: Vec<String> = Vec::new();
    for s in store.tenant_slices(tenant) {
        let seg_ids = &s.segment.item_ids()[s.start..s.start + s.rows];
        for (r, &id) in seg_ids.iter().enumerate() {
            let hit = match target {
                DeleteTarget::Item { item_id, .. } => id == *item_id,
                DeleteTarget::Session { session_id, .. } => s.session_id(r) == session_id,
                DeleteTarget::Tenant { .. } => true,
            };
            if hit {
                ids.push(id);
                if matches!(target, DeleteTarget::Item { .. }) {
                    sessions.push(s.session_id(r).to_string());
                }
            }
        }
    }
    let touched = match target {
        DeleteTarget::Item { .. } => Some(sessions),
        DeleteTarget::Session { session_id, .. } => Some(vec![session_id.clone()]),
        DeleteTarget::Tenant { .. } => None,
    };
    (ids, touched)
}

/// The target in words, for a 404.
pub(crate) fn describe(target: &DeleteTarget) -> String {
    match target {
        DeleteTarget::Item { tenant, item_id } => format!("item {item_id} of tenant {tenant:?}"),
        DeleteTarget::Session { tenant, session_id } => {
            format!("session {session_id:?} of tenant {tenant:?}")
        }
        DeleteTarget::Tenant { tenant } => format!("tenant {tenant:?}"),
    }
}
