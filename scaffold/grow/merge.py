"""Three-way merges of template changes into a user's project.

A template change is a pair of renderings, *before* and *after* (for example without and with a
CPU backend). Each file of the user's project is merged with the change: untouched files take
the new template text, edited files get the template's change applied onto the user's version
(``git merge-file``), and ``build.toml`` is merged key by key so that comments and extra keys
survive. A change that touches lines the user also changed is a conflict, reported by file and
line, never resolved by overwriting.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from scaffold.errors import KscaffoldError
from scaffold.grow.transaction import write_all_or_nothing
from scaffold.vocabulary import ANSWERS_FILE

#: Files merged as TOML documents rather than as text.
TOML_FILES = frozenset({"build.toml"})
_MARKER_START = "<<<<<<< "


@dataclass(frozen=True)
class Conflict:
    """Lines of one file where the template's change meets a change of the user's."""

    path: str
    lines: tuple[int, ...]
    detail: str = ""

    def describe(self) -> str:
        where = f" (lines {', '.join(map(str, self.lines))})" if self.lines else ""
        return f"{self.path}{where}{': ' + self.detail if self.detail else ''}"


@dataclass
class MergePlan:
    """What merging a template change into a project would do, computed before writing."""

    writes: dict[str, bytes] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: Conflicted files rendered with standard conflict markers, for ``apply(markers=True)``.
    marked: dict[str, bytes] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)

    def apply(
        self,
        project: Path,
        *,
        markers: bool = False,
        what: str = "merge the template change",
        then: Callable[[], None] | None = None,
    ) -> None:
        """Write the plan into ``project`` (conflicted files only when ``markers`` is set).

        All files or none: see :func:`~scaffold.grow.transaction.write_all_or_nothing`; ``then``
        runs once every file is in place, and a failure there undoes them too.
        """
        contents = dict(self.writes)
        if markers:
            contents.update(self.marked)
        root = project.resolve()
        for relative in [*contents, *self.deletes]:  # refuse before changing anything
            folder = (project / relative).parent.resolve()
            if not folder.is_relative_to(root):
                raise KscaffoldError(
                    f"Cannot write {relative}: a symbolic link takes its folder outside the "
                    f"project (to {folder}), and kscaffold never writes through links out of it. "
                    "Replace the link with a folder, then run the command again."
                )
        write_all_or_nothing(
            project, contents, self.deletes, what=what, last=(ANSWERS_FILE,), then=then
        )


def _merge_file(
    path: str, user: bytes, before: bytes, after: bytes, *options: str
) -> tuple[bytes, bool]:
    """``git merge-file`` of the three versions: the merge, and whether it met no conflict."""
    with tempfile.TemporaryDirectory(prefix="kscaffold-merge-") as scratch:
        files = []
        for label, data in (("user", user), ("before", before), ("after", after)):
            file = Path(scratch) / label
            file.write_bytes(data)
            files.append(str(file))
        result = subprocess.run(
            [
                "git",
                "merge-file",
                "-p",
                *options,
                "-L",
                f"{path} (yours)",
                "-L",
                f"{path} (template before)",
                "-L",
                f"{path} (template after)",
                *files,
            ],
            capture_output=True,
            check=False,
        )
    if result.returncode < 0 or result.returncode > 127:
        raise KscaffoldError(f"git merge-file failed on {path}: {result.stderr.decode().strip()}")
    return result.stdout, result.returncode == 0


# A --diff3 conflict whose base part is empty: both sides only added lines at the same place.
_BOTH_INSERTED = re.compile(
    rb"^<<<<<<< [^\n]*\n(?P<yours>(?:(?!\|\|\|\|\|\|\| |=======\n)[^\n]*\n)*?)"
    rb"\|\|\|\|\|\|\| [^\n]*\n=======\n(?P<template>(?:(?!>>>>>>> )[^\n]*\n)*?)>>>>>>> [^\n]*\n",
    re.MULTILINE,
)


def _merge_text(
    path: str, user: bytes, before: bytes, after: bytes
) -> tuple[bytes, Conflict | None]:
    """Merge one text file three-way.

    Where you and the template only added lines at the same place (a new op's section and your
    own code at the end of a file), yours are kept, then the template's: no line is lost.
    """
    merged, clean = _merge_file(path, user, before, after, "--diff3")
    if clean:
        return merged, None
    resolved = _BOTH_INSERTED.sub(lambda match: match["yours"] + match["template"], merged)
    if not re.search(rb"^<<<<<<< ", resolved, re.MULTILINE):
        return resolved, None
    marked, _ = _merge_file(path, user, before, after)
    lines = tuple(
        number
        for number, line in enumerate(marked.decode(errors="replace").splitlines(), start=1)
        if line.startswith(_MARKER_START)
    )
    return marked, Conflict(path, lines, "your edits and the template's change overlap")


def with_markers(path: str, user: bytes, before: bytes, after: bytes) -> bytes:
    """``path`` with standard conflict markers between the user's text and the template's.

    Where the line merge finds no overlap to mark (the conflict was found key by key, or one
    side is empty), the whole of both versions goes between one pair of markers, so that a
    conflict reported as marked always has markers and the template's text is never lost.
    """
    marked, clean = _merge_file(path, user, before, after)
    if not clean and re.search(rb"^<<<<<<< ", marked, re.MULTILINE):
        return marked

    def ended(text: bytes) -> bytes:
        return text if not text or text.endswith(b"\n") else text + b"\n"

    return (
        f"<<<<<<< {path} (yours)\n".encode()
        + ended(user)
        + b"=======\n"
        + ended(after)
        + f">>>>>>> {path} (template after)\n".encode()
    )


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def _is_file_list(*values: Any) -> bool:
    return all(
        isinstance(_plain(value), list) and all(isinstance(item, str) for item in _plain(value))
        for value in values
    )


def _merge_file_list(user: Any, before: list[str], after: list[str]) -> None:
    """Apply the template's change of a list of strings (a ``src``) to the user's list, in place.

    Entries the template dropped leave, entries it added are appended; the user's own entries,
    their order and the list's formatting stay.
    """
    dropped = set(before) - set(after)
    for index in reversed(range(len(user))):
        if user[index] in dropped:
            del user[index]
    for item in after:
        if item not in before and item not in _plain(user):
            user.append(item)


def _merge_toml_tables(
    path: str, dotted: str, user: Table | Any, before: Any, after: Any, conflicts: list[Conflict]
) -> None:
    """Apply the before→after change of one TOML table onto the user's table, key by key."""
    for key in list(after.keys()):
        where = f"{dotted}.{key}" if dotted else key
        new = after[key]
        if key not in before:
            if key not in user:
                user[key] = new
            elif _plain(user[key]) != _plain(new):
                conflicts.append(
                    Conflict(path, (), f"you added `{where}`, and so does the template")
                )
            continue
        old = before[key]
        if isinstance(new, dict) and isinstance(old, dict) and isinstance(user.get(key), dict):
            _merge_toml_tables(path, where, user[key], old, new, conflicts)
        elif _plain(old) != _plain(new):
            if key not in user or _plain(user[key]) == _plain(old):
                user[key] = new
            elif _is_file_list(old, new, user[key]):
                _merge_file_list(user[key], _plain(old), _plain(new))
            elif _plain(user[key]) != _plain(new):
                conflicts.append(
                    Conflict(path, (), f"you changed `{where}`, and so does the template")
                )
    for key in list(before.keys()):
        if key not in after and key in user:
            if _plain(user[key]) == _plain(before[key]):
                del user[key]
            else:
                conflicts.append(
                    Conflict(path, (), f"the template drops `{key}`, which you changed")
                )


