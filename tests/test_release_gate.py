"""The release gate: publish and check refuse the same builds, and never a stale one."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import filelock
import pytest
from typer.testing import CliRunner

from scaffold.checks import check_project
from scaffold.cli import app
from scaffold.errors import KscaffoldError, PublishError
from scaffold.grow.addop import add_op
from scaffold.release.publish import plan_release
from tests.hub import FakeHubState, FakeRepo
from tests.projects import SIMULATED_VARIANT, commit_all, git
from tests.test_publish import REPO, make_project, release, write_variant

runner = CliRunner()
VARIANT = f"build/{SIMULATED_VARIANT}"


@pytest.fixture(scope="module")
def built_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = make_project(tmp_path_factory.mktemp("gate"))
    write_variant(project)
    return project


@pytest.fixture
def built(built_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_TOKEN", "hf_kscaffoldTestTokenNeverPrinted0123456789")
    return Path(shutil.copytree(built_template, tmp_path / "my-kernel", symlinks=True))


def _gate_errors(project: Path) -> list[str]:
    return [
        f"{finding.location} {finding.message} {finding.fix}"
        for finding in check_project(project)
        if finding.is_error and finding.location.startswith("build/")
    ]


def _refused_by_both(project: Path, pattern: str) -> None:
    """Publish refuses with ``pattern`` naming the variant and the fix; check agrees."""
    with pytest.raises(PublishError, match=pattern) as caught:
        plan_release(project, "1.0.0", allow_local_build=True)
    message = str(caught.value)
    assert VARIANT in message and "\n" not in message, message
    errors = _gate_errors(project)
    assert errors and re.search(pattern, errors[0], re.IGNORECASE), errors


def _append(path: str, text: str) -> Callable[[Path], None]:
    def change(project: Path) -> None:
        target = project / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as stream:
            stream.write(text)

    return change


COMMITTED_CHANGES = {
    "a kernel source": _append("csrc/cpu/relu.cpp", "\n// faster\n"),
    "the card": _append("README.md", "\nNow with a second op.\n"),
    "a new python file": _append("torch-ext/my_kernel/extra.py", "X = 1\n"),
    "build.toml": _append("build.toml", "\n# tuned\n"),
}


@pytest.mark.parametrize("change", sorted(COMMITTED_CHANGES))
def test_a_build_older_than_head_is_refused_until_rebuilt(built: Path, change: str) -> None:
    COMMITTED_CHANGES[change](built)
    commit_all(built, ".", message=change)
    _refused_by_both(built, r"older than HEAD .*run `kscaffold build`")
    shutil.rmtree(built / VARIANT)
    write_variant(built)  # what `kscaffold build` does at the new HEAD
    assert _gate_errors(built) == []
    plan_release(built, "1.0.0", allow_local_build=True)


@pytest.mark.parametrize("change", sorted(COMMITTED_CHANGES))
def test_uncommitted_changes_to_what_goes_into_the_build_are_refused(
    built: Path, change: str
) -> None:
    COMMITTED_CHANGES[change](built)
    _refused_by_both(built, r"does not hold the uncommitted changes to .*commit them")


def test_a_new_commit_with_the_same_files_is_no_stale_build(built: Path) -> None:
    git(built, "commit", "--quiet", "--amend", "-m", "reworded")
    assert _gate_errors(built) == []
    plan_release(built, "1.0.0", allow_local_build=True)


def test_untracked_files_that_are_never_uploaded_do_not_bar_a_release(built: Path) -> None:
    (built / "benchmarks" / "benchmark_scratch.py").write_text("# mine\n")
    (built / "notes.txt").write_text("todo\n")
    plan_release(built, "1.0.0", allow_local_build=True)


@pytest.mark.parametrize(
    ("commit", "pattern"),
    [
        ("f" * 40, "which this repository does not have"),
        (None, "records no commit it was built from"),
    ],
)
def test_a_build_of_an_unknown_commit_is_refused(
    built: Path, commit: str | None, pattern: str
) -> None:
    metadata_file = built / VARIANT / "metadata.json"
    metadata = json.loads(metadata_file.read_text())
    if commit is None:
        del metadata["provenance"]["kernel"]
    else:
        metadata["provenance"]["kernel"]["commit"] = commit
    metadata_file.write_text(json.dumps(metadata))
    # The digest leaves metadata.json out, so only the provenance changed.
    _refused_by_both(built, pattern)


BAD_METADATA: dict[str, bytes] = {
    "malformed": b'{"name": "my-kernel",',
    "not an object": b"[]",
    "a string name": b'{"name": 1, "version": 1}',
    "a string version": b'{"name": "my-kernel", "version": "one"}',
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "deep nesting in an object": b'{"name": "my-kernel", "x": '
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}",
    "not utf-8": b'{"name": "\xff"}',
    "empty": b"",
}


@pytest.mark.parametrize("payload", sorted(BAD_METADATA))
def test_metadata_publish_refuses_is_a_check_error_without_traceback(
    built: Path, payload: str
) -> None:
    (built / VARIANT / "metadata.json").write_bytes(BAD_METADATA[payload])
    _refused_by_both(built, r"metadata.json cannot be read by the kernels loader")
    result = runner.invoke(app, ["check", str(built)])
    assert (
        result.exit_code == 1
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    ), result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output


@pytest.mark.parametrize(
    ("tags", "version", "newest"),
    [
        (["v1.2.0"], "1.1.0", "v1.2.0"),
        (["v1.0.0", "v1.0.5"], "1.0.1", "v1.0.5"),
        (["1.3.0", "v1.10.0"], "1.9.9", "v1.10.0"),
    ],
)
def test_a_version_older_than_a_tag_of_its_major_is_refused(
    built: Path, tags: list[str], version: str, newest: str
) -> None:
    state = FakeHubState()
    state.repos[REPO] = FakeRepo(tags={tag: "0" * 40 for tag in tags})
    with pytest.raises(PublishError, match=f"already has the tag {newest}, newer than v{version}"):
        release(built, state, version)
    assert "create_commit" not in state.calls


def test_a_tag_of_another_major_does_not_block_a_release(built: Path) -> None:
    state = FakeHubState()
    state.repos[REPO] = FakeRepo(tags={"v2.0.0": "0" * 40, "v0.9.0": "0" * 40})
    release(built, state, "1.0.0")
    assert "v1.0.0" in state.repos[REPO].tags


def test_publish_and_add_op_never_overlap_a_build(built: Path) -> None:
    (built / ".kscaffold").mkdir()
    (built / ".kscaffold" / ".gitignore").write_text("*\n")
    lock = filelock.FileLock(built / ".kscaffold" / "build.lock")
    lock.acquire()
    try:
        state = FakeHubState()
        with pytest.raises(PublishError, match="Another kscaffold command .* publish again"):
            release(built, state)
        assert state.calls == []
        with pytest.raises(KscaffoldError, match="Another kscaffold command .* again"):
            add_op(built, "scale")
    finally:
        lock.release()
    release(built, FakeHubState())


def test_every_record_kscaffold_reads_survives_deep_nesting(built: Path) -> None:
    from scaffold.compiler.compdb import _load
    from scaffold.outputs.manifest import MANIFEST_PATH, load_manifest

    deep = "[" * 100_000 + "]" * 100_000
    (built / MANIFEST_PATH).parent.mkdir(parents=True, exist_ok=True)
    (built / MANIFEST_PATH).write_text(deep)
    (built / "compile_commands.json").write_text(deep)
    assert load_manifest(built) == {}
    assert _load(built / "compile_commands.json") == []
    result = runner.invoke(app, ["clean", str(built), "--dry-run"])
    assert (
        "RecursionError" not in result.output
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    ), result.output
