"""`kscaffold clean`: removes what builds generated, never a user's file, and says why."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from scaffold.checks import check_project
from scaffold.cli import app
from scaffold.errors import NotAProjectError
from scaffold.outputs.manifest import MANIFEST_PATH
from scaffold.release.clean import CleanReport, clean_project
from tests.helpers import no_hang, snapshot
from tests.projects import (
    SIMULATED_VARIANT,
    commit_all,
    copy_project,
    git,
    new_project,
    simulate_build,
)

runner = CliRunner()
PYTHON_NAME = "my_kernel"


def folders(root: Path) -> set[str]:
    """Every folder under ``root`` except git's, as relative POSIX paths."""
    found = set()
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if relative.parts[0] != ".git" and path.is_dir() and not path.is_symlink():
            found.add(relative.as_posix())
    return found


def removed_paths(report: CleanReport) -> set[str]:
    return {removal.path for removal in report.removed}


def skipped(report: CleanReport) -> dict[str, str]:
    return {skip.path: skip.reason for skip in report.skipped}


# ------------------------------------------------------------------------------------------------
# The round trip, on a simulated build (fast)


def test_new_build_clean_all_restores_the_tree(project: Path) -> None:
    after_new, folders_after_new = snapshot(project), folders(project)
    simulate_build(project)

    report = clean_project(project, include_build=True)

    assert snapshot(project) == after_new
    assert folders(project) == folders_after_new
    assert not report.skipped, report.skipped
    assert {".kscaffold", "compile_commands.json", "build"} <= removed_paths(report)


def test_clean_keeps_the_release_payload_without_all(project: Path) -> None:
    after_new = snapshot(project)
    simulate_build(project)
    payload = {path: data for path, data in snapshot(project).items() if path.startswith("build/")}

    report = clean_project(project)

    record = {path: data for path, data in snapshot(project).items() if path.startswith(".ksc")}
    assert set(record) == {".kscaffold/generated.json", ".kscaffold/.gitignore"}
    assert snapshot(project) == {**after_new, **payload, **record}
    assert sorted(report.kept_build) == sorted(payload)
    assert not any(path.startswith("build") for path in removed_paths(report))


def test_clean_then_clean_all_removes_the_release_payload(project: Path) -> None:
    # issue 11 item 17: the first clean kept build/ but removed the record that proves it.
    after_new, folders_after_new = snapshot(project), folders(project)
    simulate_build(project)
    clean_project(project)
    assert clean_project(project).removed == []  # nothing more without --all
    leftovers = [f for f in check_project(project) if f.location.startswith(".kscaffold")]
    assert leftovers == []  # the kept record is no leftover

    report = clean_project(project, include_build=True)

    assert {"build", ".kscaffold"} <= removed_paths(report)
    assert snapshot(project) == after_new
    assert folders(project) == folders_after_new


def test_dry_run_changes_nothing_and_lists_exactly_what_goes(project: Path) -> None:
    simulate_build(project)
    (project / "tests" / "__pycache__").mkdir()
    (project / "tests" / "__pycache__" / "conftest.cpython-311.pyc").write_bytes(b"\0pyc")
    before, folders_before = snapshot(project), folders(project)

    dry = clean_project(project, dry_run=True, include_build=True)

    assert snapshot(project) == before
    assert folders(project) == folders_before
    assert dry.dry_run
    real = clean_project(project, include_build=True)
    assert real.removed == dry.removed
    assert all(not (project / removal.path).exists() for removal in real.removed)


def test_clean_works_outside_git(tmp_path: Path) -> None:
    project = new_project(tmp_path / "my-kernel", git=False)
    after_new = snapshot(project)
    simulate_build(project)

    clean_project(project, include_build=True)

    assert snapshot(project) == after_new


# ------------------------------------------------------------------------------------------------
# What stays, and why


