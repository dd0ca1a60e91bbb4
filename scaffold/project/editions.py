"""What separates the ``build.toml`` editions, and the one reading of a kernel table's backend.

Edition 6 (kernel-builder's builder after kernels 0.17.2) keeps every table and key of edition 5
but one: a ``[kernel.*]`` table names its backend through ``language = "<language>-<backend>"``
(``cpp-cuda``, ``cpp-cpu``, ``cpp-metal``, ``cpp-rocm``, ``cpp-xpu``, and ``rust-cpu``, a Rust
crate named by ``cargo-manifest`` that kernel-builder builds only in a ``[tvm-ffi]`` kernel)
instead of ``backend = "<backend>"``. Editions 4 and 5 use ``backend``. Every module that reads
kernel tables as plain TOML asks :func:`kernel_table_backend`, so no rule reads one key only.
"""

from __future__ import annotations

from collections.abc import Mapping

#: The edition that tags kernel tables with ``language``.
LANGUAGE_EDITION = 6

#: Edition 6's kernel languages and the backend each one builds for.
LANGUAGES: Mapping[str, str] = {
    "cpp-cpu": "cpu",
    "cpp-cuda": "cuda",
    "cpp-metal": "metal",
    "cpp-rocm": "rocm",
    "cpp-xpu": "xpu",
    "rust-cpu": "cpu",
}
#: The languages kscaffold compiles (C++ and CUDA through its own build); the rest need
#: kernel-builder.
COMPILED_LANGUAGES: frozenset[str] = frozenset(
    language for language in LANGUAGES if language.startswith("cpp-")
)

#: Keys every edition-6 kernel table of a language may carry besides ``language``, as
#: kernel-builder's ``Kernel`` enum (kernels-common config v6) declares them: anything else is
#: refused, as serde's ``deny_unknown_fields`` refuses it.
_COMMON_CPP_KEYS = frozenset({"cxx-flags", "depends", "include", "src"})
LANGUAGE_KEYS: Mapping[str, frozenset[str]] = {
    "cpp-cpu": _COMMON_CPP_KEYS,
    "cpp-cuda": _COMMON_CPP_KEYS | {"cuda-capabilities", "cuda-flags", "cuda-minver"},
    "cpp-metal": _COMMON_CPP_KEYS,
    "cpp-rocm": _COMMON_CPP_KEYS | {"rocm-archs", "hip-flags"},
    "cpp-xpu": _COMMON_CPP_KEYS | {"sycl-flags"},
    "rust-cpu": frozenset({"cargo-manifest", "depends", "src"}),
}
#: The keys a table of each language must have.
LANGUAGE_REQUIRED: Mapping[str, tuple[str, ...]] = {
    language: ("cargo-manifest", "depends", "src") if language == "rust-cpu" else ("depends", "src")
    for language in LANGUAGES
}


def language_of(backend: str) -> str | None:
    """The edition-6 language of a C++ kernel for ``backend`` (None where 6 has none)."""
    language = f"cpp-{backend}"
    return language if language in LANGUAGES else None


def kernel_table_backend(table: Mapping[str, object]) -> str | None:
    """The backend of a ``[kernel.*]`` table of any edition, read as plain TOML data.

    ``backend`` in editions 4 and 5, the backend half of ``language`` in 6; None when the
    table has neither as a string (the schema check reports it).
    """
    language = table.get("language")
    if isinstance(language, str):
        return LANGUAGES.get(language, language.rpartition("-")[2] or None)
    backend = table.get("backend")
    return backend if isinstance(backend, str) else None


def backend_key_text(table: Mapping[str, object], backend: str) -> str:
    """How ``table`` spells its backend in ``build.toml``, for messages."""
    if "language" in table:
        return f'language = "{table["language"]}"'
    return f'backend = "{backend}"'
