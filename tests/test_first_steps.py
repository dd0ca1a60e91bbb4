"""The first ten minutes: from `kscaffold new` to green tests in one obvious path.

`new`'s hint, requirements-dev.txt, `kscaffold test`, the development CUDA arch, shell completion
and the examples every --help ends with.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from dataclasses import replace
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.cli.hints import next_steps, tool_commands
from scaffold.compiler import BuildReporter, BuildResult, api
from scaffold.compiler.archs import default_arch_list
from scaffold.compiler.devarchs import development_archs
from scaffold.errors import InvalidOptionError, ToolchainError
from scaffold.grow.template import render
from scaffold.project.buildconfig import KernelSection, load_build_config
from scaffold.project.spec import ProjectSpec
from scaffold.testing import project_tests
from scaffold.testing.project_tests import (
    REQUIREMENTS_FILE,
    SKIP_VARIABLE,
    ProjectTests,
    missing_requirements,
    prepare_project_tests,
)
from tests.conftest import REQUIRE_TOOLS
from tests.helpers import REPO_ROOT, run
from tests.test_build import SUPPORTED, RecordingReporter, write_project

runner = CliRunner()


def rendered(tmp_path: Path, example: str | None = None, backends: str = "cuda,cpu") -> Path:
    spec = ProjectSpec.parse("my-kernel", backends=backends, example=example)
    render(spec.answers(), tmp_path / "my-kernel")
    return tmp_path / "my-kernel"


# --- --help examples and completion ---------------------------------------------------------


def _help(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def _examples_at_the_end(output: str) -> list[str]:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    assert "Examples:" in lines, output
    tail = lines[lines.index("Examples:") + 1 :]
    assert 1 <= len(tail) <= 2 and all(line.startswith("$ kscaffold ") for line in tail), output
    return [line.removeprefix("$ ") for line in tail]


def test_every_help_ends_with_examples_that_parse() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    names = sorted(group.commands)
    assert {"new", "build", "test", "check", "clean", "publish", "update", "add-backend"} <= set(
        names
    )
    examples = _examples_at_the_end(_help())
    for name in names:
        found = _examples_at_the_end(_help(name))
        assert all(example.split()[1] == name for example in found), found
        examples += found
    # Each example is a valid invocation: its command exists and accepts those arguments.
    for example in examples:
        _, name, *args = shlex.split(example)
        command = group.commands[name]
        with command.make_context(name, list(args)) as context:
            assert context.params is not None, example


def test_shell_completion_completes_command_names() -> None:
    assert "--install-completion" in _help()
    result = runner.invoke(
        app,
        [],
        prog_name="kscaffold",
        env={
            "_KSCAFFOLD_COMPLETE": "complete_bash",
            "COMP_WORDS": "kscaffold bu",
            "COMP_CWORD": "1",
        },
    )
    assert result.output.split() == ["build"], result.output


# --- the development CUDA arch --------------------------------------------------------------

TEMPLATE_CAPS = ("7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0+PTX")


def kernel(label: str, caps: tuple[str, ...] | None) -> KernelSection:
    return KernelSection(label, "cuda", ("torch",), (f"csrc/{label}.cu",), (), (), (), caps)


def test_development_build_requests_the_oldest_release_arch() -> None:
    chosen = development_archs(
        [kernel("a", TEMPLATE_CAPS)], supported=SUPPORTED, cuda_version=(13, 0)
    )
    assert chosen is not None and chosen.requested == ("7.5",)
    message = chosen.describe()
    assert "compiling CUDA for 7.5 only" in message and "7 archs" in message, message
    assert "kscaffold build --release" in message and "nix run .#build-and-copy" in message

    # Without cuda-capabilities, kernel-builder's list for the toolkit is the release set.
    default = development_archs([kernel("a", None)], supported=SUPPORTED, cuda_version=(13, 0))
    assert default is not None and default.requested == (default_arch_list((13, 0))[0],)
    assert "kernel-builder's list for CUDA 13.0" in default.describe()


def test_development_arch_is_one_nvcc_compiles_and_one_per_kernel_at_most() -> None:
    without_75 = SUPPORTED - {"75"}
    chosen = development_archs(
        [kernel("a", TEMPLATE_CAPS)], supported=without_75, cuda_version=(13, 0)
    )
    assert chosen is not None and chosen.requested == ("8.0",)
    two = development_archs(
        [kernel("a", ("9.0a",)), kernel("b", ("8.0", "9.0")), kernel("c", ("8.0", "12.0+PTX"))],
        supported=SUPPORTED,
        cuda_version=(13, 0),
    )
    assert two is not None and two.requested == ("8.0", "9.0a")
    ptx_only = development_archs(
        [kernel("a", ("12.0+PTX",))], supported=SUPPORTED, cuda_version=(13, 0)
    )
    assert ptx_only is not None and ptx_only.requested == ("12.0",)
    # Nothing to decide, or a problem the usual arch choice reports by name: no request.
    for kernels in ([], [kernel("a", ("5.2",))], [kernel("a", ("nine",))]):
        assert development_archs(kernels, supported=SUPPORTED, cuda_version=(13, 0)) is None


def test_build_requests_the_development_arch_only_without_gpu_archs_or_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_build_config(write_project(tmp_path, cuda=True))
    (section,) = config.kernels_for("cuda")
    config = replace(config, kernels=(replace(section, cuda_capabilities=TEMPLATE_CAPS),))
    (section,) = config.kernels_for("cuda")
    toolkit = api.CudaToolkit(home=Path("/opt/cuda"), version=(13, 0))
    monkeypatch.setattr(api, "nvcc_supported_archs", lambda nvcc: SUPPORTED)
    gpus: list[tuple[int, int]] = []
    monkeypatch.setattr(api, "visible_gpu_capabilities", lambda: tuple(gpus))

    def archs(requested: list[str] | None = None, release: bool = False) -> tuple[list[str], str]:
        reporter = RecordingReporter()
        policy = api._arch_policy(config, toolkit, requested, release=release, reporter=reporter)
        return [str(a) for a in policy.for_kernel(section)], " ".join(reporter.notes)

    assert archs() == (["7.5"], archs()[1]) and "compiling CUDA for 7.5 only" in archs()[1]
    assert archs(release=True) == (list(TEMPLATE_CAPS), "")
    assert archs(["9.0"]) == (["9.0"], "")
    gpus.append((9, 0))
    assert archs() == (["9.0"], "")
    assert archs(release=True) == (list(TEMPLATE_CAPS), "")  # the GPU does not narrow a release


def test_release_and_cuda_archs_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="--release or --cuda-archs, not both"):
        api.build_project(tmp_path, release=True, cuda_archs=["9.0"])
    result = runner.invoke(app, ["build", str(tmp_path), "--release", "--cuda-archs", "9.0"])
    assert result.exit_code == 2 and "not both" in result.output, result.output


# --- requirements-dev.txt, the flake and what the generated code imports ----------------------

# Import names whose distribution is called otherwise.
DISTRIBUTIONS = {"PIL": "pillow"}


def requirement_names(project: Path) -> set[str]:
    names = set()
    for line in (project / REQUIREMENTS_FILE).read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if match:
            names.add(match[1].lower())
    return names


def _optional_imports(tree: ast.AST) -> set[int]:
    """The ids of the import nodes guarded by ``except ImportError`` (optional extras)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(handler.type, ast.Name) and handler.type.id == "ImportError"
            for handler in node.handlers
        ):
            guarded |= {id(inner) for part in node.body for inner in ast.walk(part)}
    return guarded


