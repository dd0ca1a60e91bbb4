"""Small kernel-builder projects with the shapes real ones have, none written by kscaffold.

``write_legacy_project`` is a ``[torch]`` kernel as many community projects are: a build.toml
without ``edition`` (kernel-builder's legacy format), ``stable-abi`` (one version for every
backend, as edition 4 writes it), stable-ABI registrations (``STABLE_TORCH_LIBRARY*_EXPAND``),
schemas and registrations under ``#if``/``#else``, two CPU tables (one with an ``include`` folder
and ``cxx-flags``), two CUDA tables declared for ``9.0a`` and ``10.0a`` (a ``__device__``
lambda in the first), and a ``pyext`` data file read by the Python package.
``write_noarch_project`` is a pure-Python ``[torch-noarch]`` kernel; ``write_metal_project`` a
Metal-only one. ``write_stray_namespace_project`` is a pure-Python kernel whose op is registered
under a namespace of its own (kernel-builder refuses to build it); ``write_neuron_project`` a
pure-Python kernel for Neuron only, with no flake.nix (kernel-builder's Nix builds no Neuron).

``write_legacy_project(root, edition=5)`` and ``edition=6`` write the same project in the later
editions: 5 adds ``edition = 5``; 6 is written from kernel-builder's edition-6 schema
(kernels-common ``config/v6.rs``: every ``[kernel.*]`` table tagged ``language = "cpp-<backend>"``
instead of ``backend``, each language with its own keys, nothing else changed), with comments
where a user would keep them. ``EDITION_6_TVM_FFI_BUILD_TOML`` is an edition-6 ``[tvm-ffi]``
kernel with a ``rust-cpu`` table (its ``cargo-manifest``, and no C++ ``src``, as v6 allows).
"""

from __future__ import annotations

from pathlib import Path

LEGACY_BUILD_TOML = """\
[general]
name = "compat-ops"
version = 1
license = "apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
pyext = ["py", "json"]
stable-abi = "2.10"

[kernel.scale_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/cpu/scale.cpp"]
include = ["csrc/include"]
cxx-flags = ["-DCOMPAT_FACTOR=2.0f"]

[kernel.shift_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/cpu/shift.cpp", "csrc/include/compat/common.h"]

[kernel.scale_hopper]
backend = "cuda"
depends = ["torch"]
src = ["csrc/cuda/scale_launch.cpp", "csrc/cuda/scale.cu"]
include = ["csrc/include"]
cuda-capabilities = ["9.0a"]

[kernel.scale_blackwell]
backend = "cuda"
depends = ["torch"]
src = ["csrc/cuda/blackwell.cu"]
cuda-capabilities = ["10.0a"]
"""

EDITION_5_BUILD_TOML = LEGACY_BUILD_TOML.replace(
    'backends = ["cpu", "cuda"]\n', 'backends = ["cpu", "cuda"]\nedition = 5\n', 1
)

# The same project as edition 6 writes it. The comments are the user's, kept by a rewrite.
EDITION_6_BUILD_TOML = """\
[general]
name = "compat-ops"
version = 1
license = "apache-2.0"
backends = ["cpu", "cuda"]
edition = 6

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
pyext = ["py", "json"]
stable-abi = "2.10"

[kernel.scale_cpu]
language = "cpp-cpu"
depends = ["torch"]
src = ["csrc/cpu/scale.cpp"]
include = ["csrc/include"]
cxx-flags = ["-DCOMPAT_FACTOR=2.0f"]

[kernel.shift_cpu]
language = "cpp-cpu"
depends = ["torch"]
src = ["csrc/cpu/shift.cpp", "csrc/include/compat/common.h"]

[kernel.scale_hopper]
language = "cpp-cuda"  # Hopper only: wgmma
depends = ["torch"]
src = ["csrc/cuda/scale_launch.cpp", "csrc/cuda/scale.cu"]
include = ["csrc/include"]
cuda-capabilities = ["9.0a"]

[kernel.scale_blackwell]
language = "cpp-cuda"
depends = ["torch"]
src = ["csrc/cuda/blackwell.cu"]
cuda-capabilities = ["10.0a"]
"""

#: An edition-6 Rust kernel: kernel-builder builds it (with cargo, in a [tvm-ffi] kernel).
EDITION_6_TVM_FFI_BUILD_TOML = """\
[general]
name = "rusty"
version = 1
license = "apache-2.0"
backends = ["cpu"]
edition = 6

[tvm-ffi]

[kernel.rusty_cpu]
language = "rust-cpu"
cargo-manifest = "rusty-cpu/Cargo.toml"
depends = []
src = ["rusty-cpu/Cargo.toml", "rusty-cpu/src/lib.rs"]
"""

