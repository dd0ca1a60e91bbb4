"""What every check rule shares: the finding it reports and the project it looks at."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from scaffold.outputs.artifacts import ArtifactScan, scan_artifacts
from scaffold.project.editions import COMPILED_LANGUAGES, kernel_table_backend
from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import BUILD_TOML

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem ``kscaffold check`` found: how bad it is, where, what, and how to fix it."""

    severity: Severity
    location: str
    message: str
    fix: str

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        return f"{self.severity}: {self.location}: {self.message} Fix: {self.fix}"


def error(location: str, message: str, fix: str) -> Finding:
    return Finding("error", location, message, fix)


def warning(location: str, message: str, fix: str) -> Finding:
    return Finding("warning", location, message, fix)


@dataclass(frozen=True)
class SourceList:
    """One ``src`` list of build.toml: the table that owns it, its backend (None for [torch])."""

    table: str
    backend: str | None
    files: tuple[str, ...]
    #: False for an edition-6 table kernel-builder builds with cargo (``rust-cpu``).
    compiled: bool = True


_TOO_DEEP = "arrays or tables nest too deeply to read"


class Context:
    """The project under check, read once and shared by every rule.

    Rules read build.toml as plain TOML data rather than through the strict reader, so that one
    broken key does not hide every other finding.
    """

    def __init__(self, project: Path) -> None:
        self.project = project
        self.toml_error: tomllib.TOMLDecodeError | None = None
        try:
            self.data: dict[str, Any] = tomllib.loads(read_regular_text(project / BUILD_TOML) or "")
        except tomllib.TOMLDecodeError as problem:
            self.toml_error = problem
            self.data = {}
        except RecursionError:
            self.toml_error = tomllib.TOMLDecodeError(_TOO_DEEP)
            self.data = {}

    @property
    def general(self) -> dict[str, Any]:
        value = self.data.get("general")
        return value if isinstance(value, dict) else {}

    @property
    def name(self) -> str | None:
        value = self.general.get("name")
        return value if isinstance(value, str) else None

    @property
    def python_name(self) -> str | None:
        return self.name.replace("-", "_") if self.name else None

    @property
    def backends(self) -> tuple[str, ...]:
        value = self.general.get("backends")
        if not isinstance(value, list):
            return ()
        return tuple(item for item in value if isinstance(item, str))

    @property
    def kernels(self) -> dict[str, dict[str, Any]]:
        value = self.data.get("kernel")
        if not isinstance(value, dict):
            return {}
        return {label: table for label, table in value.items() if isinstance(table, dict)}

    @cached_property
    def source_lists(self) -> tuple[SourceList, ...]:
        lists: list[SourceList] = []
        torch = self.data.get("torch")
        if isinstance(torch, dict):
            lists.append(SourceList("torch", None, _strings(torch.get("src"))))
        for label, table in self.kernels.items():
            language = table.get("language")
            lists.append(
                SourceList(
                    f"kernel.{label}",
                    kernel_table_backend(table),
                    _strings(table.get("src")),
                    compiled=not isinstance(language, str) or language in COMPILED_LANGUAGES,
                )
            )
        return tuple(lists)

    def compiled_for(self, backend: str) -> set[str]:
        """The files compiled into ``backend``'s variant: [torch] src and its kernels' src."""
        return {
            path
            for source_list in self.source_lists
            if source_list.backend in (None, backend)
            for path in source_list.files
        }

    @cached_property
    def listed_files(self) -> set[str]:
        return {path for source_list in self.source_lists for path in source_list.files}

    @cached_property
    def artifacts(self) -> ArtifactScan:
        return scan_artifacts(self.project)

    def relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.project).as_posix()
        except ValueError:
            return str(path)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))
