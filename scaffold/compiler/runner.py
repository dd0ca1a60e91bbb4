"""Run ninja in a child process, turning its output into progress and compiler messages.

The building process never loads the library it builds: a second library registering the same
op namespace later (the installed copy, in the same process) would abort it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from scaffold.compiler.ninjafile import COMPILE_RULES, NINJA_STATUS
from scaffold.compiler.reporter import BuildReporter
from scaffold.errors import CompileError, ToolchainError

# "[3/5] CXX csrc/cpu/add_one.cpp": ninja prints one as each step finishes (output is no tty).
_STATUS = re.compile(r"^\[(\d+)/(\d+)\] (\S+) (.*)$")
_CHATTER = ("ninja: Entering directory", "ninja: no work to do")


@dataclass(frozen=True)
class NinjaRun:
    """What one ninja run did: sources compiled (as build.toml names them) and whether it linked."""

    compiled: tuple[str, ...]
    linked: bool


def run_ninja(
    ninja: Path, scratch: Path, *, variant: str, jobs: int | None, reporter: BuildReporter
) -> NinjaRun:
    """Build ``scratch/build.ninja``; raise CompileError once the compiler's output is shown."""
    command = [str(ninja), "-C", str(scratch)] + (["-j", str(jobs)] if jobs else [])
    environment = {**os.environ, "NINJA_STATUS": NINJA_STATUS}
    compiled: list[str] = []
    linked = False
    output: list[str] = []
    try:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=environment,
        )
    except OSError as error:
        raise ToolchainError(f"Cannot run ninja ({ninja}): {error}") from error
    assert process.stdout is not None
    with process:
        for raw in process.stdout:
            line = raw.rstrip("\n")
            status = _STATUS.match(line)
            if status:
                done, total, kind, what = status.groups()
                if kind == "LINK":
                    linked = True
                else:
                    compiled.append(what)
                reporter.step(variant, int(done), int(total), f"{kind} {what}")
            elif not line.startswith(_CHATTER):
                output.append(line)
                reporter.compiler_output(variant, line)
    if process.returncode != 0:
        raise CompileError(_failure_message(variant, output, shown=reporter.shows_output))
    return NinjaRun(compiled=tuple(compiled), linked=linked)


def _failure_message(variant: str, output: list[str], *, shown: bool) -> str:
    headline = f"Building {variant} failed"
    if shown:
        return f"{headline}: see the compiler output above."
    return f"{headline}; compiler output:\n" + "\n".join(output)


def compile_commands(ninja: Path, scratch: Path) -> list[dict[str, str]]:
    """``ninja -t compdb`` for the compile rules, with every path absolute."""
    result = subprocess.run(
        [str(ninja), "-C", str(scratch), "-t", "compdb", *COMPILE_RULES],
        capture_output=True,
        encoding="utf-8",
        errors="surrogateescape",  # paths as the file system holds them, whatever the locale
        check=False,
    )
    if result.returncode != 0:
        raise ToolchainError(
            f"`ninja -t compdb` failed in {scratch}:\n{result.stdout}{result.stderr}"
        )
    entries: list[dict[str, str]] = json.loads(result.stdout)
    for entry in entries:
        directory = Path(entry["directory"])
        entry["file"] = str(directory / entry["file"])
        if "output" in entry:
            entry["output"] = str(directory / entry["output"])
    return entries
