"""add-op, add-backend and update write every file or none, whatever fails on the way."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from scaffold.errors import KscaffoldError
from scaffold.grow import evolve as evolve_module
from scaffold.grow import transaction
from scaffold.grow.addop import add_op
from scaffold.grow.evolve import add_backend, baseline_ref
from scaffold.project.answers import load_answers
from tests.projects import git, new_project

Grow = Callable[[Path], object]


def _state(project: Path) -> tuple[dict[str, tuple[int, bytes | None]], str, str]:
    """Every path under the project but .git (mode, bytes), HEAD's status, the baseline ref."""
    tree: dict[str, tuple[int, bytes | None]] = {}
    for path in sorted(project.rglob("*")):
        relative = path.relative_to(project)
        if relative.parts[0] == ".git":
            continue
        mode = path.lstat().st_mode
        tree[relative.as_posix()] = (mode, path.read_bytes() if path.is_file() else None)
    status = git(project, "status", "--porcelain", "--untracked-files=all")
    ref = git(project, "rev-parse", baseline_ref(project))
    return tree, status, ref


def _leftovers(project: Path) -> list[str]:
    return [
        path.relative_to(project).as_posix()
        for path in project.rglob("*")
        if ".kscaffold-tmp" in path.name
    ]


GROWS: dict[str, Grow] = {
    "add-op": lambda project: add_op(project, "scale", like="relu"),
    "add-backend": lambda project: add_backend(project, "cuda"),
}


@pytest.fixture(scope="module")
def cpu_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return new_project(tmp_path_factory.mktemp("atomic") / "my-kernel", backends=("cpu",))


@pytest.fixture
def fresh(cpu_project: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(cpu_project, tmp_path / "my-kernel", symlinks=True))


def _fail_on_call(
    monkeypatch: pytest.MonkeyPatch, module: object, name: str, nth: int, error: BaseException
) -> list[int]:
    """Make ``module.name`` raise ``error`` on its ``nth`` call (1-based), only then."""
    original = getattr(module, name)
    calls = [0]

    def failing(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] == nth:
            raise error
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, failing)
    return calls


@pytest.mark.parametrize("grow", sorted(GROWS))
@pytest.mark.parametrize(
    ("function", "nth"),
    [("replace", 1), ("replace", 4), ("replace", 9), ("fsync", 1), ("fsync", 5)],
)
def test_a_full_disk_partway_changes_nothing_and_a_rerun_succeeds(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, grow: str, function: str, nth: int
) -> None:
    before = _state(fresh)
    full = OSError(errno.ENOSPC, "No space left on device")
    with monkeypatch.context() as patch:
        _fail_on_call(patch, transaction.os, function, nth, full)
        with pytest.raises(KscaffoldError) as caught:
            GROWS[grow](fresh)
    message = str(caught.value)
    assert "No space left on device" in message and "Nothing was changed" in message, message
    assert "\n" not in message
    assert _state(fresh) == before
    assert _leftovers(fresh) == []
    GROWS[grow](fresh)  # the cause gone, the same command succeeds
    assert _state(fresh)[0] != before[0]


@pytest.mark.parametrize("grow", sorted(GROWS))
def test_a_git_that_refuses_the_baseline_changes_nothing(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, grow: str
) -> None:
    before = _state(fresh)

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(fresh / ".git" / "objects"))

    monkeypatch.setattr(evolve_module, "record_baseline", read_only)
    with pytest.raises(KscaffoldError, match="Read-only file system .*Nothing was changed"):
        GROWS[grow](fresh)
    assert _state(fresh) == before
    assert _leftovers(fresh) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_git_folder_changes_nothing(fresh: Path) -> None:
    before = _state(fresh)
    objects = fresh / ".git" / "objects"
    folders = [objects, *(p for p in objects.rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(0o555)
    try:
        with pytest.raises(KscaffoldError, match="Nothing was changed"):
            add_op(fresh, "scale")
    finally:
        for folder in folders:
            folder.chmod(0o755)
    assert _state(fresh) == before
    add_op(fresh, "scale")


@pytest.mark.parametrize("grow", sorted(GROWS))
@pytest.mark.parametrize("nth", [1, 6])
def test_ctrl_c_partway_changes_nothing(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, grow: str, nth: int
) -> None:
    before = _state(fresh)
    with monkeypatch.context() as patch:
        _fail_on_call(patch, transaction.os, "replace", nth, KeyboardInterrupt())
        with pytest.raises(KscaffoldError, match="Interrupted.*nothing was changed") as caught:
            GROWS[grow](fresh)
    assert getattr(caught.value, "exit_code", None) == 130
    assert _state(fresh) == before
    assert _leftovers(fresh) == []


def test_the_answers_are_renamed_into_place_last(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renamed: list[str] = []
    original = transaction.os.replace

    def recording(source: object, target: object) -> None:
        renamed.append(Path(str(target)).name)
        original(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(transaction.os, "replace", recording)
    add_op(fresh, "scale")
    into_place = [name for name in renamed if "kscaffold-tmp" not in name]
    assert into_place[-1] == ".copier-answers.yml"
    assert [entry.name for entry in load_answers(fresh).ops] == ["relu", "scale"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_partway_changes_nothing(
    fresh: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    before = _state(fresh)
    original = transaction.os.replace
    calls = [0]

    def signalled(source: object, target: object) -> None:
        calls[0] += 1
        if calls[0] == 5:
            os.kill(os.getpid(), signum)
        original(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(transaction.os, "replace", signalled)
    with pytest.raises(KscaffoldError, match="Interrupted by SIG.*nothing was changed") as caught:
        add_op(fresh, "scale")
    assert getattr(caught.value, "exit_code", None) == 128 + signum
    monkeypatch.undo()
    assert _state(fresh) == before
    assert _leftovers(fresh) == []
