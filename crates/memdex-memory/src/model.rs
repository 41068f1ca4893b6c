//! Which embedding model a memory, a reader or a build uses, decided one way for every front
//! end (the server, MCP, Python and each `memdex` command): the model asked for, else the
//! store's recorded one while it still resolves, else [`DEFAULT_MODEL_DIR`].

use memdex_core::DeviceChoice;
use memdex_embed::{load_encoder, EmbedOptions, Embedder, ModelFiles};

use crate::MemoryError;

/// Where the default model lives, relative to the working directory.
pub const DEFAULT_MODEL_DIR: &str = "models/all-MiniLM-L6-v2";

/// The model to load: `given` (a directory or a repo id in the local Hugging Face cache),
/// else `recorded` (a store's manifest) when it still resolves, else [`DEFAULT_MODEL_DIR`].
pub fn model_spec(given: Option<&str>, recorded: Option<&str>) -> String {
    match (given, recorded) {
        (Some(m), _) => m.to_string(),
        (None, Some(r)) if ModelFiles::resolve(r).is_ok() => r.to_string(),
        _ => DEFAULT_MODEL_DIR.to_string(),
    }
}

/// What a store records as its model's source: the directory `encoder` was loaded from
/// (absolute), else the name it was asked by.
pub(crate) fn source_of(encoder: &Embedder, spec: &str) -> String {
    let dir = &encoder.files().dir;
    let source = dir
        .canonicalize()
        .unwrap_or_else(|_| std::path::PathBuf::from(spec));
    source.display().to_string()
}

/// The model [`model_spec`] picks, loaded on `device` with `opts`, and the name it was found
/// under.
pub fn load_model(
    given: Option<&str>,
    recorded: Option<&str>,
    device: DeviceChoice,
    opts: &EmbedOptions,
) -> Result<(Embedder, String), MemoryError> {
    let spec = model_spec(given, recorded);
    let encoder = load_encoder(&spec, device, opts)
        .map_err(|e| MemoryError::Invalid(format!("model {spec:?}: {e}")))?;
    Ok((encoder, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_given_model_then_the_recorded_one_then_the_default() {
        assert_eq!(model_spec(Some("m"), Some("r")), "m");
        // a recorded model that no longer resolves falls back to the default
        let gone = "/nonexistent/memdex-model";
        assert_eq!(model_spec(None, Some(gone)), DEFAULT_MODEL_DIR);
        assert_eq!(model_spec(None, None), DEFAULT_MODEL_DIR);
        let tiny = memdex_testkit::tiny_model().display().to_string();
        assert_eq!(model_spec(None, Some(&tiny)), tiny);
    }
}
