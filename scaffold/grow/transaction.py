"""Write a set of project files all at once or not at all (``add-op``, ``add-backend``, ``update``).

Every new content goes to a temporary sibling (``.<name>.kscaffold-tmp``) first; only once all of
them are written is each file renamed into place, the file that records what was done (the
answers) last, and then the caller's last step runs (recording the baseline in git). A failure
anywhere (a full disk, a read-only folder or ``.git``, Ctrl-C) puts every file back as it was,
renames being undone by renames, so that no disk space is needed to undo; the folders created on
the way and the temporary files are removed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType

from scaffold.errors import KscaffoldError

#: The suffix of the temporary siblings; none is left behind.
TEMPORARY_SUFFIX = ".kscaffold-tmp"
_OLD_SUFFIX = ".kscaffold-tmp-old"


class NothingChanged(KscaffoldError):
    """A multi-file write failed or was interrupted, and every file was put back."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _sibling(target: Path, suffix: str) -> Path:
    return target.with_name(f".{target.name}{suffix}")


def _describe(error: BaseException) -> str:
    if isinstance(error, OSError):
        reason = error.strerror or errno.errorcode.get(error.errno or 0) or str(error)
        where = f" ({error.filename})" if error.filename else ""
        return f"{reason}{where}"
    if isinstance(error, KscaffoldError):
        return str(error).rstrip(".")
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}{': ' + text if text else ''}"


class _Stopped(BaseException):
    """SIGTERM or SIGHUP arrived while files were being replaced."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


@contextlib.contextmanager
def _signals_undo() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into an exception, as Ctrl-C is, so that the files are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    numbers = (signal.SIGTERM, signal.SIGHUP)
    previous = {number: signal.signal(number, _raise_stopped) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def write_all_or_nothing(
    project: Path,
    contents: dict[str, bytes],
    deletes: Iterable[str],
    *,
    what: str,
    last: Iterable[str] = (),
    then: Callable[[], None] | None = None,
) -> None:
    """Write ``contents`` and delete ``deletes`` under ``project``, then run ``then``; all or none.

    ``last`` names the files renamed into place after all the others (the answers file). On
    any failure the project is as it was before, and :class:`NothingChanged` says what failed.
    """
    late = [path for path in contents if path in set(last)]
    order = [path for path in contents if path not in set(late)] + late
    deletes = [path for path in deletes if path not in contents]
    created_dirs: list[Path] = []
    staged: list[Path] = []
    #: (target, its original moved aside or None if it did not exist), in the order replaced.
    replaced: list[tuple[Path, Path | None]] = []
    try:
        with _signals_undo():
            _write(project, contents, order, deletes, staged, replaced, created_dirs, then)
    except BaseException as error:
        _undo(replaced, staged, created_dirs)
        if isinstance(error, (KeyboardInterrupt, _Stopped)):
            signum = error.signum if isinstance(error, _Stopped) else signal.SIGINT
            raise NothingChanged(
                f"Interrupted by {signal.Signals(signum).name}: kscaffold put back every file "
                f"it had written to {what}; nothing was changed.",
                exit_code=128 + signum,
            ) from None
        if not isinstance(error, Exception):
            raise
        raise NothingChanged(
            f"Could not {what}: {_describe(error)}. Nothing was changed; fix the cause and run "
            "the command again."
        ) from error
    for _, aside in replaced:
        if aside is not None:
            aside.unlink(missing_ok=True)


def _write(
    project: Path,
    contents: dict[str, bytes],
    order: list[str],
    deletes: list[str],
    staged: list[Path],
    replaced: list[tuple[Path, Path | None]],
    created_dirs: list[Path],
    then: Callable[[], None] | None,
) -> None:
    """Stage every file, then rename each into place, then run ``then``; record each step."""
    for relative in order:
        target = project / relative
        _make_parents(target.parent, project, created_dirs)
        temporary = _sibling(target, TEMPORARY_SUFFIX)
        staged.append(temporary)
        with open(temporary, "wb") as stream:
            stream.write(contents[relative])
            stream.flush()
            os.fsync(stream.fileno())
        if target.exists():
            os.chmod(temporary, target.stat().st_mode)
    for relative in [*order, *deletes]:
        target = project / relative
        if relative in contents:
            aside = _move_aside(target)
            replaced.append((target, aside))
            os.replace(_sibling(target, TEMPORARY_SUFFIX), target)
        elif target.exists() or target.is_symlink():
            replaced.append((target, _move_aside(target)))
    if then is not None:
        then()


def _make_parents(folder: Path, project: Path, created: list[Path]) -> None:
    missing: list[Path] = []
    while not folder.exists() and folder != project:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        created.append(path)


def _move_aside(target: Path) -> Path | None:
    """Rename ``target``'s current file to a sibling, to restore or drop later; None if none."""
    if not (target.exists() or target.is_symlink()):
        return None
    aside = _sibling(target, _OLD_SUFFIX)
    os.replace(target, aside)
    return aside


def _undo(
    replaced: list[tuple[Path, Path | None]], staged: list[Path], created_dirs: list[Path]
) -> None:
    """Put back every file replaced or deleted, drop temporaries and the folders made."""
    for target, aside in reversed(replaced):
        with contextlib.suppress(OSError):  # best effort: the other files are still put back
            if aside is not None:
                os.replace(aside, target)
            else:
                target.unlink(missing_ok=True)
    for temporary in staged:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
    for folder in reversed(created_dirs):
        with contextlib.suppress(OSError):
            folder.rmdir()
