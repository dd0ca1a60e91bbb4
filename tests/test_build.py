"""``kscaffold build`` as a library: names, uid, archs and flags without a compiler, then builds.

The slow tests build a small hand-written project (an ``add_one`` op) and load the result the way
users do, with ``kernels.get_local_kernel``, in a fresh Python process.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from scaffold._version import __version__
from scaffold.compiler import BuildReporter, BuildResult, build_project
from scaffold.compiler.archs import (
    CudaArch,
    default_arch_list,
    loose_intersection,
    make_arch_policy,
    parse_arch_list,
)
from scaffold.compiler.compdb import update_compile_commands
from scaffold.compiler.install import install_variant, remove_stale_libraries, variant_metadata
from scaffold.compiler.ninjafile import render_build_ninja, write_if_changed
from scaffold.compiler.plan import Toolchain, VariantPlan, plan_variant
from scaffold.compiler.toolchain import (
    CudaToolkit,
    TorchInstall,
    aten_uses_openmp,
    find_cuda_toolkit,
    find_torch,
    nvcc_supported_archs,
    shared_cxx_runtime,
)
from scaffold.compiler.uid import project_uid
from scaffold.compiler.variant import ops_name, variant_name
from scaffold.errors import BuildConfigError, CompileError, InvalidOptionError, ToolchainError
from scaffold.outputs.manifest import load_manifest, record_generated
from scaffold.outputs.provenance import KERNELS_MINVER
from scaffold.project.buildconfig import KernelSection, load_build_config
from scaffold.support.gitutil import init_and_commit, run_git
from tests.helpers import run, run_with_kernel

CPU_TORCH = TorchInstall(root=Path("/t"), version="2.13.0+cpu", cuda=None, cxx11_abi=True)
CUDA_TORCH = TorchInstall(root=Path("/t"), version="2.14.1+cu130", cuda="13.0", cxx11_abi=True)
GpuQuery = Callable[[], Sequence[tuple[int, int]]]
SUPPORTED = frozenset({"75", "80", "86", "87", "89", "90", "100", "110", "120", "121"})


# --- the project under test -------------------------------------------------------------------

BUILD_TOML = """\
[general]
name = "add-one"
version = 3
license = "apache-2.0"
backends = [{backends}]
edition = 5

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.add_one_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/cpu/add_one.cpp", "csrc/cpu/addend.h"]
"""

CUDA_KERNEL_TOML = """
[kernel.add_one_cuda]
backend = "cuda"
depends = ["torch"]
src = ["csrc/cuda/add_one.cu"]
cuda-capabilities = ["9.0"]
"""

# Lean includes on purpose: torch/all.h would triple the compile time of every test build.
BINDING_H = """\
#pragma once
#include <ATen/core/Tensor.h>

void add_one(at::Tensor& out, const at::Tensor& input);
void thread_ids(at::Tensor& ids);
"""

BINDING_CPP = """\
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("add_one(Tensor! out, Tensor input) -> ()");
  ops.def("thread_ids(Tensor! ids) -> ()");
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""

ADDEND_H = "#pragma once\nconstexpr float kAddend = 1.0f;\n"

CPU_SOURCE = """\
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "cpu/addend.h"
#include "registration.h"
#include "torch_binding.h"

void add_one(at::Tensor& out, const at::Tensor& input) {
  TORCH_CHECK(input.device().is_cpu(), "input must be on the CPU");
  TORCH_CHECK(input.scalar_type() == at::kFloat, "input must be float32");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
  // Streams an IntArrayRef and an int64_t: the C++ runtime's number formatting must work here.
  TORCH_CHECK(out.sizes() == input.sizes(), "out must have the shape ", input.sizes(), ", got ",
              out.sizes(), " (", out.numel(), " elements)");
  const float* in = input.data_ptr<float>();
  float* result = out.data_ptr<float>();
  for (int64_t i = 0; i < input.numel(); ++i) result[i] = in[i] + kAddend;
}

// Each element gets the number of the at::parallel_for thread that wrote it.
void thread_ids(at::Tensor& ids) {
  TORCH_CHECK(ids.scalar_type() == at::kLong && ids.is_contiguous(), "ids: contiguous int64");
  int64_t* data = ids.data_ptr<int64_t>();
  at::parallel_for(0, ids.numel(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) data[i] = at::get_thread_num();
  });
}

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) {
  ops.impl("add_one", &add_one);
  ops.impl("thread_ids", &thread_ids);
}
"""

CUDA_SOURCE = """\
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

__global__ void add_one_kernel(float* out, const float* in, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}

void add_one_cuda(at::Tensor& out, const at::Tensor& input) {
  TORCH_CHECK(input.is_cuda() && input.scalar_type() == at::kFloat, "input: CUDA float32");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
  const c10::cuda::CUDAGuard guard(input.device());
  const int64_t n = input.numel();
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  if (n > 0) {
    add_one_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        out.data_ptr<float>(), input.data_ptr<float>(), n);
  }
}

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, ops) { ops.impl("add_one", &add_one_cuda); }
"""

INIT_PY = """\
import torch

from ._ops import ops


def add_one(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ops.add_one(out, x)
    return out
"""


