/// One forward pass: which inputs (by index) and the padded length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPlan {
    pub indices: Vec<usize>,
    pub padded_len: usize,
}

/// Groups inputs of the given token lengths into batches.
///
/// Inputs are sorted by length (longest first, ties by index) and packed greedily while
/// `batch size × longest length ≤ token_budget` and `batch size ≤ max_batch`; each batch is
/// padded only to its own longest input. A single input longer than the budget still forms a
/// batch of one.
pub fn plan_batches(lengths: &[usize], token_budget: usize, max_batch: usize) -> Vec<BatchPlan> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by(|&a, &b| lengths[b].cmp(&lengths[a]).then(a.cmp(&b)));
    let max_batch = max_batch.max(1);
    let mut out: Vec<BatchPlan> = Vec::new();
    for i in order {
        let len = lengths[i].max(1);
        match out.last_mut() {
            // sorted descending: the first input of a batch is its longest
            Some(b)
                if b.indices.len() < max_batch
                    && (b.indices.len() + 1) * b.padded_len <= token_budget =>
            {
                b.indices.push(i)
            }
            _ => out.push(BatchPlan {
                indices: vec![i],
                padded_len: len,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respects_budget_and_covers_every_input_once() {
        let lengths = [5, 300, 17, 17, 2, 256, 40, 1, 9, 100];
        let plans = plan_batches(&lengths, 512, 4);
        let mut seen: Vec<usize> = plans.iter().flat_map(|p| p.indices.clone()).collect();
        seen.sort();
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
        for p in &plans {
            assert!(p.indices.len() <= 4);
            let longest = p.indices.iter().map(|&i| lengths[i]).max().unwrap();
            assert_eq!(p.padded_len, longest.max(1));
            assert!(p.indices.len() == 1 || p.indices.len() * p.padded_len <= 512);
        }
        assert_eq!(plans[0].indices, [1], "300 alone: 2 × 300 > 512");
    }

    #[test]
    fn equal_lengths_keep_input_order() {
        let plans = plan_batches(&[3, 3, 3], 100, 8);
        assert_eq!(
            plans,
            [BatchPlan {
                indices: vec![0, 1, 2],
                padded_len: 3
            }]
        );
        assert!(plan_batches(&[], 100, 8).is_empty());
    }
}