def third_party_imports(project: Path) -> set[str]:
    sources = [
        *project.glob("tests/*.py"),
        *project.glob("benchmarks/*.py"),
        project / "example.py",
    ]
    # The project's own modules: its package and the scripts beside each other (benchmarks/harness).
    local = {"tests", "my_kernel", *(path.stem for path in sources)}
    found = set()
    for path in sources:
        tree = ast.parse(path.read_text())
        optional = _optional_imports(tree)
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local and top != "__future__":
                    found.add(DISTRIBUTIONS.get(top, top).lower())
    return found


@pytest.mark.parametrize("example", [None, "img2gray"])
def test_requirements_cover_every_import_and_match_the_flake(
    tmp_path: Path, example: str | None
) -> None:
    project = rendered(tmp_path, example)
    required = requirement_names(project)
    assert third_party_imports(project) <= required, required
    assert {"pytest", "torch", "kernels"} <= required
    flake = (project / "flake.nix").read_text()
    match = re.search(r"pythonCheckInputs = ps: with ps; \[([^\]]*)\];", flake)
    assert match is not None, flake
    # The Nix test shell always has pytest, torch and kernels; pythonCheckInputs adds the rest.
    assert set(match[1].split()) == required - {"pytest", "torch", "kernels"}
    if example == "img2gray":
        assert {"numpy", "pillow"} <= required


