"""How a build tells its caller what it is doing; the CLI renders it, the library only reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scaffold.compiler.api import BuildResult


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
