"""`kscaffold publish` against a strict fake of the Hub: the layout `get_kernel` resolves, the gate.

Fast tests use a release-ready variant written here (a real, empty shared library and the
metadata `kscaffold build` writes, digest included); the slow test builds a fresh project,
publishes it, lays the `v1` branch out as the Hub cache holds it and loads it with the real
`kernels.get_kernel` in a fresh, offline process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from huggingface_hub.errors import HfHubHTTPError
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.compiler.stubs import ops_py
from scaffold.errors import InvalidNameError, PublishError
from scaffold.grow.create import create_project
from scaffold.outputs.provenance import KERNELS_MINVER, provenance, variant_digest
from scaffold.project.spec import ProjectSpec
from scaffold.release.publish import ReleasePlan, ReleaseResult, publish
from tests.helpers import run
from tests.hub import FakeHubState, FakeRepo, lay_out_hub_cache, strict_hub
from tests.projects import SIMULATED_VARIANT, git, tiny_library

REPO = "my-org/my-kernel"
TOKEN = "hf_kscaffoldTestTokenNeverPrinted0123456789"
runner = CliRunner()


def write_variant(
    project: Path,
    *,
    uid: str = "abc1234",
    library: bytes | None = None,
    variant: str = SIMULATED_VARIANT,
) -> Path:
    """A CPU variant as `kscaffold build` installs it, with a real (empty) library."""
    ops = f"_my_kernel_cpu_{uid}"
    folder = project / "build" / variant
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(project / "torch-ext" / "my_kernel" / "__init__.py", folder / "__init__.py")
    (folder / "_ops.py").write_text(ops_py(ops))
    (folder / f"{ops}.abi3.so").write_bytes(library if library is not None else tiny_library())
    metadata: dict[str, Any] = {
        "name": "my-kernel",
        "id": ops,
        "version": 1,
        "license": "apache-2.0",
        "python-depends": [],
        "backend": {"type": "cpu"},
        "kernels-minver": KERNELS_MINVER,
        "provenance": provenance(project, ops),
        "digest": variant_digest(folder),
    }
    (folder / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
    return folder


def make_project(root: Path, *, owner: str | None = "my-org", use_git: bool = True) -> Path:
    spec = ProjectSpec.parse("my-kernel", backends=["cpu"], owner=owner)
    return create_project(spec, root / "my-kernel", git=use_git)


@pytest.fixture(scope="module")
def released_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = make_project(tmp_path_factory.mktemp("publish"))
    write_variant(project)
    return project


@pytest.fixture
def ready(released_template: Path, tmp_path: Path) -> Path:
    """A committed project with one clean, release-ready CPU variant in build/."""
    return Path(shutil.copytree(released_template, tmp_path / "my-kernel", symlinks=True))


@pytest.fixture(autouse=True)
def hub_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A token from the environment, and a Hub home in tmp (never the user's)."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)


def release(project: Path, state: FakeHubState, version: str = "1.0.0", **options: Any) -> Any:
    options.setdefault("allow_local_build", True)
    return publish(project, version, api=strict_hub(state), **options)


# --- the layout get_kernel resolves ---------------------------------------------------------


def test_publish_puts_variants_on_v_branch_and_card_on_main_of_a_kernel_repo(ready: Path) -> None:
    state = FakeHubState()
    result = release(ready, state, "1.2.3")
    assert isinstance(result, ReleaseResult)
    assert state.calls == [
        "create_repo",
        "list_repo_refs",
        "create_branch",
        "list_repo_files",
        "create_commit",  # v1: variants and benchmarks, one commit
        "create_commit",  # main: the card
        "create_tag",
        "get_organization_overview",
    ]
    repo = state.repos[REPO]
    v1 = set(repo.branches["v1"])
    assert v1 == {
        *(f"build/{SIMULATED_VARIANT}/{n}" for n in _variant_names(ready)),
        "benchmarks/benchmark.py",
    }
    assert set(repo.branches["main"]) == {"README.md"}
    assert repo.branches["main"]["README.md"] == (ready / "README.md").read_bytes()
    assert set(repo.tags) == {"v1.2.3"} and repo.tags["v1.2.3"] == repo.head("v1")
    assert result.load_line == f'get_kernel("{REPO}", version=1, trust_remote_code=True)'


def _variant_names(project: Path) -> list[str]:
    return sorted(p.name for p in (project / "build" / SIMULATED_VARIANT).iterdir())


def test_publish_load_line_drops_trust_remote_code_for_a_trusted_publisher(ready: Path) -> None:
    result = release(ready, FakeHubState(trusted_owners=frozenset({"my-org"})))
    assert result.load_line == f'get_kernel("{REPO}", version=1)'


def test_publish_deletes_stale_files_of_uploaded_variants_in_the_same_commit(ready: Path) -> None:
    stale = f"build/{SIMULATED_VARIANT}/_my_kernel_cpu_0ld0000.abi3.so"
    other = "build/torch213-cxx11-cu130-x86_64-linux/metadata.json"
    state = FakeHubState()
    state.repos[REPO] = FakeRepo(
        branches={
            "main": {"README.md": b"old"},
            "v1": {stale: b"old", other: b"{}", "benchmarks/benchmark_old.py": b""},
        }
    )
    release(ready, state)
    v1 = state.repos[REPO].branches["v1"]
    assert stale not in v1 and "benchmarks/benchmark_old.py" not in v1
    assert other in v1  # a variant this release does not carry stays
    assert state.calls.count("create_commit") == 2  # one for v1, one for main
    assert "create_branch" not in state.calls


def test_publish_on_a_new_branch_drops_build_files_inherited_from_main(ready: Path) -> None:
    state = FakeHubState()
    state.repos[REPO] = FakeRepo(branches={"main": {"build/torch-cpu/old.py": b"", "x.txt": b""}})
    release(ready, state)
    v1 = state.repos[REPO].branches["v1"]
    assert "build/torch-cpu/old.py" not in v1 and "x.txt" in v1


def test_publish_create_pr_opens_pull_requests_and_writes_no_branch(ready: Path) -> None:
    state = FakeHubState()
    state.repos[REPO] = FakeRepo(branches={"main": {}, "v1": {}})
    result = release(ready, state, create_pr=True)
    assert "create_repo" not in state.calls and "create_tag" not in state.calls
    assert state.repos[REPO].branches == {"main": {}, "v1": {}}
    assert sorted(state.repos[REPO].pull_requests) == ["main#2", "v1#1"]
    assert len(result.pull_requests) == 2


def test_publish_create_pr_needs_the_branch(ready: Path) -> None:
    state = FakeHubState()
    state.repos[REPO] = FakeRepo()
    with pytest.raises(PublishError, match="needs the branch v1 to exist"):
        release(ready, state, create_pr=True)
    assert "create_commit" not in state.calls


def test_build_metadata_passes_the_loaders_validators_and_a_dirty_build_is_flagged(
    ready: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from kernels._rust import Metadata
    from kernels.validate import default_metadata_validators

    head = git(ready, "rev-parse", "HEAD").strip()
    variant = ready / "build" / SIMULATED_VARIANT
    for uid, dirty in (("abc1234", False), ("abc1234_dirty", True)):
        shutil.rmtree(variant)
        write_variant(ready, uid=uid)
        metadata = Metadata.read_from_file(variant / "metadata.json")
        assert metadata.provenance.kernel.commit == head
        assert metadata.provenance.kernel_builder.version.startswith("kscaffold ")
        assert str(metadata.kernels_minver) == KERNELS_MINVER
        caplog.clear()
        with caplog.at_level("WARNING", logger="kernels.validate"):
            for validator in default_metadata_validators():
                validator.validate_metadata(metadata=metadata, variant=SIMULATED_VARIANT)
        assert ("built from a dirty git tree" in caplog.text) is dirty, caplog.text


def test_verify_signature_sees_an_unsigned_build_and_the_digest_it_would_check(ready: Path) -> None:
    """`kernels verify-signature` needs a sigstore bundle, which only kernel-builder's CI makes."""
    from kernels._rust import Digest, Metadata
    from kernels.verify import VerificationResult, verify_variant

    variant = ready / "build" / SIMULATED_VARIANT
    result = verify_variant(variant)
    assert isinstance(result, VerificationResult.SignatureBundleMissing)
    metadata = Metadata.read_from_file(variant / "metadata.json")
    metadata.digest.validate(Digest.hash_variant(metadata.digest.algorithm, variant))