def write_project(root: Path, *, cuda: bool = False) -> Path:
    """The add-one kernel project: a CPU kernel, and a CUDA one if asked."""
    backends = '"cuda", "cpu"' if cuda else '"cpu"'
    files = {
        "build.toml": BUILD_TOML.format(backends=backends) + (CUDA_KERNEL_TOML if cuda else ""),
        "torch-ext/torch_binding.h": BINDING_H,
        "torch-ext/torch_binding.cpp": BINDING_CPP,
        "torch-ext/add_one/__init__.py": INIT_PY,
        "torch-ext/add_one/py.typed": "",
        "csrc/cpu/add_one.cpp": CPU_SOURCE,
        "csrc/cpu/addend.h": ADDEND_H,
        ".gitignore": "/build/\n/.kscaffold/\n/compile_commands.json\n__pycache__/\n",
    }
    if cuda:
        files["csrc/cuda/add_one.cu"] = CUDA_SOURCE
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def load_and_call(project: Path, backend: str = "cpu") -> list[float]:
    """add_one([0, 1, 2, 3]) through kernels.get_local_kernel, in a fresh Python process."""
    device = "cuda" if backend == "cuda" else "cpu"
    body = (
        f"x = torch.arange(4, dtype=torch.float32, device={device!r})\n"
        "print(json.dumps(kernel.add_one(x).cpu().tolist()))\n"
    )
    output = run_with_kernel(project, body, backend)
    values: list[float] = json.loads(output.strip().splitlines()[-1])
    return values


class RecordingReporter(BuildReporter):
    """Keeps everything a build reports, for assertions and failure messages."""

    shows_output = True

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.steps: list[str] = []
        self.output: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)

    def step(self, variant: str, done: int, total: int, description: str) -> None:
        self.steps.append(f"[{done}/{total}] {description}")

    def compiler_output(self, variant: str, line: str) -> None:
        self.output.append(line)


def torch_is_cuda() -> bool:
    import torch

    return torch.version.cuda is not None


# --- naming, uid, archs, flags: no compiler needed --------------------------------------------


@pytest.mark.parametrize(
    ("torch", "backend", "machine", "system", "expected"),
    [
        (CPU_TORCH, "cpu", "x86_64", "Linux", "torch213-cxx11-cpu-x86_64-linux"),
        (CUDA_TORCH, "cuda", "x86_64", "Linux", "torch214-cxx11-cu130-x86_64-linux"),
        (CUDA_TORCH, "cpu", "aarch64", "Linux", "torch214-cxx11-cpu-aarch64-linux"),
        (
            replace(CUDA_TORCH, cuda="12.8"),
            "cuda",
            "x86_64",
            "Linux",
            "torch214-cxx11-cu128-x86_64-linux",
        ),
        (CPU_TORCH, "cpu", "arm64", "Darwin", "torch213-cpu-aarch64-darwin"),
    ],
)
def test_variant_name(
    torch: TorchInstall, backend: str, machine: str, system: str, expected: str
) -> None:
    assert variant_name(torch, backend, machine=machine, system=system) == expected


def test_cuda_variant_needs_a_cuda_torch() -> None:
    with pytest.raises(ToolchainError, match="not a CUDA build"):
        variant_name(CPU_TORCH, "cuda")


def test_ops_name_and_cxx_standard() -> None:
    assert ops_name("add_one", "cuda", "30dc0ae_dirty") == "_add_one_cuda_30dc0ae_dirty"
    assert CPU_TORCH.cxx_standard == "c++20"
    assert replace(CPU_TORCH, version="2.11.0+cu130").cxx_standard == "c++17"


def test_uid_outside_git_follows_content(tmp_path: Path) -> None:
    source = tmp_path / "a.cpp"
    source.write_text("int a;\n")
    first = project_uid(tmp_path, [source])
    assert re.fullmatch(r"[0-9a-f]{7}", first)
    assert project_uid(tmp_path, [source]) == first
    source.write_text("int b;\n")
    assert project_uid(tmp_path, [source]) != first


def test_uid_outside_git_is_the_first_builds_plus_dirty(tmp_path: Path) -> None:
    source, state = tmp_path / "a.cpp", tmp_path / ".kscaffold"
    source.write_text("int a;\n")
    first = project_uid(tmp_path, [source], state)
    assert (
        first == project_uid(tmp_path, [source]) and project_uid(tmp_path, [source], state) == first
    )
    source.write_text("int b;\n")
    assert project_uid(tmp_path, [source], state) == first + "_dirty"
    source.write_text("int c;\n")  # a second edit keeps the namespace: only edited files rebuild
    assert project_uid(tmp_path, [source], state) == first + "_dirty"
    source.write_text("int a;\n")
    assert project_uid(tmp_path, [source], state) == first
    (state / "source-baseline").write_text("garbage")  # a damaged record starts a new baseline
    assert project_uid(tmp_path, [source], state) == first


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_uid_in_git_is_head_tree_plus_dirty(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj")
    run_git(project, "init", "--quiet")
    assert project_uid(project, []) == "4b825dc_dirty"  # no commit yet: all of it is new
    init_and_commit(project, "initial")
    tree = run_git(project, "rev-parse", "HEAD^{tree}").stdout.strip()
    assert project_uid(project, []) == tree[:7]
    # What the build itself writes must not make the tree dirty, .gitignore or not.
    (project / ".gitignore").unlink()
    run_git(project, "commit", "--quiet", "-am", "no ignore")
    tree = run_git(project, "rev-parse", "HEAD^{tree}").stdout.strip()
    for generated in ("build/v/x.py", ".kscaffold/build/x.o", "compile_commands.json"):
        (project / generated).parent.mkdir(parents=True, exist_ok=True)
        (project / generated).write_text("x")
    assert project_uid(project, []) == tree[:7]
    (project / "csrc" / "cpu" / "add_one.cpp").write_text("// edited\n")
    assert project_uid(project, []) == tree[:7] + "_dirty"


@pytest.mark.parametrize(
    ("text", "arch", "flags"),
    [
        ("8.0", CudaArch(8, 0), ["-gencode", "arch=compute_80,code=sm_80"]),
        ("9.0a", CudaArch(9, 0, "a"), ["-gencode", "arch=compute_90a,code=sm_90a"]),
        (
            "12.0+PTX",
            CudaArch(12, 0, "", True),
            [
                "-gencode",
                "arch=compute_120,code=sm_120",
                "-gencode",
                "arch=compute_120,code=compute_120",
            ],
        ),
    ],
)
def test_arch_parsing_and_gencode(text: str, arch: CudaArch, flags: list[str]) -> None:
    assert CudaArch.parse(text) == arch
    assert str(arch) == text
    assert arch.gencode_flags() == flags


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5.0", "CUDA arch '5.0' is not supported by this nvcc; supported archs: 7.5, 8.0,"),
        ("sm_80", "'sm_80' is not a CUDA arch: write it as major.minor"),
        ("8", "'8' is not a CUDA arch"),
        ("8.0a", "'8.0a' is not a CUDA arch: 'a' targets exist only from 9.0 on"),
    ],
)
def test_bad_arch_is_refused_by_name(value: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=re.escape(f"--cuda-archs: {message}")):
        parse_arch_list(["9.0", value], supported=SUPPORTED, origin="--cuda-archs")