def _merge_toml(
    path: str, user: bytes, before: bytes, after: bytes
) -> tuple[bytes, list[Conflict]]:
    try:
        user_doc = tomlkit.parse(user.decode())
        before_doc = tomlkit.parse(before.decode())
        after_doc = tomlkit.parse(after.decode())
    except Exception as error:  # tomlkit raises several parse error types
        raise KscaffoldError(
            f"{path} is not valid TOML ({error}): fix it, then try again."
        ) from error
    conflicts: list[Conflict] = []
    _merge_toml_tables(path, "", user_doc, before_doc, after_doc, conflicts)
    return tomlkit.dumps(user_doc).encode(), conflicts


def plan_merge(
    project: Path,
    before: dict[str, bytes],
    after: dict[str, bytes],
    overrides: Mapping[str, bytes] | None = None,
) -> MergePlan:
    """Plan how to carry the template change ``before`` → ``after`` into ``project``.

    ``overrides`` stand for the user's copy of a file (already rewritten in memory); each is
    written even where the template does not change that file.
    """
    plan = MergePlan()
    overrides = overrides or {}
    for relative in sorted(set(before) | set(after)):
        old, new = before.get(relative), after.get(relative)
        target = project / relative
        mine = overrides.get(relative, target.read_bytes() if target.is_file() else None)
        if old == new:
            continue  # the template did not change this file: whatever the user has stays
        if relative == ANSWERS_FILE and new is not None:
            # kscaffold's own record, rendered from the (validated) answers: always the new one.
            if mine != new:
                plan.writes[relative] = new
            continue
        if new is None:  # the template dropped the file
            if mine == old:
                plan.deletes.append(relative)
            elif mine is not None:
                plan.kept.append(relative)
            continue
        if mine is None:
            if old is None:
                plan.writes[relative] = new
            else:  # the user deleted a file the template still changes
                plan.conflicts.append(
                    Conflict(relative, (), "you deleted this file; the template changes it")
                )
                plan.marked[relative] = with_markers(relative, b"", b"", new)
            continue
        if mine in (new, old):
            if mine == old:
                plan.writes[relative] = new
            continue
        if old is None:
            plan.conflicts.append(
                Conflict(relative, (), "you created this file; the template adds its own")
            )
            plan.marked[relative] = with_markers(relative, mine, b"", new)
            continue
        if relative in TOML_FILES:
            merged, toml_conflicts = _merge_toml(relative, mine, old, new)
            plan.conflicts.extend(toml_conflicts)
            if not toml_conflicts:
                plan.writes[relative] = merged
            else:
                plan.marked[relative] = with_markers(relative, mine, old, new)
            continue
        merged, conflict = _merge_text(relative, mine, old, new)
        if conflict is None:
            plan.writes[relative] = merged
        else:
            plan.conflicts.append(conflict)
            plan.marked[relative] = merged
    conflicted = {conflict.path for conflict in plan.conflicts}
    for relative, data in overrides.items():
        target = project / relative
        on_disk = target.read_bytes() if target.is_file() else None
        if relative not in plan.writes and relative not in conflicted and data != on_disk:
            plan.writes[relative] = data
    return plan