# --- refused before any upload ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "repo_id", "error", "message"),
    [
        ("1.0", REPO, PublishError, "Invalid release version '1.0'"),
        ("2.0.0", REPO, PublishError, "does not match build.toml's version = 1"),
        ("1.0.0", "not-a-repo", InvalidNameError, "Invalid Hub repository 'not-a-repo'"),
        # issue 11 item 15: `--repo-id a--b/c` was a traceback
        ("1.0.0", "a--b/c", InvalidNameError, "no '--' or '..'"),
        # issue 11 item 16: ids the Hub refuses later
        ("1.0.0", "a/b..c", InvalidNameError, "no '--' or '..'"),
        ("1.0.0", "a/b.git", InvalidNameError, "no '.git' ending"),
        ("1.0.0", "a/" + "b" * 100, InvalidNameError, "at most 96"),
        ("1.0.0", "a/b/c", InvalidNameError, "use ORG/NAME"),
    ],
)
def test_publish_bad_version_or_repo_id_refused_before_any_hub_call_issue11_items15_16(
    ready: Path, version: str, repo_id: str, error: type[Exception], message: str
) -> None:
    state = FakeHubState()
    with pytest.raises(error, match=message):
        release(ready, state, version, repo_id=repo_id)
    assert state.calls == []


def test_publish_cli_repo_id_with_double_dash_is_one_line_issue11_item15(ready: Path) -> None:
    result = runner.invoke(app, ["publish", "1.0.0", str(ready), "--repo-id", "a--b/c"])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output, result.output