def test_arch_list_is_split_sorted_and_deduplicated() -> None:
    archs = parse_arch_list(["9.0,8.0", "8.0 12.0+PTX"], supported=SUPPORTED, origin="x")
    assert [str(arch) for arch in archs] == ["8.0", "9.0", "12.0+PTX"]


def test_default_arch_lists_follow_the_toolkit() -> None:
    assert default_arch_list((13, 0))[-1] == "12.1+PTX"
    assert default_arch_list((12, 8))[0] == "7.0" and default_arch_list((12, 9))[-1] == "12.0+PTX"
    assert default_arch_list((12, 6))[-1] == "9.0+PTX"


def test_arch_precedence(tmp_path: Path) -> None:
    config = load_build_config(write_project(tmp_path, cuda=True))
    (kernel,) = config.kernels_for("cuda")
    no_caps = replace(kernel, cuda_capabilities=None)

    def no_gpu() -> Sequence[tuple[int, int]]:
        return ()

    def never() -> Sequence[tuple[int, int]]:
        raise AssertionError("the GPU must not be queried when archs were given")

    def archs(requested: list[str] | None, gpus: GpuQuery, k: KernelSection) -> list[str]:
        policy = make_arch_policy(
            requested,
            supported=SUPPORTED,
            cuda_version=(13, 0),
            visible_gpus=gpus,
        )
        return [str(arch) for arch in policy.for_kernel(k)]

    # The requested archs and the visible GPU narrow a table's capabilities, never replace them.
    assert archs(["8.0"], never, no_caps) == ["8.0"]
    assert archs(["8.0"], never, kernel) == []
    assert archs(["8.0", "9.0"], never, kernel) == ["9.0"]
    assert archs(None, lambda: [(12, 0)], no_caps) == ["12.0"]
    assert archs(None, lambda: [(12, 0)], kernel) == []
    assert archs(None, lambda: [(9, 0)], kernel) == ["9.0"]
    assert archs(None, no_gpu, kernel) == ["9.0"]
    assert archs(None, no_gpu, no_caps) == list(default_arch_list((13, 0)))
    with pytest.raises(ToolchainError, match=r"'6\.1' is not supported .* or pass --cuda-archs"):
        archs(None, lambda: [(6, 1)], kernel)
    # An arch the intersection drops may be one nvcc does not know; one it keeps may not.
    assert archs(["9.0"], never, replace(kernel, cuda_capabilities=("5.2", "9.0"))) == ["9.0"]
    with pytest.raises(
        BuildConfigError, match=r"kernel.add_one_cuda.cuda-capabilities: CUDA arch '5.2\+PTX'"
    ):
        archs(None, no_gpu, replace(kernel, cuda_capabilities=("5.2+PTX",)))
    with pytest.raises(BuildConfigError, match=r"cuda-capabilities: '9.1x' is not a CUDA arch"):
        archs(None, no_gpu, replace(kernel, cuda_capabilities=("9.1x",)))


@pytest.mark.parametrize(
    ("capabilities", "targets", "kept"),
    [
        # kernel-builder's own examples of its loose intersection.
        (["7.5", "8.0", "8.6", "9.0", "9.0a"], ["8.0", "8.9", "9.0"], ["8.0", "8.6", "9.0a"]),
        (["8.0+PTX"], ["9.0"], ["8.0+PTX"]),
        # a/f archs keep their suffix on an exact target, and nothing else.
        (["9.0a"], ["9.0"], ["9.0a"]),
        (["10.0a"], ["9.0"], []),
        (["10.0f", "12.0a"], ["10.0", "12.0"], ["10.0f", "12.0a"]),
        # SASS runs only within one major version; PTX crosses them.
        (["8.0"], ["9.0"], []),
        (["8.0", "8.9"], ["8.6", "9.0"], ["8.0"]),
        (["7.5", "9.0+PTX"], ["7.5", "12.0"], ["7.5", "9.0+PTX"]),
    ],
)
def test_capabilities_intersect_as_kernel_builder_does(
    capabilities: list[str], targets: list[str], kept: list[str]
) -> None:
    result = loose_intersection(
        [CudaArch.parse(text) for text in capabilities],
        [CudaArch.parse(text).base for text in targets],
    )
    assert [str(arch) for arch in result] == kept


