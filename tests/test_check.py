"""`kscaffold check`: fresh projects pass; each planted release problem is reported with its fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import tomlkit
from typer.testing import CliRunner

from scaffold.checks import Finding, check_project, has_errors
from scaffold.checks import archs as archs_rule
from scaffold.checks import config as config_rule
from scaffold.cli import app
from scaffold.errors import NotAProjectError
from tests.helpers import EXAMPLES_DIR
from tests.projects import commit_all, new_project, simulate_build

runner = CliRunner()

#: Every arch nvcc 13 lists, so that the local-toolkit rule stays quiet unless a test wants it.
ALL_ARCHS = frozenset(
    {"70", "72", "75", "80", "86", "87", "89", "90", "100", "101", "103", "110", "120", "121"}
)


@pytest.fixture(autouse=True)
def full_nvcc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend a CUDA 13 nvcc that supports every arch (tests of that rule override it)."""
    monkeypatch.setattr(archs_rule, "_local_nvcc", lambda: (ALL_ARCHS, "13.0"))


def describe(findings: list[Finding]) -> str:
    return "\n".join(str(finding) for finding in findings) or "(no findings)"


def edit_toml(project: Path, change: Callable[[tomlkit.TOMLDocument], None]) -> None:
    path = project / "build.toml"
    document = tomlkit.parse(path.read_text())
    change(document)
    path.write_text(tomlkit.dumps(document))


def replace(project: Path, relative: str, old: str, new: str) -> None:
    path = project / relative
    text = path.read_text()
    assert old in text, f"{old!r} not in {relative}"
    path.write_text(text.replace(old, new, 1))


def write(project: Path, relative: str, text: str) -> None:
    (project / relative).parent.mkdir(parents=True, exist_ok=True)
    (project / relative).write_text(text)


# ------------------------------------------------------------------------------------------------
# Projects that pass


@pytest.mark.parametrize(
    ("backends", "example"),
    [(("cpu", "cuda"), None), (("cuda",), None), (("cpu",), None), (("cuda", "cpu"), "img2gray")],
    ids=["relu-cpu-cuda", "relu-cuda", "relu-cpu", "img2gray-cpu-cuda"],
)
def test_a_fresh_project_has_no_findings(
    tmp_path: Path, backends: tuple[str, ...], example: str | None
) -> None:
    project = new_project(tmp_path / "fresh", backends=backends, example=example)
    findings = check_project(project)
    assert findings == [], describe(findings)


def test_the_img2gray_example_passes() -> None:
    example = EXAMPLES_DIR / "img2gray"
    assert (example / "build.toml").is_file(), f"{example} is missing: regenerate it (README)"
    findings = check_project(example)
    assert not has_errors(findings), describe(findings)
    # Only leftovers of a local build or test run may be reported there, never a source problem.
    assert all("kscaffold clean" in finding.fix for finding in findings), describe(findings)


def test_without_nvcc_the_only_finding_is_a_warning(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archs_rule, "_local_nvcc", lambda: None)
    findings = check_project(project)
    assert [finding.severity for finding in findings] == ["warning"], describe(findings)
    assert "nvcc was not found" in findings[0].message
    assert "CUDA_HOME" in findings[0].fix


# ------------------------------------------------------------------------------------------------
# Planted problems: each must come out as one finding with its severity, place and fix


def _set(path: str, value: object) -> Callable[[Path], None]:
    *tables, key = path.split(".")

    def plant(project: Path) -> None:
        def change(document: tomlkit.TOMLDocument) -> None:
            table = document
            for name in tables:
                table = table[name]  # type: ignore[assignment]
            table[key] = value

        edit_toml(project, change)

    return plant


def _delete(path: str) -> Callable[[Path], None]:
    *tables, key = path.split(".")

    def plant(project: Path) -> None:
        def change(document: tomlkit.TOMLDocument) -> None:
            table = document
            for name in tables:
                table = table[name]  # type: ignore[assignment]
            del table[key]

        edit_toml(project, change)

    return plant


def _replace(relative: str, old: str, new: str) -> Callable[[Path], None]:
    return lambda project: replace(project, relative, old, new)


def _write(relative: str, text: str) -> Callable[[Path], None]:
    return lambda project: write(project, relative, text)


