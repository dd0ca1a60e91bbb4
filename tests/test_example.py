"""The committed worked example never goes stale: it is regenerated and diffed."""

from __future__ import annotations

from pathlib import Path

from scaffold.create import ProjectSpec, create_project
from tests.helpers import EXAMPLES_DIR, snapshot

REFRESH = (
    "rm -rf examples/img2gray && kscaffold new img2gray --example img2gray --backends cuda,cpu "
    "--dest examples/img2gray --no-git"
)


def test_img2gray_example_is_byte_identical_to_a_fresh_generation(tmp_path: Path) -> None:
    spec = ProjectSpec.parse("img2gray", backends="cuda,cpu", example="img2gray")
    fresh = snapshot(create_project(spec, tmp_path / "img2gray", git=False))
    committed = snapshot(EXAMPLES_DIR / "img2gray")
    stale = sorted(
        path for path in set(fresh) | set(committed) if fresh.get(path) != committed.get(path)
    )
    assert not stale, f"examples/img2gray is stale in {stale}; refresh it with:\n  {REFRESH}"


def test_readme_gives_the_refresh_command() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert REFRESH in readme