BUILD_TOML_BY_EDITION = {4: LEGACY_BUILD_TOML, 5: EDITION_5_BUILD_TOML, 6: EDITION_6_BUILD_TOML}

BINDING_H = """\
#pragma once
#include <torch/csrc/stable/tensor.h>

void scale(torch::stable::Tensor& out, const torch::stable::Tensor& input);
void shift(torch::stable::Tensor& out, const torch::stable::Tensor& input);
"""

# The schema of `scale` is declared in both branches; `shift` exists only where CUDA does not.
BINDING_CPP = """\
#include <torch/csrc/stable/library.h>

#include "registration.h"
#include "torch_binding.h"

STABLE_TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
#if defined(CUDA_KERNEL)
  ops.def("scale(Tensor! out, Tensor input) -> ()");
#else
  ops.def("scale(Tensor! out, Tensor input) -> ()");
  ops.def("shift(Tensor! out, Tensor input) -> ()");
#endif
}

#if defined(CPU_KERNEL)
STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) {
  ops.impl("shift", TORCH_BOX(&shift));
}
#endif

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""

COMMON_H = """\
#pragma once
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/util/Exception.h>

inline void check_float_pair(const torch::stable::Tensor& out, const torch::stable::Tensor& in) {
  using torch::headeronly::ScalarType;
  STD_TORCH_CHECK(in.scalar_type() == ScalarType::Float, "input must be float32");
  STD_TORCH_CHECK(out.scalar_type() == ScalarType::Float, "out must be float32");
  STD_TORCH_CHECK(in.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
  STD_TORCH_CHECK(in.numel() == out.numel(), "out must have as many elements as input");
}
"""

SCALE_CPP = """\
#include <torch/csrc/stable/library.h>

#include "compat/common.h"
#include "registration.h"
#include "torch_binding.h"

#ifndef COMPAT_FACTOR
#error "COMPAT_FACTOR comes from the table's cxx-flags"
#endif

void scale(torch::stable::Tensor& out, const torch::stable::Tensor& input) {
  check_float_pair(out, input);
  const float* in = input.const_data_ptr<float>();
  float* result = out.mutable_data_ptr<float>();
  for (int64_t i = 0; i < input.numel(); ++i) result[i] = in[i] * COMPAT_FACTOR;
}

STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) {
  ops.impl("scale", TORCH_BOX(&scale));
}
"""

# Without the include folder of [kernel.scale_cpu] (per table, as in kernel-builder): the path
# is relative to csrc/, which every source sees.
SHIFT_CPP = """\
#include "include/compat/common.h"
#include "torch_binding.h"

void shift(torch::stable::Tensor& out, const torch::stable::Tensor& input) {
  check_float_pair(out, input);
  const float* in = input.const_data_ptr<float>();
  float* result = out.mutable_data_ptr<float>();
  for (int64_t i = 0; i < input.numel(); ++i) result[i] = in[i] + 1.0f;
}
"""

# The CUDA registration lives in a C++ file, so that nvcc compiles only the small kernel file.
SCALE_LAUNCH_CPP = """\
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>

#include "compat/common.h"
#include "registration.h"
#include "torch_binding.h"

void launch_scale(float* out, const float* in, int64_t n, void* stream);

void scale(torch::stable::Tensor& out, const torch::stable::Tensor& input) {
  check_float_pair(out, input);
  void* stream = nullptr;
  aoti_torch_get_current_cuda_stream(input.get_device_index(), &stream);
  launch_scale(out.mutable_data_ptr<float>(), input.const_data_ptr<float>(), input.numel(), stream);
}

STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, ops) {
  ops.impl("scale", TORCH_BOX(&scale));
}
"""

# A __device__ lambda passed to a kernel template: nvcc needs --expt-extended-lambda for it.
SCALE_CU = """\
#include <cstdint>
#include <cuda_runtime.h>

template <typename F>
__global__ void apply(float* out, const float* in, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = f(in[i]);
}

void launch_scale(float* out, const float* in, int64_t n, void* stream) {
  if (n == 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  apply<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      out, in, n, [] __device__(float x) { return x * 2.0f; });
}
"""

BLACKWELL_CU = """\
#include <cstdint>

__global__ void scale_blackwell(float* out, const float* in, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f;
}
"""

INIT_PY = """\
import json
from importlib import resources

import torch

from ._ops import ops