def fake_plan(
    project: Path,
    backend: str,
    requested: list[str] | None = None,
    *,
    python_name: str = "add_one",
    stable_abi: tuple[int, int] | None = None,
) -> VariantPlan:
    """Plan ``backend`` of ``project`` against a fake CUDA 13.0 toolchain with no GPU visible."""
    config = load_build_config(project)
    toolkit = CudaToolkit(home=Path("/opt/cuda"), version=(13, 0))
    tools = Toolchain(
        torch=CUDA_TORCH,
        cxx=Path("/usr/bin/g++"),
        python_include=Path("/py/include"),
        cuda=toolkit,
        cuda_include_dirs=(toolkit.include_dir,),
    )
    policy = make_arch_policy(
        requested, supported=SUPPORTED, cuda_version=(13, 0), visible_gpus=lambda: ()
    )
    return plan_variant(
        config,
        backend=backend,
        variant=variant_name(CUDA_TORCH, backend, stable_abi=stable_abi),
        ops_name=ops_name(python_name, backend, "abc1234"),
        scratch=project / ".kscaffold" / "build" / backend,
        tools=tools,
        archs=policy,
        stable_abi=stable_abi,
    )


def test_cpu_flags_match_kernel_builder(tmp_path: Path) -> None:
    project = write_project(tmp_path, cuda=True)
    plan = fake_plan(project, "cpu")
    assert [step.source for step in plan.steps] == [
        "torch-ext/torch_binding.cpp",
        "csrc/cpu/add_one.cpp",
    ]
    flags = plan.steps[1].flags
    for flag in (
        "-DCPU_KERNEL",
        "-DTORCH_EXTENSION_NAME=_add_one_cpu_abc1234",
        "-O3",
        "-fPIC",
        "-DPy_LIMITED_API=0x03090000",
        "-fno-gnu-unique",
        "-D_GLIBCXX_USE_CXX11_ABI=1",
        "-std=c++20",
        f"-I{project / 'csrc'}",
        f"-I{project / 'torch-ext'}",
        f"-I{plan.include_dir}",
        "/t/include",
        "/py/include",
    ):
        assert flag in flags
    assert "-DCUDA_KERNEL" not in flags and "/opt/cuda/include" not in flags
    assert plan.link_flags == ("-L/t/lib", "-lc10", "-ltorch", "-ltorch_cpu")  # no runtime given
    assert plan.archs == () and plan.so_name == "_add_one_cpu_abc1234.abi3.so"


def test_openmp_torch_compiles_and_links_every_source_with_openmp(tmp_path: Path) -> None:
    project = write_project(tmp_path, cuda=True)
    toolkit = CudaToolkit(home=Path("/opt/cuda"), version=(13, 0))
    tools = Toolchain(
        replace(CUDA_TORCH, openmp=True), Path("/usr/bin/g++"), Path("/py/include"), toolkit
    )
    policy = make_arch_policy(
        ["9.0"], supported=SUPPORTED, cuda_version=(13, 0), visible_gpus=lambda: ()
    )
    for backend in ("cpu", "cuda"):
        plan = plan_variant(
            load_build_config(project),
            backend=backend,
            variant=variant_name(CUDA_TORCH, backend),
            ops_name=ops_name("add_one", backend, "abc1234"),
            scratch=project / ".kscaffold" / "build" / backend,
            tools=tools,
            archs=policy,
        )
        for step in plan.steps:
            pairs = list(zip(step.flags, step.flags[1:], strict=False))
            openmp = (
                ("-Xcompiler", "-fopenmp") in pairs
                if step.tool == "nvcc"
                else ("-fopenmp" in step.flags)
            )
            assert openmp, (backend, step)
        assert plan.link_flags[-1] == "-fopenmp"
    assert "-fopenmp" not in fake_plan(project, "cpu").steps[0].flags  # torch without OpenMP


def test_torch_parallel_backend_is_read_from_its_headers(tmp_path: Path) -> None:
    config = tmp_path / "include" / "ATen" / "Config.h"
    config.parent.mkdir(parents=True)
    config.write_text("#define AT_PARALLEL_OPENMP 1\n#define AT_PARALLEL_NATIVE 0\n")
    assert aten_uses_openmp(config)
    config.write_text("#define AT_PARALLEL_OPENMP 0\n#define AT_PARALLEL_NATIVE 1\n")
    assert not aten_uses_openmp(config)
    with pytest.raises(ToolchainError, match="reinstall torch"):
        aten_uses_openmp(tmp_path / "missing.h")


