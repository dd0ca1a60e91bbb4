"""What the generated code names, besides the op itself (generated).

``GENERATED_IDENTIFIERS``: what the template generates for each op, ``{op}``, ``{OP}``
and ``{Op}`` standing for the op's name, in upper case and in CamelCase; two ops must
not share one. ``GENERATED_MODULE_NAMES``: the top-level names of the generated Python
files (package, tests, benchmarks) that are no op's. ``GENERATED_HEADERS``: the headers
the generated C++ includes by a quoted name that is no op's, without ``.h`` (an op's own
``csrc/<op>.h`` would be found in their place). Regenerated and compared by
tests/test_op_names.py (tests/cxx_names.py derives them); do not edit by hand.
"""

GENERATED_IDENTIFIERS: tuple[str, ...] = (
    "_{OP}_WEIGHTS",
    "_{op}_backward",
    "_{op}_check_image",
    "_{op}_check_input",
    "_{op}_check_inputs",
    "_{op}_eager",
    "_{op}_fake",
    "_{op}_out_fake",
    "_{op}_setup_context",
    "_{op}_triton",
    "benchmarks/benchmark_{op}.py",
    "csrc/cpu/{op}.cpp",
    "csrc/cuda/{op}.cu",
    "csrc/{op}.h",
    "residual_{op}",
    "scaled_{op}",
    "tests/test_{op}.py",
    "torch-ext/{package}/_{op}_triton.py",
    "{OP}_DTYPES",
    "{Op}",
    "{Op}Benchmark",
    "{op}",
    "{op}_cpu",
    "{op}_cuda",
    "{op}_kernel",
    "{op}_long_rows_kernel",
    "{op}_no_grad",
    "{op}_out",
    "{op}_out_cpu",
    "{op}_out_cuda",
    "{op}_value",
)

GENERATED_MODULE_NAMES = frozenset(
    """
Any BACKENDS BAD_IMAGES BAD_INPUTS BAD_OUTS BLOCK_SIZE Benchmark COLUMNS Callable
DIFFERENT_DEVICES DTYPES EPS FIXED_POINT_WEIGHTS FLOAT_DTYPES GRAPH_CALLS HUB_WORKLOADS
HUGE_DTYPE HUGE_ROW HUGE_ROWS IMPLEMENTATIONS Image KERNELIZE_MODES KernelsBenchmark LAYER
LocalLayerRepository MakeInputs Mode ModuleType NON_CONTIGUOUS_IMAGES NON_CONTIGUOUS_INPUTS
NON_CONTIGUOUS_OUTS NOT_BUILT NO_GPU ODD_SHAPES ON_CUDA OP OPCHECK_CASES Op PORTABLE_CPU_SCRIPT
PRODUCTION_DTYPE PRODUCTION_SHAPE PROJECT_ROOT Path ReferenceLayer Row SHAPES SIZES SOURCE
SUPPORTED_DTYPES Sequence SmallModel WEIGHTS WORDS_PER_PROGRAM Workload __all__
_add_workload_methods _backend_param _backward _cells _check _check_input _check_tensor
_chosen_workloads _compute _cpu _dtype_name _elapsed_ms _fake _input_sets _launch _launcher _op
_op_no_grad _op_out _overhead_line _pick _plain _profile_from_args _registers _run
_run_from_args _run_out _set_recompile_limit _setup_context _synchronize _write
add_op_namespace_prefix annotations argparse arguments
assert_compiled_code_launches_the_ops_kernel awkward_values backend call check_image
check_input check_inputs check_out cloned dataclasses datetime device device_for dtype_id eager
functools get_local_kernel gpu_busy_work graph_replay host_overhead huge_input json kernel
kernelize kernelized layers load_kernel machine main make_image make_input math measure moved
needs_cuda_backend nix_ci_build np ops os outcome photo_like pillow_gray platform plot
production_call production_input production_out production_out_shape pytest
pytest_collection_modifyitems pytest_configure random_image random_input random_weight re
reference requires_cpu_and_cuda run same_bits sample_args shape_id skeleton_sources statistics
subprocess sys table tensors_in test_contiguous_out_overlapping_the_image
test_cpu_and_cuda_agree test_cpu_vectorized_and_portable_paths_agree_exactly
test_cuda_graph_replay_matches_eager test_eps test_fake_gives_results_shaped_like_the_input
test_fake_has_the_result_shape test_fake_rejects_bad_image_like_the_kernel
test_fake_rejects_bad_input_like_the_kernel test_fake_tensors_propagate_shapes
test_far_end_of_more_than_2_31_elements test_float_extremes test_gradient
test_gradient_matches_torch_relu test_gradient_matches_torch_rms_norm
test_input_and_out_not_at_the_start_of_their_memory test_kernelize_uses_the_layer
test_large_input test_large_results test_many_rows test_matches_reference
test_matches_torch_rms_norm test_non_contiguous_image test_non_contiguous_input
test_non_contiguous_input_in_place test_non_contiguous_out test_non_contiguous_weight_and_out
test_not_at_the_start_of_their_memory test_opcheck test_out test_out_aliasing_the_image
test_out_is_the_input test_out_overlapping_the_input test_reference_is_bit_exact_with_pillow
test_rejects_a_tensor_on_another_device test_rejects_an_unsupported_dtype test_rejects_bad_eps
test_rejects_bad_image test_rejects_bad_input test_rejects_bad_out
test_rejects_image_and_out_on_different_devices test_rejects_input_and_out_on_different_devices
test_rejects_tensors_on_different_devices test_repeated_calls_leave_no_memory_behind
test_runs_on_a_side_stream_without_syncing test_special_values test_torch_compile
test_two_calls_are_bit_identical test_uint8_every_colour_is_bit_exact_with_pillow
test_uint8_is_bit_exact_with_pillow test_uint8_photo_like_image_is_bit_exact_with_pillow time
time_us torch triton_kernel_names triton_op use_kernel_forward_from_hub use_kernel_mapping
weight_for wrap_triton
""".split()  # noqa: SIM905
)

GENERATED_HEADERS = frozenset({"registration", "torch_binding"})
