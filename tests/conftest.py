"""Test-suite policy and shared fixtures.

On CI every tool a test can use is installed, so a skip for its absence is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.projects import copy_project, new_project

#: Skip reasons that mean "a tool is missing" (never "no GPU": CI has none, by design).
TOOL_SKIPS = (
    "needs a CUDA build of torch",
    "needs nvcc",
    "needs cuobjdump",
    "nix-instantiate not installed",
    "needs git",
    "kernels>=0.17.2 ships the parser",
    "needs actionlint",
)
REQUIRE_TOOLS = "KSCAFFOLD_REQUIRE_TOOLS"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if not (report.skipped and os.environ.get(REQUIRE_TOOLS)):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if any(tool in reason for tool in TOOL_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_TOOLS} is set, but this test was skipped: {reason}"


@pytest.fixture(scope="module")
def template_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh CPU+CUDA project, generated once per module (tests change copies of it)."""
    return new_project(tmp_path_factory.mktemp("template") / "my-kernel")


@pytest.fixture
def project(template_project: Path, tmp_path: Path) -> Path:
    """A copy of ``template_project`` that the test may change."""
    return copy_project(template_project, tmp_path / "my-kernel")
