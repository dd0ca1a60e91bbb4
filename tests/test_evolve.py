"""`kscaffold add-backend` and `kscaffold update`: template changes merged into edited projects."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.errors import (
    DirtyTreeError,
    InvalidOptionError,
    MergeConflictError,
    NotAProjectError,
)
from scaffold.grow import template as template_module
from scaffold.grow.create import create_project
from scaffold.grow.evolve import add_backend, update_project
from scaffold.grow.template import render_files
from scaffold.project.spec import ProjectSpec
from tests.helpers import run, snapshot


def commit_all(project: Path, message: str = "user edits") -> None:
    run(["git", "add", "--all"], cwd=project)
    run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", message], cwd=project)


def new_project(tmp_path: Path, backends: str = "cuda", example: str | None = "img2gray") -> Path:
    spec = ProjectSpec.parse("img2gray", backends=backends, example=example)
    return create_project(spec, tmp_path / "img2gray")


USER_KERNEL_LINE = "// Tuned by me: keep the block size.\n"
USER_TEST = "\n\ndef test_mine() -> None:\n    assert 1 + 1 == 2\n"


def make_user_edits(project: Path) -> dict[str, bytes]:
    """Edit build.toml, the CUDA kernel and the tests; add a file. Return the edited files."""
    build_toml = project / "build.toml"
    text = build_toml.read_text().replace(
        'license = "apache-2.0"\n',
        'license = "apache-2.0"\n# Where the algorithm comes from.\nupstream = "https://example.com/gray"\n',
    )
    build_toml.write_text(text + "\n# my trailing comment\n")
    kernel = project / "csrc" / "cuda" / "img2gray.cu"
    kernel.write_text(USER_KERNEL_LINE + kernel.read_text())
    tests = project / "tests" / "test_img2gray.py"
    tests.write_text(tests.read_text() + USER_TEST)
    (project / "NOTES.md").write_text("my notes\n")
    commit_all(project)
    return {
        path: (project / path).read_bytes()
        for path in ("csrc/cuda/img2gray.cu", "tests/test_img2gray.py", "NOTES.md")
    }


def test_add_backend_keeps_every_user_edit(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    edited = make_user_edits(project)

    report = add_backend(project, "cpu")

    assert not report.conflicts
    for path, content in edited.items():
        assert (project / path).read_bytes() == content, path
    build_toml = (project / "build.toml").read_text()
    assert 'upstream = "https://example.com/gray"' in build_toml
    assert "# Where the algorithm comes from." in build_toml
    assert "# my trailing comment" in build_toml
    assert 'backends = ["cuda", "cpu"]' in build_toml

    # Every file the user did not touch is what `new --backends cuda,cpu` would have generated.
    fresh = render_files(
        ProjectSpec.parse("img2gray", backends="cuda,cpu", example="img2gray").answers()
    )
    mine = snapshot(project)
    untouched = set(fresh) - {"build.toml", *edited}
    assert {path: mine[path] for path in untouched} == {path: fresh[path] for path in untouched}
    assert set(mine) == set(fresh) | {"NOTES.md"}


def test_add_backend_build_toml_is_what_the_template_generates_plus_user_keys(
    tmp_path: Path,
) -> None:
    import tomllib

    project = new_project(tmp_path)
    make_user_edits(project)
    add_backend(project, "cpu")
    merged = tomllib.loads((project / "build.toml").read_text())
    fresh = tomllib.loads(
        render_files(
            ProjectSpec.parse("img2gray", backends="cuda,cpu", example="img2gray").answers()
        )["build.toml"].decode()
    )
    assert merged["general"].pop("upstream") == "https://example.com/gray"
    assert merged == fresh


def test_add_backend_records_the_answer_and_a_new_baseline(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    add_backend(project, "cpu")
    assert 'backends: ["cuda", "cpu"]' in (project / ".copier-answers.yml").read_text()
    commit_all(project, "add cpu")
    # The baseline moved on: a second change merges from the new state, not the old one.
    with pytest.raises(InvalidOptionError, match="already has the cpu backend"):
        add_backend(project, "cpu")
    assert update_project(project).written == []


def test_conflict_stops_with_file_and_lines_and_changes_nothing(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    conftest = project / "tests" / "conftest.py"
    conftest.write_text(
        conftest.read_text().replace(
            'BACKENDS: tuple[str, ...] = ("cuda",)', 'BACKENDS: tuple[str, ...] = ("cuda", "mine")'
        )
    )
    commit_all(project)
    before = snapshot(project)

    with pytest.raises(MergeConflictError, match=r"tests/conftest.py \(lines \d+"):
        add_backend(project, "cpu")
    assert snapshot(project) == before

    report = add_backend(project, "cpu", markers=True)
    assert [c.path for c in report.conflicts] == ["tests/conftest.py"]
    text = conftest.read_text()
    assert (
        "<<<<<<< tests/conftest.py (yours)" in text
        and ">>>>>>> tests/conftest.py (template after)" in text
    )


@pytest.mark.parametrize(
    ("setup", "backend", "error", "message"),
    [
        ("none", "rocm", InvalidOptionError, "Unsupported backend 'rocm'.*cuda, cpu"),
        ("none", "cuda", InvalidOptionError, "already has the cuda backend"),
        ("empty", "cpu", NotAProjectError, "build.toml and .copier-answers.yml are missing"),
        ("dirty", "cpu", DirtyTreeError, "uncommitted changes"),
    ],
)
def test_refusals_change_nothing(
    tmp_path: Path, setup: str, backend: str, error: type[Exception], message: str
) -> None:
    if setup == "empty":
        project = tmp_path / "plain"
        project.mkdir()
        (project / "main.cpp").write_text("int main() {}\n")
    else:
        project = new_project(tmp_path)
        if setup == "dirty":
            (project / "csrc" / "img2gray.h").write_text("// half-done edit\n")
    before = snapshot(project)
    with pytest.raises(error, match=message):
        add_backend(project, backend)
    assert snapshot(project) == before


def test_cli_add_backend_reports_errors_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["add-backend", "metal", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: Unsupported backend 'metal'"), result.output


def test_project_without_git_uses_a_fresh_baseline(tmp_path: Path) -> None:
    spec = ProjectSpec.parse("img2gray", backends="cuda", example="img2gray")
    project = create_project(spec, tmp_path / "img2gray", git=False)
    kernel = project / "csrc" / "cuda" / "img2gray.cu"
    kernel.write_text(USER_KERNEL_LINE + kernel.read_text())
    add_backend(project, "cpu")
    assert kernel.read_text().startswith(USER_KERNEL_LINE)
    assert (project / "csrc" / "cpu" / "img2gray.cpp").is_file()


def test_update_merges_a_newer_template_into_an_edited_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An "older" template: the current one with an older benchmark header and flake comment.
    current = template_module.template_dir()
    older = tmp_path / "older-template"
    shutil.copytree(current, older)
    flake = older / "project" / "flake.nix.jinja"
    flake.write_text(
        flake.read_text().replace("# What tests/ imports", "# Old wording for test deps")
    )
    gitignore = older / "project" / ".gitignore"
    gitignore.write_text(gitignore.read_text().replace("/result\n", ""))
    monkeypatch.setattr(template_module, "template_dir", lambda: older)
    project = new_project(tmp_path / "p")
    monkeypatch.undo()

    edited = make_user_edits(project)
    with open(project / ".gitignore", "a") as handle:
        handle.write("/my-scratch/\n")
    commit_all(project)

    report = update_project(project)
    assert sorted(report.written) == [".gitignore", "flake.nix"]
    assert "# What tests/ imports" in (project / "flake.nix").read_text()
    ignored = (project / ".gitignore").read_text().splitlines()
    assert "/result" in ignored and "/my-scratch/" in ignored
    for path, content in edited.items():
        assert (project / path).read_bytes() == content


def replace_with_user_op(project: Path) -> None:
    """Turn a fresh default project into one whose only op the user wrote: scale(x, alpha)."""
    header = project / "torch-ext" / "torch_binding.h"
    text = header.read_text()
    start = text.index("inline void define_my_kernel_ops")
    header.write_text(
        text[:start]
        + "inline void define_my_kernel_ops(torch::Library& ops) {\n"
        + '  ops.def("scale(Tensor x, float alpha, *, int? chunk=None) -> Tensor");\n'
        + '  ops.def("scale_(Tensor(a!) x, float alpha) -> ()");\n'
        + "}\n"
    )
    (project / "torch-ext" / "my_kernel" / "__init__.py").write_text(
        "import torch\n\nfrom ._ops import add_op_namespace_prefix, ops\n\n\n"
        "def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:\n"
        "    return ops.scale(x, alpha)\n\n\n"
        '@torch.library.register_fake(add_op_namespace_prefix("scale"))\n'
        "def _(x, alpha, *, chunk=None):\n    return torch.empty_like(x)\n"
    )
    (project / "csrc" / "cuda" / "relu.cu").unlink()
    (project / "csrc" / "cuda" / "scale.cu").write_text("// my CUDA kernel\n")
    build_toml = project / "build.toml"
    build_toml.write_text(
        build_toml.read_text()
        .replace('"csrc/cuda/relu.cu"', '"csrc/cuda/scale.cu"')
        .replace("[kernel.relu_cuda]", "[kernel.scale_cuda]")
    )
    commit_all(project, "my own op")


def test_add_backend_to_a_user_op_writes_a_skeleton(tmp_path: Path) -> None:
    import tomllib

    spec = ProjectSpec.parse("my-kernel", backends="cuda")
    project = create_project(spec, tmp_path / "my-kernel")
    replace_with_user_op(project)

    add_backend(project, "cpu")

    assert not (project / "csrc" / "cpu" / "relu.cpp").exists()
    skeleton = (project / "csrc" / "cpu" / "my_kernel_cpu.cpp").read_text()
    assert "KSCAFFOLD_SKELETON" in skeleton
    assert (
        "at::Tensor scale_cpu(const at::Tensor& x, double alpha, std::optional<int64_t> chunk)"
        in skeleton
    )
    assert "void scale__cpu(at::Tensor& x, double alpha)" in skeleton
    assert 'm.impl("scale", &my_kernel_cpu::scale_cpu);' in skeleton
    assert "write it in csrc/cpu/my_kernel_cpu.cpp" in skeleton
    config = tomllib.loads((project / "build.toml").read_text())
    tables = {t["backend"]: t for t in config["kernel"].values()}
    assert tables["cpu"]["src"] == ["csrc/cpu/my_kernel_cpu.cpp"]
    assert tables["cuda"]["src"] == ["csrc/cuda/scale.cu"]
    assert (project / "csrc" / "cuda" / "scale.cu").read_text() == "// my CUDA kernel\n"

    # A later update keeps the skeleton rather than bringing the template's relu back.
    commit_all(project, "add cpu")
    update_project(project)
    assert not (project / "csrc" / "cpu" / "relu.cpp").exists()
    assert (project / "csrc" / "cpu" / "my_kernel_cpu.cpp").read_text() == skeleton
