"""Derive the C/C++ names an op name must not take from the headers the template includes.

An op name becomes a C++ namespace at global scope (``namespace <op> { ... }``) in every
translation unit of the op. It breaks the build when the headers already give the name a meaning
at global scope: a macro (``assert``, ``stdin``), a function or variable (``tanh``, ``free``,
``index``), a type. The compiler is the judge: :func:`derive_reserved_names` preprocesses the
template's includes for the macros and the namespaces they open, then compiles one probe file with
``namespace <candidate> {}`` for each lowercase identifier of the preprocessed headers, and keeps
the candidates the compiler refuses. ``scaffold/project/cxx_reserved.py`` holds the result;
``tests/test_op_names.py`` regenerates it and compares.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffold.project.names import CXX_KEYWORDS

TEMPLATE = Path(__file__).resolve().parents[1] / "template"
_INCLUDE = re.compile(r"^\s*#include\s+<([^>]+)>", re.MULTILINE)
_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9_]*\b")
#: Words that only mean something in some positions; a probe with them confuses the parser.
_CONTEXTUAL = frozenset({"final", "override", "import", "module"})


def template_includes() -> list[str]:
    """Every ``<header>`` a C++ or CUDA file of the template includes, CUDA-only ones left out."""
    headers: set[str] = set()
    for path in (TEMPLATE / "fragments").rglob("*.jinja"):
        headers.update(_INCLUDE.findall(path.read_text(encoding="utf-8")))
    # The CUDA headers (CUB's too) need the CUDA math libraries' headers; what they add at global
    # scope is CUDA's runtime, which nvcc includes in every .cu file and the probe does not see.
    return sorted(
        h
        for h in headers
        if "cuda" not in h.lower() and not h.endswith(".cuh") and not h.startswith("cub/")
    )


def _include_flags() -> list[str]:
    from torch.utils.cpp_extension import include_paths

    return ["-std=c++20", "-w", *(f"-I{path}" for path in include_paths())]


@dataclass(frozen=True)
class _Compiler:
    """One compiler of the generated code: how to preprocess and probe with it."""

    command: tuple[str, ...]
    suffix: str
    #: The line number of an error, as the compiler reports it for the probe file.
    error_line: re.Pattern[str]
    dump_macros: tuple[str, ...]


def _compilers() -> list[_Compiler]:
    cxx = shutil.which("g++") or shutil.which("c++")
    nvcc = shutil.which("nvcc")
    if cxx is None or nvcc is None:
        raise RuntimeError("needs nvcc and a C++ compiler")
    flags = _include_flags()
    return [
        _Compiler(
            (cxx, *flags, "-fmax-errors=0"),
            ".cpp",
            re.compile(r"^probe\.cpp:(\d+):\d+: error", re.MULTILINE),
            ("-dM",),
        ),
        # nvcc includes CUDA's runtime (and its math functions) in every .cu file.
        _Compiler(
            (nvcc, *flags, "-Xcudafe", "--error_limit=1000000"),
            ".cu",
            re.compile(r"^probe\.cu\((\d+)\): error", re.MULTILINE),
            ("-Xcompiler", "-dM"),
        ),
    ]


def derive_reserved_names() -> list[str]:
    """The lowercase names the template's headers define at global scope, sorted."""
    header = "".join(f"#include <{name}>\n" for name in template_includes())
    found: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="kscaffold-cxx-names-") as scratch:
        for compiler in _compilers():
            found |= _derive(compiler, Path(scratch), header)
    return sorted(found)


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)