def test_publish_leading_zero_release_is_normalised_for_tag_and_duplicate_issue11_item16(
    ready: Path,
) -> None:
    state = FakeHubState()
    release(ready, state, "01.00.0")
    assert set(state.repos[REPO].tags) == {"v1.0.0"}
    with pytest.raises(PublishError, match="already has the tag v1.0.0"):
        release(ready, state, "1.0.00")
    with pytest.raises(PublishError, match="already has the tag v1.0.0"):
        release(ready, state, "v1.0.0")


def test_publish_existing_tag_refused_before_uploading(ready: Path) -> None:
    state = FakeHubState()
    state.repos[REPO] = FakeRepo(tags={"v1.0.0": "0" * 40})
    with pytest.raises(PublishError, match="already has the tag v1.0.0"):
        release(ready, state)
    assert "create_commit" not in state.calls


def test_publish_nothing_built_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    with pytest.raises(PublishError, match="build/ holds no variant"):
        release(project, FakeHubState())


def test_publish_refuses_a_dirty_build(ready: Path) -> None:
    shutil.rmtree(ready / "build" / SIMULATED_VARIANT)
    write_variant(ready, uid="abc1234_dirty")
    state = FakeHubState()
    with pytest.raises(PublishError, match=r"built from uncommitted sources .*: commit"):
        release(ready, state)
    assert state.calls == []


def test_publish_refuses_a_variant_of_another_major_version(ready: Path) -> None:
    toml = ready / "build.toml"
    toml.write_text(toml.read_text().replace("version = 1\n", "version = 2\n", 1))
    git(ready, "commit", "--quiet", "-am", "version 2")
    state = FakeHubState()
    with pytest.raises(PublishError, match="is a build of my-kernel version 1, not of build.toml"):
        release(ready, state, "2.0.0")
    assert state.calls == []


def test_publish_refuses_a_tampered_library(ready: Path) -> None:
    library = next((ready / "build" / SIMULATED_VARIANT).glob("*.abi3.so"))
    library.write_bytes(library.read_bytes() + b"\0")
    state = FakeHubState()
    with pytest.raises(PublishError, match=r"no longer matches the digest .*File hash mismatch"):
        release(ready, state)
    assert state.calls == []


def test_publish_refuses_a_file_added_after_the_build(ready: Path) -> None:
    (ready / "build" / SIMULATED_VARIANT / ".env").write_text(f"HF_TOKEN={TOKEN}\n")
    state = FakeHubState()
    with pytest.raises(PublishError, match="no longer matches the digest"):
        release(ready, state)
    assert state.calls == []


