"""The project's lock, ``.kscaffold/build.lock``: one build, add-op or publish of a project at once.

``kscaffold build`` holds it while it compiles and installs ``build/``; a ``publish`` holds it from
its first check to its last upload, and ``add-op``, ``add-backend`` and ``update`` while they
write, so that a release never mixes files of two states of the project. Build waits for the
lock; the others, which a user runs by hand, say that the project is busy instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import filelock

from scaffold.errors import KscaffoldError
from scaffold.vocabulary import SCRATCH_DIR

#: The lock's file in :data:`~scaffold.vocabulary.SCRATCH_DIR` (the build's own lock).
LOCK_NAME = "build.lock"


@contextlib.contextmanager
def holding_project_lock(
    project: Path, what: str, error: type[KscaffoldError] = KscaffoldError, *, create: bool = True
) -> Iterator[None]:
    """Hold the project's lock while ``what`` runs; ``error`` if another command holds it.

    Without ``create``, a project that has no state folder (never built) is not locked: no
    build has made anything to mix with, and the project stays exactly as it was.
    """
    state = project / SCRATCH_DIR
    if not create and not state.is_dir():
        yield
        return
    try:
        if not state.is_dir() and not state.is_symlink():
            state.mkdir()
            # The state folder is kscaffold's; git and tools leave it alone.
            (state / ".gitignore").write_text("*\n", encoding="utf-8")
        lock = filelock.FileLock(state / LOCK_NAME)
        lock.acquire(timeout=0)
    except filelock.Timeout:
        raise error(
            f"Another kscaffold command (a build, add-op or publish) is working on {project} "
            f"and holds {SCRATCH_DIR}/{LOCK_NAME}: wait for it to finish, then {what} again."
        ) from None
    except OSError as problem:
        raise error(
            f"Cannot take the project's lock {state / LOCK_NAME} "
            f"({problem.strerror or problem}): make {project} writable, then {what} again."
        ) from None
    try:
        yield
    finally:
        lock.release()
