"""The rms_norm template op (a reduction) and check's rule on device memory calls.

Fast tier: `new --example rms_norm` and `add-op --like rms_norm` write every piece (schemas with
weight and eps, the wrapper, CUB and at::vec kernels), merge into the user's edits and pass
`check`; a cudaMalloc, cudaFree or cudaDeviceSynchronize in a kernel source is a warning at its
line with the fix, and nothing in comments or strings is. Slow tier: the example builds for the
CPU and passes its own generated tests.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from scaffold.checks import check_project
from scaffold.cli import app
from scaffold.compiler import build_project
from scaffold.grow.addop import add_op
from tests.helpers import assert_ruff_clean
from tests.projects import commit_all, new_project

runner = CliRunner()

SCHEMAS = (
    'ops.def("{op}(Tensor x, Tensor weight, float eps) -> Tensor");',
    'ops.def("{op}_no_grad(Tensor x, Tensor weight, float eps) -> Tensor");',
    'ops.def("{op}_out(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()");',
)


def ruff_is_clean(project: Path) -> None:
    assert_ruff_clean(project)


def test_new_example_rms_norm_writes_the_reduction(tmp_path: Path) -> None:
    project = new_project(tmp_path / "rms-norm", name="rms-norm", example="rms_norm")
    binding = (project / "torch-ext" / "torch_binding.h").read_text()
    for schema in SCHEMAS:
        assert schema.format(op="rms_norm") in binding
    cuda = (project / "csrc" / "cuda" / "rms_norm.cu").read_text()
    assert "cub::BlockReduce<opmath_t, kThreadsPerRow>" in cuda
    assert "cub::WarpReduce<opmath_t>" in cuda
    assert "at::cuda::OptionalCUDAGuard" in cuda and "getCurrentCUDAStream()" in cuda
    cpu = (project / "csrc" / "cpu" / "rms_norm.cpp").read_text()
    assert "at::parallel_for" in cpu and "lanes[j] += value * value;" in cpu
    wrapper = (project / "torch-ext" / "rms_norm" / "__init__.py").read_text()
    signature = "x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6, *"
    assert f"def rms_norm(\n    {signature}" in wrapper
    assert 'torch.library.register_autograd(\n    add_op_namespace_prefix("rms_norm")' in wrapper
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["ops"] == [{"name": "rms_norm", "kind": "rms_norm"}]
    assert "torch.nn.functional.rms_norm" in (project / "benchmarks" / "benchmark.py").read_text()
    assert check_project(project) == []


def test_add_op_like_rms_norm_merges_into_the_users_project(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel")
    kernel = project / "csrc" / "cuda" / "relu.cu"
    kernel.write_text("// Tuned by me.\n" + kernel.read_text())
    init = project / "torch-ext" / "my_kernel" / "__init__.py"
    init.write_text(init.read_text() + "\n\ndef mine() -> None:\n    pass\n")
    commit_all(project, ".", message="user edits")

    report = add_op(project, "rownorm", like="rms_norm")

    assert not report.conflicts
    assert kernel.read_text().startswith("// Tuned by me.\n")
    wrapper = init.read_text()
    assert "def mine() -> None:" in wrapper and "def rownorm(" in wrapper
    assert "import math\nfrom typing import Any\n" in wrapper
    binding = (project / "torch-ext" / "torch_binding.h").read_text()
    for schema in SCHEMAS:
        assert schema.format(op="rownorm") in binding
    config = tomllib.loads((project / "build.toml").read_text())
    assert config["kernel"]["rownorm_cuda"]["src"] == ["csrc/cuda/rownorm.cu"]
    assert config["kernel"]["rownorm_cpu"]["src"] == ["csrc/cpu/rownorm.cpp"]
    assert "csrc/rownorm.h" in config["torch"]["src"]
    assert "rownorm::inverse_rms" not in (project / "csrc" / "rownorm.h").read_text()
    assert "inline opmath_t inverse_rms(" in (project / "csrc" / "rownorm.h").read_text()
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["ops"][-1] == {"name": "rownorm", "kind": "rms_norm"}
    assert [str(f) for f in check_project(project)] == []
    ruff_is_clean(project)


def test_cli_new_and_add_op_take_rms_norm(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["new", "norms", "--example", "rms_norm", "--dest", str(tmp_path / "norms"), "--no-git"],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "norms" / "csrc" / "cuda" / "rms_norm.cu").is_file()
    project = new_project(tmp_path / "my-kernel")
    result = runner.invoke(app, ["add-op", "rownorm", str(project), "--like", "rms_norm"])
    assert result.exit_code == 0, result.output
    assert (project / "tests" / "test_rownorm.py").is_file()


# --- check: device memory calls in kernel sources ------------------------------------------------

PLANTED = """
void scratch(int64_t bytes) {
  void* buffer = nullptr;
  C10_CUDA_CHECK(cudaMalloc(&buffer, bytes));
  C10_CUDA_CHECK(::cudaFree(buffer));
  cudaMallocAsync(&buffer, bytes, at::cuda::getCurrentCUDAStream());
  cudaDeviceSynchronize ();
}
"""
HARMLESS = """
// cudaMalloc(&p, n) would be slow; cudaDeviceSynchronize() too.
/* cudaFree(p); */
const char* kNote = "cudaMalloc(&p, n)";
void my_cudaMalloc(int n);
void use() { allocator.cudaMalloc(1); pool->cudaFree(2); mine::cudaDeviceSynchronize(); }
"""


def device_memory_findings(project: Path) -> list[str]:
    return [
        str(finding)
        for finding in check_project(project)
        if "kernel source" in finding.message and finding.location.startswith("csrc/")
    ]


def test_device_memory_calls_are_warnings_at_their_line(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", git=False)
    kernel = project / "csrc" / "cuda" / "relu.cu"
    text = kernel.read_text()
    lines_before = text.count("\n", 0, text.index("namespace relu {")) + 1
    kernel.write_text(text.replace("namespace relu {", "namespace relu {" + PLANTED, 1))
    findings = [f for f in check_project(project) if "kernel source" in f.message]
    assert all(f.severity == "warning" for f in findings)
    by_line = {f.location: f for f in findings}
    first = lines_before + 3  # the line of cudaMalloc in PLANTED
    assert sorted(by_line) == sorted(
        f"csrc/cuda/relu.cu:{line}" for line in (first, first + 1, first + 2, first + 3)
    )
    malloc = by_line[f"csrc/cuda/relu.cu:{first}"]
    assert malloc.message.startswith("cudaMalloc in a kernel source allocates outside")
    assert "at::empty / torch::empty" in malloc.fix
    assert "caching allocator" in by_line[f"csrc/cuda/relu.cu:{first + 1}"].fix
    assert "pool beside PyTorch's" in by_line[f"csrc/cuda/relu.cu:{first + 2}"].message
    sync = by_line[f"csrc/cuda/relu.cu:{first + 3}"]
    assert "cudaStreamSynchronize(stream)" in sync.fix and "whole device" in sync.fix
    assert "warning: csrc/cuda/relu.cu:" in str(sync)


def test_comments_strings_and_other_names_are_not_device_memory_calls(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", git=False)
    header = project / "csrc" / "relu.h"
    header.write_text(header.read_text() + HARMLESS)
    assert device_memory_findings(project) == []


def test_check_cli_prints_the_device_memory_warning(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", git=False)
    kernel = project / "csrc" / "cpu" / "relu.cpp"
    kernel.write_text(kernel.read_text() + "\nvoid wait() { cudaDeviceSynchronize(); }\n")
    result = runner.invoke(app, ["check", str(project)])
    assert "cudaDeviceSynchronize in a kernel source" in result.output, result.output
    assert "csrc/cpu/relu.cpp:" in result.output


# --- slow tier: the example builds for the CPU and passes its own tests ---------------------------


@pytest.mark.slow
def test_rms_norm_example_passes_its_generated_tests(tmp_path: Path) -> None:
    project = new_project(tmp_path / "rms-norm", name="rms-norm", example="rms_norm")
    build_project(project, backend="cpu")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    summary = output.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