def non_abi3_library(tmp_path: Path) -> bytes:
    """A shared library that calls a CPython function outside the limited API."""
    source = tmp_path / "bad.c"
    source.write_text(
        "extern void *PyCode_NewEmpty(const char *, const char *, int);\n"
        'void *bad(void) { return PyCode_NewEmpty("a", "b", 1); }\n'
    )
    run(["cc", "-shared", "-fPIC", "-o", tmp_path / "bad.so", source])
    return (tmp_path / "bad.so").read_bytes()


def test_publish_refuses_an_abi_violation_and_check_names_file_and_fix(
    ready: Path, tmp_path: Path
) -> None:
    shutil.rmtree(ready / "build" / SIMULATED_VARIANT)
    write_variant(ready, library=non_abi3_library(tmp_path))
    state = FakeHubState()
    with pytest.raises(PublishError, match="PyCode_NewEmpty"):
        release(ready, state)
    assert state.calls == []
    result = runner.invoke(app, ["check", str(ready)])
    assert result.exit_code == 1, result.output
    assert f"error build/{SIMULATED_VARIANT}/_my_kernel_cpu_abc1234.abi3.so" in result.output
    assert "outside the limited Python API" in result.output and "fix:" in result.output


def test_newer_libstdcxx_is_a_warning_for_a_local_build_and_refused_in_a_nix_build(
    ready: Path, tmp_path: Path
) -> None:
    from scaffold.checks import check_project

    source = tmp_path / "newer.cpp"
    source.write_text(
        "#include <sstream>\n#include <string>\n"
        "std::string f(int v) { std::ostringstream s; s << v; return std::move(s).str(); }\n"
    )
    run(["g++", "-std=c++20", "-shared", "-fPIC", "-o", tmp_path / "newer.so", source])
    shutil.rmtree(ready / "build" / SIMULATED_VARIANT)
    variant = write_variant(ready, library=(tmp_path / "newer.so").read_bytes())
    (local,) = [f for f in check_project(ready) if f.location.endswith(".abi3.so")]
    assert local.severity == "warning" and "need GLIBCXX 3.4.29" in local.message
    assert "manylinux_2_28" in local.message and "nix run .#build-and-copy" in local.fix
    plan = release(ready, FakeHubState(), dry_run=True)
    assert any("GLIBCXX 3.4.29" in warning for warning in plan.warnings)

    metadata = json.loads((variant / "metadata.json").read_text())
    metadata["provenance"]["kernel-builder"] = {"version": "0.17.2"}  # as a Nix build says
    (variant / "metadata.json").write_text(json.dumps(metadata))
    state = FakeHubState()
    with pytest.raises(PublishError, match="need GLIBCXX 3.4.29"):
        release(ready, state, allow_local_build=False)
    assert state.calls == []


def test_publish_refuses_a_local_build_without_allow_local_build(ready: Path) -> None:
    state = FakeHubState()
    with pytest.raises(
        PublishError,
        match="not built by kernel-builder's Nix build .*names kscaffold .*--allow-local-build",
    ):
        release(ready, state, allow_local_build=False)
    assert state.calls == []


def test_publish_missing_token_is_one_line_and_uploads_nothing(
    ready: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN")
    state = FakeHubState()
    with pytest.raises(PublishError, match=re.escape("Not logged in to the Hub: run `hf auth")):
        release(ready, state)
    assert state.calls == []


def _http_error(status: int) -> HfHubHTTPError:
    request = httpx.Request("POST", "https://huggingface.co/api/repos/create")
    response = httpx.Response(status, request=request)
    return HfHubHTTPError(f"{status} Client Error", response=response)


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (_http_error(401), "did not accept your token (401): run `hf auth login`"),
        (_http_error(403), "kernel repos under 'my-org' (403): publishing kernels needs approval"),
        # issue 11 item 15: no network was a traceback
        (httpx.ConnectError("[Errno -2] Name or service not known"), "Cannot reach the Hugging"),
    ],
)
def test_publish_hub_failures_are_one_line_issue11_item15(
    ready: Path, failure: Exception, message: str
) -> None:
    state = FakeHubState(failures={"create_repo": failure})
    with pytest.raises(PublishError, match=re.escape(message)) as raised:
        release(ready, state)
    assert "\n" not in str(raised.value) and TOKEN not in str(raised.value)
    assert "create_commit" not in state.calls


