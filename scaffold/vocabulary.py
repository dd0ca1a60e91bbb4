"""The words a kernel project is made of, defined once: backends, file suffixes, folder names.

Every other module imports these instead of spelling its own list, so that ``check`` never asks
for a file that ``build`` refuses, and a new backend or suffix is added in one place.
"""

from __future__ import annotations

from collections.abc import Mapping

# --------------------------------------------------------------------------------------------
# Backends

#: Backends kscaffold can generate, build and test, in their canonical order.
SUPPORTED_BACKENDS: tuple[str, ...] = ("cuda", "cpu")

#: What ``kscaffold new`` generates unless told otherwise: both, so the same project builds and
#: tests green on a laptop (CPU) and on a GPU box (CUDA too).
DEFAULT_BACKENDS: tuple[str, ...] = SUPPORTED_BACKENDS

#: Every backend kernel-builder's edition 5 accepts in ``general.backends`` and ``[kernel.*]``.
KNOWN_BACKENDS: tuple[str, ...] = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")

#: The backends kernel-builder's Nix release build has build sets for (nix-builder/lib); a project
#: that declares none of them (a neuron-only kernel) has nothing for ``nix build`` to build.
NIX_BUILT_BACKENDS: tuple[str, ...] = ("cpu", "cuda", "metal", "rocm", "tpu", "xpu")

#: Backends whose ``build/torch-<backend>/`` (the pure-Python variant kernel-builder names) the
#: ``kernels`` loader never picks, and why: kernels 0.17.2 looks for ``torch-npu`` on CANN.
UNLOADABLE_NOARCH_BACKENDS: Mapping[str, str] = {
    "cann": "kernels 0.17.2 loads a pure-Python kernel on CANN from build/torch-npu/, never from "
    "build/torch-cann/, the folder kernel-builder names for it",
}

#: The dispatch key each backend registers its kernels under (``TORCH_LIBRARY_IMPL``).
BACKEND_DISPATCH_KEYS: Mapping[str, str] = {
    "cpu": "CPU",
    "cuda": "CUDA",
    "rocm": "CUDA",  # HIP builds of PyTorch reuse the CUDA dispatch key.
    "metal": "MPS",
    "xpu": "XPU",
}

#: The suffix of the source file that holds a supported backend's implementation of an op.
BACKEND_SOURCE_SUFFIXES: Mapping[str, str] = {"cpu": ".cpp", "cuda": ".cu"}

# --------------------------------------------------------------------------------------------
# Ops

#: The ops the template declares besides each op ``<op>``: ``<op><suffix>``, with what each is.
OP_VARIANT_SUFFIXES: Mapping[str, str] = {
    "_out": "the out= variant",
    "_no_grad": "the variant without autograd",
}

# --------------------------------------------------------------------------------------------
# File suffixes

#: C++ sources, compiled by the host compiler.
CXX_SUFFIXES: frozenset[str] = frozenset({".cpp", ".cc", ".cxx"})
#: CUDA sources, compiled by nvcc.
CUDA_SUFFIXES: frozenset[str] = frozenset({".cu"})
#: Every suffix kernel-builder compiles from a ``src`` list, on any backend.
BUILDABLE_SUFFIXES: frozenset[str] = (
    CXX_SUFFIXES | CUDA_SUFFIXES | frozenset({".c", ".hip", ".mm", ".metal", ".sycl"})
)
#: Headers: listed in a ``src`` so that Nix copies them (``check`` demands it), never compiled
#: on their own (``build`` skips them).
HEADER_SUFFIXES: frozenset[str] = frozenset(
    {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl", ".ipp", ".tcc"}
)
#: Every file the op scanner reads for schemas and registrations.
SCANNED_SUFFIXES: frozenset[str] = (
    HEADER_SUFFIXES | CXX_SUFFIXES | CUDA_SUFFIXES | frozenset({".c", ".mm", ".m"})
)

# --------------------------------------------------------------------------------------------
# Files and folders of a project

#: The kernel-builder configuration at the project's root.
BUILD_TOML = "build.toml"
#: The answers kscaffold rendered the project with.
ANSWERS_FILE = ".copier-answers.yml"
#: Kernel sources: ``csrc/<op>.h`` shared by every backend, ``csrc/<backend>/`` per backend.
CSRC_DIR = "csrc"
#: The op schemas (``torch_binding.*``) and the Python package ``torch-ext/<python_name>/``.
TORCH_EXT_DIR = "torch-ext"
#: The folders that hold a project's C++ sources.
SOURCE_DIRS: tuple[str, ...] = (TORCH_EXT_DIR, CSRC_DIR)
#: The generated tests and benchmarks.
TESTS_DIR = "tests"
BENCHMARKS_DIR = "benchmarks"
#: The release payload, ``build/<variant>/``.
BUILD_DIR = "build"
#: kscaffold's scratch space (incremental builds, state).
SCRATCH_DIR = ".kscaffold"
#: The compilation database ``build`` writes at the project's root, for IDEs and clangd.
COMPDB_NAME = "compile_commands.json"
#: The file that declares every op's schema, once for all backends.
BINDING_HEADER = f"{TORCH_EXT_DIR}/torch_binding.h"

# --------------------------------------------------------------------------------------------
# Ops

#: The op a project starts with when no example is chosen.
DEFAULT_OP = "relu"
#: What ``kscaffold add-op --like`` can start an op from: a working op of the template.
LIKE_KINDS: tuple[str, ...] = ("relu", "img2gray", "rms_norm")
#: The kind of an op added without ``--like``: it compiles, registers, and raises until written.
SKELETON_KIND = "skeleton"
#: The kind of an op generated from the schema the user gave (``add-op --schema``).
SCHEMA_KIND = "schema"
#: Every kind of op the template renders (``template/fragments/<kind>/``).
OP_KINDS: tuple[str, ...] = (*LIKE_KINDS, SKELETON_KIND, SCHEMA_KIND)

# --------------------------------------------------------------------------------------------
# Languages

#: What a project's ops are written in: C++/CUDA compiled into a library (``[torch]``), or
#: Triton and plain PyTorch in the Python package (``[torch-noarch]``).
CPP_LANGUAGE = "cpp"
TRITON_LANGUAGE = "triton"
LANGUAGES: tuple[str, ...] = (CPP_LANGUAGE, TRITON_LANGUAGE)
#: The template ops written in Triton too (the others exist in C++ and CUDA only).
TRITON_KINDS: tuple[str, ...] = ("relu", "img2gray", SKELETON_KIND)
#: The template ops written against torch's stable ABI too (``--stable-abi``).
STABLE_ABI_KINDS: tuple[str, ...] = ("relu", "img2gray", SKELETON_KIND)