def card_commands(project: Path) -> list[str]:
    """The commands of the card's "Build and test locally" block, without their comments."""
    card = (project / "README.md").read_text()
    section = card[card.index("## Build and test locally") :]
    start = section.index("```bash\n") + len("```bash\n")
    block = section[start : section.index("\n```", start)]
    return [line.split("  #")[0].strip() for line in block.splitlines()]


@pytest.mark.parametrize("backends", ["cuda,cpu", "cpu"])
def test_card_starts_with_the_hints_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backends: str
) -> None:
    project = rendered(tmp_path, backends=backends)
    monkeypatch.setattr("scaffold.cli.hints.tool_commands", lambda: ("python", "kscaffold"))
    monkeypatch.chdir(project)
    hint = next_steps(project).split(" && ")
    assert hint[0] == "cd ." and card_commands(project)[:2] == hint[1:], card_commands(project)
    card = (project / "README.md").read_text()
    assert ("kscaffold build --release" in card) == ("cuda" in backends)


def test_requirements_file_does_not_clash_with_kernel_builders_files(tmp_path: Path) -> None:
    """create-pyproject writes pyproject.toml and setup.py at the root: the project has neither."""
    project = rendered(tmp_path)
    assert not (project / "pyproject.toml").exists() and not (project / "setup.py").exists()
    assert (project / REQUIREMENTS_FILE).is_file()


# --- new's hint ------------------------------------------------------------------------------


def _fake_env(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in ("python", "kscaffold"):
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    return folder / "python"


def test_hint_uses_short_names_only_when_they_run_this_kscaffold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = _fake_env(tmp_path / "venv" / "bin")
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", f"{python.parent}{os.pathsep}/usr/bin")
    assert tool_commands() == ("python", "kscaffold")
    monkeypatch.chdir(tmp_path)
    assert next_steps(tmp_path / "my-kernel") == (
        "cd my-kernel && python -m pip install -r requirements-dev.txt && kscaffold test"
    )
    # A venv that is not activated (the README's `.venv/bin/kscaffold new ...`): full paths.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert tool_commands() == (str(python), str(python.parent / "kscaffold"))
    assert next_steps(tmp_path / "my-kernel").endswith(f"&& {python.parent / 'kscaffold'} test")


def test_new_prints_the_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["new", "my-kernel", "--no-git"])
    assert result.exit_code == 0, result.output
    python, kscaffold = tool_commands()
    expected = (
        f"Next: cd my-kernel && {python} -m pip install -r requirements-dev.txt && {kscaffold} test"
    )
    assert expected in result.output.splitlines(), result.output


# --- kscaffold test --------------------------------------------------------------------------


def test_missing_test_dependencies_stop_before_any_build(tmp_path: Path) -> None:
    project = rendered(tmp_path, backends="cpu")
    with open(project / REQUIREMENTS_FILE, "a") as handle:
        handle.write("surely-not-installed-kscaffold-test  # a comment\n-r other.txt\n")
    assert missing_requirements(project) == ["surely-not-installed-kscaffold-test"]
    with pytest.raises(ToolchainError) as error:
        prepare_project_tests(project)
    message = str(error.value)
    assert "surely-not-installed-kscaffold-test" in message, message
    assert f"{sys.executable} -m pip install -r {REQUIREMENTS_FILE}" in message, message
    assert not (project / "build").exists() and not (project / ".kscaffold").exists()


def test_requirements_that_are_not_utf8_are_still_read(tmp_path: Path) -> None:
    (tmp_path / REQUIREMENTS_FILE).write_bytes(b"# \xff\xfe\nsurely-not-installed-kscaffold-test\n")
    assert missing_requirements(tmp_path) == ["surely-not-installed-kscaffold-test"]