# --- what is uploaded: never secrets, never a FIFO (issue 11 items 1 and 9) -------------------


def test_publish_outside_git_lists_only_release_files_dry_run_prints_all_issue11_item1(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path, use_git=False)
    write_variant(project)
    secrets = {
        ".env": "HF_TOKEN=x",
        ".venv/lib/site.py": "",
        "id_rsa": "key",
        "deploy.pem": "key",
        "benchmarks/benchmark_private.py": "",
        "notes/benchmark.py": "",
    }
    for path, text in secrets.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)
    (project / ".gitignore").write_text(
        (project / ".gitignore").read_text() + "/benchmarks/benchmark_private.py\n"
    )
    result = runner.invoke(
        app, ["publish", "1.0.0", str(project), "--dry-run", "--allow-local-build"]
    )
    assert result.exit_code == 0, result.output
    listed = [line.strip() for line in result.output.splitlines() if line.startswith("  ")]
    expected = [
        *(f"build/{SIMULATED_VARIANT}/{name}" for name in _variant_names(project)),
        "benchmarks/benchmark.py",
    ]
    assert listed == sorted(expected) + ["README.md"], result.output
    assert "Would upload 5 file(s) to branch v1:" in result.output
    assert "Would upload 1 file(s) to branch main:" in result.output


def test_ignore_rules_outside_git_read_every_gitignore_as_git_does(tmp_path: Path) -> None:
    from scaffold.release.publish import upload_candidates

    (tmp_path / ".gitignore").write_text("*.log\n/top-only.py\n")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / ".gitignore").write_text("benchmark_s*.py\n!benchmark_shared.py\n")
    paths = [
        "a.log",
        "top-only.py",
        "sub/top-only.py",
        "benchmarks/benchmark_secret.py",
        "benchmarks/benchmark_shared.py",
        "benchmarks/benchmark.py",
        ".env",
        ".venv/x.py",
        "keys/deploy.pem",
    ]
    allowed = upload_candidates(tmp_path, paths)
    assert allowed == [
        "sub/top-only.py",
        "benchmarks/benchmark_shared.py",
        "benchmarks/benchmark.py",
    ]


def test_publish_in_git_uploads_only_tracked_benchmarks(ready: Path) -> None:
    (ready / "benchmarks" / "benchmark_scratch.py").write_text("untracked\n")
    state = FakeHubState()
    release(ready, state)
    assert "benchmarks/benchmark_scratch.py" not in state.repos[REPO].branches["v1"]


def _finishes(call: Callable[[], object], seconds: float = 30) -> BaseException | None:
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still running after {seconds} s: a FIFO was opened"
    return outcome[0]


@pytest.mark.parametrize(
    "fifo", [f"build/{SIMULATED_VARIANT}/_my_kernel_cpu_extra.abi3.so", "benchmarks/benchmark_x.py"]
)
def test_publish_fifo_named_like_an_artifact_is_refused_without_opening_it_issue11_item9(
    ready: Path, fifo: str
) -> None:
    os.mkfifo(ready / fifo)
    state = FakeHubState()
    error = _finishes(lambda: release(ready, state))
    assert isinstance(error, PublishError), error
    assert f"{fifo} is not a regular file" in str(error)
    assert "create_commit" not in state.calls


