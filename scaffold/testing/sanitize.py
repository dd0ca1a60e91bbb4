"""``kscaffold sanitize``: the project's CUDA tests under each compute-sanitizer tool in turn.

The tests are those ``kscaffold test`` runs (built first, through
:func:`~scaffold.testing.project_tests.prepare_project_tests`), restricted to the CUDA cases
(``-k cuda`` unless the pytest arguments choose their own). PyTorch's caching allocator is
switched off so that memcheck sees every tensor's own bounds, and no kernel filter is given, so
every kernel is checked, PyTorch's too: initcheck knows memory as written only when the kernel
that wrote it was checked.
Each tool's summary line and pytest's counts make one :class:`ToolRun`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from scaffold.compiler import BuildReporter
from scaffold.compiler.toolchain import find_cuda_tool
from scaffold.errors import InvalidOptionError, ToolchainError

#: compute-sanitizer's tools, in the order they run.
SANITIZER_TOOLS: tuple[str, ...] = ("memcheck", "racecheck", "initcheck", "synccheck")
#: Turns PyTorch's caching allocator off: each tensor is its own allocation, bounds and all.
NO_CACHING = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
#: Names the running tool to the tests, which shrink or skip work too large to instrument.
SANITIZER_VARIABLE = "KSCAFFOLD_SANITIZER"

_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+) errors?")
_RACE_SUMMARY = re.compile(
    r"RACECHECK SUMMARY:\s*(\d+) hazards?(?: displayed)?(?: \((\d+) errors?)?"
)
_PYTEST_COUNT = re.compile(
    r"(\d+) (passed|failed|skipped|deselected|xfailed|xpassed|errors?|warnings?)\b"
)


@dataclass(frozen=True)
class ToolRun:
    """One tool's pass over the tests."""

    tool: str
    #: The errors compute-sanitizer counted; None when it printed no summary (it crashed).
    errors: int | None
    #: racecheck's hazards (errors and warnings); None for the other tools.
    hazards: int | None
    #: pytest's counts: {"passed": 12, "skipped": 3, ...}.
    tests: dict[str, int]
    #: pytest's exit status under the tool.
    status: int
    #: Seconds after which the tool was stopped, or None when it ended on its own.
    timed_out_after: float | None = None
    #: The last test pytest reported before the tool was stopped: the hang is in the next one.
    last_test: str | None = None

    @property
    def tests_run(self) -> int:
        return sum(self.tests.get(k, 0) for k in ("passed", "failed", "xfailed", "xpassed"))

    @property
    def clean(self) -> bool:
        """No error, no hazard, a summary printed, and the tests passed."""
        return (
            self.errors == 0 and not self.hazards and self.status == 0
            and self.timed_out_after is None
        )  # fmt: skip


def parse_sanitizer_summary(output: str) -> tuple[int | None, int | None]:
    """(errors, hazards) from compute-sanitizer's last summary lines; None where absent."""
    errors = [int(m[1]) for m in _ERROR_SUMMARY.finditer(output)]
    races = list(_RACE_SUMMARY.finditer(output))
    hazards = int(races[-1][1]) if races else None
    if errors:
        return errors[-1], hazards
    if races and races[-1][2] is not None:
        return int(races[-1][2]), hazards
    return (0 if races else None), hazards


def parse_pytest_counts(output: str) -> dict[str, int]:
    """The counts in pytest's closing tally: ``3 passed, 1 skipped in 2.1s``."""
    for line in reversed(output.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line) and _PYTEST_COUNT.search(line):
            counts: dict[str, int] = {}
            for number, what in _PYTEST_COUNT.findall(line):
                key = {"error": "errors", "warning": "warnings"}.get(what, what)
                counts[key] = counts.get(key, 0) + int(number)
            return counts
    return {}


def parse_tools(text: str | None) -> tuple[str, ...]:
    """``memcheck,racecheck`` as a tuple; every tool when None; unknown names refused."""
    if text is None:
        return SANITIZER_TOOLS
    tools = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    unknown = [t for t in tools if t not in SANITIZER_TOOLS]
    if unknown or not tools:
        raise InvalidOptionError(
            f"Unknown compute-sanitizer tool {', '.join(unknown) or repr(text)}: choose from "
            f"{','.join(SANITIZER_TOOLS)}."
        )
    return tools


_TEST_REPORT = re.compile(r"^(\S+::\S+) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b")
#: The default limit of one tool's pass, in seconds: a kernel or test that hangs under a tool
#: (they serialize and instrument every launch) is stopped and named instead of waited on.
DEFAULT_TIMEOUT_S = 1800.0


def last_reported_test(output: str) -> str | None:
    """The last test pytest -v reported an outcome for (``tests/t.py::test_x[cuda]``)."""
    tests = [m[1] for line in output.splitlines() if (m := _TEST_REPORT.match(line))]
    return tests[-1] if tests else None


