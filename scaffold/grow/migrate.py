"""``kscaffold update --edition 6 --kernel-builder REF``: move a project to build.toml edition 6.

Edition 6 differs from 5 in one key (:mod:`scaffold.project.editions`), so the move is a
rewrite of ``build.toml`` key by key, never a re-rendering: ``edition = 6``, and in each
``[kernel.*]`` table ``backend = "cuda"`` becomes ``language = "cpp-cuda"`` in the same place,
with its comments; every other key, comment and blank line stays as it was. No kernel-builder
release builds edition 6 yet, so the flake's kernel-builder input moves to the revision the
user names, which kernel-builder's ``main`` builder needs (it refuses any other edition).

A kscaffold project records both in its answers (``edition``, ``kernel_builder_ref``), so every
later ``update``, ``add-backend`` and ``add-op`` renders edition 6 against that revision; its
template change (flake pin, answers) is merged like any other. A project kscaffold did not write
gets the two rewrites only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import AbstractTable

from scaffold.errors import BuildConfigError, DirtyTreeError, InvalidOptionError
from scaffold.grow.evolve import EvolveReport, evolve
from scaffold.project.answers import load_answers
from scaffold.project.editions import LANGUAGE_EDITION, LANGUAGES, language_of
from scaffold.project.flakepin import FLAKE_INPUT, PINS, check_ref
from scaffold.support import gitutil
from scaffold.vocabulary import ANSWERS_FILE, BUILD_TOML

FLAKE = "flake.nix"
#: The editions ``update --edition`` moves a project to.
TARGET_EDITIONS: tuple[int, ...] = (LANGUAGE_EDITION,)

# `kernel-builder.url = "..."`, `inputs.kernel-builder.url = "..."` or
# `kernel-builder = { url = "..."; ... }`: the URL of the flake's kernel-builder input.
_INPUT_URL = re.compile(r'(\bkernel-builder(?:\.url\s*=\s*|\s*=\s*\{[^{}]*?\burl\s*=\s*))"([^"]*)"')


@dataclass
class EditionUpdate:
    """What ``update --edition`` did: the merge report and what the user should know."""

    report: EvolveReport
    notes: list[str] = field(default_factory=list)


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def _expected(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a parsed build.toml) as edition 6 holds it, for checking the rewrite."""
    general = {**data.get("general", {}), "edition": LANGUAGE_EDITION}
    kernels = {
        label: (
            {
                ("language" if key == "backend" else key): (
                    language_of(value) if key == "backend" else value
                )
                for key, value in table.items()
            }
            if isinstance(table, dict)
            else table
        )
        for label, table in data.get("kernel", {}).items()
    }
    result = {**data, "general": general}
    if "kernel" in data:
        result["kernel"] = kernels
    return result


def build_toml_to_edition_6(text: str) -> str:
    """``text`` (a build.toml of edition 4, 5 or 6) rewritten to edition 6, key by key.

    An edition-6 file comes back unchanged. A kernel table whose backend edition 6 has no
    language for, or whose ``backend`` is not a plain string, is refused: nothing is guessed.
    """
    try:
        doc = tomlkit.parse(text)
    except Exception as error:  # tomlkit raises several parse error types
        raise BuildConfigError(f"{BUILD_TOML}: not valid TOML: {error}") from error
    general = doc.get("general")
    if not isinstance(general, AbstractTable):
        raise BuildConfigError(f"{BUILD_TOML} has no [general] table to set the edition in.")
    edition = _plain(general.get("edition"))
    if edition == LANGUAGE_EDITION:
        return text
    if edition not in (None, 5):
        raise BuildConfigError(
            f"{BUILD_TOML}: general.edition is {edition!r}; kscaffold moves editions 4 (no "
            "edition key) and 5 to 6."
        )
    before = _plain(doc)
    if edition is None:
        general.append("edition", LANGUAGE_EDITION)  # after [general]'s own keys
    else:
        general["edition"] = LANGUAGE_EDITION  # in place, its comment kept
    kernels = doc.get("kernel")
    for label, table in kernels.items() if isinstance(kernels, dict) else []:
        if isinstance(table, dict) and "backend" in table:
            _backend_to_language(f"kernel.{label}", table)
    result = tomlkit.dumps(doc)
    # The rename edits tomlkit's item list in place: read the result afresh and compare it with
    # what edition 6 must hold, so a rewrite that lost or moved a value is never written.
    if tomlkit.parse(result).unwrap() != _expected(before):
        raise BuildConfigError(
            f"kscaffold could not rewrite {BUILD_TOML} key by key (an unusual layout, such as "
            "dotted keys for kernel tables): run `kernel-builder update-build`, or replace each "
            'backend = "<backend>" with language = "cpp-<backend>" and set edition = 6 by hand.'
        )
    return result


