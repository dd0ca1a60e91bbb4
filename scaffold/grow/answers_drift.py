"""Whether a project's ``build.toml`` still says what its recorded answers render.

``update`` re-renders the template from the answers; where it has no baseline to merge a hand
edit of the answers from (a project outside git, or cloned without kscaffold's ref), the edit
cannot be applied, and saying "Already up to date." would hide it. This names the difference.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import BUILD_TOML


def _parsed(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}


def _backends(document: dict[str, Any]) -> set[str]:
    general = document.get("general")
    value = general.get("backends") if isinstance(general, dict) else None
    return {item for item in value if isinstance(item, str)} if isinstance(value, list) else set()


def _tables(document: dict[str, Any]) -> set[str]:
    kernels = document.get("kernel")
    return set(kernels) if isinstance(kernels, dict) else set()


def answers_drift(project: Path, rendered_build_toml: bytes) -> str | None:
    """How ``project``'s build.toml misses what the answers render, or None if it does not."""
    mine = _parsed(read_regular_text(project / BUILD_TOML) or "")
    theirs = _parsed(rendered_build_toml.decode("utf-8", errors="replace"))
    if not mine or not theirs:
        return None
    differences: list[str] = []
    backends = sorted(_backends(theirs) - _backends(mine))
    if backends:
        differences.append(f"the answers list the backends {', '.join(backends)}")
    tables = sorted(_tables(theirs) - _tables(mine))
    if tables and not backends:
        differences.append(f"the answers render [kernel.{tables[0]}]")
    gone = sorted(_backends(mine) - _backends(theirs))
    if gone:
        differences.append(f"build.toml has the backends {', '.join(gone)}, the answers do not")
    return "; ".join(differences) or None