def find_compute_sanitizer() -> Path | None:
    """compute-sanitizer of the toolkit, else on PATH."""
    return find_cuda_tool("compute-sanitizer")


def cuda_gpu_visible() -> bool:
    from scaffold.compiler.toolchain import visible_gpu_capabilities

    return bool(visible_gpu_capabilities())


def require_gpu_tool(tool: str, path: Path | None, *, gpu: bool) -> Path:
    """``path``, or the one-line error that says what is missing: the GPU first, then the tool."""
    if not gpu:
        raise ToolchainError(
            f"kscaffold {tool} needs a CUDA GPU, and none is visible here "
            "(torch.cuda.is_available() is False): run it on a machine with one."
        )
    if path is None:
        what = "compute-sanitizer" if tool == "sanitize" else "ncu (Nsight Compute)"
        raise ToolchainError(
            f"{what} was not found in $CUDA_HOME/bin, /usr/local/cuda/bin or on PATH: install "
            "the CUDA toolkit's tools or set CUDA_HOME to a toolkit that has them."
        )
    return path


def _cuda_args(pytest_args: Sequence[str]) -> list[str]:
    chooses = any(arg == "-k" or arg.startswith("-k") for arg in pytest_args)
    return [*pytest_args] if chooses else ["-k", "cuda", *pytest_args]


def run_tool(
    sanitizer: Path,
    tool: str,
    command: Sequence[str],
    project: Path,
    environment: dict[str, str],
    echo: Callable[[str], None],
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ToolRun:
    """Run ``command`` under ``compute-sanitizer --tool tool``, echoing and parsing its output.

    After ``timeout_s`` seconds the tool and everything it started are stopped, and the run
    names the last test that finished.
    """
    full = [str(sanitizer), "--tool", tool, *command]
    echo(f"$ {' '.join(full)}")
    lines: list[str] = []
    with subprocess.Popen(
        full,
        cwd=project,
        env={**os.environ, **environment, **NO_CACHING, SANITIZER_VARIABLE: tool},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group: a timeout stops the whole tree
    ) as process:
        assert process.stdout is not None
        timer = threading.Timer(timeout_s, _stop_group, (process,))
        timer.start()
        try:
            for line in process.stdout:
                lines.append(line)
                echo(line.rstrip("\n"))
            status = process.wait()
        finally:
            timer.cancel()
    output = "".join(lines)
    errors, hazards = parse_sanitizer_summary(output)
    stopped = timer.finished.is_set() and status < 0
    return ToolRun(
        tool,
        errors,
        hazards,
        parse_pytest_counts(output),
        status,
        timed_out_after=timeout_s if stopped else None,
        last_test=last_reported_test(output),
    )


def _stop_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def sanitize_project(
    project: Path,
    *,
    tools: Sequence[str] = SANITIZER_TOOLS,
    pytest_args: Sequence[str] = (),
    reporter: BuildReporter | None = None,
    echo: Callable[[str], None] = print,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[ToolRun]:
    """Build the CUDA variant if stale, then run its tests under each tool; one run per tool.

    Raises :class:`~scaffold.errors.ToolchainError` in one line without a GPU, without
    compute-sanitizer, or when the CUDA variant cannot be tested here.
    """
    from scaffold.testing.project_tests import prepare_project_tests

    sanitizer = require_gpu_tool("sanitize", find_compute_sanitizer(), gpu=cuda_gpu_visible())
    tests = prepare_project_tests(
        project, pytest_args=_cuda_args(pytest_args), backend="cuda", reporter=reporter
    )
    if not tests.tested:
        raise ToolchainError(f"Nothing to sanitize: {tests.describe()}")
    # -v: a line per test as it ends, so that a test that hangs under a tool can be named.
    command = [*tests.command, "-v", "-p", "no:cacheprovider"]
    return [
        run_tool(sanitizer, tool, command, tests.project, tests.environment, echo, timeout_s)
        for tool in tools
    ]


def sanitize_table(runs: Sequence[ToolRun]) -> str:
    """One row per tool: errors, racecheck's hazards, tests run, and the verdict."""
    header = ("tool", "errors", "hazards", "tests run", "verdict")
    rows = [header]
    for run in runs:
        verdict = "clean" if run.clean else (
            f"stopped after {run.timed_out_after:g} s, in the test after "
            f"{run.last_test or 'the start'}" if run.timed_out_after is not None
            else "no summary (crashed?)" if run.errors is None
            else f"pytest exited {run.status}" if not run.errors and not run.hazards
            else "FINDINGS"
        )  # fmt: skip
        rows.append(
            (
                run.tool,
                "?" if run.errors is None else str(run.errors),
                "-" if run.hazards is None else str(run.hazards),
                str(run.tests_run),
                verdict,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