def _derive(compiler: _Compiler, scratch: Path, header: str) -> set[str]:
    source = scratch / f"headers{compiler.suffix}"
    source.write_text(header, encoding="utf-8")
    out = scratch / "out.txt"
    _run([*compiler.command, "-E", *compiler.dump_macros, source.name, "-o", out.name], scratch)
    macros = set(re.findall(r"^#define ([a-z][a-z0-9_]*)\b", out.read_text(), re.MULTILINE))
    _run([*compiler.command, "-E", source.name, "-o", out.name], scratch)
    expanded = out.read_text()
    opened = sorted(set(re.findall(r"\bnamespace ([a-z][a-z0-9_]*)", expanded)) - macros)
    # Only namespaces at global scope collide; `using namespace ::x;` compiles only for those.
    namespaces = set(opened) - _refused(compiler, scratch, header, opened, "using namespace ::{};")
    candidates = sorted(
        set(_IDENTIFIER.findall(expanded)) - CXX_KEYWORDS - macros - set(opened) - _CONTEXTUAL
    )
    refused = _refused(compiler, scratch, header, candidates, "namespace {} {{}}")
    return macros | namespaces | refused


def _refused(
    compiler: _Compiler, scratch: Path, header: str, names: list[str], line: str
) -> set[str]:
    """The ``names`` for which the compiler refuses ``line`` after the headers, one line each."""
    probe = scratch / f"probe{compiler.suffix}"
    probe.write_text(header + "".join(line.format(name) + "\n" for name in names), "utf-8")
    result = _run([*compiler.command, "-c", probe.name, "-o", "probe.o"], scratch)
    first = header.count("\n")
    return {
        names[int(number) - first - 1]
        for number in compiler.error_line.findall(result.stderr)
        if first < int(number) <= first + len(names)
    }


def render_module(names: list[str]) -> str:
    """The text of ``scaffold/project/cxx_reserved.py`` for ``names``."""
    body = _wrapped(names)
    return (
        '"""Names the C/C++ headers of the generated code define at global scope (generated).\n\n'
        "Macros, namespaces, functions, variables and types that the headers the template's C++\n"
        "files include declare outside any namespace, as the compiler reports them: an op's\n"
        "``namespace <op>`` would collide with each. Regenerated and compared by\n"
        "tests/test_op_names.py (tests/cxx_names.py derives it); do not edit by hand.\n"
        '"""\n\n'
        "CXX_RESERVED = frozenset(\n"
        '    """\n'
        f"{body}\n"
        '""".split()  # noqa: SIM905\n'
        ")\n"
    )


#: The package of the renderings that :func:`derive_generated_names` reads.
_PACKAGE = "my_kernel"
#: Stand-ins for op names in the rendering that :func:`derive_generated_names` reads.
_SENTINELS = ("zqxop", "zqyop", "zqzop", "zqwop", "zqvop", "zquop")


def _camel(op: str) -> str:
    return "".join(part.capitalize() for part in op.split("_"))


def _sentinel_renderings() -> list[dict[str, bytes]]:
    """A project of each flavour (C++, stable ABI, Triton) with every kind of op it renders.

    Each has the first op and one more op of each kind the template renders in that flavour.
    """
    from scaffold.grow.template import render_files
    from scaffold.project.spec import ProjectSpec
    from scaffold.vocabulary import (
        OP_KINDS,
        SCHEMA_KIND,
        STABLE_ABI_KINDS,
        TRITON_KINDS,
        TRITON_LANGUAGE,
    )

    flavours: list[tuple[dict[str, Any], tuple[str, ...], str]] = [
        ({}, OP_KINDS, "(Tensor x, Tensor[] xs, float eps=1e-6) -> Tensor"),
        ({"stable_abi": "2.10"}, STABLE_ABI_KINDS, "(Tensor x, float eps=1e-6) -> Tensor"),
        ({"language": TRITON_LANGUAGE}, TRITON_KINDS, "(Tensor x, Tensor[] xs) -> Tensor"),
    ]
    renderings = []
    for options, kinds, schema in flavours:
        kernel = _PACKAGE.replace("_", "-")
        answers = ProjectSpec.parse(kernel, backends=["cpu", "cuda"], **options).answers()
        extra = [
            {"name": _SENTINELS[i], "kind": kind}
            | ({"schema": schema} if kind == SCHEMA_KIND else {})
            for i, kind in enumerate([*dict.fromkeys([*kinds, SCHEMA_KIND])])
        ]
        answers["ops"] = [*answers["ops"], *extra]
        renderings.append(render_files(answers))
    return renderings


