"""The answers file a kscaffold project carries, and how to recognise such a project."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scaffold.errors import NotAProjectError
from scaffold.vocabulary import ANSWERS_FILE, BUILD_TOML, DEFAULT_OP, OP_KINDS


@dataclass(frozen=True)
class OpEntry:
    """One op of a project, as the answers record it: its name and the kind it was made from."""

    name: str
    kind: str

    def as_answer(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind}


def default_ops(example: str | None) -> list[dict[str, str]]:
    """The ``ops`` answer of a new project: its one op, the example's or the default op."""
    op = example if example and example != "none" else DEFAULT_OP
    return [OpEntry(op, op).as_answer()]


@dataclass(frozen=True)
class ProjectAnswers:
    """The answers a project was rendered with, and the kscaffold version that rendered it."""

    values: dict[str, Any]
    kscaffold_version: str

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(self.values.get("backends", ()))

    @property
    def ops(self) -> tuple[OpEntry, ...]:
        """The project's ops in the order they were added (projects made before add-op: one)."""
        recorded = self.values.get("ops") or default_ops(self.values.get("example"))
        return tuple(OpEntry(str(entry["name"]), str(entry["kind"])) for entry in recorded)

    def with_values(self, **changes: Any) -> ProjectAnswers:
        return ProjectAnswers({**self.values, **changes}, self.kscaffold_version)


def load_answers(project: Path) -> ProjectAnswers:
    """Read the answers file; say what is missing when ``project`` is no kscaffold project."""
    if not project.is_dir():
        raise NotAProjectError(f"{project} is not a folder.")
    missing = [name for name in (BUILD_TOML, ANSWERS_FILE) if not (project / name).is_file()]
    if missing:
        raise NotAProjectError(
            f"{project} is not a kscaffold project: {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing (create one with `kscaffold new`)."
        )
    try:
        data = yaml.safe_load((project / ANSWERS_FILE).read_text())
    except yaml.YAMLError as error:
        raise NotAProjectError(f"{project / ANSWERS_FILE} is not valid YAML: {error}") from error
    required = ("name", "backends", "example")
    if not isinstance(data, dict) or any(key not in data for key in required):
        raise NotAProjectError(
            f"{project / ANSWERS_FILE} lacks kscaffold's answers ({', '.join(required)}): "
            "it was not written by kscaffold."
        )
    ops = data.get("ops", default_ops(data.get("example")))
    if (
        not isinstance(ops, list)
        or not all(
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and entry.get("kind") in OP_KINDS
            for entry in ops
        )
        or not ops
        or len({entry["name"] for entry in ops}) != len(ops)
    ):
        raise NotAProjectError(
            f"{project / ANSWERS_FILE}: 'ops' must list each op once, as "
            f"{{name: ..., kind: ...}} with a kind among {', '.join(OP_KINDS)}; "
            "restore it from git."
        )
    version = str(data.pop("_kscaffold_version", "0"))
    values = {key: value for key, value in data.items() if not key.startswith("_")}
    return ProjectAnswers(values, version)
