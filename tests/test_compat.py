"""kernel-builder projects kscaffold did not write: check, clean, build and load them.

The projects (tests/compat_projects.py) have the shapes of upstream and community projects.
Fast tests read and plan them; slow ones compile the CPU variant and load it through
``kernels``, and compile the CUDA variant for one arch and read its SASS with cuobjdump.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.checks import check_project
from scaffold.cli import app
from scaffold.compiler import build_project
from scaffold.compiler.plan import torch_target_version
from scaffold.compiler.variant import variant_name
from scaffold.errors import BuildConfigError, CompileError, InvalidOptionError, ToolchainError
from scaffold.project.preprocessor import Build, ConditionalMap, evaluate, exclusive, possible
from tests.compat_projects import (
    write_legacy_project,
    write_metal_project,
    write_neuron_project,
    write_noarch_project,
    write_stray_namespace_project,
)
from tests.helpers import run, run_with_kernel
from tests.test_build import (
    CUDA_TORCH,
    RecordingReporter,
    cuda_toolkit_or_skip,
    fake_plan,
    find_cuobjdump,
)

FLAKE = """\
{
  inputs.kernel-builder.url = "github:huggingface/kernels";
  outputs = { self, kernel-builder }:
    kernel-builder.lib.genKernelFlakeOutputs { inherit self; path = ./.; };
}
"""


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    project = write_legacy_project(tmp_path / "compat-ops")
    (project / "flake.nix").write_text(FLAKE, encoding="utf-8")
    return project


def describe(findings: list[object]) -> str:
    return "\n".join(str(finding) for finding in findings)


# --- check: no false errors on the shapes real projects have ---------------------------------


def test_check_reads_stable_abi_and_conditional_registrations(legacy: Path) -> None:
    findings = check_project(legacy)
    assert not [f for f in findings if f.is_error], describe(findings)
    # No edition is kernel-builder's legacy format: it builds, so only a warning says so.
    assert any("No edition" in f.message and not f.is_error for f in findings)


def test_check_warns_of_a_registration_missing_for_one_backend(legacy: Path) -> None:
    binding = legacy / "torch-ext" / "torch_binding.cpp"
    # `shift` is declared where CUDA is not; declared for every backend, CUDA lacks it.
    text = binding.read_text().replace(
        '#else\n  ops.def("scale(Tensor! out, Tensor input) -> ()");\n  ops.def("shift',
        '#else\n  ops.def("scale(Tensor! out, Tensor input) -> ()");\n#endif\n#if 1\n'
        '  ops.def("shift',
    )
    binding.write_text(text)
    findings = check_project(legacy)
    # The CUDA variant still loads; only calling shift on a CUDA tensor fails: a warning.
    assert not [f for f in findings if f.is_error], describe(findings)
    missing = [f for f in findings if "Op 'shift' has no cuda implementation" in f.message]
    assert [f.severity for f in missing] == ["warning"], describe(findings)


def test_check_reports_a_schema_declared_twice_in_one_branch(legacy: Path) -> None:
    binding = legacy / "torch-ext" / "torch_binding.cpp"
    text = binding.read_text()
    binding.write_text(
        text.replace("#endif\n}", '  ops.def("scale(Tensor x) -> Tensor");\n#endif\n}')
    )
    errors = [f for f in check_project(legacy) if f.is_error]
    assert ["declared twice" in f.message for f in errors] == [True], describe(errors)


def test_conditions_are_evaluated_per_backend() -> None:
    cpu, cuda, unknown = (Build.for_backend(b) for b in ("cpu", "cuda", None))
    assert evaluate("defined(CPU_KERNEL)", cpu) is True
    assert evaluate("defined(CPU_KERNEL)", cuda) is False
    assert evaluate("defined(CUDA_KERNEL) || defined(ROCM_KERNEL)", cuda) is True
    assert evaluate("!defined CUDA_KERNEL && USE_CUDA", cpu) is False
    # Macros kernel-builder does not define are unknown, and so is anything built from them.
    assert evaluate("TORCH_VERSION_MAJOR >= 2", cuda) is None
    assert evaluate("defined(CPU_KERNEL) && defined(__AVX2__)", cpu) is None
    assert evaluate("defined(CPU_KERNEL) && defined(__AVX2__)", cuda) is False
    assert evaluate("__has_include(<cuda.h>)", cuda) is None
    assert evaluate("defined(CPU_KERNEL)", unknown) is None

    source = (
        "a\n#ifdef CPU_KERNEL\nb\n#elif defined(CUDA_KERNEL) \\\n  || 0\nc\n#else\nd\n"
        "#if X\ne\n#endif\n#endif\nf\n"
    )
    conditionals = ConditionalMap(source)
    padded = "\n" + source  # every code line is then "\n<letter>\n"
    paths = {name: conditionals.path_at(padded.index(f"\n{name}\n")) for name in "abcdef"}
    assert paths["a"] == paths["f"] == ()
    assert possible(paths["b"], cpu) and not possible(paths["b"], cuda)
    assert possible(paths["c"], cuda) and not possible(paths["c"], cpu)
    assert not possible(paths["d"], cpu) and not possible(paths["d"], cuda)
    assert possible(paths["d"], unknown) and possible(paths["e"], unknown)
    assert exclusive(paths["b"], paths["c"]) and exclusive(paths["c"], paths["e"])
    assert not exclusive(paths["d"], paths["e"]) and not exclusive(paths["a"], paths["b"])


# --- clean: never a source file ----------------------------------------------------------------


def test_clean_dry_run_lists_no_source_file(legacy: Path) -> None:
    result = CliRunner().invoke(app, ["clean", "--dry-run", str(legacy)])
    assert result.exit_code == 0, result.output
    assert "Nothing to clean" in result.output, result.output


# --- build plans: archs, flags, variant names ---------------------------------------------------


def cuda_plan(project: Path, requested: list[str]) -> tuple[list[str], object]:
    plan = fake_plan(project, "cuda", requested, python_name="compat_ops", stable_abi=(2, 10))
    return list(plan.notes), plan


def test_tables_are_built_for_their_own_archs(legacy: Path) -> None:
    notes, plan = cuda_plan(legacy, ["9.0"])
    steps = {step.source: " ".join(step.flags) for step in plan.steps}  # type: ignore[attr-defined]
    assert "csrc/cuda/blackwell.cu" not in steps
    assert notes == [
        "Skipping [kernel.scale_blackwell]: none of its cuda-capabilities (10.0a) builds for "
        "9.0 (--cuda-archs)."
    ]
    assert "-gencode arch=compute_90a,code=sm_90a" in steps["csrc/cuda/scale.cu"]
    assert "--expt-extended-lambda" in steps["csrc/cuda/scale.cu"]
    assert "-DTORCH_TARGET_VERSION=0x020a000000000000" in steps["csrc/cuda/scale_launch.cpp"]
    assert [str(arch) for arch in plan.archs] == ["9.0a"]  # type: ignore[attr-defined]
    # Asked for both, each table gets its own arch-specific target.
    _, both = cuda_plan(legacy, ["9.0", "10.0"])
    assert [str(arch) for arch in both.archs] == ["9.0a", "10.0a"]  # type: ignore[attr-defined]


def test_a_backend_left_with_no_table_is_refused_by_name(legacy: Path) -> None:
    toml = legacy / "build.toml"
    toml.write_text(toml.read_text().replace('["9.0a"]', '["12.0a"]'))
    with pytest.raises(ToolchainError) as raised:
        cuda_plan(legacy, ["9.0"])
    message = str(raised.value)
    assert "[kernel.scale_hopper]: none of its cuda-capabilities (12.0a)" in message
    assert "[kernel.scale_blackwell]: none of its cuda-capabilities (10.0a)" in message
    assert "Pass --cuda-archs" in message


def test_stable_abi_names_the_variant_for_its_torch() -> None:
    assert torch_target_version((2, 10)) == "0x020a000000000000"
    assert (
        variant_name(CUDA_TORCH, "cuda", machine="x86_64", system="linux", stable_abi=(2, 11))
        == "torch-stable-abi211-cu130-x86_64-linux"
    )


# --- what kscaffold refuses, and how --------------------------------------------------------------


def test_a_metal_only_project_is_an_error_naming_what_it_needs(tmp_path: Path) -> None:
    project = write_metal_project(tmp_path / "metal-only")
    with pytest.raises(ToolchainError) as raised:
        build_project(project)
    message = str(raised.value)
    assert "Nothing to build: build.toml declares only metal" in message
    assert "Metal kernels need macOS" in message and "kernel-builder" in message
    assert not (project / "build").exists()


def test_a_stable_abi_newer_than_torch_is_refused(legacy: Path) -> None:
    toml = legacy / "build.toml"
    toml.write_text(toml.read_text().replace('stable-abi = "2.10"', 'stable-abi = "9.0"'))
    with pytest.raises(ToolchainError, match=r"stable-abi targets torch 9\.0 for cpu"):
        build_project(legacy, backend="cpu")


# --- torch-noarch: no compiler, the layout the loader expects ----------------------------------


def test_noarch_builds_one_variant_per_backend_without_compiling(tmp_path: Path) -> None:
    project = write_noarch_project(tmp_path / "pure-gelu")
    (project / "flake.nix").write_text(FLAKE, encoding="utf-8")
    results = build_project(project)
    assert [(r.variant, r.compiled, r.native) for r in results] == [
        ("torch-cpu", (), False),
        ("torch-cuda", (), False),
    ]
    cuda = project / "build" / "torch-cuda"
    assert sorted(p.name for p in cuda.iterdir()) == [
        "__init__.py",
        "_ops.py",
        "metadata.json",
        "settings.json",
    ]
    metadata = json.loads((cuda / "metadata.json").read_text())
    assert metadata["backend"] == {"type": "cuda", "archs": ["8.0", "9.0"]}
    assert metadata["id"] == results[1].ops_name
    assert f'"{results[1].ops_name}"' in (cuda / "_ops.py").read_text()
    assert not [f for f in check_project(project) if f.is_error]


def test_an_op_registered_outside_the_namespace_is_refused_as_kernel_builder_does(
    tmp_path: Path,
) -> None:
    project = write_stray_namespace_project(tmp_path / "stray-ns")
    (project / "flake.nix").write_text(FLAKE, encoding="utf-8")
    errors = [f for f in check_project(project) if f.is_error]
    # Only the module-level registration with a literal namespace; the prefixed fake and the
    # nested one are what kernel-builder's torch-ops-check lets through.
    assert [(f.location, f.message.split(" registers")[0]) for f in errors] == [
        ("torch-ext/stray_ns/ops.py:6", '@custom_op("mine::double_it") on function double_it')
    ]
    assert 'add_op_namespace_prefix("double_it")' in errors[0].fix
    with pytest.raises(BuildConfigError) as raised:
        build_project(project)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith('torch-ext/stray_ns/ops.py:6: @custom_op("mine::double_it")')
    assert "kernel-builder refuses to build" in message
    assert not (project / "build").exists()
    ops = project / "torch-ext" / "stray_ns" / "ops.py"
    ops.write_text(
        ops.read_text().replace('"mine::double_it"', 'add_op_namespace_prefix("double_it")')
    )
    assert not [f for f in check_project(project) if f.is_error]
    assert [r.variant for r in build_project(project)] == ["torch-cpu", "torch-cuda"]


def test_a_neuron_only_kernel_builds_the_variant_the_loader_picks_on_neuron(
    tmp_path: Path,
) -> None:
    from kernels.backends import CPU, Neuron
    from kernels.variants import _resolve_variant_for_system, get_variants_local

    project = write_neuron_project(tmp_path / "neuron-relu")
    # No flake.nix: kernel-builder's Nix has no Neuron build set, so check does not ask for one.
    assert not [f for f in check_project(project) if f.is_error]
    with pytest.raises(InvalidOptionError, match="declares backends neuron, not cpu"):
        build_project(project, backend="cpu")
    assert [r.variant for r in build_project(project)] == ["torch-neuron"]
    metadata = json.loads((project / "build" / "torch-neuron" / "metadata.json").read_text())
    assert metadata["backend"] == {"type": "neuron"}
    assert metadata["python-depends"] == ["nki"]

    def picked(backend: object) -> list[str]:
        variants, _ = _resolve_variant_for_system(
            variants=get_variants_local(project / "build"),
            selected_backend=backend,
            cpu="x86_64",
            os="linux",
            torch_version=None,
            torch_cxx11_abi=None,
            tvm_ffi_version=None,
            macos_version=None,
        )
        return [variant.variant_str for variant in variants]

    assert picked(Neuron()) == ["torch-neuron"]
    assert picked(CPU()) == []


def test_a_noarch_variant_the_loader_never_picks_is_skipped_or_refused(tmp_path: Path) -> None:
    project = write_noarch_project(tmp_path / "pure-gelu")
    toml = project / "build.toml"
    toml.write_text(toml.read_text().replace('["cpu", "cuda"]', '["cpu", "cann"]'))
    reporter = RecordingReporter()
    assert [r.variant for r in build_project(project, reporter=reporter)] == ["torch-cpu"]
    assert any("Skipping the cann backend" in n and "torch-npu" in n for n in reporter.notes)
    with pytest.raises(ToolchainError, match=r"^Cannot build the cann variant: .*torch-npu"):
        build_project(project, backend="cann")
    assert not (project / "build" / "torch-cann").exists()


# --- slow: compile, link, load -------------------------------------------------------------------


@pytest.mark.slow
def test_noarch_variant_loads_through_kernels(tmp_path: Path) -> None:
    project = write_noarch_project(tmp_path / "pure-gelu")
    build_project(project, backend="cpu")
    out = run_with_kernel(
        project,
        "x = torch.linspace(-3, 3, 7)\n"
        "y = kernel.tanh_gelu(x)\n"
        "assert torch.equal(y, torch.nn.functional.gelu(x, approximate='tanh'))\n"
        "print(kernel.SETTINGS['approximate'], type(kernel).__name__)\n",
    )
    assert out.split() == ["tanh", "module"]


@pytest.mark.slow
def test_legacy_stable_abi_project_builds_and_loads_on_cpu(legacy: Path) -> None:
    reporter = RecordingReporter()
    try:
        (result,) = build_project(legacy, backend="cpu", reporter=reporter)
    except CompileError as error:
        pytest.fail(f"{error}\n" + "\n".join(reporter.output))
    assert result.variant == "torch-stable-abi210-cpu-x86_64-linux"
    files = sorted(p.name for p in result.variant_dir.iterdir())
    so = f"{result.ops_name}.abi3.so"
    assert files == sorted(["__init__.py", "_ops.py", so, "factors.json", "metadata.json"])
    out = run_with_kernel(
        legacy,
        "x = torch.arange(4, dtype=torch.float32)\n"
        "print(kernel.scale(x).tolist(), kernel.shift(x).tolist(), kernel.FACTORS['scale'])\n",
    )
    assert out.strip() == "[0.0, 2.0, 4.0, 6.0] [1.0, 2.0, 3.0, 4.0] 2.0"


@pytest.mark.slow
def test_legacy_project_cuda_tables_get_their_own_sass(legacy: Path) -> None:
    cuda_toolkit_or_skip()
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("needs cuobjdump (CUDA toolkit, nvidia-cuda-cuobjdump wheel or triton)")
    reporter = RecordingReporter()
    try:
        (result,) = build_project(legacy, backend="cuda", cuda_archs=["9.0"], reporter=reporter)
    except CompileError as error:
        pytest.fail(f"{error}\n" + "\n".join(reporter.output))
    assert result.variant.startswith("torch-stable-abi210-cu")
    assert result.archs == ("9.0a",)
    assert any("Skipping [kernel.scale_blackwell]" in note for note in reporter.notes)
    library = result.variant_dir / f"{result.ops_name}.abi3.so"
    listing = run([cuobjdump, "--list-elf", library])
    assert "sm_90a" in listing and "sm_100" not in listing, listing
    metadata = json.loads((result.variant_dir / "metadata.json").read_text())
    assert metadata["backend"] == {"type": "cuda", "archs": ["9.0a"]}


def test_an_op_registered_only_for_another_device_is_by_design(legacy: Path) -> None:
    # A CPU-only helper op in the CUDA variant (weight preprocessing, as quantization kernels do).
    binding = legacy / "torch-ext" / "torch_binding.cpp"
    text = binding.read_text().replace(
        "#if defined(CPU_KERNEL)\nSTABLE", "#if defined(CPU_KERNEL) || defined(CUDA_KERNEL)\nSTABLE"
    )
    text = text.replace(
        '#else\n  ops.def("scale',
        '  ops.def("shift(Tensor! out, Tensor input) -> ()");\n#else\n  ops.def("scale',
    )
    binding.write_text(text)
    findings = check_project(legacy)
    assert not [f for f in findings if f.is_error], describe(findings)


def test_what_does_not_apply_to_noarch_or_tvm_ffi_is_refused(tmp_path: Path) -> None:
    project = write_noarch_project(tmp_path / "pure-gelu")
    with pytest.raises(
        InvalidOptionError, match=r"--cuda-archs does not apply: .*\[torch-noarch\]"
    ):
        build_project(project, cuda_archs=["9.0"])
    toml = project / "build.toml"
    toml.write_text(
        toml.read_text().split("[torch-noarch]")[0] + '[tvm-ffi]\nsrc = ["tvm-ffi-ext/b.cpp"]\n'
    )
    with pytest.raises(ToolchainError, match=r"declares a \[tvm-ffi\] kernel, which kscaffold"):
        build_project(project)
    assert not (project / "build").exists()


def test_macro_made_names_and_packaged_headers_are_no_false_errors(legacy: Path) -> None:
    binding = legacy / "torch-ext" / "torch_binding.cpp"
    # Names pasted by the preprocessor cannot be read without it: they are not guessed at.
    binding.write_text(
        binding.read_text().replace(
            "#if defined(CUDA_KERNEL)\n",
            '#define DECLARE_VARIANT(N) ops.def("scale_" #N "d(Tensor x) -> Tensor");\n'
            "  DECLARE_VARIANT(1)\n#if defined(CUDA_KERNEL)\n",
            1,
        )
    )
    # A header shipped as data of the Python package (pyext), e.g. for a JIT compiler.
    toml = legacy / "build.toml"
    toml.write_text(
        toml.read_text().replace('pyext = ["py", "json"]', 'pyext = ["py", "json", "cuh"]')
    )
    (legacy / "torch-ext" / "compat_ops" / "jit").mkdir()
    (legacy / "torch-ext" / "compat_ops" / "jit" / "tile.cuh").write_text("#pragma once\n")
    findings = check_project(legacy)
    assert not [f for f in findings if f.is_error], describe(findings)
    # The same header outside the package is a source Nix would not copy.
    (legacy / "csrc" / "tile.cuh").write_text("#pragma once\n")
    shift = legacy / "csrc" / "cpu" / "shift.cpp"
    shift.write_text('#include "tile.cuh"\n' + shift.read_text())
    errors = [f for f in check_project(legacy) if f.is_error]
    assert [f.location for f in errors] == ["csrc/tile.cuh"], describe(errors)
