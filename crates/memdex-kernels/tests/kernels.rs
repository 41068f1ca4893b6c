//! Every kernel against its CPU reference, one body per device (see `memdex_kernels::checks`).

use memdex_kernels::checks::*;
use memdex_kernels::test_device;

test_device!(selection_is_exact_with_ties, selection_is_exact_with_ties);
test_device!(masked_selection_is_exact, masked_selection_is_exact);
test_device!(scores_within_tolerance, scores_within_tolerance);
test_device!(tensor_scan_matches_the_scan, tensor_scan_matches_the_scan);
test_device!(fragrel_matches_reference, fragrel_matches_reference);
test_device!(
    fragrel_without_environment_is_the_plain_top_k,
    fragrel_without_environment_is_the_plain_top_k
);
test_device!(
    lsh_buckets_agree_and_keep_recall,
    lsh_buckets_agree_and_keep_recall
);
test_device!(invalid_inputs_are_errors, invalid_inputs_are_errors);
test_device!(rank_matches_reference, rank_matches_reference);
test_device!(
    rank_invalid_inputs_are_errors,
    rank_invalid_inputs_are_errors
);
test_device!(rank_parts_match_one_matrix, rank_parts_match_one_matrix);
test_device!(rank_text_matches_host_inputs, rank_text_matches_host_inputs);
