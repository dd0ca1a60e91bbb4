"""A record of the files kscaffold generated in a project, so ``clean`` can prove they are its.

The record lives in ``<project>/.kscaffold/generated.json`` and maps each generated file's
project-relative POSIX path to the sha256 of the content kscaffold wrote. A file whose hash no
longer matches was edited since, and is the user's to keep.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

MANIFEST_PATH = Path(".kscaffold") / "generated.json"
_FORMAT_VERSION = 1


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_manifest(project: Path) -> dict[str, str]:
    """Generated files (relative path → sha256 when written); empty if nothing was recorded."""
    path = project / MANIFEST_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError):
        # A damaged record proves nothing: treat every file as the user's.
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {str(key): str(value) for key, value in files.items()}


def record_generated(project: Path, paths: Iterable[Path]) -> None:
    """Add ``paths`` (absolute, or relative to ``project``) with their current hashes.

    Entries for files that no longer exist are dropped, so replacing a build variant needs no
    separate bookkeeping for the files it lost.
    """
    entries = load_manifest(project)
    for path in paths:
        absolute = path if path.is_absolute() else project / path
        entries[absolute.relative_to(project).as_posix()] = sha256_file(absolute)
    entries = {rel: digest for rel, digest in entries.items() if (project / rel).is_file()}
    text = json.dumps(
        {"version": _FORMAT_VERSION, "files": dict(sorted(entries.items()))}, indent=2
    )
    write_atomically(project / MANIFEST_PATH, text + "\n")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a fresh temporary file renamed over it.

    Readers (and a process killed half-way) see the old content or the new, never a mix.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
