//! What every harness shares: the signature of an outcome (which kinds of errors and results
//! a run met), scratch files, and the check every error naming a file must pass.

use std::hash::{Hash, Hasher};
use std::path::Path;

/// Longest error message any reader may produce (values are quoted clipped).
pub(crate) const MAX_ERROR: usize = 1024;

#[derive(Default)]
pub(crate) struct Sig(std::collections::hash_map::DefaultHasher);

impl Sig {
    pub(crate) fn add(&mut self, x: impl Hash) {
        x.hash(&mut self.0);
    }
    /// An error message with digits and quoted values removed: its kind.
    pub(crate) fn add_msg(&mut self, m: &str) {
        let mut kind = String::new();
        let mut quoted = false;
        for c in m.chars() {
            if c == '"' {
                quoted = !quoted;
            } else if !quoted && !c.is_ascii_digit() {
                kind.push(c);
            }
        }
        kind.hash(&mut self.0);
    }
    pub(crate) fn done(self) -> u64 {
        self.0.finish()
    }
}

/// A scratch path for `what`, of this process and thread (harnesses run on several threads).
pub(crate) fn scratch(what: &str) -> std::path::PathBuf {
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    std::env::temp_dir().join(format!(
        "memdex-fuzz-{}-{thread}-{what}",
        std::process::id()
    ))
}

/// A fresh scratch folder for `what` holding `files` (paths inside it, bytes); parents are
/// created. The caller removes it.
pub(crate) fn scratch_folder<'a>(
    what: &str,
    files: impl IntoIterator<Item = (&'a Path, &'a [u8])>,
) -> std::path::PathBuf {
    let dir = scratch(what);
    let _ = std::fs::remove_dir_all(&dir);
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the scratch folder");
        }
        std::fs::write(&path, bytes).expect("write a scratch file");
    }
    dir
}

/// An error of a harness that writes its input to `path` (a file or folder): it names the
/// path and keeps a short message; its kind goes into the signature.
pub(crate) fn check_message(m: &str, path: &Path, sig: &mut Sig) {
    let name = path.display().to_string();
    assert!(m.contains(&name), "error without the file: {m}");
    assert!(
        m.len() <= MAX_ERROR,
        "error keeps {} bytes: {}",
        m.len(),
        m.chars().take(300).collect::<String>()
    );
    sig.add_msg(&m.replace(&name, "FILE"));
}
