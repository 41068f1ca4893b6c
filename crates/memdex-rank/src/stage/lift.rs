//! The structures' lift (TiM thoughts, MemTree): the items the best thoughts came from (or
//! the best nodes hold) get `weight × cosine(query, thought or node)` added.

use memdex_store::Store;

use super::{At, Parts, Stage};
use crate::options::RankOptions;
use crate::retrieved::{needs_thoughts, needs_tree, thoughts_on, tree_on, Found};
use crate::RankError;

/// The thought stage's and the tree stage's weights (None: that one is off). On whenever a
/// structure is read (as a stage or as the retriever), as `explain` shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lift {
    thoughts: Option<f64>,
    tree: Option<f64>,
}

impl Lift {
    pub(crate) fn of(opts: &RankOptions) -> Option<Lift> {
        let on = |w: Option<f64>| w.filter(|&w| w > 0.0);
        (thoughts_on(opts) || tree_on(opts)).then_some(Lift {
            thoughts: on(opts.thoughts.map(|t| t.weight)),
            tree: on(opts.tree.map(|t| t.weight)),
        })
    }

    /// `score + weight × lift` for each structure whose stage is on.
    fn apply(&self, found: &Found, scores: &mut [f64]) {
        let stages = [
            (
                self.thoughts,
                found.thoughts.as_ref().map(|t| t.lift.as_slice()),
            ),
            (self.tree, found.tree.as_deref()),
        ];
        for (weight, lift) in stages {
            if let (Some(w), Some(lift)) = (weight, lift) {
                for (s, l) in scores.iter_mut().zip(lift) {
                    *s += w * l;
                }
            }
        }
    }
}

impl Stage for Lift {
    fn name(&self) -> &'static str {
        "structures"
    }

    fn needs(&self, store: &Store) -> Result<(), RankError> {
        if self.thoughts.is_some() {
            needs_thoughts(store)?;
        }
        if self.tree.is_some() {
            needs_tree(store)?;
        }
        Ok(())
    }

    fn score(
        &self,
        at: &At<'_, '_>,
        scores: &mut Vec<f64>,
        _: &mut Parts,
    ) -> Result<bool, RankError> {
        if let Some(found) = at.found()? {
            self.apply(found, scores);
        }
        Ok(true)
    }

    fn fused(&self, _: &mut super::FusedParams) -> super::Fused {
        super::Fused::HostOnly("the TiM thought and MemTree stages")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memdex_structures::Retrieved;

    #[test]
    fn lifts_add_weighted_and_the_retriever_ranks_lifted_items_first() {
        let found = Found {
            thoughts: Some(Retrieved {
                lift: vec![0.0, 0.6, 0.0],
                superseded: Vec::new(),
            }),
            tree: Some(vec![0.5, 0.0, 0.0]),
        };
        let opts = RankOptions {
            thoughts: Some(crate::ThoughtStage::default()),
            tree: Some(crate::TreeStage { weight: 1.0, k: 5 }),
            ..RankOptions::dense()
        };
        let mut s = vec![0.1, 0.1, 0.1];
        Lift::of(&opts).unwrap().apply(&found, &mut s);
        assert_eq!(s, [0.1 + 0.5, 0.1 + 0.5 * 0.6, 0.1]);
        let retr = RankOptions {
            retriever: crate::Retriever::Thoughts,
            ..RankOptions::dense()
        };
        let mut same = vec![0.1, 0.1, 0.1];
        Lift::of(&retr).unwrap().apply(&found, &mut same);
        assert_eq!(same, [0.1; 3], "the retriever alone lifts nothing more");
        let first = found.first_stage(&[0.9, 0.2, 0.3], &retr);
        assert_eq!(first, [0.9 - 1.0, 1.6, 0.3 - 1.0]);
    }
}
