"""Test-suite policy: on CI every tool a test can use is installed, so its absence is a failure."""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

#: Skip reasons that mean "a tool is missing" (never "no GPU": CI has none, by design).
TOOL_SKIPS = (
    "needs a CUDA build of torch",
    "needs nvcc",
    "needs cuobjdump",
    "nix-instantiate not installed",
    "needs git",
    "kernels>=0.17.2 ships the parser",
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