def test_publish_refuses_links_that_would_upload_files_from_outside(
    ready: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("private\n")
    (ready / "README.md").unlink()
    (ready / "README.md").symlink_to(outside / "secret.txt")
    state = FakeHubState()
    with pytest.raises(PublishError, match="README.md .* is a link or not a regular file"):
        release(ready, state)
    (ready / "README.md").unlink()
    variant = ready / "build" / SIMULATED_VARIANT
    shutil.move(variant, outside / "variant")
    variant.symlink_to(outside / "variant")
    with pytest.raises(PublishError, match=f"build/{SIMULATED_VARIANT} is a link"):
        release(ready, state)
    assert state.calls == []


# --- the CLI: plan, success line, no token anywhere -----------------------------------------


def test_publish_cli_prints_coverage_and_the_exact_get_kernel_line_without_the_token(
    ready: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = FakeHubState()
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: strict_hub(state))
    result = runner.invoke(app, ["publish", "1.0.0", str(ready), "--allow-local-build"])
    assert result.exit_code == 0, result.output
    assert f"Variants: {SIMULATED_VARIANT} (built without Nix)" in result.output
    assert "Not covered (" in result.output and "torch213-cxx11-cpu-aarch64-linux" in result.output
    assert result.output.rstrip().endswith(
        f'Load with: from kernels import get_kernel; get_kernel("{REPO}", version=1, '
        "trust_remote_code=True)"
    ), result.output
    assert TOKEN not in result.output
    uploaded = [data for b in state.repos[REPO].branches.values() for data in b.values()]
    assert not any(TOKEN.encode() in data for data in uploaded)
    assert not any(TOKEN.encode() in p.read_bytes() for p in ready.rglob("*") if p.is_file())


def test_publish_dry_run_makes_no_hub_call(ready: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = FakeHubState()
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: strict_hub(state))
    plan = publish(ready, "1.0.0", dry_run=True, allow_local_build=True)
    assert isinstance(plan, ReleasePlan) and state.calls == []


def test_strict_fake_refuses_a_wrong_argument_name() -> None:
    api = strict_hub(FakeHubState())
    with pytest.raises(TypeError):
        api.create_repo(REPO, repo_kind="kernel")
    with pytest.raises(AttributeError):
        api.upload_kernel(REPO)
    with pytest.raises(AssertionError, match="repo_type='kernel'"):
        api.create_repo(REPO, exist_ok=True)


# --- end to end: new → build → publish → get_kernel from the Hub cache -----------------------


LOAD = """
import os, sys, torch
from kernels import get_kernel
kernel = get_kernel(sys.argv[1], version=1, backend="cpu", trust_remote_code=True)
x = torch.randn(1031, dtype=torch.float32)
x[::7] = -x[::7].abs()
torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)
print("loaded", kernel.__name__)
"""


@pytest.mark.slow
def test_publish_end_to_end_get_kernel_resolves_the_release_offline(tmp_path: Path) -> None:
    """From `new --owner`: build, publish --allow-local-build , Hub cache, get_kernel(version=1)."""
    from scaffold.compiler import build_project
    from scaffold.outputs.provenance import inspect_variant

    project = make_project(tmp_path)
    (result,) = build_project(project, backend="cpu")
    status = inspect_variant(result.variant_dir)
    assert not status.dirty and not status.digest_problems and status.builder
    assert status.builder.startswith("kscaffold ")
    state = FakeHubState()
    release(project, state)
    v1 = state.repos[REPO].branches["v1"]
    assert {path.split("/")[0] for path in v1} == {"build", "benchmarks"}
    hf_home = tmp_path / "hf-home"
    lay_out_hub_cache(hf_home, REPO, "v1", v1)
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_TOKEN", None)
    env.pop("LOCAL_KERNELS", None)
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD, REPO], env=env, capture_output=True, text=True, check=False
    )
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert "loaded" in loaded.stdout
    # The loader's own validators accept it: no dirty-tree warning.
    assert "dirty" not in loaded.stderr, loaded.stderr

    # kernel-builder's `nix run .#ci-test`: the sources without build/, LOCAL_KERNELS naming
    # the Nix output (variant folders), `pytest tests -m kernels_ci -p no:cacheprovider`.
    source = tmp_path / "nix-source"
    shutil.copytree(project / "tests", source / "tests")
    shutil.copy(project / "build.toml", source / "build.toml")
    shutil.copytree(project / "csrc", source / "csrc")
    output = tmp_path / "nix-output"
    shutil.copytree(result.variant_dir, output / result.variant)
    env["LOCAL_KERNELS"] = f"{REPO}={output}"
    ci_test = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-m", "kernels_ci", "-p", "no:cacheprovider"],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ci_test.returncode == 0, ci_test.stdout + ci_test.stderr
    assert re.search(r"\d+ passed", ci_test.stdout), ci_test.stdout