def test_the_shared_cxx_runtime_is_linked_first(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    runtime = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
    plan = plan_variant(
        load_build_config(project),
        backend="cpu",
        variant=variant_name(CPU_TORCH, "cpu"),
        ops_name=ops_name("add_one", "cpu", "abc1234"),
        scratch=project / ".kscaffold" / "build" / "cpu",
        tools=Toolchain(CPU_TORCH, Path("/usr/bin/g++"), Path("/py/include"), None, (), runtime),
        archs=None,
    )
    assert plan.link_flags == (str(runtime), "-L/t/lib", "-lc10", "-ltorch", "-ltorch_cpu")


def test_shared_cxx_runtime_is_asked_of_the_compiler(tmp_path: Path) -> None:
    compiler = tmp_path / "fake-g++"
    compiler.write_text('#!/bin/sh\necho "${1#-print-file-name=}"\n')  # the bare name: unknown
    compiler.chmod(0o755)
    assert shared_cxx_runtime(compiler) is None
    assert shared_cxx_runtime(tmp_path / "missing-g++") is None
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("needs g++")
    found = shared_cxx_runtime(Path(gxx))
    assert found is not None and found.name == "libstdc++.so.6" and found.is_file()


def test_cuda_flags_match_kernel_builder(tmp_path: Path) -> None:
    project = write_project(tmp_path, cuda=True)
    toml = project / "build.toml"
    toml.write_text(toml.read_text() + 'cuda-flags = ["-lineinfo"]\n')
    plan = fake_plan(project, "cuda", ["8.0", "9.0"])  # the table declares 9.0 only
    binding, kernel = plan.steps
    assert (binding.tool, kernel.tool) == ("cxx", "nvcc")
    assert "csrc/cpu/add_one.cpp" not in [step.source for step in plan.steps]
    for flag in ("-DCUDA_KERNEL", "-DUSE_CUDA=1", "-DENABLE_FP8", "/opt/cuda/include"):
        assert flag in binding.flags and flag in kernel.flags
    text = " ".join(kernel.flags)
    for part in (
        "-O3 -DNDEBUG",
        "--expt-relaxed-constexpr --expt-extended-lambda -DONNX_NAMESPACE=onnx_c2 -Xcudafe "
        "--diag_suppress=cc_clobber_ignored,--diag_suppress=field_without_dll_interface,",
        "-Xcompiler -fPIC",
        "-Xcompiler -fno-gnu-unique",
        "/opt/cuda/include -gencode arch=compute_90,code=sm_90 -lineinfo",
        "-DTORCH_EXTENSION_NAME=_add_one_cuda_abc1234",
        "-ccbin /usr/bin/g++",
    ):
        assert part in text
    assert kernel.flags[-1] == "-lineinfo"
    assert "__CUDA_NO_HALF" not in text and "BFLOAT16" not in text
    assert plan.link_flags[-4:] == ("-lc10_cuda", "-ltorch_cuda", "-L/opt/cuda/lib", "-lcudart")
    assert not any("rpath" in flag for flag in plan.link_flags)
    assert [str(arch) for arch in plan.archs] == ["9.0"]
    assert "compute_80" not in text


def test_build_ninja_escapes_paths_and_is_stable(tmp_path: Path) -> None:
    project = write_project(tmp_path / "my project", cuda=True)
    plan = fake_plan(project, "cuda", ["9.0"])
    text = render_build_ninja(plan, project)
    assert "build obj/csrc/cuda/add_one.cu.o: nvcc " + str(project).replace(" ", "$ ") in text
    assert "'-I" + str(project / "csrc") + "'" in text  # shell-quoted inside the flags
    assert render_build_ninja(plan, project) == text
    target = tmp_path / "build.ninja"
    assert write_if_changed(target, text) is True
    stamp = target.stat().st_mtime_ns
    assert write_if_changed(target, text) is False
    assert target.stat().st_mtime_ns == stamp


def test_metadata_and_install_replace_the_variant(tmp_path: Path) -> None:
    project = write_project(tmp_path, cuda=True)
    toml = project / "build.toml"
    toml.write_text(toml.read_text().replace('["9.0"]', '["8.0", "12.0+PTX"]'))
    config = load_build_config(project)
    plan = fake_plan(project, "cuda", ["8.0", "12.0"])
    assert variant_metadata(config, plan) == {
        "name": "add-one",
        "id": "_add_one_cuda_abc1234",
        "version": 3,
        "license": "apache-2.0",
        "python-depends": [],
        "backend": {"type": "cuda", "archs": ["8.0", "12.0+PTX"]},
        "kernels-minver": KERNELS_MINVER,
        "provenance": {"kernel-builder": {"version": f"kscaffold {__version__}"}},  # no git
    }
    plan.scratch.mkdir(parents=True)
    (plan.scratch / plan.so_name).write_bytes(b"new library")
    (plan.scratch / "_add_one_cuda_0000000.abi3.so").write_bytes(b"older uid")
    old = project / "build" / plan.variant
    old.mkdir(parents=True)
    (old / "_add_one_cuda_0000000.abi3.so").write_bytes(b"older uid")
    files = install_variant(config, plan)
    assert sorted(path.name for path in files) == sorted(
        ["__init__.py", "_ops.py", "metadata.json", plan.so_name]  # py.typed: not in pyext
    )
    assert not (old / "_add_one_cuda_0000000.abi3.so").exists()
    assert [p.name for p in (project / "build").iterdir()] == [plan.variant]  # no staging left
    ops = (old / "_ops.py").read_text()
    assert (
        "from . import _add_one_cuda_abc1234" in ops
        and "ops = torch.ops._add_one_cuda_abc1234" in ops
    )
    remove_stale_libraries(plan.scratch, keep=plan.so_name)
    assert [p.name for p in plan.scratch.glob("*.so")] == [plan.so_name]
    assert not (project / "torch-ext" / "add_one" / "_ops.py").exists()


def test_compile_commands_keep_other_variants(tmp_path: Path) -> None:
    cpu, cuda = tmp_path / "s" / "cpu", tmp_path / "s" / "cuda"
    cpu.mkdir(parents=True)
    cuda.mkdir(parents=True)

    def entry(scratch: Path, name: str) -> dict[str, str]:
        return {"directory": str(scratch), "file": f"/p/{name}", "command": "c++"}

    written = update_compile_commands(
        tmp_path, {cpu: [entry(cpu, "a.cpp")], cuda: [entry(cuda, "b.cu")]}
    )
    assert written is not None
    record_generated(tmp_path, [written])  # as build_project does
    update_compile_commands(tmp_path, {cpu: [entry(cpu, "c.cpp")]})
    data = json.loads((tmp_path / "compile_commands.json").read_text())
    assert [item["file"] for item in data] == ["/p/b.cu", "/p/c.cpp"]


@pytest.mark.parametrize("kind", ["users-file", "edited-since", "folder"])
def test_build_never_rewrites_a_users_compile_commands(tmp_path: Path, kind: str) -> None:
    # issue 11 item 7: a compile_commands.json kscaffold did not write (or that was edited since)
    # is never rewritten, so it never lands in the record that clean deletes from.
    scratch = tmp_path / "s" / "cpu"
    scratch.mkdir(parents=True)
    fresh = {scratch: [{"directory": str(scratch), "file": "/p/a.cpp", "command": "c++"}]}
    path = tmp_path / "compile_commands.json"
    if kind == "edited-since":
        written = update_compile_commands(tmp_path, fresh)
        assert written is not None
        record_generated(tmp_path, [written])
    if kind == "folder":
        path.mkdir()
    else:
        path.write_text('[{"directory": "/elsewhere", "file": "/mine.cpp", "command": "cc"}]\n')
    before = path.read_bytes() if kind != "folder" else b""

    assert update_compile_commands(tmp_path, fresh) is None

    assert path.is_dir() if kind == "folder" else path.read_bytes() == before


# --- errors raised before anything compiles ---------------------------------------------------


def fake_torch(monkeypatch: pytest.MonkeyPatch, torch: TorchInstall) -> None:
    monkeypatch.setattr("scaffold.compiler.api.find_torch", lambda cache_dir: torch)


def test_cuda_asked_on_cpu_torch_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_torch(monkeypatch, CPU_TORCH)
    project = write_project(tmp_path, cuda=True)
    expected = "pip install torch==2.13.0 (a CUDA build"
    with pytest.raises(ToolchainError, match=re.escape(expected)):
        build_project(project, backend="cuda")
    with pytest.raises(ToolchainError, match=re.escape(expected)):
        build_project(project, cuda_archs=["9.0"])  # archs imply CUDA: never silently ignored


def test_cuda_asked_without_nvcc_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_torch(monkeypatch, CUDA_TORCH)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-cuda"))
    with pytest.raises(ToolchainError, match="install the CUDA toolkit or set CUDA_HOME"):
        build_project(write_project(tmp_path / "p", cuda=True), backend="cuda")


def test_options_that_cannot_apply_are_refused(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    with pytest.raises(InvalidOptionError, match="declares backends cpu, not cuda"):
        build_project(project, backend="cuda")
    with pytest.raises(InvalidOptionError, match="Cannot build backend 'metal'"):
        build_project(project, backend="metal")
    with pytest.raises(
        InvalidOptionError, match="CUDA archs were given, but this build has no cuda"
    ):
        build_project(project, cuda_archs=["9.0"])
    with pytest.raises(InvalidOptionError, match="--jobs must be at least 1"):
        build_project(project, jobs=0)


def test_missing_source_is_reported_by_path(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    (project / "csrc" / "cpu" / "add_one.cpp").unlink()
    with pytest.raises(BuildConfigError, match=re.escape(str(project / "csrc/cpu/add_one.cpp"))):
        build_project(project)


def test_cuda_toolkit_is_found_from_cuda_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    (home / "include").mkdir()
    (home / "include" / "cuda_runtime.h").write_text("")
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.9, V12.9.41'\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert find_cuda_toolkit() == CudaToolkit(home=home.resolve(), version=(12, 9))


def test_importing_the_build_loads_neither_torch_nor_copier() -> None:
    code = "import sys, scaffold.compiler; print(sorted({'torch', 'copier'} & set(sys.modules)))"
    assert run([sys.executable, "-c", code]).strip() == "[]"


BuildFixture = tuple[Path, list[BuildResult], RecordingReporter, float]

# --- real builds --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_build(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuildFixture]:
    """One cold build of a git project, left dirty so later edits keep its uid (no full rebuild).

    The project declares cuda and cpu: CUDA is built where torch and nvcc allow, else skipped.
    """
    project = write_project(tmp_path_factory.mktemp("cpu") / "add-one", cuda=True)
    init_and_commit(project, "initial")
    (project / "NOTES.md").write_text("work in progress\n")
    reporter = RecordingReporter()
    started = time.monotonic()
    try:
        results = build_project(project, reporter=reporter)
    except CompileError as error:
        pytest.fail(f"{error}\n" + "\n".join(reporter.output))
    elapsed = time.monotonic() - started
    print(f"\ncold CPU build: {elapsed:.1f} s")
    yield project, results, reporter, elapsed


@pytest.mark.slow
def test_cpu_build_loads_in_a_fresh_process(cpu_build: BuildFixture) -> None:
    project, results, reporter, _ = cpu_build
    (result,) = [r for r in results if r.backend == "cpu"]
    assert result.compiled and result.linked, reporter.steps
    assert any(step.startswith("[1/3] CXX ") for step in reporter.steps), reporter.steps
    assert load_and_call(project) == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.slow
def test_cpu_variant_layout_and_metadata(cpu_build: BuildFixture) -> None:
    project, results, _, _ = cpu_build
    (result,) = [r for r in results if r.backend == "cpu"]
    torch = find_torch(project / ".kscaffold")
    assert result.variant == variant_name(torch, "cpu")
    assert result.variant_dir == project / "build" / result.variant
    tree = run_git(project, "rev-parse", "HEAD^{tree}").stdout.strip()
    assert result.ops_name == f"_add_one_cpu_{tree[:7]}_dirty"
    names = sorted(p.name for p in result.variant_dir.iterdir())
    assert names == sorted(
        ["__init__.py", "_ops.py", "metadata.json", f"{result.ops_name}.abi3.so"]
    )
    metadata = json.loads((result.variant_dir / "metadata.json").read_text())
    digest = metadata.pop("digest")
    head = run_git(project, "rev-parse", "HEAD").stdout.strip()
    assert metadata == {
        "name": "add-one",
        "id": result.ops_name,
        "version": 3,
        "license": "apache-2.0",
        "python-depends": [],
        "backend": {"type": "cpu"},
        "kernels-minver": KERNELS_MINVER,
        "provenance": {
            "kernel-builder": {"version": f"kscaffold {__version__}"},
            "kernel": {"commit": head, "dirty": True},
        },
    }
    assert digest["algorithm"] == "sha256"
    assert sorted(digest["files"]) == sorted(n for n in names if n != "metadata.json")
    assert not (project / "torch-ext" / "registration.h").exists()
    assert not (project / "torch-ext" / "add_one" / "_ops.py").exists()
    commands = json.loads((project / "compile_commands.json").read_text())
    assert {Path(c["file"]) for c in commands} >= {project / "csrc/cpu/add_one.cpp"}
    assert all(Path(c["file"]).is_absolute() and Path(c["output"]).is_absolute() for c in commands)
    manifest = load_manifest(project)
    assert "compile_commands.json" in manifest
    assert f"build/{result.variant}/{result.ops_name}.abi3.so" in manifest


@pytest.mark.slow
def test_the_library_shares_torchs_cxx_runtime(cpu_build: BuildFixture) -> None:
    project, results, _, _ = cpu_build
    (result,) = [r for r in results if r.backend == "cpu"]
    dynamic = run(["readelf", "--dynamic", result.variant_dir / f"{result.ops_name}.abi3.so"])
    assert "[libstdc++.so.6]" in dynamic and "[libc10.so]" in dynamic, dynamic


@pytest.mark.slow
def test_a_check_that_formats_numbers_raises_instead_of_crashing(cpu_build: BuildFixture) -> None:
    """With a second copy of the C++ runtime, formatting sizes here crashed the process."""
    project, _, _, _ = cpu_build
    body = (
        "try:\n    kernel.ops.add_one(torch.empty(3), torch.zeros(4))\n"
        "except RuntimeError as error:\n    print('raised:', str(error).splitlines()[0])\n"
    )
    output = run_with_kernel(project, body)
    assert "raised: out must have the shape [4], got [3] (3 elements)" in output, output


@pytest.mark.slow
def test_parallel_for_runs_on_torchs_threads(cpu_build: BuildFixture) -> None:
    """ATen's parallel_for is inline: built without torch's OpenMP flag it ran on one thread."""
    project, _, _, _ = cpu_build
    body = (
        "torch.set_num_threads(2)\nids = torch.full((64,), -1, dtype=torch.int64)\n"
        "kernel.ops.thread_ids(ids)\nprint('threads:', sorted(set(ids.tolist())))\n"
    )
    output = run_with_kernel(project, body)
    assert "threads: [0, 1]" in output, output


@pytest.mark.slow
def test_cuda_is_built_too_or_skipped_with_a_note(cpu_build: BuildFixture) -> None:
    _, results, reporter, _ = cpu_build
    if [r.backend for r in results] == ["cuda", "cpu"]:
        return  # a CUDA torch and nvcc: both variants, each with its own kernels
    assert [r.backend for r in results] == ["cpu"]
    assert any(note.startswith("Skipping the cuda backend: ") for note in reporter.notes)
    if not torch_is_cuda():
        assert any("(a CUDA build" in note for note in reporter.notes), reporter.notes


def rebuild_in_subprocess(project: Path) -> tuple[list[dict[str, object]], float, bool]:
    """Build as the CLI would, in a new process: results, wall time, whether torch was imported."""
    script = (
        "import json, sys\nfrom pathlib import Path\nfrom scaffold.compiler import build_project\n"
        "results = build_project(Path(sys.argv[1]), backend='cpu')\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'results': "
        "[{'compiled': r.compiled, 'linked': r.linked} for r in results]}))\n"
    )
    path = [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, path))}
    started = time.monotonic()
    output = run([sys.executable, "-c", script, project], env=env)
    elapsed = time.monotonic() - started
    data = json.loads(output.strip().splitlines()[-1])
    return data["results"], elapsed, data["torch"]


@pytest.mark.slow
def test_rebuilds_are_incremental(cpu_build: BuildFixture) -> None:
    project, _, _, _ = cpu_build
    results, elapsed, imported_torch = rebuild_in_subprocess(project)
    print(f"\nno-op rebuild (new process): {elapsed:.2f} s")
    assert results == [{"compiled": [], "linked": False}]
    assert elapsed < 10
    assert not imported_torch, "a no-op build must not pay for importing torch"

    source = project / "csrc" / "cpu" / "add_one.cpp"
    header = project / "csrc" / "cpu" / "addend.h"
    originals = {path: path.read_bytes() for path in (source, header)}
    try:
        source.write_text(source.read_text() + "// edited\n")
        started = time.monotonic()
        (result,) = build_project(project, backend="cpu")
        print(f"one-file rebuild: {time.monotonic() - started:.1f} s")
        assert (result.compiled, result.linked) == (("csrc/cpu/add_one.cpp",), True)

        # addend.h is included by add_one.cpp only: the dependency file must say so.
        header.write_text(ADDEND_H.replace("1.0f", "2.0f"))
        (result,) = build_project(project, backend="cpu")
        assert (result.compiled, result.linked) == (("csrc/cpu/add_one.cpp",), True)
        assert load_and_call(project) == [2.0, 3.0, 4.0, 5.0]
    finally:
        # The build is shared by this module's tests: leave it as it was, whatever their order.
        for path, data in originals.items():
            path.write_bytes(data)
        build_project(project, backend="cpu")


@pytest.mark.slow
def test_outside_git_only_the_first_edit_rebuilds_everything(tmp_path: Path) -> None:
    project = write_project(tmp_path / "add-one")
    if run_git(project, "rev-parse", "--is-inside-work-tree", check=False).returncode == 0:
        pytest.skip("the temporary folder is inside a git work tree")
    (cold,) = build_project(project, backend="cpu")
    source = project / "csrc" / "cpu" / "add_one.cpp"

    source.write_text(source.read_text() + "// first edit\n")
    (first,) = build_project(project, backend="cpu")
    source.write_text(source.read_text() + "// second edit\n")
    (second,) = build_project(project, backend="cpu")

    assert first.ops_name == second.ops_name == cold.ops_name + "_dirty"
    assert len(first.compiled) == 2  # the namespace changed: the binding recompiles too
    assert (second.compiled, second.linked) == (("csrc/cpu/add_one.cpp",), True)
    assert load_and_call(project) == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.slow
def test_compile_error_shows_the_compiler_output(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    (project / "torch-ext" / "torch_binding.cpp").write_text("int broken( {\n")
    reporter = RecordingReporter()
    with pytest.raises(CompileError, match="see the compiler output above"):
        build_project(project, backend="cpu", jobs=1, reporter=reporter)
    shown = "\n".join(reporter.output)
    assert f"{project / 'torch-ext' / 'torch_binding.cpp'}:1:" in shown and "error" in shown
    # Without a reporter nothing was shown, so the error carries the output itself.
    with pytest.raises(CompileError, match=r"torch_binding\.cpp:1:\d+: error"):
        build_project(project, backend="cpu", jobs=1)


# --- CUDA: compiles wherever torch is a CUDA build and nvcc exists (no GPU needed) -------------


def cuda_toolkit_or_skip() -> CudaToolkit:
    if not torch_is_cuda():
        pytest.skip("needs a CUDA build of torch (torch.version.cuda is None)")
    try:
        return find_cuda_toolkit()
    except ToolchainError as error:
        pytest.skip(f"needs nvcc: {error}")


def find_cuobjdump() -> str | None:
    """Cuobjdump from PATH, the CUDA toolkit, the nvidia-cuda-cuobjdump wheel or triton."""
    found = shutil.which("cuobjdump")
    candidates = [Path(found)] if found else []
    with contextlib.suppress(ToolchainError):
        candidates.append(find_cuda_toolkit().home / "bin" / "cuobjdump")
    for package, pattern in (
        ("nvidia", "*/bin/cuobjdump"),
        ("triton", "backends/nvidia/bin/cuobjdump"),
    ):
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            candidates += sorted(Path(location).glob(pattern))
    return next((str(path) for path in candidates if path.is_file()), None)


def test_unknown_arch_is_refused_by_the_real_nvcc(tmp_path: Path) -> None:
    toolkit = cuda_toolkit_or_skip()
    assert "90" in nvcc_supported_archs(toolkit.nvcc)
    project = write_project(tmp_path, cuda=True)
    with pytest.raises(InvalidOptionError, match=r"CUDA arch '3\.5' is not supported by this nvcc"):
        build_project(project, backend="cuda", cuda_archs=["9.0", "3.5"])
    assert not (project / "build").exists()


@pytest.mark.slow
def test_cuda_build_has_the_archs_asked_for(tmp_path: Path) -> None:
    cuda_toolkit_or_skip()
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("needs cuobjdump (CUDA toolkit, nvidia-cuda-cuobjdump wheel or triton)")
    project = write_project(tmp_path, cuda=True)
    toml = project / "build.toml"
    toml.write_text(toml.read_text().replace('["9.0"]', '["8.0", "9.0"]'))
    reporter = RecordingReporter()
    try:
        (result,) = build_project(
            project, backend="cuda", cuda_archs=["8.0", "9.0"], reporter=reporter
        )
    except CompileError as error:
        pytest.fail(f"{error}\n" + "\n".join(reporter.output))
    assert re.fullmatch(r"torch\d+-cxx11-cu\d+-x86_64-linux", result.variant)
    assert result.archs == ("8.0", "9.0")
    metadata = json.loads((result.variant_dir / "metadata.json").read_text())
    assert metadata["backend"] == {"type": "cuda", "archs": ["8.0", "9.0"]}
    assert sorted(p.name for p in result.variant_dir.glob("*.so")) == [f"{result.ops_name}.abi3.so"]
    listing = run([cuobjdump, "--list-elf", result.variant_dir / f"{result.ops_name}.abi3.so"])
    assert "sm_80" in listing and "sm_90" in listing, listing
    assert "[kernel.add_one_cpu]" not in " ".join(reporter.steps)
    assert not any("add_one.cpp" in step for step in reporter.steps), reporter.steps


@pytest.mark.gpu
@pytest.mark.slow
def test_cuda_build_runs_on_the_visible_gpu(tmp_path: Path) -> None:
    cuda_toolkit_or_skip()
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU: torch.cuda.is_available() is False")
    project = write_project(tmp_path, cuda=True)
    results = build_project(project)
    major, minor = torch.cuda.get_device_capability()
    (cuda,) = [r for r in results if r.backend == "cuda"]
    assert cuda.archs == (f"{major}.{minor}",)
    assert load_and_call(project, "cuda") == [1.0, 2.0, 3.0, 4.0]
    assert load_and_call(project, "cpu") == [1.0, 2.0, 3.0, 4.0]
