"""What the generated code names, besides the op itself (generated).

``GENERATED_IDENTIFIERS``: what the template generates for each op, ``{op}``, ``{OP}``
and ``{Op}`` standing for the op's name, in upper case and in CamelCase; two ops must
not share one. ``GENERATED_MODULE_NAMES``: the top-level names of the generated Python
files (package, tests, benchmarks) that are no op's. Regenerated and compared by
tests/test_op_names.py (tests/cxx_names.py derives them); do not edit by hand.
"""

GENERATED_IDENTIFIERS: tuple[str, ...] = (
    "_{OP}_WEIGHTS",
    "_{op}_backward",
    "_{op}_check_image",
    "_{op}_check_input",
    "_{op}_fake",
    "_{op}_out_fake",
    "_{op}_setup_context",
    "benchmarks/benchmark_{op}.py",
    "csrc/cpu/{op}.cpp",
    "csrc/cuda/{op}.cu",
    "csrc/{op}.h",
    "scaled_{op}",
    "tests/test_{op}.py",
    "{OP}_DTYPES",
    "{Op}Benchmark",
    "{op}",
    "{op}_cpu",
    "{op}_cuda",
    "{op}_kernel",
    "{op}_no_grad",
    "{op}_out",
    "{op}_out_cpu",
    "{op}_out_cuda",
    "{op}_value",
)

GENERATED_MODULE_NAMES = frozenset(
    """
Any BACKENDS BAD_IMAGES BAD_INPUTS BAD_OUTS Benchmark COLUMNS Callable DTYPES FLOAT_DTYPES
GRAPH_CALLS HUB_WORKLOADS IMPLEMENTATIONS Image KernelsBenchmark ModuleType
NON_CONTIGUOUS_IMAGES NON_CONTIGUOUS_INPUTS NON_CONTIGUOUS_OUTS NOT_BUILT NO_GPU OP
OPCHECK_CASES Op PORTABLE_CPU_SCRIPT PROJECT_ROOT Path Row SHAPES SIZES SUPPORTED_DTYPES
Sequence Workload __all__ _add_workload_methods _backend_param _cells _check _check_input
_dtype_name _elapsed_ms _input_sets _overhead_line _pick _registers _run_from_args
_set_recompile_limit _synchronize add_op_namespace_prefix annotations argparse awkward_values
backend dataclasses datetime device device_for dtype_id functools get_local_kernel graph_replay
host_overhead json kernel load_kernel machine main make_image make_input math measure
needs_cuda_backend nix_ci_build np ops os photo_like pillow_gray platform plot pytest
pytest_collection_modifyitems pytest_configure random_image random_input re reference
requires_cpu_and_cuda run skeleton_sources statistics subprocess sys table
test_contiguous_out_overlapping_the_image test_cpu_and_cuda_agree
test_cpu_vectorized_and_portable_paths_agree_exactly test_fake_has_the_result_shape
test_fake_rejects_bad_image_like_the_kernel test_fake_rejects_bad_input_like_the_kernel
test_float_extremes test_gradient test_gradient_matches_torch_relu
test_input_and_out_not_at_the_start_of_their_memory test_large_input test_matches_reference
test_non_contiguous_image test_non_contiguous_input test_non_contiguous_input_in_place
test_non_contiguous_out test_opcheck test_out test_out_aliasing_the_image test_out_is_the_input
test_out_overlapping_the_input test_reference_is_bit_exact_with_pillow test_rejects_bad_image
test_rejects_bad_input test_rejects_bad_out test_rejects_image_and_out_on_different_devices
test_rejects_input_and_out_on_different_devices test_special_values test_torch_compile
test_uint8_every_colour_is_bit_exact_with_pillow test_uint8_is_bit_exact_with_pillow
test_uint8_photo_like_image_is_bit_exact_with_pillow time time_us torch
""".split()  # noqa: SIM905
)