#: Read from a pyext data file that ships next to this module.
FACTORS = json.loads(resources.files(__package__).joinpath("factors.json").read_text())


def scale(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ops.scale(out, x)
    return out


def shift(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ops.shift(out, x)
    return out
"""

NOARCH_BUILD_TOML = """\
[general]
name = "pure-gelu"
version = 2
edition = 5
license = "mit"
backends = ["cpu", "cuda"]

[torch-noarch]
pyext = ["py", "json"]
cuda_capabilities = ["8.0", "9.0"]

[kernel]
"""

NOARCH_INIT_PY = """\
import json
from importlib import resources

import torch

from ._ops import add_op_namespace_prefix

SETTINGS = json.loads(resources.files(__package__).joinpath("settings.json").read_text())


@torch.library.custom_op(add_op_namespace_prefix("tanh_gelu"), mutates_args=())
def tanh_gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate=SETTINGS["approximate"])


@tanh_gelu.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)
"""

METAL_BUILD_TOML = """\
[general]
name = "metal-only"
version = 1
edition = 5
license = "mit"
backends = ["metal"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_metal]
backend = "metal"
depends = ["torch"]
src = ["relu_metal/relu.mm", "relu_metal/relu.metal"]
"""


STRAY_NAMESPACE_BUILD_TOML = """\
[general]
name = "stray-ns"
version = 1
edition = 5
license = "mit"
backends = ["cpu", "cuda"]

[torch-noarch]

[kernel]
"""

# The op is registered as "mine::double_it" instead of add_op_namespace_prefix("double_it").
STRAY_NAMESPACE_OPS_PY = """\
import torch

from ._ops import add_op_namespace_prefix


@torch.library.custom_op("mine::double_it", mutates_args=())
def double_it(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@torch.library.register_fake(add_op_namespace_prefix("halve"))
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def helper():
    @torch.library.custom_op("nested::ok", mutates_args=())  # not module level: not checked
    def inner(x: torch.Tensor) -> torch.Tensor:
        return x

    return inner
"""

NEURON_BUILD_TOML = """\
[general]
name = "neuron-relu"
version = 1
edition = 5
license = "mit"
backends = ["neuron"]

[general.neuron]
python-depends = ["nki"]

[torch-noarch]

[kernel]
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def write_legacy_project(root: Path, edition: int = 4) -> Path:
    return _write(
        root,
        {
            "build.toml": BUILD_TOML_BY_EDITION[edition],
            "torch-ext/torch_binding.h": BINDING_H,
            "torch-ext/torch_binding.cpp": BINDING_CPP,
            "torch-ext/compat_ops/__init__.py": INIT_PY,
            "torch-ext/compat_ops/factors.json": '{"scale": 2.0}\n',
            "csrc/include/compat/common.h": COMMON_H,
            "csrc/cpu/scale.cpp": SCALE_CPP,
            "csrc/cpu/shift.cpp": SHIFT_CPP,
            "csrc/cuda/scale_launch.cpp": SCALE_LAUNCH_CPP,
            "csrc/cuda/scale.cu": SCALE_CU,
            "csrc/cuda/blackwell.cu": BLACKWELL_CU,
        },
    )


def write_noarch_project(root: Path) -> Path:
    return _write(
        root,
        {
            "build.toml": NOARCH_BUILD_TOML,
            "torch-ext/pure_gelu/__init__.py": NOARCH_INIT_PY,
            "torch-ext/pure_gelu/settings.json": '{"approximate": "tanh"}\n',
        },
    )


def write_metal_project(root: Path) -> Path:
    return _write(
        root,
        {
            "build.toml": METAL_BUILD_TOML,
            "torch-ext/torch_binding.cpp": "// registers the op for MPS\n",
            "torch-ext/metal_only/__init__.py": "",
            "relu_metal/relu.mm": "// Objective-C++ host code\n",
            "relu_metal/relu.metal": "// Metal shader\n",
        },
    )


def write_stray_namespace_project(root: Path) -> Path:
    return _write(
        root,
        {
            "build.toml": STRAY_NAMESPACE_BUILD_TOML,
            "torch-ext/stray_ns/__init__.py": "from .ops import double_it\n",
            "torch-ext/stray_ns/ops.py": STRAY_NAMESPACE_OPS_PY,
        },
    )


def write_neuron_project(root: Path) -> Path:
    return _write(
        root,
        {
            "build.toml": NEURON_BUILD_TOML,
            "torch-ext/neuron_relu/__init__.py": "from ._ops import ops\n\nrelu = None\n",
        },
    )