def fake_result(backend: str, archs: tuple[str, ...] = ()) -> BuildResult:
    variant = f"torch214-cxx11-{'cu130' if backend == 'cuda' else 'cpu'}-x86_64-linux"
    return BuildResult(backend, variant, Path("build") / variant, f"_k_{backend}", archs, (), False)


@pytest.mark.parametrize("gpu", [False, True], ids=["no-gpu", "gpu"])
def test_each_backend_is_tested_or_skipped_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: bool
) -> None:
    project = rendered(tmp_path)
    builds: dict[str, list[BuildResult]] = {
        "built": [fake_result("cuda", ("7.5",)), fake_result("cpu")],
        "no nvcc": [fake_result("cpu")],
        "cpu asked": [fake_result("cpu")],
    }
    for case, results in builds.items():
        asked = "cpu" if case == "cpu asked" else None

        def build(
            path: Path,
            *,
            backend: str | None,
            reporter: BuildReporter,
            results: list[BuildResult] = results,
            asked: str | None = asked,
        ) -> list[BuildResult]:
            assert backend == asked
            if backend is None and len(results) == 1:
                reporter.backend_skipped("cuda", "nvcc was not found.")
            return results

        monkeypatch.setattr(project_tests, "build_project", build)
        monkeypatch.setattr(project_tests, "_gpu_visible", lambda: gpu)
        tests = prepare_project_tests(project, pytest_args=["-x"], backend=asked)
        outcomes = {o.backend: (o.tested, o.detail) for o in tests.backends}
        assert outcomes["cpu"] == (True, "build/torch214-cxx11-cpu-x86_64-linux/")
        not_built = json.loads(tests.environment[SKIP_VARIABLE])
        if case != "built":
            reason = {
                "no nvcc": "not built: nvcc was not found",
                "cpu asked": "not built: only --backend cpu was asked for",
            }[case]
            assert outcomes["cuda"] == (False, reason) and not_built == {"cuda": reason}
        elif gpu:
            assert outcomes["cuda"] == (True, "build/torch214-cxx11-cu130-x86_64-linux/")
            assert not_built == {}
        else:
            tested, detail = outcomes["cuda"]
            assert not tested and detail.startswith(
                "compiled for 7.5 into build/torch214-cxx11-cu130"
            )
            assert "no CUDA GPU is visible" in detail and not_built == {}
        assert tests.command[-2:] == ("tests", "-x") and tests.project == project.resolve()


def test_pytest_runs_tests_unless_paths_are_given(tmp_path: Path) -> None:
    project = rendered(tmp_path)
    # The plugin that shows the build to the suite, named where pytest does not load it itself.
    plugin = () if project_tests._plugin_autoloaded() else ("-p", project_tests.PLUGIN_MODULE)
    pytest = (sys.executable, "-m", "pytest", *plugin)
    command = project_tests._pytest_command(project, ["-x", "-k", "out"])
    assert command == (*pytest, "tests", "-x", "-k", "out")
    command = project_tests._pytest_command(project, ["tests/test_relu.py::test_out", "-x"])
    assert command == (*pytest, "tests/test_relu.py::test_out", "-x")


def test_cli_passes_what_follows_the_double_dash_to_pytest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, object] = {}
    outcome = project_tests.BackendOutcome

    def prepare(
        project: Path, *, pytest_args: list[str], backend: str | None, reporter: object
    ) -> ProjectTests:
        seen.update(project=project, pytest_args=pytest_args, backend=backend)
        return ProjectTests(
            project=tmp_path,
            builds=(),
            backends=(
                outcome("cuda", False, "not built: no nvcc"),
                outcome("cpu", True, "build/x/"),
            ),
            command=(sys.executable, "-c", "raise SystemExit(3)"),
        )

    monkeypatch.setattr(project_tests, "prepare_project_tests", prepare)
    result = runner.invoke(app, ["test", str(tmp_path), "--", "-x", "-k", "not out", "--lf"])
    assert result.exit_code == 3, result.output
    assert seen == {
        "project": tmp_path,
        "pytest_args": ["-x", "-k", "not out", "--lf"],
        "backend": None,
    }
    last = result.output.strip().splitlines()[-1]
    assert last == "kscaffold test failed: pytest exited 3 before running any test.", result.output
    assert "Tested: cpu (build/x/). Skipped: cuda (not built: no nvcc)." in result.output
    result = runner.invoke(app, ["test", "--backend", "cpu", str(tmp_path), "--", "tests"])
    assert seen == {"project": tmp_path, "pytest_args": ["tests"], "backend": "cpu"}
    # Without --, an unknown option is an error, as for every command.
    result = runner.invoke(app, ["test", str(tmp_path), "-x"])
    assert result.exit_code == 2, result.output