def test_tracked_generated_files_stay(project: Path) -> None:
    simulate_build(project)
    commit_all(project, "compile_commands.json", f"build/{SIMULATED_VARIANT}/_ops.py")

    report = clean_project(project, include_build=True)

    assert (project / "compile_commands.json").is_file()
    assert (project / "build" / SIMULATED_VARIANT / "_ops.py").is_file()
    reasons = skipped(report)
    assert reasons["compile_commands.json"].startswith("tracked by git")
    assert reasons[f"build/{SIMULATED_VARIANT}/_ops.py"].startswith("tracked by git")
    assert not (project / "build" / SIMULATED_VARIANT / "metadata.json").exists()


def test_a_generated_file_edited_since_the_build_stays(project: Path) -> None:
    simulate_build(project)
    (project / "compile_commands.json").write_text("[] # mine now\n")

    report = clean_project(project, include_build=True)

    assert (project / "compile_commands.json").read_text() == "[] # mine now\n"
    assert skipped(report)["compile_commands.json"] == "changed since kscaffold build wrote it"


KERNEL_BUILDER_FILES = {
    "CMakeLists.txt": 'cmake_minimum_required(VERSION 3.26)\nset(OPS_NAME "_my_kernel_cpu_x")\n',
    "setup.py": "from setuptools.command.build_ext import build_ext\nclass CMakeExtension: ...\n",
    "pyproject.toml": '[build-system]\nrequires = ["cmake>=3.26", "torch"]\n',
    "torch-ext/registration.h": "#define TORCH_LIBRARY_EXPAND(NAME, MODULE)\n"
    "#define REGISTER_EXTENSION(NAME)\n",
    "metadata-cpu.json": '{"id": "_my_kernel_cpu_x", "python-depends": []}',
    "metadata-cuda.json": '{"python-depends": []}',
    "cmake/utils.cmake": "function(run_python OUT EXPR ERR_MSG)\nendfunction()\n",
    "cmake/hipify.py": "import argparse\n",
    "cmake/_ops.py.in": "ops = torch.ops.@OPS_NAME@\n",
    f"torch-ext/{PYTHON_NAME}/_ops.py": "import torch\nops = torch.ops._my_kernel_cpu_x\n"
    "def add_op_namespace_prefix(op_name): ...\n",
}


def test_files_shaped_like_create_pyproject_output_stay(project: Path) -> None:
    # issue 11 item 3: a user's setup.py/pyproject.toml/CMakeLists.txt/cmake/*.cmake/metadata-*.json
    # with create-pyproject's shape is indistinguishable from the tool's: it stays, with the reason.
    for relative, text in KERNEL_BUILDER_FILES.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    before = snapshot(project)

    report = clean_project(project, include_build=True)

    assert snapshot(project) == before
    assert not report.removed
    assert set(skipped(report)) == set(KERNEL_BUILDER_FILES)
    assert all("create-pyproject" in reason for reason in skipped(report).values())


def test_user_files_named_like_kernel_builder_files_stay(project: Path) -> None:
    for relative in KERNEL_BUILDER_FILES:
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text("my own notes\n")
    before = snapshot(project)

    report = clean_project(project)

    assert snapshot(project) == before
    assert not report.removed


def test_a_committed_kernel_builder_lookalike_survives_check_fix_then_clean(project: Path) -> None:
    # issue 11 item 3: following check's advice for a tracked file (git rm --cached) must not hand
    # the user's file to clean, and the generated .gitignore must not hide it from the guard.
    (project / "setup.py").write_text(KERNEL_BUILDER_FILES["setup.py"])
    (project / "cmake").mkdir()
    (project / "cmake" / "utils.cmake").write_text(KERNEL_BUILDER_FILES["cmake/utils.cmake"])
    commit_all(project, "setup.py", "cmake/utils.cmake")
    assert clean_project(project).removed == []
    git(project, "rm", "--cached", "--quiet", "setup.py", "cmake/utils.cmake")

    report = clean_project(project)

    assert not report.removed
    assert (project / "setup.py").read_text() == KERNEL_BUILDER_FILES["setup.py"]
    assert (project / "cmake" / "utils.cmake").is_file()


