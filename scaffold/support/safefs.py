"""Reading a project's files without trusting what they are.

A FIFO, socket or device named like a source file would block or misbehave when opened the usual
way. These helpers open with ``O_NONBLOCK`` and read only what turns out to be a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_regular_bytes(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is (or links to) a regular file; None otherwise or unreadable."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        chunks: list[bytes] = []
        while chunk := os.read(descriptor, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(descriptor)


def read_regular_text(path: Path) -> str | None:
    """:func:`read_regular_bytes` decoded as UTF-8 (undecodable bytes replaced)."""
    data = read_regular_bytes(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def leaves_project(project: Path, path: Path) -> bool:
    """Whether ``path`` (under ``project`` by name) leads out of it through a link on its way."""
    try:
        return not path.resolve().is_relative_to(project.resolve())
    except (OSError, RuntimeError):  # a link loop leads nowhere inside
        return True


def read_project_text(project: Path, path: Path) -> str | None:
    """:func:`read_regular_text` of ``path``, but None where a link takes it out of ``project``."""
    if leaves_project(project, path):
        return None
    return read_regular_text(path)


def has_control_character(text: str) -> bool:
    """Whether ``text`` holds a newline, tab or other control character (C0, DEL or C1)."""
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)
