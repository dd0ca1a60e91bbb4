"""Hostile input: every message printed literally, nothing lost, nothing leaked, no traceback.

Each test names the defect class it guards against; the numbers in the comments refer to the
items of the adversarial review these tests came from.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomlkit
import yaml
from typer.testing import CliRunner

from scaffold.checks import check_project, has_errors
from scaffold.cli import app
from scaffold.compiler.uid import project_uid
from scaffold.grow import create
from scaffold.grow import template as template_module
from scaffold.grow.create import create_project
from scaffold.grow.evolve import add_backend, update_project
from scaffold.grow.template import render_files, template_dir
from scaffold.project.spec import ProjectSpec
from tests.helpers import no_hang, run, snapshot

runner = CliRunner()


def invoke(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


# item 14: messages are text, never rich markup.
@pytest.mark.parametrize("folder", ["a[/x]b", "[/]", "[bold]x[/bold]", "a[link=x]b"])
def test_messages_print_bracketed_paths_literally(tmp_path: Path, folder: str) -> None:
    path = tmp_path / folder
    path.mkdir(parents=True)
    for command in ("check", "clean", "build", "update"):
        code, output = invoke(command, path)
        assert code == 1, output
        assert output.startswith("Error: ") and output.count("\n") == 1, output
        assert str(path) in output, output


def test_messages_keep_toml_table_names(project: Path, tmp_path: Path) -> None:
    text = (project / "build.toml").read_text()
    start = text.index("[kernel.")
    (project / "build.toml").write_text(text[:start] + "kernel = 1\n")
    code, output = invoke("build", project)
    assert code == 1, output
    assert "build.toml: [torch] has unknown key" in output, output
    code, output = invoke("check", tmp_path / "[general]")
    assert code == 1 and "[general]" in output, output


# item 10: one build of a project at a time; the second waits for the first.
def test_concurrent_builds_take_turns_on_the_project_lock(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scaffold.compiler import BuildReporter, api

    notes: list[str] = []
    held: list[float] = []

    class Reporter(BuildReporter):
        def note(self, message: str) -> None:
            notes.append(message)

    def locked_build(*args: object, **kwargs: object) -> list[api.BuildResult]:
        held.append(time.monotonic())
        return []

    monkeypatch.setattr(api, "_build_locked", locked_build)
    (project / ".kscaffold").mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, filelock\n"
            "with filelock.FileLock(sys.argv[1]):\n"
            "    print('held', flush=True); time.sleep(1.5)\n",
            str(project / ".kscaffold" / api.LOCK_NAME),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    started = time.monotonic()

    api.build_project(project, reporter=Reporter())

    holder.wait(timeout=30)
    assert held and held[0] - started > 0.5, "the build did not wait for the lock"
    assert any("Waiting for another kscaffold build" in note for note in notes), notes


# item 15 (build side): what kscaffold build writes is in the way: one line, nothing changed.
@pytest.mark.parametrize("blocker", [".kscaffold-file", "build-file", "variant-link"])
def test_build_refuses_a_file_or_link_where_its_folders_go(
    project: Path, tmp_path: Path, blocker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scaffold.compiler import api

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    if blocker == ".kscaffold-file":
        (project / ".kscaffold").write_text("mine\n")
    elif blocker == "build-file":
        (project / "build").write_text("mine\n")
    else:
        variant = api.variant_name(api.find_torch(tmp_path / "torch-cache"), "cpu")
        (project / "build").mkdir()
        (project / "build" / variant).symlink_to(outside)
    monkeypatch.setattr(api, "run_ninja", lambda *a, **k: pytest.fail("got past the check"))
    before = sorted(p.name for p in outside.iterdir())

    code, output = invoke("build", project, "--backend", "cpu")

    assert code == 1 and output.count("\n") == 1 and "is in the way" in output, output
    assert sorted(p.name for p in outside.iterdir()) == before


# ------------------------------------------------------------------------------------------------
# kscaffold new: nothing through links, nothing half-made, nothing of the user's committed


def test_new_force_never_writes_through_links(tmp_path: Path) -> None:
    # item 2: a link in the destination where the template writes a file or a folder.
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "README.md").write_text("precious\n")
    for link, target in (("README.md", outside / "README.md"), ("csrc", outside / "dir")):
        dest = tmp_path / f"dest-{link}"
        dest.mkdir()
        (dest / link).symlink_to(target)
        code, output = invoke("new", "my-kernel", "--dest", dest, "--force", "--no-git")
        assert code == 1 and "symbolic link" in output and output.count("\n") == 1, output
        assert [p.name for p in dest.iterdir()] == [link]
    assert snapshot(outside) == {"README.md": b"precious\n"}
    assert list((outside / "dir").iterdir()) == []


def test_new_force_never_writes_through_a_hard_link(tmp_path: Path) -> None:
    outside = tmp_path / "precious.md"
    outside.write_text("precious\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    os.link(outside, dest / "README.md")
    code, output = invoke("new", "my-kernel", "--dest", dest, "--force", "--no-git")
    assert code == 0, output
    assert outside.read_text() == "precious\n"
    assert "my-kernel" in (dest / "README.md").read_text()


def test_a_failing_new_force_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # item 5: the user's README (overwritten by --force) comes back when the run fails.
    (tmp_path / "README.md").write_text("mine\n")
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "notes.txt").write_text("mine\n")
    before, folders_before = snapshot(tmp_path), sorted(p for p in tmp_path.rglob("*"))

    def broken_git(repo: Path, message: str, paths: object = None) -> None:
        (repo / ".git").mkdir()
        raise create.KscaffoldError("git exploded")

    monkeypatch.setattr(create.gitutil, "init_and_commit", broken_git)
    code, output = invoke("new", "my-kernel", "--dest", tmp_path, "--force")
    assert code == 1 and "git exploded" in output, output
    assert snapshot(tmp_path) == before
    assert sorted(p for p in tmp_path.rglob("*")) == folders_before


def test_new_force_never_makes_the_users_files_template_baseline(tmp_path: Path) -> None:
    # item 5: pre-existing files are neither committed by new nor deleted by a later update.
    dest = tmp_path / "k"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine\n")
    (dest / ".env").write_text("TOKEN=secret\n")
    code, output = invoke("new", "my-kernel", "--dest", dest, "--force")
    assert code == 0, output
    tracked = run(["git", "ls-files"], cwd=dest).split()
    assert "notes.txt" not in tracked and ".env" not in tracked
    run(["git", "add", "notes.txt"], cwd=dest)
    run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "mine"], cwd=dest)
    (dest / ".env").unlink()

    update_project(dest)

    assert (dest / "notes.txt").read_text() == "mine\n"


def test_new_refuses_a_destination_inside_its_own_template(tmp_path: Path) -> None:
    # item 8: rendering into the template would copy the template into itself, forever.
    template = template_dir()
    before = sorted(p.relative_to(template) for p in template.rglob("*"))
    for inside in (template, template / "project" / "x", template / "new-folder"):
        code, output = invoke("new", "my-kernel", "--dest", inside, "--force", "--no-git")
        assert code == 1 and "inside kscaffold's own template" in output, output
    assert sorted(p.relative_to(template) for p in template.rglob("*")) == before


def test_rendering_never_copies_bytecode_or_staging_left_in_the_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # items 8 and 17: what running the template's tests or a killed `new` left there stays there.
    copy = tmp_path / "template"
    shutil.copytree(template_dir(), copy)
    (copy / "project" / "tests" / "__pycache__").mkdir()
    (copy / "project" / "tests" / "__pycache__" / "conftest.cpython-311.pyc").write_bytes(b"\0")
    (copy / "project" / ".kscaffold-new-1-x" / "project").mkdir(parents=True)
    (copy / "project" / ".kscaffold-new-1-x" / "project" / "build.toml").write_text("")
    monkeypatch.setattr(template_module, "template_dir", lambda: copy)
    files = render_files(ProjectSpec.parse("my-kernel").answers())
    assert not [path for path in files if "__pycache__" in path or "kscaffold-new" in path]


@pytest.mark.parametrize("force", [False, True], ids=["new-folder", "force"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_during_new_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int, force: bool
) -> None:
    # item 11: SIGTERM and SIGHUP roll back like Ctrl-C: no half-made project, no staging.
    dest = tmp_path / "k"
    if force:
        dest.mkdir()
        (dest / "README.md").write_text("mine\n")
    before = snapshot(tmp_path)
    real_copy = shutil.copy2
    written: list[object] = []

    def copy_then_signal(source: object, target: object) -> object:
        written.append(target)
        if len(written) == 3:
            os.kill(os.getpid(), signum)
        return real_copy(source, target)  # type: ignore[arg-type]

    def commit_then_signal(repo: Path, message: str, paths: object = None) -> None:
        os.kill(os.getpid(), signum)

    monkeypatch.setattr(create.shutil, "copy2", copy_then_signal)
    monkeypatch.setattr(create.gitutil, "init_and_commit", commit_then_signal)
    args = ["--force"] if force else []
    code, output = invoke("new", "my-kernel", "--dest", dest, *args)
    assert code == 128 + signum and "Interrupted" in output, output
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == (["k"] if force else [])


def test_new_sweeps_the_staging_of_a_killed_run(tmp_path: Path) -> None:
    # item 11: SIGKILL cannot be caught; the next `new` removes what the dead run staged.
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    ).stdout.strip()
    stale = tmp_path / f".kscaffold-new-{dead}-abc" / "project"
    stale.mkdir(parents=True)
    (stale / "build.toml").write_text("")
    live = tmp_path / f".kscaffold-new-{os.getpid()}-live"
    live.mkdir()
    code, output = invoke("new", "my-kernel", "--dest", tmp_path / "k", "--no-git")
    assert code == 0, output
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "k"]


# ------------------------------------------------------------------------------------------------
# Baselines: one per project, and the right one after a git undo


def _commit(repo: Path, message: str) -> None:
    run(["git", "add", "--all"], cwd=repo)
    run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", message], cwd=repo)


def test_no_git_projects_in_one_repository_each_grow(tmp_path: Path) -> None:
    # item 12: the baseline ref of a --no-git project in a larger repository is its own.
    run(["git", "init", "-q"], cwd=tmp_path)
    projects = {}
    for name in ("kernel-a", "kernel-b"):
        spec = ProjectSpec.parse(name, backends="cuda")
        projects[name] = create_project(spec, tmp_path / name, git=False)
    _commit(tmp_path, "two kernels")
    for name, project in projects.items():
        add_backend(project, "cpu")
        _commit(tmp_path, f"{name}: cpu")
        assert (project / "csrc" / "cpu" / "relu.cpp").is_file(), name
        assert f'name = "{name}"' in (project / "build.toml").read_text()
    for project in projects.values():
        assert update_project(project).written == []


def test_add_backend_again_after_undoing_it_with_git(tmp_path: Path) -> None:
    # item 13: git reset undoes add-backend; running it again must redo it.
    project = create_project(ProjectSpec.parse("my-kernel", backends="cuda"), tmp_path / "k")
    add_backend(project, "cpu")
    _commit(project, "add cpu")
    run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=project)
    assert not (project / "csrc" / "cpu").exists()

    report = add_backend(project, "cpu")

    assert "csrc/cpu/relu.cpp" in report.written
    assert (project / "csrc" / "cpu" / "relu.cpp").is_file()
    assert '"cpu"' in (project / "build.toml").read_text()


# ------------------------------------------------------------------------------------------------
# Answers: validated on every read with the rules of `new`

ANSWER_EDITS = [
    ("owner", 'x"\nimport os\nos.system("echo pwned")\n#', "Invalid Hub owner"),
    ("owner", "org]\n[general.hub]\nrepo-id = 'x/y", "Invalid Hub owner"),
    ("backends", "cpu", "backends must be a list"),
    ("backends", ["cpu", "rocm"], "Unsupported backend 'rocm'"),
    ("backends", [], "No backend given"),
    ("name", "my-kernel\n", "Invalid kernel name"),
    ("name", ["my-kernel"], "name must be a string"),
    ("python_name", "../../evil", "unknown answer 'python_name'"),
    ("version", 0, "Invalid version 0"),
    ("version", "1", "version must be a whole number"),
    ("example", "matmul", "Unknown example 'matmul'"),
    ("license", "wtfpl", "Unknown license 'wtfpl'"),
]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    ANSWER_EDITS,
    ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(ANSWER_EDITS)],
)
def test_edited_answers_are_validated_like_new(
    project: Path, key: str, value: object, message: str
) -> None:
    # item 6: update and add-backend render from the answers file: never trust it.
    answers = project / ".copier-answers.yml"
    data = yaml.safe_load(answers.read_text())
    data[key] = value
    answers.write_text(yaml.safe_dump(data))
    before = snapshot(project)
    for command in (["update", project], ["add-backend", "cpu", project]):
        code, output = invoke(*command)
        assert code == 1 and output.count("\n") == 1, output
        assert ".copier-answers.yml" in output and message in output, output
    assert snapshot(project) == before


# ------------------------------------------------------------------------------------------------
# Names and options `new` accepts only if the Hub and kscaffold accept them later


@pytest.mark.parametrize(
    "args",
    [
        ["a--b"],
        ["x" * 97],
        ["k" * 300],
        ["my-kernel\n"],
        ["my-kernel", "--version", str(2**63)],
        ["my-kernel", "--owner", "org\n"],
        ["my-kernel", "--owner", "a" * 97],
    ],
    ids=[
        "double-dash",
        "97-chars",
        "300-chars",
        "trailing-newline",
        "version-2**63",
        "owner-newline",
        "owner-97",
    ],
)
def test_new_refuses_what_the_hub_or_toml_would_refuse(tmp_path: Path, args: list[str]) -> None:
    # items 15 and 16: one line, exit 2, nothing written.
    code, output = invoke("new", *args, "--dest", tmp_path / "out", "--no-git")
    assert code == 2 and output.startswith("Error: ") and output.count("\n") == 1, output
    assert len(output) < 600, output
    assert list(tmp_path.iterdir()) == []


def test_longest_accepted_name_and_version_build_a_valid_project(tmp_path: Path) -> None:
    name = "k" * 96
    code, output = invoke(
        "new", name, "--dest", tmp_path / "k", "--no-git", "--version", str(2**63 - 1)
    )
    assert code == 0, output
    assert check_project(tmp_path / "k") == [] or not has_errors(check_project(tmp_path / "k"))


# ------------------------------------------------------------------------------------------------
# item 15: tracebacks become one line


def test_a_deeply_nested_build_toml_is_one_line(project: Path) -> None:
    (project / "build.toml").write_text('[general]\nname = "x"\ny = ' + "[" * 3000 + "]" * 3000)
    for command in ("build", "check"):
        code, output = invoke(command, project)
        assert code == 1 and "Traceback" not in output, output
        assert "nest too deeply" in output, output


def test_os_errors_at_the_boundary_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(answers: object, destination: Path) -> None:
        raise PermissionError(13, "Permission denied", str(destination))

    monkeypatch.setattr(create, "render", read_only)
    code, output = invoke("new", "my-kernel", "--dest", tmp_path / "k")
    assert code == 1 and output.count("\n") == 1 and "Permission denied" in output, output
    monkeypatch.undo()
    code, output = invoke("new", "my-kernel", "--dest", "/proc/kscaffold-test/k", "--no-git")
    assert code == 1 and output.count("\n") == 1 and output.startswith("Error: "), output


def test_a_source_linked_from_outside_a_no_git_project_hashes(tmp_path: Path) -> None:
    project = create_project(
        ProjectSpec.parse("my-kernel", backends="cpu"), tmp_path / "k", git=False
    )
    outside = tmp_path / "elsewhere.cpp"
    source = project / "csrc" / "cpu" / "relu.cpp"
    outside.write_bytes(source.read_bytes())
    source.unlink()
    source.symlink_to(outside)
    uid = project_uid(project, [project / "build.toml", source], project / ".kscaffold")
    assert re.fullmatch(r"[0-9a-f]{7}", uid), uid


# item 9: a FIFO named like an artifact or a source is never opened (opening one blocks).
FIFO_NAMES = [
    "compile_commands.json",
    "setup.py",
    "CMakeLists.txt",
    "metadata-cpu.json",
    "cmake/utils.cmake",
    "csrc/cpu/extra.cpp",
    "csrc/extra.h",
    "torch-ext/my_kernel/extra.py",
    "torch-ext/my_kernel/_ops.py",
    "tests/__pycache__/x.cpython-311.pyc",
    ".ruff_cache/CACHEDIR.TAG",
    "x.egg-info/PKG-INFO",
]


def test_fifos_named_like_artifacts_never_hang_check_or_clean(project: Path) -> None:
    for relative in FIFO_NAMES:
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(project / relative)
    with no_hang(60):
        for command in (["check"], ["clean", "--dry-run"], ["clean", "--all"]):
            code, output = invoke(*command, project)
            assert code in (0, 1) and "Traceback" not in output, output
    assert all(stat.S_ISFIFO(os.lstat(project / relative).st_mode) for relative in FIFO_NAMES)


# item 17: check refuses what build or the loader refuses later.
def _edit_build_toml(project: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = tomlkit.parse((project / "build.toml").read_text())
    change(document)  # type: ignore[arg-type]
    (project / "build.toml").write_text(tomlkit.dumps(document))


BUILD_RULE_BREAKS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "pyext-empty": (lambda d: d["torch"].__setitem__("pyext", ["py", ""]), "pyext entry ''"),
    "pyext-dotdot": (lambda d: d["torch"].__setitem__("pyext", [".."]), "pyext entry '..'"),
    "pyext-slash": (lambda d: d["torch"].__setitem__("pyext", ["/"]), "pyext entry '/'"),
    "src-twice": (
        lambda d: d["torch"]["src"].append("csrc/cpu/relu.cpp"),
        "also listed in [torch]",
    ),
    "src-build-toml": (
        lambda d: d["torch"]["src"].append("build.toml"),
        "'build.toml' is not a C++/CUDA source",
    ),
    "cutlass-on-cpu": (
        lambda d: d["kernel"]["relu_cpu"]["depends"].append("cutlass_3_8"),
        "CUTLASS is CUDA-only",
    ),
    "license-not-an-id": (
        lambda d: d["general"].__setitem__("license", "My License"),
        "license 'My License' is not a license id",
    ),
}


@pytest.mark.parametrize("case", list(BUILD_RULE_BREAKS.values()), ids=list(BUILD_RULE_BREAKS))
def test_check_refuses_what_build_or_the_loader_refuses(
    project: Path, case: tuple[Callable[[dict[str, Any]], None], str]
) -> None:
    change, message = case
    _edit_build_toml(project, change)
    findings = check_project(project)
    assert any(message in f.message and f.is_error for f in findings), [str(f) for f in findings]


def test_add_backend_never_writes_through_a_linked_folder(tmp_path: Path) -> None:
    # "nothing follows a symlink out of the project", for add-backend and update too.
    project = create_project(ProjectSpec.parse("my-kernel", backends="cuda"), tmp_path / "k")
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "csrc" / "cpu").symlink_to(outside)
    _commit(project, "a linked folder")
    before = snapshot(project)

    code, output = invoke("add-backend", "cpu", project)

    assert code == 1 and "symbolic link" in output and output.count("\n") == 1, output
    assert list(outside.iterdir()) == []
    assert snapshot(project) == before


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_real_signal_to_a_running_new_leaves_nothing(tmp_path: Path, signum: int) -> None:
    # item 11, end to end: the signal reaches a real `kscaffold new` while it renders.
    for attempt in range(5):
        parent = tmp_path / str(attempt)
        parent.mkdir()
        process = subprocess.Popen(
            [sys.executable, "-m", "scaffold", "new", "my-kernel", "--dest", str(parent / "k")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            if any(parent.glob(".kscaffold-new-*/project/*")):
                process.send_signal(signum)
                break
            time.sleep(0.002)
        _, stderr = process.communicate(timeout=60)
        if process.returncode == 0:
            continue  # finished before the signal: try again
        assert process.returncode == 128 + signum, stderr
        assert "Interrupted" in stderr and "Traceback" not in stderr, stderr
        assert list(parent.iterdir()) == []
        return
    pytest.fail("kscaffold new always finished before the signal could be sent")