def test_caches_go_but_not_what_only_resembles_them(project: Path) -> None:
    pycache = project / "tests" / "__pycache__"
    pycache.mkdir()
    (pycache / "conftest.cpython-311.pyc").write_bytes(b"\0")
    egg = project / "torch-ext" / "my_kernel.egg-info"
    egg.mkdir()
    for name in ("PKG-INFO", "SOURCES.txt", "top_level.txt"):
        (egg / name).write_text("x\n")
    cache = project / ".ruff_cache"
    (cache / "0.6").mkdir(parents=True)
    (cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (cache / "0.6" / "123").write_bytes(b"\0")
    # Look-alikes: a note kept in a __pycache__, a folder with a bogus tag, an egg without PKG-INFO.
    (project / "csrc" / "__pycache__").mkdir()
    (project / "csrc" / "__pycache__" / "notes.txt").write_text("mine\n")
    (project / "csrc" / "__pycache__" / "old.pyc").write_bytes(b"\0")
    (project / "data").mkdir()
    (project / "data" / "CACHEDIR.TAG").write_text("not a real tag\n")
    (project / "other.egg-info").mkdir()
    (project / "other.egg-info" / "SOURCES.txt").write_text("x\n")

    report = clean_project(project)

    assert removed_paths(report) == {
        "tests/__pycache__",
        "torch-ext/my_kernel.egg-info",
        ".ruff_cache",
        "csrc/__pycache__/old.pyc",
    }
    assert (project / "csrc" / "__pycache__" / "notes.txt").is_file()
    assert (project / "data" / "CACHEDIR.TAG").is_file()
    assert (project / "other.egg-info" / "SOURCES.txt").is_file()
    assert skipped(report)["csrc/__pycache__/notes.txt"].startswith("not Python bytecode")


def test_nix_result_links_go_other_links_stay(project: Path) -> None:
    os.symlink("/nix/store/0000000000000000000000000000000-my-kernel", project / "result")
    os.symlink("/nix/store/0000000000000000000000000000000-dev", project / "result-dev")
    os.symlink("csrc", project / "result-mine")

    report = clean_project(project)

    assert removed_paths(report) == {"result", "result-dev"}
    assert not os.path.lexists(project / "result")
    assert (project / "result-mine").is_symlink()
    assert "does not point into /nix/store" in skipped(report)["result-mine"]


def test_manifest_entries_outside_the_project_are_ignored(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    manifest = project / MANIFEST_PATH
    manifest.parent.mkdir(parents=True)
    digest = hashlib.sha256(b"keep me\n").hexdigest()
    files = {"../precious.txt": digest, str(outside): digest}
    manifest.write_text(json.dumps({"version": 1, "files": files}))

    clean_project(project, include_build=True)

    assert outside.read_text() == "keep me\n"


def test_pre_existing_empty_folders_stay(project: Path) -> None:
    (project / "empty").mkdir()
    simulate_build(project)

    clean_project(project, include_build=True)

    assert (project / "empty").is_dir()


def test_clean_refuses_a_folder_without_build_toml(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(KERNEL_BUILDER_FILES["setup.py"])
    with pytest.raises(NotAProjectError, match="no build.toml"):
        clean_project(tmp_path)
    assert (tmp_path / "setup.py").is_file()


@pytest.mark.parametrize(
    "build_toml", ["", "[package]\nname = 'x'\n", "not toml [", "general = 1\n"]
)
def test_clean_needs_a_kscaffold_or_kernel_builder_project(tmp_path: Path, build_toml: str) -> None:
    # issue 11 item 4: any folder with some build.toml is not a kernel project.
    (tmp_path / "build.toml").write_text(build_toml)
    cache = tmp_path / "lib" / "__pycache__"
    cache.mkdir(parents=True)
    (cache / "mod.cpython-311.pyc").write_bytes(b"\0")
    with pytest.raises(NotAProjectError, match="neither a kscaffold project"):
        clean_project(tmp_path)
    assert (cache / "mod.cpython-311.pyc").is_file()


def test_a_kernel_builder_project_without_answers_is_cleaned(tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text('[general]\nname = "x"\n')
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert removed_paths(clean_project(tmp_path)) == {"__pycache__"}


def _environment_and_foreign_projects(project: Path) -> None:
    """What clean must never enter: venvs, other projects, git data, other tools' caches."""
    site = project / ".venv" / "lib" / "python3.11" / "site-packages"
    for root in (site, project / "venv" / "lib", project / "env" / "lib"):
        (root / "foo.egg-info").mkdir(parents=True)
        (root / "foo.egg-info" / "PKG-INFO").write_text("Name: foo\n")
        (root / "foo" / "__pycache__").mkdir(parents=True)
        (root / "foo" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (project / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    for marker in ("pyproject.toml", "build.toml", "Cargo.toml", ".git"):
        sub = project / "vendor" / marker.replace(".", "_")
        (sub / "__pycache__").mkdir(parents=True)
        (sub / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
        (sub / marker).write_text("")
        (sub / "_cmake_build").mkdir()
        (sub / "_cmake_build" / "CMakeCache.txt").write_text("x\n")
    target = project / "rust" / "target"
    target.mkdir(parents=True)
    (target / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (target / "release.bin").write_bytes(b"\0")


def test_clean_never_enters_venvs_or_foreign_projects(project: Path) -> None:
    # issue 11 item 4: .venv/ (installed packages' .egg-info), venv/, a folder with pyvenv.cfg,
    # subprojects with their own build.toml/pyproject.toml/Cargo.toml/.git, cargo's target/.
    _environment_and_foreign_projects(project)
    before = snapshot(project, exclude=(".git",))

    report = clean_project(project, include_build=True)

    assert snapshot(project, exclude=(".git",)) == before, report
    assert not report.removed
    assert not any(skip.path.startswith((".venv", "venv", "env/")) for skip in report.skipped)


# ------------------------------------------------------------------------------------------------
# CLI


def test_cli_dry_run_lists_and_clean_removes(project: Path) -> None:
    simulate_build(project)
    (project / "CMakeLists.txt").write_text("my own\n")

    dry = runner.invoke(app, ["clean", str(project), "--dry-run", "--all"])
    assert dry.exit_code == 0, dry.output
    assert "Would remove:" in dry.output
    assert f"build/{SIMULATED_VARIANT}/metadata.json  (written by kscaffold build)" in dry.output
    assert ".kscaffold/  (kscaffold's build scratch folder)" in dry.output
    assert "CMakeLists.txt  (named like kernel-builder's create-pyproject output" in dry.output
    assert "Dry run: nothing was changed." in dry.output
    assert (project / ".kscaffold").is_dir()

    real = runner.invoke(app, ["clean", str(project)])
    assert real.exit_code == 0, real.output
    assert "Removed:" in real.output
    assert "Kept build/ (4 files kscaffold built, the release payload)" in real.output
    assert sorted(p.name for p in (project / ".kscaffold").iterdir()) == [
        ".gitignore",
        "generated.json",
    ]

    again = runner.invoke(app, ["clean", str(project)])
    assert "Nothing to clean." in again.output, again.output


def test_cli_clean_outside_a_project_is_one_red_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["clean", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "not a kernel project" in result.output


# ------------------------------------------------------------------------------------------------
# The property: new -> build -> user files -> clean --all == new + user files

_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_-."
ARTIFACT_LIKE_NAMES = (
    "_ops.py",
    "_ops.py.in",
    "registration.h",
    "metadata-cpu.json",
    "metadata-cuda.json",
    "metadata.json",
    "CMakeLists.txt",
    "setup.py",
    "pyproject.toml",
    "compile_commands.json",
    "build.ninja",
    "utils.cmake",
    "get_gpu_lang.py",
    "generated.json",
    "result",
    "PKG-INFO",
    "__init__.py",
    "x.txt",
)
# Folders only tools create: what lies in them is theirs (documented in scaffold.outputs.artifacts).
_TOOL_OWNED = {".kscaffold", "_cmake_build", "__pycache__", ".git"}


def _is_user_name(name: str) -> bool:
    return (
        name not in _TOOL_OWNED
        and not name.startswith(".")
        and not name.endswith((".egg-info", ".pyc", ".pyo"))
        and name != "CACHEDIR.TAG"
    )


file_names = st.one_of(
    st.sampled_from(ARTIFACT_LIKE_NAMES),
    st.text(_NAME_CHARS, min_size=1, max_size=12).filter(_is_user_name),
)


#: Contents a user's file may have: anything, or exactly the shape of create-pyproject's output.
file_contents = st.one_of(
    st.binary(max_size=48),
    st.sampled_from([text.encode() for text in KERNEL_BUILDER_FILES.values()]),
)
#: A virtual environment inside the project, with what installed packages carry.
VENV_FOLDERS = (
    ".venv",
    ".venv/lib/python3.11/site-packages",
    ".venv/lib/python3.11/site-packages/foo.egg-info",
    ".venv/lib/python3.11/site-packages/foo/__pycache__",
    "venv/lib/__pycache__",
)
VENV_NAMES = ("PKG-INFO", "SOURCES.txt", "top_level.txt", "mod.cpython-311.pyc", "pyvenv.cfg")


def user_files(variant: str) -> st.SearchStrategy[list[tuple[str, bytes, bool, bool]]]:
    """(path, content, tracked, fifo) for files a user adds anywhere in a built project.

    Some are FIFOs named like artifacts (opening one would hang); some live in a ``.venv/``.
    """
    folder_names = st.one_of(
        st.sampled_from(
            [
                "",
                "csrc",
                "csrc/cpu",
                "torch-ext",
                f"torch-ext/{PYTHON_NAME}",
                "tests",
                "tests/__pycache__",
                "cmake",
                "build",
                f"build/{variant}",
                ".kscaffold",
                "notes",
                "notes/deep",
            ]
        ),
        st.text(_NAME_CHARS, min_size=1, max_size=8).filter(_is_user_name),
    )
    regular = st.tuples(folder_names, file_names, file_contents, st.booleans(), st.just(False))
    venv = st.tuples(
        st.sampled_from(VENV_FOLDERS),
        st.one_of(st.sampled_from(VENV_NAMES), file_names),
        file_contents,
        st.booleans(),
        st.just(False),
    )
    fifo_names = st.sampled_from(
        [*ARTIFACT_LIKE_NAMES, "CACHEDIR.TAG", "PKG-INFO", "x.cpython-311.pyc"]
    )
    fifo = st.tuples(folder_names, fifo_names, st.just(b""), st.just(False), st.just(True))
    entry = st.one_of(regular, venv, fifo)
    return st.lists(entry, min_size=1, max_size=6).map(
        lambda items: [
            ((f"{folder}/{name}" if folder else name), data, tracked, is_fifo)
            for folder, name, data, tracked, is_fifo in items
        ]
    )


def _place(project: Path, files: UserFiles) -> tuple[dict[str, bytes], list[str]]:
    """Write the files that fit in the tree (no file in the way of a folder, or the reverse).

    Returns the regular files placed and the FIFOs made. A FIFO only takes a free name, and a
    file in a tool's own folders (``.kscaffold/``, a ``__pycache__``'s ``.pyc``) replaces nothing.
    """
    placed: dict[str, bytes] = {}
    fifos: list[str] = []
    tracked: list[str] = []
    for relative, data, track, is_fifo in files:
        path = project / relative
        parents = list(Path(relative).parents)[:-1]
        if path.is_dir() or any((project / parent).is_file() for parent in parents):
            continue
        if relative.startswith(".kscaffold/") and not is_fifo:
            continue  # kscaffold's folder: what a user puts there is documented to go
        if relative in fifos or (is_fifo and os.path.lexists(path)):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if is_fifo:
            placed.pop(relative, None)
            os.mkfifo(path)
            fifos.append(relative)
            continue
        path.write_bytes(data)
        placed[relative] = data
        if track:
            tracked.append(relative)
    if tracked:
        commit_all(project, *tracked)
    return placed, fifos


UserFiles = list[tuple[str, bytes, bool, bool]]


@dataclass(frozen=True)
class Built:
    """A built project to copy, and its files right after ``new``."""

    project: Path
    after_new: dict[str, bytes] = field(repr=False)
    variant: str = SIMULATED_VARIANT


def tree_diff(actual: dict[str, bytes], expected: dict[str, bytes]) -> str:
    """What differs between two snapshots, path by path."""
    lines = [f"  unexpected: {path}" for path in sorted(set(actual) - set(expected))]
    lines += [f"  missing:    {path}" for path in sorted(set(expected) - set(actual))]
    lines += [
        f"  changed:    {path}"
        for path in sorted(set(actual) & set(expected))
        if actual[path] != expected[path]
    ]
    return "\n".join(lines)


def assert_clean_restores(built: Built, files: UserFiles) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        project = copy_project(built.project, Path(scratch) / "my-kernel")
        placed, fifos = _place(project, files)
        assume(placed or fifos)
        expected = {**built.after_new, **placed}
        before = snapshot(project)

        with no_hang():
            dry = clean_project(project, dry_run=True, include_build=True)
        assert snapshot(project) == before, "--dry-run changed the tree"

        with no_hang():
            report = clean_project(project, include_build=True)
        assert report.removed == dry.removed
        after = snapshot(project)
        assert after == expected, f"{tree_diff(after, expected)}\n{report}"
        assert all(stat.S_ISFIFO(os.lstat(project / fifo).st_mode) for fifo in fifos), report
        expected_folders = {
            parent.as_posix()
            for relative in [*expected, *fifos]
            for parent in Path(relative).parents
            if parent.as_posix() != "."
        }
        assert folders(project) == expected_folders, report


@pytest.fixture(scope="module")
def simulated(template_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    project = copy_project(template_project, tmp_path_factory.mktemp("simulated") / "my-kernel")
    after_new = snapshot(project)
    simulate_build(project)
    return Built(project, after_new)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=user_files(SIMULATED_VARIANT))
def test_clean_after_a_simulated_build_keeps_every_user_file(
    simulated: Built, files: UserFiles
) -> None:
    assert_clean_restores(simulated, files)


# ------------------------------------------------------------------------------------------------
# The same on a real build (slow: compiles the CPU backend once for the module)


@pytest.fixture(scope="module")
def really_built(template_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    from scaffold.compiler import build_project

    project = copy_project(template_project, tmp_path_factory.mktemp("built") / "my-kernel")
    after_new = snapshot(project)
    (result,) = build_project(project, backend="cpu")
    return Built(project, after_new, result.variant)


@pytest.mark.slow
def test_new_build_clean_restores_the_tree_byte_for_byte(
    really_built: Built, template_project: Path, tmp_path: Path
) -> None:
    project = copy_project(really_built.project, tmp_path / "my-kernel")
    assert (project / "build" / really_built.variant / "metadata.json").is_file()
    assert git(project, "status", "--porcelain") == ""  # the build wrote only ignored files

    report = clean_project(project, include_build=True)

    assert not report.skipped, report.skipped
    after = snapshot(project)
    assert after == really_built.after_new, tree_diff(after, really_built.after_new)
    assert folders(project) == folders(template_project)


@pytest.mark.slow
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_clean_after_a_real_build_keeps_every_user_file(
    really_built: Built, data: st.DataObject
) -> None:
    files = data.draw(user_files(really_built.variant), label="user files")
    assert_clean_restores(really_built, files)
