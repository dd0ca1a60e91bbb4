"""``compile_commands.json`` at the project root, for IDEs and clangd, merged over variants.

kscaffold writes the file only when it is absent or still exactly what kscaffold last wrote (as
its record of generated files shows): a ``compile_commands.json`` of the user's own, or one edited
since, is left alone, and the build says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from scaffold.compiler.ninjafile import write_if_changed
from scaffold.outputs.artifacts import is_regular_file
from scaffold.outputs.manifest import load_manifest, sha256_file
from scaffold.vocabulary import COMPDB_NAME


def owns_compile_commands(project: Path) -> bool:
    """Whether kscaffold may write ``compile_commands.json``: absent, or byte for byte its own."""
    path = project / COMPDB_NAME
    if not path.exists() and not path.is_symlink():
        return True
    if not is_regular_file(path):
        return False
    recorded = load_manifest(project).get(COMPDB_NAME)
    try:
        return recorded is not None and sha256_file(path) == recorded
    except OSError:
        return False


def update_compile_commands(
    project: Path, fresh: Mapping[Path, list[dict[str, str]]]
) -> Path | None:
    """Replace the entries of each rebuilt scratch folder in ``fresh``, keep the others.

    A build of one backend then leaves the other backend's entries in place, while entries
    whose scratch folder is gone (a variant no longer built) are dropped. Returns the file, or
    None when it is not kscaffold's to write (see :func:`owns_compile_commands`).
    """
    path = project / COMPDB_NAME
    if not owns_compile_commands(project):
        return None
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
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(data, list):
        return []
    return [entry for entry in data if isinstance(entry, dict)]