def _include(header: str) -> Callable[[Path], None]:
    """Make the CPU kernel include ``header`` (a header only matters to Nix when included)."""

    def plant(project: Path) -> None:
        source = project / "csrc" / "cpu" / "relu.cpp"
        source.write_text(f'#include "{header}"\n' + source.read_text())

    return plant


def _both(*plants: Callable[[Path], None]) -> Callable[[Path], None]:
    def plant(project: Path) -> None:
        for each in plants:
            each(project)

    return plant


def _tracked_build_output(project: Path) -> None:
    simulate_build(project)
    commit_all(project, "compile_commands.json")


_CPU_FILE = "csrc/cpu/relu.cpp"
_CUDA_FILE = "csrc/cuda/relu.cu"
_BINDING = "torch-ext/torch_binding.h"
_RELU_DEF = 'ops.def("relu(Tensor input) -> Tensor");'

# (id, plant, severity, location, message fragment, fix fragment)
PLANTED: list[tuple[str, Callable[[Path], None], str, str, str, str]] = [
    (
        "unknown-key",
        _set("general.colour", "blue"),
        "error",
        "build.toml",
        "Unknown field colour",
        "Remove or rename 'colour'",
    ),
    (
        "bad-name",
        _set("general.name", "My_Kernel"),
        "error",
        "build.toml",
        "Invalid kernel name `My_Kernel`",
        "Rename general.name: lowercase letters",
    ),
    (
        "missing-license",
        _delete("general.license"),
        "error",
        "build.toml",
        "Missing field license",
        "Add 'license'",
    ),
    (
        "missing-edition",
        _delete("general.edition"),
        "warning",
        "build.toml [general]",
        "No edition: kernel-builder reads this file as the legacy format (edition 4)",
        "Run `kernel-builder update-build`",
    ),
    (
        "bad-dependency",
        _set("kernel.relu_cpu.depends", ["torch", "cutlass_9_9"]),
        "error",
        "build.toml",
        "Unknown variant cutlass_9_9",
        "Replace 'cutlass_9_9' with one of",
    ),
    (
        "cpu-kernel-with-cuda-key",
        _set("kernel.relu_cpu.cuda-capabilities", ["9.0"]),
        "error",
        "build.toml",
        "Unknown field cuda-capabilities",
        "Remove or rename 'cuda-capabilities'",
    ),
    (
        "kernel-backend-not-listed",
        _set("general.backends", ["cuda"]),
        "error",
        "build.toml [kernel.relu_cpu]",
        "does not list it",
        'Add "cpu" to general.backends, or remove [kernel.relu_cpu]',
    ),
    (
        "missing-src",
        _set("kernel.relu_cpu.src", ["csrc/cpu/relu.cpp", "csrc/cpu/gone.cpp"]),
        "error",
        "build.toml [kernel.relu_cpu]",
        "'csrc/cpu/gone.cpp' does not exist",
        "Create csrc/cpu/gone.cpp, or remove it from [kernel.relu_cpu] src",
    ),
    (
        "missing-python-package",
        lambda project: (project / "torch-ext" / "my_kernel" / "__init__.py").unlink(),
        "error",
        "torch-ext/my_kernel/__init__.py",
        "Python package is missing",
        "Create torch-ext/my_kernel/__init__.py",
    ),
    (
        "unlisted-kernel-header",
        _both(_write("csrc/cpu/vectorized.h", "#pragma once\n"), _include("cpu/vectorized.h")),
        "error",
        "csrc/cpu/vectorized.h",
        "not listed in any src",
        'Add "csrc/cpu/vectorized.h" to [kernel.relu_cpu] src',
    ),
    (
        "unlisted-binding-header",
        _both(_write("torch-ext/helpers.hpp", "#pragma once\n"), _include("helpers.hpp")),
        "error",
        "torch-ext/helpers.hpp",
        "not listed in any src",
        'Add "torch-ext/helpers.hpp" to [torch] src',
    ),
    (
        "unlisted-unused-header",
        _write("csrc/cpu/old.h", "#pragma once\n"),
        "warning",
        "csrc/cpu/old.h",
        "not listed in any src of build.toml and no source includes it",
        "Delete it if it is unused",
    ),
    (
        "python-depends-unknown",
        _set("general.python-depends", ["einops", "numpy"]),
        "error",
        "build.toml [general]",
        'python-depends "numpy" is not a dependency the kernels loader accepts',
        'Remove "numpy": kernels accepts only einops, helion, tvm-ffi',
    ),
    (
        "python-depends-wrong-table",
        _set("general.python-depends", ["nvidia-cutlass-dsl"]),
        "error",
        "build.toml [general]",
        'python-depends "nvidia-cutlass-dsl"',
        'Move "nvidia-cutlass-dsl" to [general.cuda] python-depends',
    ),
    (
        "flake-retired-input",
        _replace("flake.nix", "github:huggingface/kernels", "github:huggingface/kernel-builder"),
        "error",
        "flake.nix",
        "retired kernel-builder repository",
        'url = "github:huggingface/kernels/v',
    ),
    (
        "flake-retired-function",
        _replace("flake.nix", "genKernelFlakeOutputs", "genFlakeOutputs"),
        "error",
        "flake.nix",
        "retired genFlakeOutputs",
        "kernel-builder.lib.genKernelFlakeOutputs { inherit self; path = ./.; }",
    ),
    (
        "flake-without-self",
        _replace("flake.nix", "inherit self;", ""),
        "error",
        "flake.nix",
        "not given the flake's self",
        "Add `inherit self;`",
    ),
    (
        "flake-with-rev",
        _replace("flake.nix", "inherit self;", "rev = self.shortRev;"),
        "error",
        "flake.nix",
        "rev argument of genKernelFlakeOutputs is retired",
        "Remove `rev = ...;`",
    ),
    (
        "flake-missing",
        lambda project: (project / "flake.nix").unlink(),
        "error",
        "flake.nix",
        "There is no flake.nix",
        "Create flake.nix",
    ),
    (
        "arch-dropped",
        _set("kernel.relu_cuda.cuda-capabilities", ["8.0", "10.3"]),
        "warning",
        "build.toml [kernel.relu_cuda]",
        "entry 10.3 is not an arch kernel-builder builds for",
        'Replace "10.3" with the nearest of',
    ),
    (
        "arch-too-old",
        _set("kernel.relu_cuda.cuda-capabilities", ["6.1", "8.0"]),
        "warning",
        "build.toml [kernel.relu_cuda]",
        "entry 6.1 is not an arch kernel-builder builds for",
        "add +PTX to an older arch",
    ),
    (
        "arch-malformed",
        _set("kernel.relu_cuda.cuda-capabilities", ["8.0", "sm_90"]),
        "error",
        "build.toml [kernel.relu_cuda]",
        "entry 'sm_90' is not a CUDA arch",
        "Use one of 7.0, 7.2, 7.5",
    ),
    (
        "arch-shadowed",
        _set("kernel.relu_cuda.cuda-capabilities", ["8.0", "9.0", "9.0a"]),
        "warning",
        "build.toml [kernel.relu_cuda]",
        "builds only 9.0a and drops 9.0",
        'Remove "9.0"',
    ),
    (
        "op-without-cpu-impl",
        _replace(_CPU_FILE, 'm.impl("relu", ', "// m.impl(relu, "),
        "warning",
        f"{_BINDING}:",
        "Op 'relu' has no cpu implementation",
        "TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, m)",
    ),
    (
        "op-impl-not-compiled",
        _both(
            _write("csrc/cpu/other.cpp", "// nothing here yet\n"),
            _set("kernel.relu_cpu.src", ["csrc/cpu/other.cpp"]),
        ),
        "error",
        f"{_BINDING}:",
        "implemented for CPU in csrc/cpu/relu.cpp, but no src list of the cpu build names that",
        'Add "csrc/cpu/relu.cpp" to the src of [kernel.relu_cpu]',
    ),
    (
        "impl-of-undeclared-op",
        _replace(
            _CUDA_FILE, 'm.impl("relu", ', 'm.impl("gelu", &relu::relu_cuda);\n  m.impl("relu", '
        ),
        "error",
        f"{_CUDA_FILE}:",
        "'gelu' is registered for CUDA but no schema declares it",
        'Declare it with ops.def("gelu(...) -> ...")',
    ),
    (
        "op-without-wrapper",
        _both(
            _replace(_BINDING, _RELU_DEF, _RELU_DEF + '\n  ops.def("relu6(Tensor x) -> Tensor");'),
            _replace(
                _CPU_FILE, 'm.impl("relu", ', 'm.impl("relu6", &relu::relu_cpu);\n  m.impl("relu", '
            ),
            _replace(
                _CUDA_FILE,
                'm.impl("relu", ',
                'm.impl("relu6", &relu::relu_cuda);\n  m.impl("relu", ',
            ),
        ),
        "warning",
        f"{_BINDING}:",
        "Op 'relu6' has no Python wrapper",
        "calls ops.relu6(...)",
    ),
    (
        "op-declared-twice",
        _replace(_BINDING, _RELU_DEF, _RELU_DEF + "\n  " + _RELU_DEF),
        "error",
        f"{_BINDING}:",
        "Op 'relu' is declared twice",
        "Keep one declaration",
    ),
    (
        "unreadable-schema",
        _replace(_BINDING, _RELU_DEF, _RELU_DEF + '\n  ops.def("relu2(Tensor x) Tensor");'),
        "error",
        "torch-ext",
        "has no '-> returns' part",
        "Write the schema as 'name(Type arg, ...) -> ReturnType'",
    ),
    (
        "tracked-artifact",
        _tracked_build_output,
        "error",
        "compile_commands.json",
        "generated file is tracked by git (written by kscaffold build)",
        "git rm --cached compile_commands.json",
    ),
    (
        "untracked-artifacts",
        simulate_build,
        "warning",
        ".kscaffold/",
        "Development artifact left in the tree (kscaffold's build scratch folder)",
        "Run `kscaffold clean`",
    ),
    (
        "generated-ops-py-in-sources",
        _write(
            "torch-ext/my_kernel/_ops.py",
            "import torch\nops = torch.ops._my_kernel_cpu_1\n\n"
            "def add_op_namespace_prefix(name):\n    return name\n",
        ),
        "error",
        "torch-ext/my_kernel/_ops.py",
        "Nix copies every .py under torch-ext/",
        "Delete torch-ext/my_kernel/_ops.py if a tool wrote it",
    ),
    (
        "toml-syntax",
        _replace("build.toml", "[general]", "[general"),
        "error",
        "build.toml",
        "Not valid TOML",
        "Fix the TOML syntax",
    ),
]


