"""``kscaffold new``: render the template, check the result, then write it to the destination."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any

from scaffold import gitutil
from scaffold.answers import default_ops
from scaffold.errors import DestinationError, InvalidOptionError, KscaffoldError
from scaffold.evolve import baseline_ref
from scaffold.names import KernelName, parse_backends, parse_license, parse_repo_owner
from scaffold.template import STAGING_PREFIX, render, template_dir
from scaffold.vocabulary import DEFAULT_BACKENDS, TORCH_EXT_DIR

#: The largest major version: build.toml's version is a TOML integer (64-bit signed).
MAX_VERSION = 2**63 - 1
#: Worked examples the template can start from, besides the default op.
EXAMPLES: tuple[str, ...] = ("img2gray", "rms_norm")


@dataclass(frozen=True)
class ProjectSpec:
    """Everything ``kscaffold new`` needs to know, validated on construction."""

    name: KernelName
    backends: tuple[str, ...] = DEFAULT_BACKENDS
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
        backends: Sequence[str] | str = DEFAULT_BACKENDS,
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
        if not 1 <= version <= MAX_VERSION:
            raise InvalidOptionError(
                f"Invalid version {version}: use a positive integer such as 1 (at most "
                f"{MAX_VERSION}, the largest integer TOML holds)."
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
    return path.is_dir() and not path.is_symlink() and not any(path.iterdir())


def _check_destination(destination: Path, *, force: bool) -> None:
    if destination.exists() and not destination.is_dir():
        raise DestinationError(f"Destination {destination} exists and is not a folder.")
    if destination.is_dir() and not _is_empty_dir(destination) and not force:
        raise DestinationError(
            f"Destination {destination} already exists and is not empty: "
            "choose another --dest, or pass --force to write the project into it."
        )
    template = template_dir().resolve()
    if destination == template or destination.is_relative_to(template):
        raise DestinationError(
            f"Destination {destination} is inside kscaffold's own template ({template}): "
            "choose a --dest outside it."
        )


def _check_rendered(tree: Path, spec: ProjectSpec) -> None:
    """Sanity-check a rendered project before it is written anywhere the user can see."""
    try:
        config = tomllib.loads((tree / "build.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:  # a template bug, not a user error
        raise KscaffoldError(f"The template rendered an unreadable build.toml: {error}") from error
    if config.get("general", {}).get("name") != spec.name.name:
        raise KscaffoldError("The template rendered a build.toml for another kernel name.")
    if not (tree / TORCH_EXT_DIR / spec.name.python_name / "__init__.py").is_file():
        raise KscaffoldError(f"The template rendered no Python package under {TORCH_EXT_DIR}/.")


def _rendered_files(tree: Path) -> list[str]:
    return sorted(
        path.relative_to(tree).as_posix()
        for path in tree.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(tree).parts
    )


def _refuse_links(destination: Path, relatives: list[str]) -> None:
    """Refuse, before writing anything, a destination where a write would follow a link."""
    for relative in relatives:
        target = destination
        for part in PurePosixPath(relative).parts:
            target = target / part
            if target.is_symlink():
                raise DestinationError(
                    f"Cannot write {destination / relative}: {target} is a symbolic link (to "
                    f"{os.readlink(target)}), and kscaffold new never writes through links. "
                    "Remove the link, or choose another --dest."
                )
            if not target.exists():
                break
            if target != destination / relative and not target.is_dir():
                raise DestinationError(
                    f"Cannot write {destination / relative}: {target} is a file in the way."
                )
        if (destination / relative).is_dir():
            raise DestinationError(
                f"Cannot write file {destination / relative}: a folder is in the way."
            )


class _Merge:
    """Write a rendered tree into an existing folder (``--force``), undoably.

    Every file replaced is first moved to ``backup``; every file and folder created is noted,
    so :meth:`undo` leaves the folder as it was. Files are written through a temporary file
    renamed over the target, so a hard link to a file elsewhere is never written through.
    """

    def __init__(self, source: Path, destination: Path, backup: Path) -> None:
        self.source, self.destination, self.backup = source, destination, backup
        self.created: list[Path] = []
        self.replaced: list[tuple[Path, Path]] = []

    def apply(self, relatives: list[str]) -> None:
        for index, relative in enumerate(relatives):
            target = self.destination / relative
            missing = [p for p in reversed(target.parents) if not p.exists()]
            for folder in missing:
                folder.mkdir()
                self.created.append(folder)
            if target.exists():
                saved = self.backup / str(index)
                saved.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, saved)
                self.replaced.append((target, saved))
            else:
                self.created.append(target)
            temporary = target.with_name(f"{STAGING_PREFIX}{os.getpid()}-{target.name}")
            shutil.copy2(self.source / relative, temporary)
            os.replace(temporary, target)

    def undo(self) -> None:
        for path in reversed(self.created):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        for target, saved in reversed(self.replaced):
            with contextlib.suppress(OSError):
                os.replace(saved, target)
        for leftover in self.destination.rglob(f"{STAGING_PREFIX}{os.getpid()}-*"):
            with contextlib.suppress(OSError):
                leftover.unlink()


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


class Interrupted(KscaffoldError):
    """A signal stopped the command; what it had done was undone."""

    def __init__(self, signum: int) -> None:
        super().__init__(
            f"Interrupted by {signal.Signals(signum).name}: kscaffold new undid what it had "
            "written; nothing was created."
        )
        self.exit_code = 128 + signum


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def _signals_undo() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into an exception, as Ctrl-C is, so the run can be undone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _raise_interrupted) for number in _UNDO_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


_UNDO_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _sweep_stale_staging(folder: Path) -> None:
    """Remove staging folders of ``new`` runs that were killed (their process is gone)."""
    for stale in folder.glob(f"{STAGING_PREFIX}*"):
        pid = stale.name.removeprefix(STAGING_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _process_alive(int(pid)) and stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _commit(project: Path, spec: ProjectSpec, files: list[str]) -> None:
    """Run git init in ``project`` and commit exactly the rendered ``files``: the baseline."""
    gitutil.init_and_commit(project, f"Create {spec.name} with kscaffold", paths=files)
    # The first commit is the pristine rendering: keep it as the baseline for merges.
    gitutil.run_git(project, "update-ref", baseline_ref(project), "HEAD")


def create_project(
    spec: ProjectSpec, destination: Path, *, force: bool = False, git: bool = True
) -> Path:
    """Generate a kernel project for ``spec`` at ``destination`` and return its path.

    Nothing is written unless rendering and checking succeed. A new (or empty) destination
    appears whole, in one rename, or not at all. With ``force``, files of an existing folder that
    the template also generates are replaced and other files are kept (and never committed);
    nothing is written through a symbolic link. A run that fails, is interrupted (Ctrl-C,
    SIGTERM, SIGHUP) or killed leaves the destination as it was.
    """
    destination = destination.expanduser().absolute()
    if destination.is_symlink() and not destination.is_dir():
        raise DestinationError(f"Destination {destination} is a link to a file, not a folder.")
    destination = destination.resolve()
    _check_destination(destination, force=force)

    existing_parent = destination.parent
    while not existing_parent.exists():
        existing_parent = existing_parent.parent
    created_dest = not destination.exists()
    # A folder that is new or empty belongs wholly to this run: a failure empties it again.
    owns_destination = created_dest or _is_empty_dir(destination)
    _sweep_stale_staging(existing_parent)

    with _signals_undo():
        staging = Path(
            tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=existing_parent)
        )
        merge: _Merge | None = None
        made_git = False
        try:
            rendered = staging / "project"
            render(spec.answers(), rendered)
            _check_rendered(rendered, spec)
            files = _rendered_files(rendered)
            if owns_destination:
                # Committed before it moves: the rename is the one step that makes it appear.
                if git:
                    _commit(rendered, spec, files)
                destination.parent.mkdir(parents=True, exist_ok=True)
                if destination.exists():
                    destination.rmdir()
                rendered.rename(destination)
            else:
                _refuse_links(destination, files)
                merge = _Merge(rendered, destination, staging / "backup")
                merge.apply(files)
                # The project is its own repository (one Hub repo per kernel).
                if git and not (destination / ".git").exists():
                    made_git = True
                    _commit(destination, spec, files)
        except BaseException:
            if merge is not None:
                if made_git:
                    shutil.rmtree(destination / ".git", ignore_errors=True)
                merge.undo()
            elif owns_destination and destination.exists():
                _remove_created(destination, keep_folder=not created_dest, stop_at=existing_parent)
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return destination
