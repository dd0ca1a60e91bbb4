"""How the CLI shows a build: a live status line while ninja runs, the compiler's own output."""

from __future__ import annotations

from rich.console import Console
from rich.status import Status
from rich.text import Text

from scaffold.cli.streams import symbol
from scaffold.compiler import BuildReporter, BuildResult


class ConsoleBuildReporter(BuildReporter):
    """Renders build progress on a rich console; compiler output is printed as it comes."""

    shows_output = True

    def __init__(self, console: Console, error_console: Console) -> None:
        self._console = console
        self._errors = error_console
        self._status: Status | None = None

    def note(self, message: str) -> None:
        self._console.print(
            Text.assemble(("Note:", "yellow"), " ", message), soft_wrap=True, markup=False
        )

    def variant_started(self, backend: str, variant: str) -> None:
        self._stop()
        self._console.print(
            Text.assemble(
                "Building ",
                (backend, "bold"),
                f" {symbol(self._console, '→', '->')} build/{variant}/",
            ),
            markup=False,
        )
        self._status = self._console.status(Text(f"{variant}: starting ninja"))
        self._status.start()

    def step(self, variant: str, done: int, total: int, description: str) -> None:
        if self._status is not None:
            self._status.update(Text(f"[{done}/{total}] {description}"))
        if self._console.is_terminal is False:
            self._console.print(
                f"  [{done}/{total}] {description}", soft_wrap=True, markup=False, highlight=False
            )

    def compiler_output(self, variant: str, line: str) -> None:
        # The compiler's own file:line messages, unwrapped and unstyled so editors can jump to them.
        self._errors.print(line, markup=False, highlight=False, soft_wrap=True)

    def variant_finished(self, result: BuildResult) -> None:
        self._stop()
        what = f"compiled {len(result.compiled)} file(s)" if result.recompiled else "up to date"
        if not result.native:
            what = "pure Python, nothing to compile"
        archs = f", CUDA archs {' '.join(result.archs)}" if result.archs else ""
        self._console.print(
            Text.assemble(
                "  ",
                (symbol(self._console, "✓", "ok"), "green"),
                f" {result.variant} ({what}{archs}): op namespace ",
                result.ops_name,
            ),
            soft_wrap=True,
            markup=False,
        )

    def close(self) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
