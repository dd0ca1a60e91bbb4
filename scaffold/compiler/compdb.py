"""``compile_commands.json`` at the project root, for IDEs and clangd, merged over variants."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from scaffold.compiler.ninjafile import write_if_changed

COMPDB_NAME = "compile_commands.json"


def update_compile_commands(project: Path, fresh: Mapping[Path, list[dict[str, str]]]) -> Path:
    """Replace the entries of each rebuilt scratch folder in ``fresh``, keep the others.

    A build of one backend then leaves the other backend's entries in place, while entries
    whose scratch folder is gone (a variant no longer built) are dropped.
    """
    path = project / COMPDB_NAME
    rebuilt = {str(scratch) for scratch in fresh}
    kept = [
        entry
        for entry in _load(path)
        if entry.get("directory") not in rebuilt and Path(entry.get("directory", "")).is_dir()
    ]
    entries = kept + [entry for batch in fresh.values() for entry in batch]
    entries.sort(key=lambda entry: (entry.get("file", ""), entry.get("directory", "")))
    write_if_changed(path, json.dumps(entries, indent=2) + "\n")
    return path


def _load(path: Path) -> list[dict[str, str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, list):
        return []
    return [entry for entry in data if isinstance(entry, dict)]
