"""Kernel projects for the clean and check tests: generated once, copied per test."""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from scaffold.grow.create import create_project
from scaffold.outputs.manifest import record_generated
from scaffold.outputs.provenance import KERNELS_MINVER, provenance, variant_digest
from scaffold.project.spec import ProjectSpec
from tests.helpers import run

#: The variant name a CPU build with this machine's torch would get (only its shape matters here).
SIMULATED_VARIANT = "torch213-cxx11-cpu-x86_64-linux"

_GIT_IDENTITY = ("-c", "user.name=kscaffold tests", "-c", "user.email=tests@localhost")


def new_project(
    destination: Path,
    *,
    name: str = "my-kernel",
    backends: Sequence[str] = ("cpu", "cuda"),
    example: str | None = None,
    git: bool = True,
) -> Path:
    """``kscaffold new`` through the library, committed to git unless ``git`` is False."""
    spec = ProjectSpec.parse(name, backends=list(backends), example=example)
    return create_project(spec, destination, git=git)


def copy_project(source: Path, destination: Path) -> Path:
    """A copy of a project, its git repository and links included."""
    shutil.copytree(source, destination, symlinks=True)
    return destination


def git(project: Path, *args: str) -> str:
    return run(["git", *_GIT_IDENTITY, *args], cwd=project)


def commit_all(project: Path, *paths: str, message: str = "user files") -> None:
    """Track ``paths`` (even git-ignored ones) and commit them."""
    git(project, "add", "--force", "--", *paths)
    git(project, "commit", "--quiet", "--no-verify", "-m", message)


@functools.cache
def tiny_library() -> bytes:
    """A real (empty) shared library, so that ABI checks read it as one; compiled once."""
    folder = Path(tempfile.mkdtemp(prefix="kscaffold-tiny-so-"))
    (folder / "tiny.c").write_text("int kscaffold_tiny(void) { return 0; }\n")
    run(["cc", "-shared", "-fPIC", "-o", folder / "tiny.so", folder / "tiny.c"])
    data = (folder / "tiny.so").read_bytes()
    shutil.rmtree(folder)
    return data


def simulate_build(project: Path, python_name: str = "my_kernel") -> list[str]:
    """Write what ``kscaffold build`` writes for one CPU variant, recorded in its manifest.

    The fast tests use this instead of compiling; the slow tests run the real build.
    """
    ops = f"_{python_name}_cpu_abc1234"
    variant = project / "build" / SIMULATED_VARIANT
    scratch = project / ".kscaffold" / "build" / SIMULATED_VARIANT
    files = {
        variant / "__init__.py": (project / "torch-ext" / python_name / "__init__.py").read_bytes(),
        variant / "_ops.py": f"import torch\nops = torch.ops.{ops}\n".encode(),
        variant / f"{ops}.abi3.so": tiny_library(),
        project / "compile_commands.json": b'[{"file": "csrc/cpu/relu.cpp", "simulated": 1}]\n',
        scratch / "build.ninja": b"rule cxx\n",
        scratch / "obj" / "csrc" / "cpu" / "relu.cpp.o": b"\0object",
        project / ".kscaffold" / ".gitignore": b"*\n",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    # The metadata a real build writes, so that the release gate reads it as a clean build.
    metadata = {
        "name": python_name.replace("_", "-"),
        "id": ops,
        "version": 1,
        "license": "apache-2.0",
        "python-depends": [],
        "backend": {"type": "cpu"},
        "kernels-minver": KERNELS_MINVER,
        "provenance": provenance(project, ops),
        "digest": variant_digest(variant),
    }
    (variant / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
    files[variant / "metadata.json"] = b""
    generated = [path for path in files if ".kscaffold" not in path.parts]
    record_generated(project, generated)
    return sorted(path.relative_to(project).as_posix() for path in generated)
