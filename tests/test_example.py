"""The committed worked example never goes stale: it is regenerated and diffed."""

from __future__ import annotations

import re
from pathlib import Path

from scaffold.grow.create import create_project
from scaffold.project.spec import ProjectSpec
from tests.helpers import EXAMPLES_DIR, snapshot

REFRESH = (
    "rm -rf examples/img2gray && kscaffold new img2gray --example img2gray --backends cuda,cpu "
    "--dest examples/img2gray --no-git"
)


# Measurements of the example, not template output: they are kept beside the generated files and
# left out of the comparison on purpose (a fresh generation has measured nothing yet).
MEASUREMENTS = ("BENCHMARKS.md", "BENCHMARKS-h200.png", "BENCHMARKS-cpu.png")


def test_img2gray_example_is_byte_identical_to_a_fresh_generation(tmp_path: Path) -> None:
    spec = ProjectSpec.parse("img2gray", backends="cuda,cpu", example="img2gray")
    fresh = snapshot(create_project(spec, tmp_path / "img2gray", git=False))
    committed = snapshot(EXAMPLES_DIR / "img2gray")
    assert not set(MEASUREMENTS) & set(fresh), "the template now generates a measurement file"
    for measurement in MEASUREMENTS:
        del committed[measurement]
    stale = sorted(
        path for path in set(fresh) | set(committed) if fresh.get(path) != committed.get(path)
    )
    assert not stale, f"examples/img2gray is stale in {stale}; refresh it with:\n  {REFRESH}"


def test_readme_gives_the_refresh_command() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert REFRESH in readme


def test_readme_names_every_file_added_beside_the_generated_tree() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## The worked example", 1)[1].split("\n## ", 1)[0]
    for measurement in MEASUREMENTS:
        assert f"`{measurement}`" in section, measurement


def test_benchmarks_md_gives_machine_torch_and_date_of_each_run() -> None:
    text = (EXAMPLES_DIR / "img2gray" / "BENCHMARKS.md").read_text()
    # One table per run, each under a line naming the machine, the torch version and the date,
    # as `benchmarks/benchmark.py --markdown` writes it.
    runs = re.findall(r"^img2gray on (.+) \(torch (\S+), (\d{4}-\d\d-\d\d) ", text, re.MULTILINE)
    machines = [machine for machine, _, _ in runs]
    assert any("H200" in m for m in machines) and any("threads" in m for m in machines), runs
    for plot in ("BENCHMARKS-h200.png", "BENCHMARKS-cpu.png"):
        assert f"]({plot})" in text
        assert (EXAMPLES_DIR / "img2gray" / plot).read_bytes().startswith(b"\x89PNG")