@pytest.mark.parametrize(
    ("plant", "severity", "location", "message", "fix"),
    [entry[1:] for entry in PLANTED],
    ids=[entry[0] for entry in PLANTED],
)
def test_each_planted_problem_is_reported_with_its_fix(
    project: Path,
    plant: Callable[[Path], None],
    severity: str,
    location: str,
    message: str,
    fix: str,
) -> None:
    plant(project)

    findings = check_project(project)

    matching = [
        finding
        for finding in findings
        if message in finding.message and finding.location.startswith(location)
    ]
    assert matching, f"no finding with {message!r} at {location!r}:\n{describe(findings)}"
    assert matching[0].severity == severity, describe(matching)
    assert fix in matching[0].fix, describe(matching)
    # A planted warning must not be reported as (or along with) an error.
    assert has_errors(findings) == (severity == "error"), describe(findings)


def test_a_backend_without_kernel_table_warns_and_its_ops_are_errors(project: Path) -> None:
    _delete("kernel.relu_cpu")(project)
    findings = check_project(project)
    (table,) = [f for f in findings if 'no [kernel.*] table has backend = "cpu"' in f.message]
    assert table.severity == "warning" and "kscaffold add-backend cpu" in table.fix
    # kernel-builder still builds that variant, without native ops: calling them fails there.
    assert any(f.is_error and "Op 'relu'" in f.message for f in findings), describe(findings)


