"""build.toml edition 6: read like 4 and 5, refused where kernel-builder refuses it.

Projects reach it with ``kscaffold update --edition 6 --kernel-builder REF``, whether kscaffold
wrote them or not.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from scaffold.checks import check_project
from scaffold.cli import app
from scaffold.compiler import build_project
from scaffold.errors import AnswersError, BuildConfigError, InvalidOptionError, ToolchainError
from scaffold.grow.create import create_project
from scaffold.grow.migrate import build_toml_to_edition_6, flake_to_ref, update_edition
from scaffold.project.answers import load_answers
from scaffold.project.buildconfig import BuildConfig, load_build_config
from scaffold.project.spec import ProjectSpec
from tests.compat_projects import (
    EDITION_5_BUILD_TOML,
    EDITION_6_BUILD_TOML,
    EDITION_6_TVM_FFI_BUILD_TOML,
    LEGACY_BUILD_TOML,
    write_legacy_project,
)
from tests.helpers import run, run_with_kernel
from tests.test_build import fake_plan

REF = "03dd3532d47037340a77a5bf23684d6d0394b73d"
FLAKE = """\
{
  inputs = {
    # the builder
    kernel-builder.url = "github:huggingface/kernels";
  };
  outputs = { self, kernel-builder }:
    kernel-builder.lib.genKernelFlakeOutputs { inherit self; path = ./.; };
}
"""


def _without_edition(config: BuildConfig) -> BuildConfig:
    """``config`` with what only says which edition it was read from blanked out."""
    kernels = tuple(dataclasses.replace(kernel, language=None) for kernel in config.kernels)
    return dataclasses.replace(config, edition=0, kernels=kernels)


# --- reading ------------------------------------------------------------------------------------


def test_editions_4_5_and_6_read_the_same_project(tmp_path: Path) -> None:
    configs = {
        edition: load_build_config(write_legacy_project(tmp_path / str(edition), edition))
        for edition in (4, 5, 6)
    }
    assert [configs[e].edition for e in (4, 5, 6)] == [4, 5, 6]
    assert {k.label: k.language for k in configs[6].kernels} == {
        "scale_cpu": "cpp-cpu",
        "shift_cpu": "cpp-cpu",
        "scale_hopper": "cpp-cuda",
        "scale_blackwell": "cpp-cuda",
    }
    plain = {e: _without_edition(c) for e, c in configs.items()}
    for edition in (5, 6):
        assert dataclasses.replace(plain[edition], project=plain[4].project) == plain[4]


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_editions_4_5_and_6_plan_the_same_variants(tmp_path: Path, backend: str) -> None:
    plans = []
    for edition in (4, 5, 6):
        project = write_legacy_project(tmp_path / "compat-ops", edition)
        plan = fake_plan(project, backend, ["9.0"], python_name="compat_ops", stable_abi=(2, 10))
        plans.append(
            (plan.variant, [(s.source, s.flags) for s in plan.steps], plan.link_flags, plan.notes)
        )
    assert plans[0][1], "the plan compiles nothing"
    assert plans[0] == plans[1] == plans[2]


def _edition_6(tmp_path: Path, old: str, new: str) -> Path:
    project = write_legacy_project(tmp_path / "compat-ops", 6)
    toml = project / "build.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new, 1))
    return project


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # kernel-builder's v6 Kernel enum: each language has its own keys (deny_unknown_fields).
        (
            'language = "cpp-cpu"\ndepends',
            'language = "cpp-cpu"\ncuda-flags = ["-O3"]\ndepends',
            "[kernel.scale_cpu] has unknown key 'cuda-flags' (edition 6 allows: cxx-flags, "
            "depends, include, language, src)",
        ),
        (
            'language = "cpp-cpu"\ndepends',
            'language = "cpp-cpu"\nbackend = "cpu"\ndepends',
            "[kernel.scale_cpu] has unknown key 'backend'",
        ),
        (
            'language = "cpp-cpu"\ndepends',
            'backend = "cpu"\ndepends',
            "[kernel.scale_cpu] has 'backend', which edition 6 replaced with language",
        ),
        (
            'language = "cpp-cpu"\ndepends',
            'language = "cpp-tpu"\ndepends',
            "kernel.scale_cpu.language: 'cpp-tpu' is not a kernel language of edition 6",
        ),
        ('language = "cpp-cpu"\ndepends', "depends", "[kernel.scale_cpu] is missing 'language'"),
        ('depends = ["torch"]\nsrc = ["csrc/cpu/scale.cpp"]', "src = []", "is missing 'depends'"),
        ("edition = 6\n", "edition = 6\nbuilder = 1\n", "[general] has unknown key 'builder'"),
        (
            'language = "cpp-cpu"\ndepends = ["torch"]\nsrc = ["csrc/cpu/scale.cpp"]',
            'language = "rust-cpu"\ncargo-manifest = "Cargo.toml"\ndepends = []\nsrc = []',
            '[kernel.scale_cpu] language = "rust-cpu" needs a [tvm-ffi] kernel',
        ),
    ],
)
def test_edition_6_refuses_what_kernel_builder_refuses(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    project = _edition_6(tmp_path, old, new)
    with pytest.raises(BuildConfigError) as raised:
        load_build_config(project)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)  # one line


def test_a_rust_kernel_is_read_but_not_built(tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text(EDITION_6_TVM_FFI_BUILD_TOML)
    config = load_build_config(tmp_path)
    assert (config.framework, config.kernels[0].language) == ("tvm-ffi", "rust-cpu")
    assert config.torch.src == ()  # edition 6 lets a Rust-only kernel leave src out
    with pytest.raises(ToolchainError) as raised:
        build_project(tmp_path, backend="cpu")
    assert "[tvm-ffi]" in str(raised.value) and "\n" not in str(raised.value)


def test_check_reads_edition_6_without_errors(tmp_path: Path) -> None:
    project = write_legacy_project(tmp_path / "compat-ops", 6)
    (project / "flake.nix").write_text(FLAKE.replace("kernels", f"kernels/{REF}"))
    findings = check_project(project)
    assert not [f for f in findings if f.is_error], "\n".join(map(str, findings))


def test_check_reports_a_rust_table_outside_tvm_ffi_in_one_line(tmp_path: Path) -> None:
    project = _edition_6(
        tmp_path,
        'language = "cpp-cpu"\ndepends = ["torch"]\nsrc = ["csrc/cpu/scale.cpp"]',
        'language = "rust-cpu"\ncargo-manifest = "r/Cargo.toml"\ndepends = []\nsrc = ["r/a.rs"]',
    )
    errors = [f for f in check_project(project) if f.is_error]
    assert any('language = "rust-cpu" needs a [tvm-ffi] kernel' in f.message for f in errors)


def test_check_tells_an_unpinned_edition_6_flake_to_pin_a_revision(tmp_path: Path) -> None:
    project = write_legacy_project(tmp_path / "compat-ops", 6)
    (project / "flake.nix").write_text(FLAKE)
    [unpinned] = [f for f in check_project(project) if "follows kernel-builder's main" in f.message]
    assert "--edition 6 --kernel-builder REF" in unpinned.fix
    assert "v0.17.2" not in unpinned.fix  # that release cannot build edition 6


# --- rewriting build.toml and flake.nix --------------------------------------------------------


def test_edition_5_is_rewritten_key_by_key() -> None:
    hopper = 'backend = "cuda"\ndepends = ["torch"]\nsrc = ["csrc/cuda/scale_launch'
    commented = EDITION_5_BUILD_TOML.replace(
        hopper, hopper.replace('"cuda"', '"cuda"  # Hopper only: wgmma')
    )
    assert commented != EDITION_5_BUILD_TOML
    # Byte for byte what edition 6 holds: comment, order, blank lines and every other key kept.
    assert build_toml_to_edition_6(commented) == EDITION_6_BUILD_TOML
    assert build_toml_to_edition_6(EDITION_6_BUILD_TOML) == EDITION_6_BUILD_TOML


def test_edition_4_gains_an_edition_key() -> None:
    rewritten = build_toml_to_edition_6(LEGACY_BUILD_TOML)
    data = tomllib.loads(rewritten)
    assert data == tomllib.loads(EDITION_6_BUILD_TOML.replace("  # Hopper only: wgmma", ""))
    assert list(data["general"]) == ["name", "version", "license", "backends", "edition"]


def test_a_backend_edition_6_has_no_language_for_is_refused() -> None:
    text = EDITION_5_BUILD_TOML.replace('backends = ["cpu", "cuda"]', 'backends = ["cpu", "tpu"]')
    text = text.replace('backend = "cuda"', 'backend = "tpu"', 1)
    with pytest.raises(BuildConfigError) as raised:
        build_toml_to_edition_6(text)
    assert "backend = 'tpu' has no language in edition 6" in str(raised.value)


@pytest.mark.parametrize(
    "line",
    [
        'kernel-builder.url = "{url}";',
        'inputs.kernel-builder.url = "{url}";',
        'kernel-builder = {{ url = "{url}"; inputs.nixpkgs.follows = "nixpkgs"; }};',
    ],
)
@pytest.mark.parametrize("url", ["github:huggingface/kernels", "path:../../.."])
def test_the_flake_input_moves_to_the_revision(line: str, url: str) -> None:
    before = f"{{\n  inputs = {{\n    {line.format(url=url)}\n  }};\n}}\n"
    after = flake_to_ref(before, REF)
    assert after == before.replace(url, f"github:huggingface/kernels/{REF}")


def test_a_flake_without_a_kernel_builder_input_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="has no kernel-builder input"):
        flake_to_ref('{ inputs.nixpkgs.url = "github:nixos/nixpkgs"; }', REF)


# --- kscaffold update --edition 6 -----------------------------------------------------------


def test_a_project_kscaffold_did_not_write_gets_two_rewrites(tmp_path: Path) -> None:
    project = write_legacy_project(tmp_path / "compat-ops", 5)
    (project / "flake.nix").write_text(FLAKE)
    untouched = (project / "torch-ext" / "torch_binding.cpp").read_bytes()
    result = CliRunner().invoke(
        app, ["update", str(project), "--edition", "6", "--kernel-builder", REF]
    )
    assert result.exit_code == 0, result.output
    assert "was not made by kscaffold" in result.output, result.output
    assert tomllib.loads((project / "build.toml").read_text()) == tomllib.loads(
        EDITION_6_BUILD_TOML
    )
    assert (project / "flake.nix").read_text() == FLAKE.replace("kernels", f"kernels/{REF}")
    assert "# the builder" in (project / "flake.nix").read_text()
    assert (project / "torch-ext" / "torch_binding.cpp").read_bytes() == untouched
    assert not (project / ".copier-answers.yml").exists()
    five = _without_edition(load_build_config(write_legacy_project(tmp_path / "five", 5)))
    assert _without_edition(load_build_config(project)) == dataclasses.replace(
        five, project=project
    )


def test_without_a_revision_edition_6_is_refused(tmp_path: Path) -> None:
    project = write_legacy_project(tmp_path / "compat-ops", 5)
    result = CliRunner().invoke(app, ["update", str(project), "--edition", "6"])
    assert result.exit_code != 0
    assert "No kernel-builder release builds edition 6 yet" in result.output, result.output
    assert (project / "build.toml").read_text() == EDITION_5_BUILD_TOML
    result = CliRunner().invoke(app, ["update", str(project), "--kernel-builder", REF])
    assert result.exit_code != 0 and "add --edition 6" in result.output, result.output
    with pytest.raises(InvalidOptionError, match="not a revision"):
        update_edition(project, 6, "v1..2")
    with pytest.raises(InvalidOptionError, match="--edition 7"):
        update_edition(project, 7, REF)


@pytest.fixture
def made(tmp_path: Path) -> Path:
    return create_project(ProjectSpec.parse("edkernel", backends="cuda"), tmp_path / "edkernel")


def test_a_kscaffold_project_moves_to_6_and_stays_there(made: Path) -> None:
    build_toml = made / "build.toml"
    # The user's own comment and key survive the rewrite.
    text = build_toml.read_text().replace(
        'backend = "cuda"', 'backend = "cuda"  # mine\ncuda-flags = ["-lineinfo"]'
    )
    build_toml.write_text(text)
    _commit(made)
    moved = update_edition(made, 6, REF)
    assert sorted(moved.report.written) == [".copier-answers.yml", "build.toml", "flake.nix"]
    new_text = build_toml.read_text()
    assert new_text == text.replace('backend = "cuda"', 'language = "cpp-cuda"').replace(
        "edition = 5", "edition = 6"
    )
    answers = yaml.safe_load((made / ".copier-answers.yml").read_text())
    assert (answers["edition"], answers["kernel_builder_ref"]) == (6, REF)
    assert f'"github:huggingface/kernels/{REF}"' in (made / "flake.nix").read_text()
    assert load_build_config(made).edition == 6
    _commit(made)
    # A later update keeps 6 (nothing to do), and add-backend writes an edition-6 table.
    result = CliRunner().invoke(app, ["update", str(made)])
    assert result.exit_code == 0 and "Already up to date" in result.output, result.output
    result = CliRunner().invoke(app, ["add-backend", "cpu", str(made)])
    assert result.exit_code == 0, result.output
    data = tomllib.loads(build_toml.read_text())
    assert data["kernel"]["relu_cpu"]["language"] == "cpp-cpu"
    assert "backend =" not in build_toml.read_text()
    assert "# mine" in build_toml.read_text()
    assert not [f for f in check_project(made) if f.is_error]


def test_new_projects_stay_on_5(made: Path) -> None:
    assert load_build_config(made).edition == 5
    assert "edition" not in yaml.safe_load((made / ".copier-answers.yml").read_text())
    assert "kscaffold update" in (made / "flake.nix").read_text()


def test_answers_keep_edition_and_revision_together(made: Path) -> None:
    answers = made / ".copier-answers.yml"
    answers.write_text(answers.read_text() + "edition: 6\n")
    with pytest.raises(AnswersError, match="edition and kernel_builder_ref go together"):
        load_answers(made)
    answers.write_text(answers.read_text() + 'kernel_builder_ref: "a b"\n')
    with pytest.raises(AnswersError, match="not a revision"):
        load_answers(made)


def _commit(project: Path) -> None:
    run(["git", "add", "-A"], cwd=project)
    run(["git", "commit", "-qm", "step", "--no-verify"], cwd=project)


@pytest.mark.slow
def test_edition_6_project_builds_and_loads_on_cpu(tmp_path: Path) -> None:
    """The edition-6 project compiles into the variant edition 4 builds, and its ops run."""
    project = write_legacy_project(tmp_path / "compat-ops", 6)
    (result,) = build_project(project, backend="cpu")
    assert result.variant == "torch-stable-abi210-cpu-x86_64-linux"
    so = f"{result.ops_name}.abi3.so"
    assert sorted(p.name for p in result.variant_dir.iterdir()) == sorted(
        ["__init__.py", "_ops.py", so, "factors.json", "metadata.json"]
    )
    out = run_with_kernel(
        project,
        "x = torch.arange(4, dtype=torch.float32)\n"
        "print(kernel.scale(x).tolist(), kernel.shift(x).tolist())\n",
    )
    assert out.strip() == "[0.0, 2.0, 4.0, 6.0] [1.0, 2.0, 3.0, 4.0]"