@dataclass(frozen=True)
class GeneratedNames:
    """What a rendering names besides its ops, as ``scaffold/project/generated_names.py`` records.

    ``patterns``: what the template generates for each op (``{op}``, ``{OP}``, ``{Op}`` standing
    for its forms). ``modules``: every top-level name of the generated Python files that is no
    op's. ``headers``: the headers the generated C++ includes by a quoted name that is no op's,
    without ``.h`` (an op's own header, ``csrc/<op>.h``, would be found in their place).
    """

    patterns: list[str]
    modules: list[str]
    headers: list[str]


def derive_generated_names() -> GeneratedNames:
    """The names a rendering of every kind of op gives, besides the ops' own."""
    from scaffold.project.names import defined_names
    from scaffold.project.spec import default_ops

    first = default_ops(None)[0]["name"]
    ops = [first, *_SENTINELS]
    patterns: set[str] = set()
    modules: set[str] = set()
    headers: set[str] = set()
    files = [item for rendering in _sentinel_renderings() for item in rendering.items()]
    for path, data in files:
        text = data.decode("utf-8")
        for op in _SENTINELS:
            forms = (op, op.upper(), _camel(op))
            for word in re.findall(r"\w*(?:" + "|".join(forms) + r")\w*", text):
                patterns.add(
                    word.replace(op, "{op}").replace(op.upper(), "{OP}").replace(_camel(op), "{Op}")
                )
            if op in path:  # the package's folder under torch-ext/ is any project's
                patterns.add(path.replace(op, "{op}").replace(f"/{_PACKAGE}/", "/{package}/"))
        if path.endswith(".py"):
            modules |= defined_names(text)
        headers |= set(re.findall(r'#include "(\w+)\.h"', text))
    own = {
        name.replace("{op}", op).replace("{OP}", op.upper()).replace("{Op}", _camel(op))
        for op in ops
        for name in patterns
    }
    return GeneratedNames(sorted(patterns), sorted(modules - own), sorted(headers - set(ops)))


def render_generated_module(names: GeneratedNames) -> str:
    """The text of ``scaffold/project/generated_names.py``."""
    return (
        '"""What the generated code names, besides the op itself (generated).\n\n'
        "``GENERATED_IDENTIFIERS``: what the template generates for each op, ``{op}``, ``{OP}``\n"
        "and ``{Op}`` standing for the op's name, in upper case and in CamelCase; two ops must\n"
        "not share one. ``GENERATED_MODULE_NAMES``: the top-level names of the generated Python\n"
        "files (package, tests, benchmarks) that are no op's. ``GENERATED_HEADERS``: the headers\n"
        "the generated C++ includes by a quoted name that is no op's, without ``.h`` (an op's own\n"
        "``csrc/<op>.h`` would be found in their place). Regenerated and compared by\n"
        "tests/test_op_names.py (tests/cxx_names.py derives them); do not edit by hand.\n"
        '"""\n\n'
        "GENERATED_IDENTIFIERS: tuple[str, ...] = (\n"
        + "".join(f'    "{pattern}",\n' for pattern in names.patterns)
        + ")\n\nGENERATED_MODULE_NAMES = frozenset(\n"
        '    """\n' + _wrapped(names.modules) + '\n""".split()  # noqa: SIM905\n'
        ")\n\nGENERATED_HEADERS = frozenset({"
        + ", ".join(f'"{header}"' for header in names.headers)
        + "})\n"
    )


def _wrapped(names: list[str]) -> str:
    lines: list[str] = []
    line = ""
    for name in names:
        if len(line) + len(name) + 1 > 95:
            lines.append(line)
            line = ""
        line = f"{line} {name}" if line else name
    return "\n".join([*lines, line] if line else lines)