def test_schema_rules_fall_back_to_kscaffolds_reader_without_kernels(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_rule, "_rust_parser", lambda: None)
    _set("general.colour", "blue")(project)

    findings = check_project(project)

    assert [(f.severity, f.location) for f in findings] == [("error", "build.toml")], describe(
        findings
    )
    assert "[general] has unknown key 'colour'" in findings[0].message
    assert "Remove or rename the key" in findings[0].fix


def test_allowed_python_depends_pass(project: Path) -> None:
    def change(document: tomlkit.TOMLDocument) -> None:
        document["general"]["python-depends"] = ["einops"]  # type: ignore[index]
        cuda = tomlkit.table()
        cuda["python-depends"] = ["nvidia-cutlass-dsl"]
        document["general"]["cuda"] = cuda  # type: ignore[index]

    edit_toml(project, change)
    findings = check_project(project)
    assert findings == [], describe(findings)


def test_ptx_archs_cover_newer_targets(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 6.1+PTX is older than every target, but PTX is JIT-compiled on newer GPUs: it is kept.
    monkeypatch.setattr(archs_rule, "_local_nvcc", lambda: (ALL_ARCHS | {"61"}, "12.6"))
    _set("kernel.relu_cuda.cuda-capabilities", ["6.1+PTX", "9.0a"])(project)
    findings = check_project(project)
    assert findings == [], describe(findings)


def test_archs_the_local_nvcc_cannot_compile_are_warnings(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archs_rule, "_local_nvcc", lambda: (frozenset({"75", "80", "90"}), "11.8"))
    _set("kernel.relu_cuda.cuda-capabilities", ["8.0", "9.0", "12.0+PTX"])(project)

    findings = check_project(project)

    assert [(f.severity, f.location) for f in findings] == [
        ("warning", "build.toml [kernel.relu_cuda]")
    ], describe(findings)
    assert "12.0+PTX is not supported by the local nvcc (CUDA 11.8)" in findings[0].message
    assert "--cuda-archs" in findings[0].fix


def test_registrations_with_a_device_argument_count(project: Path) -> None:
    # `ops.impl("name", torch::kCPU, fn)` inside TORCH_LIBRARY is a CPU registration too.
    replace(project, _CPU_FILE, 'm.impl("relu", ', "// m.impl(relu, ")
    text = (project / _CPU_FILE).read_text()
    text += (
        "\nTORCH_LIBRARY_FRAGMENT(TORCH_EXTENSION_NAME, lib) {\n"
        '  lib.impl("relu", torch::kCPU, &relu::relu_cpu);\n}\n'
    )
    (project / _CPU_FILE).write_text(text)
    findings = check_project(project)
    assert findings == [], describe(findings)


def test_an_op_with_an_inferred_schema_is_checked_like_the_others(project: Path) -> None:
    # `ops.def("name", fn)`: valid, the dispatcher infers the schema from fn's signature.
    binding = "torch-ext/torch_binding.cpp"
    replace(
        project,
        binding,
        "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {",
        "at::Tensor twice(const at::Tensor& x) { return x * 2; }\n\n"
        'TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {\n  ops.def("twice", &twice);',
    )
    findings = check_project(project)
    # No "no schema" warning; the op reaches the wrapper check, which finds no wrapper.
    assert [(f.severity, f.message.split(":")[0]) for f in findings] == [
        ("warning", "Op 'twice' has no Python wrapper")
    ], describe(findings)

    init = next((project / "torch-ext").glob("*/__init__.py"))
    init.write_text(init.read_text() + "\n\ndef twice(x):\n    return ops.twice(x)\n")
    assert check_project(project) == []


def test_check_refuses_a_folder_without_build_toml(tmp_path: Path) -> None:
    with pytest.raises(NotAProjectError, match="no build.toml"):
        check_project(tmp_path)


# ------------------------------------------------------------------------------------------------
# CLI


def test_cli_check_passes_a_fresh_project(project: Path) -> None:
    result = runner.invoke(app, ["check", str(project)])
    assert result.exit_code == 0, result.output
    assert "No problems found." in result.output


def test_cli_check_prints_one_line_per_finding_and_fails_on_errors(project: Path) -> None:
    _set("general.python-depends", ["numpy"])(project)
    commit_all(project, "build.toml")  # a build of what HEAD holds: no release-gate error
    simulate_build(project)

    result = runner.invoke(app, ["check", str(project)])

    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert any(
        line.startswith('error build.toml [general]: python-depends "numpy"') for line in lines
    ), result.output
    assert any(line.startswith("warning .kscaffold/: ") for line in lines), result.output
    assert any(line.strip().startswith('fix: Remove "numpy"') for line in lines), result.output
    assert "1 error, 2 warnings. Fix the errors before releasing." in result.output


def test_cli_warnings_alone_do_not_fail(project: Path) -> None:
    simulate_build(project)
    result = runner.invoke(app, ["check", str(project)])
    assert result.exit_code == 0, result.output
    assert "0 errors, 2 warnings." in result.output


def test_cli_finds_the_project_from_a_subfolder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "csrc" / "cuda")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    assert f"Project: {project.resolve()}" in result.output
    assert "No problems found." in result.output


def test_cli_outside_any_project_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1
    assert "has no build.toml, so it is not a kernel project" in result.output, result.output
