"""Output that never fails on its own characters, whatever the locale or the folder names.

In an ASCII or latin-1 locale (``LANG=C``, ``PYTHONIOENCODING=ascii``), an arrow or a check mark
cannot be encoded, and neither can a path whose bytes are not UTF-8 (Python holds those as lone
surrogates) in any encoding. The streams are switched to write what they cannot encode as
backslash escapes, and the few symbols kscaffold prints have ASCII stand-ins for such streams.
"""

from __future__ import annotations

import io
import sys

from rich.console import Console


def make_streams_safe() -> None:
    """Write what stdout and stderr cannot encode as backslash escapes instead of failing.

    A stream that already writes lone surrogates back as their bytes (Python's UTF-8 mode) is
    left as it is: it cannot fail either.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


def symbol(console: Console, fancy: str, plain: str) -> str:
    """``fancy`` where ``console``'s stream can encode it, else its ASCII stand-in ``plain``."""
    encoding = getattr(console.file, "encoding", None) or console.encoding or "ascii"
    try:
        fancy.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return plain
    return fancy
