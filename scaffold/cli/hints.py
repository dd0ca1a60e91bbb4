"""What to type next: commands printed for the user's shell, runnable exactly as printed."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from scaffold.compiler.pipcuda import gpu_present, pip_requirements
from scaffold.compiler.toolchain import find_cuda_toolkit, torch_cuda_version
from scaffold.errors import ToolchainError
from scaffold.testing.project_tests import REQUIREMENTS_FILE


def _on_path_here(command: str, folder: Path) -> bool:
    """Whether ``command`` typed in this shell runs the one in ``folder``."""
    found = shutil.which(command)
    return found is not None and os.path.samefile(Path(found).parent, folder)


def tool_commands() -> tuple[str, str]:
    """How to call this Python and kscaffold from the user's shell: short names when they work.

    In an activated virtual environment that is ``python`` and ``kscaffold``; when kscaffold runs
    from a venv that is not on ``PATH`` (``.venv/bin/kscaffold new ...``), their full paths.
    """
    folder = Path(sys.executable).parent
    python = "python" if _on_path_here("python", folder) else shlex.quote(sys.executable)
    if _on_path_here("kscaffold", folder):
        kscaffold = "kscaffold"
    elif (folder / "kscaffold").is_file():
        kscaffold = shlex.quote(str(folder / "kscaffold"))
    else:  # run from a source checkout, `python -m scaffold`
        kscaffold = f"{python} -m scaffold"
    return python, kscaffold


def cuda_from_pip() -> tuple[str, ...]:
    """NVIDIA's pip packages matching torch's CUDA, on a GPU machine without a CUDA toolkit.

    They make CUDA buildable there (with torch's CUDA wheels); on any other machine: nothing.
    """
    cuda = torch_cuda_version()
    if cuda is None or not gpu_present():
        return ()
    try:
        find_cuda_toolkit()
    except ToolchainError:
        return pip_requirements(cuda)
    return ()


def next_steps(project: Path, *, cuda: bool = False) -> str:
    """The commands that take a new project to its first green tests, joined with ``&&``.

    For a project with CUDA kernels (``cuda``) on a GPU machine without a CUDA toolkit, the
    install step also installs NVIDIA's compiler packages, so that the CUDA tests run too.
    """
    project = project.resolve()
    try:
        folder = str(project.relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        folder = str(project)
    python, kscaffold = tool_commands()
    toolkit = "".join(f" {requirement}" for requirement in cuda_from_pip()) if cuda else ""
    return (
        f"cd {shlex.quote(folder)} && {python} -m pip install -r {REQUIREMENTS_FILE}{toolkit} && "
        f"{kscaffold} test"
    )