def test_a_crash_before_any_test_is_named_with_its_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A library whose op registration throws aborts the process that loads it (SIGABRT).
    def prepare(
        project: Path, *, pytest_args: list[str], backend: str | None, reporter: object
    ) -> ProjectTests:
        return ProjectTests(
            project=tmp_path,
            builds=(),
            backends=(project_tests.BackendOutcome("cpu", True, "build/x/"),),
            command=(sys.executable, "-c", "import os; os.abort()"),
        )

    monkeypatch.setattr(project_tests, "prepare_project_tests", prepare)
    result = runner.invoke(app, ["test", str(tmp_path)])
    assert result.exit_code == 128 + 6, result.output  # as a shell reports SIGABRT
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(
        "kscaffold test failed: pytest was killed by SIGABRT before running any test, most often "
        "a crash while loading the built library"
    ), result.output


@pytest.mark.slow
def test_generated_suite_skips_a_backend_kscaffold_did_not_build(tmp_path: Path) -> None:
    """No build at all, and the variable says cpu was not built: skips with that reason."""
    project = rendered(tmp_path, backends="cpu")
    reason = "not built: no C++ compiler on this machine"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, SKIP_VARIABLE: json.dumps({"cpu": reason})},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " skipped" in result.stdout and "passed" not in result.stdout, result.stdout
    assert f"cpu: {reason}" in result.stdout, result.stdout


def _site_packages() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({paths["purelib"], paths["platlib"]})


@pytest.mark.slow
def test_new_and_its_hint_verbatim_are_green_in_a_fresh_venv(tmp_path: Path) -> None:
    """A fresh machine: install kscaffold, `kscaffold new`, then the printed hint, verbatim.

    The fresh venv sees this environment's packages (torch, kernels, pytest: gigabytes that
    would otherwise be downloaded, making the test slow and dependent on the network) through a
    ``.pth`` file, which is what ``--system-site-packages`` does on a base Python that has them.
    The editable kscaffold of this environment stays invisible (only its folder is listed, so
    its own ``.pth`` is not read): kscaffold is installed into the venv from this checkout as
    the README's ``pip install .`` does (without build isolation, so no download either). Then
    ``kscaffold new my-kernel`` runs from the venv, and the line it prints after ``Next:`` runs
    verbatim in a shell where the venv is activated.
    """
    venv = tmp_path / ".venv"
    run([sys.executable, "-m", "venv", venv])
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "base-environment.pth").write_text("\n".join(_site_packages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    pip = [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps"]
    run([*pip, "--no-build-isolation", "--no-index", REPO_ROOT], env=env)

    created = run(["kscaffold", "new", "my-kernel"], cwd=tmp_path, env=env)
    (hint,) = [
        line.removeprefix("Next: ") for line in created.splitlines() if line.startswith("Next: ")
    ]
    assert hint == "cd my-kernel && python -m pip install -r requirements-dev.txt && kscaffold test"
    output = run(["bash", "-c", hint], cwd=tmp_path, env=env)

    summary = output.strip().splitlines()[-1]
    passed = r"kscaffold test passed \(\d+ passed, .*\)\. Tested: cpu \(build/"
    assert re.match(passed, summary), output
    assert re.search(r"\d+ passed", output) and "failed" not in output.lower(), output
    cuda = re.search(r"Skipped: cuda \((.*)\)\.$", summary)
    if cuda is None:
        assert "cuda (build/" in summary, summary  # a GPU: both backends ran
    else:
        reason = cuda[1]
        compiled = reason.startswith("compiled for ") and "no CUDA GPU is visible" in reason
        assert compiled or (not os.environ.get(REQUIRE_TOOLS) and "not built" in reason), summary
        if compiled:  # one arch without a GPU, and the build said which and how to get all
            assert re.match(r"compiled for \d+\.\d+ into", reason), reason
            assert "kscaffold build --release" in output, output
