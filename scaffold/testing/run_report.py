"""What ``kscaffold test`` and its pytest plugin share: the run's variables and counts.

Kept apart from :mod:`scaffold.testing.pytest_plugin`, which imports pytest: kscaffold itself
runs without pytest installed (``pip install kscaffold``); only a project's test run needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The backend whose variant a run imports (``cpu``, ``cuda``); set by ``kscaffold test``.
BACKEND_VARIABLE = "KSCAFFOLD_TEST_BACKEND"
#: A file the plugin writes the run's :class:`RunCounts` to, as JSON.
REPORT_VARIABLE = "KSCAFFOLD_TEST_REPORT"


@dataclass
class RunCounts:
    """What pytest did, for ``kscaffold test``'s last line."""

    variant: str | None = None
    collected: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    collection_errors: list[str] = field(default_factory=list)
