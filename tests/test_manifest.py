"""The record of generated files that ``kscaffold clean`` relies on."""

from __future__ import annotations

import hashlib
from pathlib import Path

from scaffold.outputs.manifest import MANIFEST_PATH, load_manifest, record_generated


def test_records_hashes_and_forgets_deleted_files(tmp_path: Path) -> None:
    (tmp_path / "build" / "v").mkdir(parents=True)
    first = tmp_path / "build" / "v" / "a.py"
    first.write_text("a = 1\n")
    (tmp_path / "compile_commands.json").write_text("[]\n")
    record_generated(tmp_path, [first, Path("compile_commands.json")])
    assert load_manifest(tmp_path) == {
        "build/v/a.py": hashlib.sha256(b"a = 1\n").hexdigest(),
        "compile_commands.json": hashlib.sha256(b"[]\n").hexdigest(),
    }
    first.unlink()
    second = tmp_path / "build" / "v" / "b.py"
    second.write_text("b = 2\n")
    record_generated(tmp_path, [second])
    assert set(load_manifest(tmp_path)) == {"build/v/b.py", "compile_commands.json"}


def test_missing_or_damaged_record_is_empty(tmp_path: Path) -> None:
    assert load_manifest(tmp_path) == {}
    (tmp_path / MANIFEST_PATH).parent.mkdir()
    (tmp_path / MANIFEST_PATH).write_text("{not json")
    assert load_manifest(tmp_path) == {}