def _backend_to_language(where: str, table: Any) -> None:
    """Replace ``backend = "x"`` by ``language = "cpp-x"`` at the same place in ``table``."""
    backend = _plain(table["backend"])
    language = language_of(backend) if isinstance(backend, str) else None
    if language is None:
        choices = ", ".join(sorted(set(LANGUAGES.values())))
        raise BuildConfigError(
            f"{BUILD_TOML}: [{where}] backend = {backend!r} has no language in edition 6, "
            f"whose kernel tables build for {choices} only: remove the table, or keep the "
            "project on edition 5."
        )
    body = table.value.body  # a [kernel.x] Table's or an inline table's items, in order
    for index, (key, item) in enumerate(body):
        if key is not None and key.key == "backend":
            new = tomlkit.string(language)
            new.trivia.indent = item.trivia.indent
            new.trivia.comment_ws = item.trivia.comment_ws
            new.trivia.comment = item.trivia.comment
            new.trivia.trail = item.trivia.trail
            body[index] = (tomlkit.key("language"), new)
            return


def flake_to_ref(text: str, ref: str) -> str:
    """``text`` (a flake.nix) with its kernel-builder input at ``ref`` of huggingface/kernels."""
    url = f"{FLAKE_INPUT}/{ref}"
    found = _INPUT_URL.search(text)
    if found is None:
        raise InvalidOptionError(
            f'{FLAKE} has no kernel-builder input (kernel-builder.url = "...") to move to '
            f'{url}: add inputs.kernel-builder.url = "{url}"; and run again.'
        )
    return text[: found.start(2)] + url + text[found.end(2) :]


def _release_ref(edition: int, ref: str | None) -> str:
    if ref is not None:
        return check_ref(ref)
    if edition in PINS:
        return PINS[edition]
    newest = max(PINS)
    raise InvalidOptionError(
        f"No kernel-builder release builds edition {edition} yet (the newest pinned, "
        f"{PINS[newest]}, builds edition {newest}): give the revision of github:huggingface/"
        f"kernels to build with, e.g. --kernel-builder <commit>, or stay on edition {newest}."
    )


def update_edition(
    project: Path, edition: int, kernel_builder_ref: str | None, *, markers: bool = False
) -> EditionUpdate:
    """Move ``project`` to ``edition`` (6), its flake to ``kernel_builder_ref``."""
    if edition not in TARGET_EDITIONS:
        raise InvalidOptionError(
            f"--edition {edition}: kscaffold moves projects to edition "
            f"{', '.join(map(str, TARGET_EDITIONS))} (new projects are on edition "
            f"{min(PINS)}, which plain `kscaffold update` keeps)."
        )
    ref = _release_ref(edition, kernel_builder_ref)
    project = project.resolve()
    if (project / ANSWERS_FILE).is_file():
        answers = load_answers(project)
        report = evolve(
            project,
            answers,
            answers.with_values(edition=edition, kernel_builder_ref=ref),
            markers=markers,
            what=f"move to build.toml edition {edition}, kernel-builder {ref}",
            rewrite={BUILD_TOML: _rewrite_bytes},
        )
        return EditionUpdate(report)
    return _update_foreign(project, ref)


def _rewrite_bytes(data: bytes) -> bytes:
    return build_toml_to_edition_6(data.decode("utf-8")).encode("utf-8")


def _update_foreign(project: Path, ref: str) -> EditionUpdate:
    """A project kscaffold did not write: build.toml and the flake's input, nothing else."""
    build_toml = project / BUILD_TOML
    if not build_toml.is_file():
        raise BuildConfigError(f"{project} has no {BUILD_TOML}: it is not a kernel project.")
    if gitutil.is_inside_work_tree(project) and gitutil.has_uncommitted_changes(project):
        raise DirtyTreeError(
            f"{project} has uncommitted changes: commit or stash them first, so that the "
            "rewrite can be reviewed and undone with git."
        )
    rewrites: dict[str, str] = {}
    text = build_toml.read_text(encoding="utf-8")
    new = build_toml_to_edition_6(text)
    if new != text:
        rewrites[BUILD_TOML] = new
    flake = project / FLAKE
    if flake.is_file():
        old_flake = flake.read_text(encoding="utf-8")
        new_flake = flake_to_ref(old_flake, ref)
        if new_flake != old_flake:
            rewrites[FLAKE] = new_flake
    for relative, content in rewrites.items():  # both computed before either is written
        (project / relative).write_text(content, encoding="utf-8")
    notes = [
        f"{project.name} was not made by kscaffold (no {ANSWERS_FILE}): rewrote {BUILD_TOML} "
        f'(edition = 6, backend = "x" -> language = "cpp-x") and '
        + (
            f"the flake's kernel-builder input ({FLAKE_INPUT}/{ref})"
            if flake.is_file()
            else f"nothing else (there is no {FLAKE})"
        )
        + "; nothing else was touched."
    ]
    return EditionUpdate(EvolveReport(written=sorted(rewrites)), notes)
