"""``kscaffold new``: render the template, check the result, then write it to the destination."""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scaffold import gitutil
from scaffold.answers import default_ops
from scaffold.errors import DestinationError, InvalidOptionError, KscaffoldError
from scaffold.evolve import BASELINE_REF
from scaffold.names import KernelName, parse_backends, parse_license, parse_repo_owner
from scaffold.template import render

#: Worked examples the template can start from, besides the default op.
EXAMPLES: tuple[str, ...] = ("img2gray",)


@dataclass(frozen=True)
class ProjectSpec:
    """Everything ``kscaffold new`` needs to know, validated on construction."""

    name: KernelName
    backends: tuple[str, ...] = ("cuda",)
    example: str | None = None
    owner: str | None = None
    license: str = "apache-2.0"
    version: int = 1
    extra_answers: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(
        cls,
        name: str,
        *,
        backends: Sequence[str] | str = ("cuda",),
        example: str | None = None,
        owner: str | None = None,
        license: str = "apache-2.0",
        version: int = 1,
    ) -> ProjectSpec:
        """Validate raw user input (as typed on the command line) into a spec."""
        if example is not None and example not in EXAMPLES:
            raise InvalidOptionError(
                f"Unknown example '{example}': available examples are {', '.join(EXAMPLES)}."
            )
        if version < 1:
            raise InvalidOptionError(
                f"Invalid version {version}: use a positive integer such as 1."
            )
        return cls(
            name=KernelName(name),
            backends=parse_backends(list(backends) if not isinstance(backends, str) else backends),
            example=example,
            owner=parse_repo_owner(owner) if owner else None,
            license=parse_license(license),
            version=version,
        )

    def answers(self) -> dict[str, Any]:
        """The copier answers for this spec."""
        return {
            "name": self.name.name,
            "backends": list(self.backends),
            "example": self.example or "none",
            "owner": self.owner or "",
            "license": self.license,
            "version": self.version,
            "ops": default_ops(self.example),
            **self.extra_answers,
        }


def _is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def _check_destination(destination: Path, *, force: bool) -> None:
    if destination.exists() and not destination.is_dir():
        raise DestinationError(f"Destination {destination} exists and is not a folder.")
    if destination.is_dir() and not _is_empty_dir(destination) and not force:
        raise DestinationError(
            f"Destination {destination} already exists and is not empty: "
            "choose another --dest, or pass --force to write the project into it."
        )


def _check_rendered(tree: Path, spec: ProjectSpec) -> None:
    """Sanity-check a rendered project before it is written anywhere the user can see."""
    try:
        config = tomllib.loads((tree / "build.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:  # a template bug, not a user error
        raise KscaffoldError(f"The template rendered an unreadable build.toml: {error}") from error
    if config.get("general", {}).get("name") != spec.name.name:
        raise KscaffoldError("The template rendered a build.toml for another kernel name.")
    if not (tree / "torch-ext" / spec.name.python_name / "__init__.py").is_file():
        raise KscaffoldError("The template rendered no Python package under torch-ext/.")


def _copy_into(source: Path, destination: Path) -> None:
    """Merge a rendered tree into an existing folder (only used with --force)."""
    for path in sorted(source.rglob("*")):
        target = destination / path.relative_to(source)
        if path.is_dir():
            if target.exists() and not target.is_dir():
                raise DestinationError(f"Cannot write folder {target}: a file is in the way.")
            target.mkdir(exist_ok=True)
        else:
            if target.is_dir():
                raise DestinationError(f"Cannot write file {target}: a folder is in the way.")
            shutil.copy2(path, target)


def _remove_created(destination: Path, *, keep_folder: bool, stop_at: Path) -> None:
    if keep_folder:
        for child in destination.iterdir():
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        return
    shutil.rmtree(destination, ignore_errors=True)
    # Also drop the parent folders this run created on the way.
    parent = destination.parent
    while parent != stop_at and _is_empty_dir(parent):
        parent.rmdir()
        parent = parent.parent


def create_project(
    spec: ProjectSpec, destination: Path, *, force: bool = False, git: bool = True
) -> Path:
    """Generate a kernel project for ``spec`` at ``destination`` and return its path.

    Nothing is written unless rendering and checking succeed; a run that fails later removes
    whatever it created. With ``force``, files of an existing folder that the template also
    generates are overwritten and other files are kept.
    """
    destination = destination.expanduser().resolve()
    _check_destination(destination, force=force)

    existing_parent = destination.parent
    while not existing_parent.exists():
        existing_parent = existing_parent.parent
    created_dest = not destination.exists()
    # A folder that is new or empty belongs wholly to this run: a failure empties it again.
    owns_destination = created_dest or _is_empty_dir(destination)

    staging = Path(tempfile.mkdtemp(prefix=".kscaffold-new-", dir=existing_parent))
    try:
        rendered = staging / "project"
        render(spec.answers(), rendered)
        _check_rendered(rendered, spec)
        if owns_destination:
            destination.parent.mkdir(parents=True, exist_ok=True)
            if destination.exists():
                destination.rmdir()
            rendered.rename(destination)
        else:
            _copy_into(rendered, destination)
        # The project is its own repository (one Hub repo per kernel), even inside another one.
        if git and not (destination / ".git").exists():
            gitutil.init_and_commit(destination, f"Create {spec.name} with kscaffold")
            # The first commit is the pristine rendering: keep it as the baseline for merges.
            gitutil.run_git(destination, "update-ref", BASELINE_REF, "HEAD")
    except BaseException:
        if owns_destination and destination.exists():
            _remove_created(destination, keep_folder=not created_dest, stop_at=existing_parent)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination
