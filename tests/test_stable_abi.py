"""new --stable-abi: the template's ops written against torch's stable ABI.

Fast: what the template renders and what `new` accepts. Slow: a stable-ABI project builds its
torch-stable-abi<NN> variants (CPU, and CUDA for one arch), its libraries use torch only through
the stable C shim (so one build loads on every later torch), and its generated tests pass on CPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from scaffold.cli.app import app
from scaffold.compiler import build_project
from scaffold.errors import InvalidOptionError, KscaffoldError
from scaffold.grow.addop import add_op
from scaffold.grow.create import create_project
from scaffold.grow.stableskeleton import render_stable_skeleton
from scaffold.grow.template import render_files
from scaffold.project.schema import parse_schema
from scaffold.project.spec import ProjectSpec
from scaffold.project.stableabi import DEFAULT_STABLE_ABI, parse_stable_abi
from tests.projects import commit_all
from tests.test_build import cuda_toolkit_or_skip
from tests.test_img2gray_build import check_against_pillow, run_generated_tests

#: What a stable-ABI source must not include: ATen's and the unstable C++ library's headers.
UNSTABLE_INCLUDE = re.compile(r"#include <(ATen/|c10/|torch/library\.h|torch/extension\.h)")


def stable_files(example: str | None = None, backends: str = "cuda,cpu") -> dict[str, str]:
    spec = ProjectSpec.parse("my-kernel", backends=backends, example=example, stable_abi="2.11")
    return {path: data.decode() for path, data in render_files(spec.answers()).items()}


@pytest.mark.parametrize("example", [None, "img2gray"])
def test_sources_use_only_the_stable_abi(example: str | None) -> None:
    files = stable_files(example)
    sources = {p: t for p, t in files.items() if p.startswith(("csrc/", "torch-ext/torch_binding"))}
    assert len(sources) == 5, sorted(sources)
    for path, text in sources.items():
        code = re.sub(r"//.*", "", text)  # comments may name what the code replaces
        assert not UNSTABLE_INCLUDE.search(code), path
        assert "at::" not in code and "AT_DISPATCH" not in code, path
    assert "STABLE_TORCH_LIBRARY_EXPAND(" in files["torch-ext/torch_binding.cpp"]
    for backend, key in (("cpu", "CPU"), ("cuda", "CUDA")):
        (source,) = [t for p, t in sources.items() if p.startswith(f"csrc/{backend}/")]
        assert f"STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, {key}, m)" in source
        assert "TORCH_BOX(&" in source
    cpu = next(t for p, t in sources.items() if p.startswith("csrc/cpu/"))
    assert "torch::stable::parallel_for" in cpu


#: A schema of every type torch's stable ABI passes, and several results.
STABLE_SCHEMA = (
    "(Tensor x, Tensor? bias=None, float eps=1e-5, int? n=None, bool flag=False, "
    "ScalarType? dtype=None) -> (Tensor, Tensor)"
)


def test_a_schema_op_is_written_against_the_stable_abi(tmp_path: Path) -> None:
    spec = ProjectSpec.parse(
        "my-kernel", stable_abi="2.11", schema=f"shift{STABLE_SCHEMA}", backends="cuda,cpu"
    )
    files = {path: data.decode() for path, data in render_files(spec.answers()).items()}
    sources = {p: t for p, t in files.items() if p.startswith(("csrc/", "torch-ext/torch_binding"))}
    assert sorted(sources) == [
        "csrc/cpu/shift.cpp",
        "csrc/cuda/shift.cu",
        "csrc/shift.h",
        "torch-ext/torch_binding.cpp",
        "torch-ext/torch_binding.h",
    ]
    for path, text in sources.items():
        code = re.sub(r"//.*", "", text)
        assert not UNSTABLE_INCLUDE.search(code), path
        assert "at::" not in code, path
    cuda = files["csrc/cuda/shift.cu"]
    assert (
        "std::tuple<torch::stable::Tensor, torch::stable::Tensor> shift_cuda(\n"
        "    const torch::stable::Tensor& x,\n"
        "    std::optional<torch::stable::Tensor> bias,\n"
        "    double eps,\n"
        "    std::optional<int64_t> n,\n"
        "    bool flag,\n"
        "    std::optional<torch::headeronly::ScalarType> dtype) {"
    ) in cuda
    assert "torch::stable::accelerator::DeviceGuard device_guard(x.get_device_index())" in cuda
    assert 'm.impl("shift", TORCH_BOX(&shift::shift_cuda));' in cuda
    assert (
        "inline void check_inputs(\n"
        "    const torch::stable::Tensor& x, std::optional<torch::stable::Tensor> bias) {"
    ) in files["csrc/shift.h"]
    assert f'ops.def("shift{STABLE_SCHEMA}");' in files["torch-ext/torch_binding.h"]


@pytest.mark.parametrize(
    ("schema", "refusal"),
    [
        ("(Tensor x, Scalar alpha) -> Tensor", "argument 'alpha': torch's stable ABI passes"),
        ("(Tensor[] xs) -> Tensor", "not 'Tensor[]'"),
        ("(Tensor x) -> Tensor[]", "returns no Tensor[]"),
        ("(Tensor(a!) x) -> Tensor(a!)", "returns new tensors, not 'x'"),
    ],
)
def test_add_op_refuses_what_the_stable_abi_cannot_pass_with_nothing_written(
    tmp_path: Path, schema: str, refusal: str
) -> None:
    spec = ProjectSpec.parse("kk", stable_abi="2.11", backends="cpu")
    project = create_project(spec, tmp_path / "kk")
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    result = CliRunner().invoke(app, ["add-op", "spin", str(project), "--schema", schema])
    assert result.exit_code != 0 and refusal in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_build_toml_declares_the_version_for_every_backend_and_answers_record_it() -> None:
    files = stable_files(backends="cpu")
    config = tomllib.loads(files["build.toml"])
    assert config["torch"]["stable-abi"] == {"cpu": "2.11"}
    answers = yaml.safe_load(files[".copier-answers.yml"])
    assert answers["stable_abi"] == "2.11"


def test_a_project_without_the_option_is_rendered_as_before() -> None:
    spec = ProjectSpec.parse("my-kernel")
    files = render_files(spec.answers())
    assert "stable_abi" not in yaml.safe_load(files[".copier-answers.yml"])
    assert "stable-abi" not in tomllib.loads(files["build.toml"].decode())["torch"]
    assert b"#include <torch/library.h>" in files["torch-ext/torch_binding.cpp"]


def test_versions() -> None:
    assert parse_stable_abi("2.10") == DEFAULT_STABLE_ABI == "2.10"
    assert parse_stable_abi("2.12.1") == "2.12"
    for bad in ("2.9", "two", "2"):
        with pytest.raises(InvalidOptionError):
            parse_stable_abi(bad)


@pytest.mark.parametrize(
    ("arguments", "recorded"),
    [(["--stable-abi"], DEFAULT_STABLE_ABI), (["--stable-abi", "2.11"], "2.11"), ([], None)],
)
def test_new_option(tmp_path: Path, arguments: list[str], recorded: str | None) -> None:
    destination = tmp_path / "kk"
    result = CliRunner().invoke(
        app, ["new", "kk", *arguments, "--dest", str(destination), "--no-git", "--backends", "cpu"]
    )
    assert result.exit_code == 0, result.output
    answers = yaml.safe_load((destination / ".copier-answers.yml").read_text())
    assert answers.get("stable_abi") == recorded


def test_new_refuses_a_version_without_the_option_or_too_old(tmp_path: Path) -> None:
    cases = ((["2.11"], "follows --stable-abi"), (["--stable-abi", "2.9"], "2.10"))
    for arguments, message in cases:
        result = CliRunner().invoke(app, ["new", "kk", *arguments, "--dest", str(tmp_path / "kk")])
        assert result.exit_code != 0 and message in result.output, result.output
        assert not (tmp_path / "kk").exists()


def _undefined_symbols(library: Path) -> list[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm (binutils)")
    output = subprocess.run(
        [nm, "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return [line.split()[-1] for line in output.splitlines() if line.strip()]


@pytest.mark.slow
def test_stable_abi_project_builds_loads_and_passes_its_tests(tmp_path: Path) -> None:
    spec = ProjectSpec.parse("gray", example="img2gray", stable_abi=DEFAULT_STABLE_ABI)
    project = create_project(spec, tmp_path / "gray")
    # An op from a schema too: its skeletons compile against the stable ABI alone.
    add_op(project, "shift", schema=STABLE_SCHEMA)
    commit_all(project, ".", message="shift")
    (cpu,) = build_project(project, backend="cpu")
    assert cpu.variant == "torch-stable-abi210-cpu-x86_64-linux"
    libraries = [cpu.variant_dir / f"{cpu.ops_name}.abi3.so"]
    toolkit = cuda_toolkit_or_skip()
    (cuda,) = build_project(project, backend="cuda", cuda_archs=["9.0"])
    assert cuda.variant == f"torch-stable-abi210-cu{toolkit.version[0]}0-x86_64-linux"
    libraries.append(cuda.variant_dir / f"{cuda.ops_name}.abi3.so")
    for library in libraries:
        # torch only through its C shim: no C++ symbol of ATen, c10 or torch, which change
        # from one release to the next.
        symbols = _undefined_symbols(library)
        assert not [s for s in symbols if re.match(r"_ZN?K?(2at|3c10|5torch)", s)], library
        assert "torch_parallel_for" in symbols or "aoti_torch_get_current_cuda_stream" in symbols
    check_against_pillow(project)
    summary = run_generated_tests(project)
    assert int(summary.split(" passed")[0].split()[-1]) >= 100, summary


def test_skeleton_for_ops_the_user_wrote_uses_the_stable_types() -> None:
    mine = parse_schema("mine(Tensor x, int n, Tensor(a!) out, Tensor? bias=None) -> Tensor")
    text = render_stable_skeleton("my_kernel", "cuda", [mine])
    assert "torch::stable::Tensor mine_cuda(const torch::stable::Tensor& x, int64_t n, " in text
    assert "torch::stable::Tensor& out, std::optional<torch::stable::Tensor> bias)" in text
    assert 'm.impl("mine", TORCH_BOX(&my_kernel_cuda::mine_cuda));' in text
    assert "STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, m)" in text
    assert not UNSTABLE_INCLUDE.search(text) and "KSCAFFOLD_SKELETON" in text
    with pytest.raises(KscaffoldError, match=r"'Scalar' is not one"):
        render_stable_skeleton("my_kernel", "cpu", [parse_schema("f(Tensor x, Scalar s) -> ()")])
