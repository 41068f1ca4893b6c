//! The fact extractor model (`--extractor model:PATH`, crate `memdex-extract-model`), behind
//! the `model-extractor` feature: without it, asking for a model is an error that names the
//! feature, and [`FactModel`] has no values.

use std::sync::Arc;

use anyhow::Result;
use memdex_extract::FactExtractor;
use memdex_memory::ExtractOptions;
use memdex_store::Extraction;

use crate::cli::{ExtractArgs, ExtractorChoice, ExtractorSpec};

/// The extractor model.
#[cfg(feature = "model-extractor")]
pub type FactModel = memdex_extract_model::ModelFacts;

/// No extractor model in this build (`--features model-extractor` adds it).
#[cfg(not(feature = "model-extractor"))]
#[derive(Debug)]
pub enum FactModel {}

#[cfg(not(feature = "model-extractor"))]
impl FactExtractor for FactModel {
    fn name(&self) -> &str {
        match *self {}
    }

    fn extract(&self, _: &str, _: Option<chrono::NaiveDate>) -> Vec<String> {
        match *self {}
    }
}

/// What a build without the extractor model answers where one is asked for.
#[cfg(not(feature = "model-extractor"))]
pub fn not_built() -> anyhow::Error {
    anyhow::anyhow!(
        "the extractor model needs memdex built with it: \
         cargo build --release -p memdex-cli --features model-extractor"
    )
}

/// The fact extractor model `--extractor model:PATH` names, loaded (None: the rules).
pub fn fact_model(a: &ExtractArgs, facts: bool) -> Result<Option<Arc<FactModel>>> {
    if !facts && a.choice.extractor != ExtractorSpec::Rules {
        anyhow::bail!("--extractor model:… extracts facts: it needs --facts true");
    }
    load_extractor(&a.choice)
}

/// The model `c` names, loaded on its device (None: the rules).
pub fn load_extractor(c: &ExtractorChoice) -> Result<Option<Arc<FactModel>>> {
    let ExtractorSpec::Model(path) = &c.extractor else {
        return Ok(None);
    };
    #[cfg(not(feature = "model-extractor"))]
    {
        let _ = path;
        Err(not_built())
    }
    #[cfg(feature = "model-extractor")]
    load_model(path, c.extractor_device)
}

#[cfg(feature = "model-extractor")]
fn load_model(
    path: &std::path::Path,
    device: crate::cli::ExtractorDevice,
) -> Result<Option<Arc<FactModel>>> {
    use crate::cli::ExtractorDevice;
    use anyhow::Context;
    use memdex_extract_model::{ModelDevice, ModelOptions};
    let device = match device {
        ExtractorDevice::Cpu => ModelDevice::Cpu,
        ExtractorDevice::Cuda => ModelDevice::Cuda,
    };
    let opts = ModelOptions {
        device,
        ..ModelOptions::default()
    };
    let m = FactModel::load(path, opts)
        .with_context(|| format!("loading the extractor model {}", path.display()))?;
    Ok(Some(Arc::new(m)))
}

/// The store's extraction record for `o`, with `model` as the fact extractor when given.
pub fn extraction(o: &ExtractOptions, model: Option<&Arc<FactModel>>) -> Extraction {
    match model {
        Some(m) => o.extraction_with(m.as_ref()),
        None => o.extraction(),
    }
}

/// `model` as the engine takes it.
pub fn as_fact_extractor(model: &Option<Arc<FactModel>>) -> Option<Arc<dyn FactExtractor>> {
    model.clone().map(|m| m as Arc<dyn FactExtractor>)
}

/// One line on what the extractor model did (stderr), when there is one.
#[cfg(not(feature = "model-extractor"))]
pub fn report_fact_model(_: &Option<Arc<FactModel>>) {}

/// One line on what the extractor model did (stderr), when there is one.
#[cfg(feature = "model-extractor")]
pub fn report_fact_model(model: &Option<Arc<FactModel>>) {
    let Some(m) = model else { return };
    let s = m.stats();
    eprintln!(
        "extractor {}: {} items, {} with model facts, {} fell back to the rules ({} failed); \
         {} tokens generated in {:.1}s ({:.2} items/s, {:.1} tokens/s)",
        m.name(),
        s.items,
        s.model_items,
        s.fallback_items,
        s.errors,
        s.generated_tokens,
        s.seconds,
        s.items as f64 / s.seconds.max(1e-9),
        s.generated_tokens as f64 / s.seconds.max(1e-9)
    );
}
