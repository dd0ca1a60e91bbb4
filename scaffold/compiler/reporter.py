"""How a build tells its caller what it is doing and what it made; the CLI renders it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuildResult:
    """One variant written to ``build/``."""

    backend: str
    variant: str
    variant_dir: Path
    ops_name: str
    #: CUDA archs compiled into the library, e.g. ``("8.0", "9.0+PTX")``; empty for CPU.
    archs: tuple[str, ...]
    #: Sources compiled by this build (project-relative); empty when all were up to date.
    compiled: tuple[str, ...]
    linked: bool
    #: False for a pure-Python ([torch-noarch]) variant, which has nothing to compile.
    native: bool = True

    @property
    def recompiled(self) -> bool:
        return bool(self.compiled) or self.linked


class BuildReporter:
    """Receives a build's progress. Every method does nothing here: override what you show.

    Set :attr:`shows_output` to True in a reporter that displays :meth:`compiler_output`; a
    failed build's :class:`~scaffold.errors.CompileError` then refers to that output instead of
    repeating it.
    """

    shows_output: bool = False

    def note(self, message: str) -> None:
        """Something worth telling the user, e.g. a backend skipped and why."""

    def backend_skipped(self, backend: str, reason: str) -> None:
        """A declared backend is not built, e.g. for want of nvcc; shown as a note by default."""
        self.note(f"Skipping the {backend} backend: {reason}")

    def variant_started(self, backend: str, variant: str) -> None:
        """Compiling ``variant`` starts (ninja is about to run)."""

    def step(self, variant: str, done: int, total: int, description: str) -> None:
        """Step ``done`` of ``total`` finished (``CXX csrc/cpu/relu.cpp``, ``LINK ...``)."""

    def compiler_output(self, variant: str, line: str) -> None:
        """One line the compiler, linker or ninja printed (warnings, errors, FAILED: ...)."""

    def variant_finished(self, result: BuildResult) -> None:
        """``result.variant_dir`` holds the finished variant."""
