"""`kscaffold publish`: checked before any Hub call, then the exact calls (no network)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.errors import PublishError
from scaffold.publish import publish
from tests.projects import new_project, simulate_build


class FakeHub:
    """Records the HfApi calls a release makes; ``tags`` are those already on the Hub."""

    def __init__(self, tags: tuple[str, ...] = ()) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.tags = tags

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            if name == "list_repo_refs":
                return SimpleNamespace(tags=[SimpleNamespace(name=t) for t in self.tags])
            return None

        return call


@pytest.fixture(scope="module")
def template_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = new_project(tmp_path_factory.mktemp("template") / "my-kernel")
    simulate_build(project)
    return project


def test_release_makes_the_expected_hub_calls(project: Path) -> None:
    hub = FakeHub()
    plan = publish(project, "1.2.3", repo_id="my-org/my-kernel", api=hub)
    assert [name for name, _, _ in hub.calls] == [
        "create_repo",
        "list_repo_refs",
        "create_branch",
        "upload_folder",
        "create_tag",
    ]
    assert hub.calls[0][1:] == (("my-org/my-kernel",), {"exist_ok": True, "private": False})
    assert hub.calls[2][2] == {"branch": "v1", "exist_ok": True}
    upload = hub.calls[3][2]
    assert upload["revision"] == "v1" and upload["commit_message"] == "Release v1.2.3"
    assert hub.calls[4][2] == {"tag": "v1.2.3", "revision": "v1"}
    files = set(upload["allow_patterns"])
    assert {"build.toml", "flake.nix", "README.md", "torch-ext/torch_binding.cpp"} <= files
    assert any(f.startswith("build/") and f.endswith(".abi3.so") for f in files)
    assert not any(f.startswith((".kscaffold/", ".git/")) for f in files)
    assert plan.variants and plan.tag == "v1.2.3"


@pytest.mark.parametrize(
    ("version", "repo_id", "message"),
    [
        ("1.0", "my-org/my-kernel", "Invalid release version '1.0'"),
        ("2.0.0", "my-org/my-kernel", "does not match build.toml's version = 1"),
        ("1.0.0", None, "No Hub repository"),
        ("1.0.0", "not-a-repo", "Invalid Hub repository 'not-a-repo'"),
    ],
)
def test_bad_release_is_refused_before_any_hub_call(
    project: Path, version: str, repo_id: str | None, message: str
) -> None:
    hub = FakeHub()
    with pytest.raises(PublishError, match=message):
        publish(project, version, repo_id=repo_id, api=hub)
    assert hub.calls == []


def test_existing_tag_is_refused_before_uploading(project: Path) -> None:
    hub = FakeHub(tags=("v1.0.0",))
    with pytest.raises(PublishError, match="already has the tag v1.0.0"):
        publish(project, "1.0.0", repo_id="my-org/my-kernel", api=hub)
    assert "upload_folder" not in [name for name, _, _ in hub.calls]


def test_nothing_built_is_refused(tmp_path: Path) -> None:
    project = new_project(tmp_path / "bare")
    with pytest.raises(PublishError, match="build/ holds no variant"):
        publish(project, "1.0.0", repo_id="my-org/my-kernel", api=FakeHub())


def test_cli_dry_run_lists_the_release(project: Path) -> None:
    result = CliRunner().invoke(
        app, ["publish", "1.0.0", str(project), "--repo-id", "my-org/my-kernel", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "Would upload" in result.output and "my-org/my-kernel@v1, tag v1.0.0" in result.output
