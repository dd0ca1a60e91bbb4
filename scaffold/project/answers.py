"""The answers file a kscaffold project carries, and how to recognise such a project."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scaffold.errors import AnswersError, KscaffoldError, NotAProjectError
from scaffold.project.flakepin import EDITIONS_WRITTEN, check_ref
from scaffold.project.names import OpName, check_op_name_free
from scaffold.project.signature import describe
from scaffold.project.spec import OpEntry, ProjectSpec, default_ops
from scaffold.vocabulary import ANSWERS_FILE, BUILD_TOML, CPP_LANGUAGE, OP_KINDS, SCHEMA_KIND


@dataclass(frozen=True)
class ProjectAnswers:
    """The answers a project was rendered with, and the kscaffold version that rendered it."""

    values: dict[str, Any]
    kscaffold_version: str

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(self.values.get("backends", ()))

    @property
    def language(self) -> str:
        """What the project's ops are written in (``cpp`` when the answers do not say)."""
        return str(self.values.get("language", CPP_LANGUAGE))

    @property
    def ops(self) -> tuple[OpEntry, ...]:
        """The project's ops in the order they were added (projects made before add-op: one)."""
        recorded = self.values.get("ops") or default_ops(self.values.get("example"))
        return tuple(
            OpEntry(str(entry["name"]), str(entry["kind"]), entry.get("schema"))
            for entry in recorded
        )

    def with_values(self, **changes: Any) -> ProjectAnswers:
        return ProjectAnswers({**self.values, **changes}, self.kscaffold_version)


#: The answers a project's file holds: what ``kscaffold new`` asks, nothing derived, and the
#: build.toml edition with the kernel-builder revision a project moved off the release records.
ANSWER_KEYS = (
    "name",
    "backends",
    "example",
    "owner",
    "license",
    "version",
    "language",
    "ops",
    "stable_abi",
    "edition",
    "kernel_builder_ref",
)
_BUILDER_KEYS = ("edition", "kernel_builder_ref")
_REQUIRED_KEYS = ("name", "backends", "example")


def load_answers(project: Path) -> ProjectAnswers:
    """Read the answers file, validated with the rules of ``kscaffold new``.

    The file is the input of every later rendering (``add-backend``, ``update``), so an edited
    answer passes the same checks as one typed on the command line, and derived values
    (``python_name``, ``repo_id``, ...) are never taken from it.
    """
    if not project.is_dir():
        raise NotAProjectError(f"{project} is not a folder.")
    missing = [name for name in (BUILD_TOML, ANSWERS_FILE) if not (project / name).is_file()]
    if missing:
        raise NotAProjectError(
            f"{project} is not a kscaffold project: {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing (create one with `kscaffold new`)."
        )
    path = project / ANSWERS_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as error:
        raise NotAProjectError(f"{path} is not valid YAML: {error}") from error
    except OSError as error:
        raise NotAProjectError(f"Cannot read {path}: {error.strerror or error}.") from error
    if not isinstance(data, dict) or any(key not in data for key in _REQUIRED_KEYS):
        raise NotAProjectError(
            f"{path} lacks kscaffold's answers ({', '.join(_REQUIRED_KEYS)}): "
            "it was not written by kscaffold."
        )
    version = str(data.pop("_kscaffold_version", "0"))
    values = {key: value for key, value in data.items() if not str(key).startswith("_")}
    unknown = sorted(str(key) for key in values if key not in ANSWER_KEYS)
    if unknown:
        raise AnswersError(
            f"{path}: unknown answer {', '.join(repr(key) for key in unknown)} (kscaffold "
            f"records only {', '.join(ANSWER_KEYS)}): remove it."
        )
    answers = _validated(path, values)
    ops = data.get("ops", default_ops(answers["example"]))
    _name_the_bad_op_entry(path, ops)
    if (
        not isinstance(ops, list)
        or not all(
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and entry.get("kind") in OP_KINDS
            for entry in ops
        )
        or not ops
        or len({entry["name"] for entry in ops}) != len(ops)
    ):
        raise NotAProjectError(
            f"{path}: 'ops' must list each op once, as "
            f"{{name: ..., kind: ...}} with a kind among {', '.join(OP_KINDS)}; "
            "restore it from git."
        )
    package = str(answers["name"]).replace("-", "_")
    _check_op_names(path, ops, package, str(answers.get("language", CPP_LANGUAGE)))
    ops = [_op_entry(path, entry).as_answer() for entry in ops]
    return ProjectAnswers({**answers, **_builder(path, values), "ops": ops}, version)


def _builder(path: Path, values: dict[str, Any]) -> dict[str, Any]:
    """``edition`` and ``kernel_builder_ref``: both or neither, an edition kscaffold writes."""
    recorded = {key: values[key] for key in _BUILDER_KEYS if key in values}
    if not recorded:
        return {}
    edition, ref = recorded.get("edition"), recorded.get("kernel_builder_ref")
    if (
        len(recorded) != len(_BUILDER_KEYS)
        or isinstance(edition, bool)
        or edition not in EDITIONS_WRITTEN
        or not isinstance(ref, str)
    ):
        raise AnswersError(
            f"{path}: edition and kernel_builder_ref go together (edition one of "
            f"{', '.join(map(str, EDITIONS_WRITTEN))}, a revision of kernel-builder): "
            "restore them from git, or run `kscaffold update --edition 6 --kernel-builder REF`."
        )
    try:
        check_ref(ref)
    except KscaffoldError as error:
        raise AnswersError(f"{path}: kernel_builder_ref: {error}") from error
    return {"edition": edition, "kernel_builder_ref": ref}


def _op_entry(path: Path, entry: dict[str, Any]) -> OpEntry:
    """The recorded op; one of kind ``schema`` carries a schema that ``add-op --schema`` accepts."""
    schema = entry.get("schema")
    if entry["kind"] != SCHEMA_KIND:
        if schema is not None:
            raise AnswersError(
                f"{path}: 'ops': {entry['name']} is of kind {entry['kind']}, which takes no "
                "schema: restore it from git."
            )
        return OpEntry(entry["name"], entry["kind"])
    if not isinstance(schema, str):
        raise AnswersError(
            f"{path}: 'ops': {entry['name']} is of kind {SCHEMA_KIND} but records no schema "
            "string: restore it from git."
        )
    try:
        describe(entry["name"], schema)
    except KscaffoldError as error:
        raise AnswersError(f"{path}: 'ops': {error}") from error
    return OpEntry(entry["name"], entry["kind"], schema)


def _name_the_bad_op_entry(path: Path, ops: object) -> None:
    """One line naming the first entry of 'ops' the template cannot render, and its key."""
    if not isinstance(ops, list):
        return
    for index, entry in enumerate(ops):
        where = f"{path}: ops[{index}]"
        if not isinstance(entry, dict):
            raise AnswersError(f"{where} must be {{name: ..., kind: ...}}, not {entry!r}.")
        kind = entry.get("kind")
        if "kind" in entry and (not isinstance(kind, str) or kind not in OP_KINDS):
            raise AnswersError(
                f"{where}.kind is {kind!r}, which is no kind of op the template renders "
                f"({', '.join(OP_KINDS)}): restore it from git."
            )


def _check_op_names(path: Path, ops: list[dict[str, str]], package: str, language: str) -> None:
    """Each recorded op name follows add-op's rules: it names files, namespaces and functions."""
    names = [entry["name"] for entry in ops]
    for index, entry in enumerate(ops):
        try:
            # The first op may share the package's name (``--example img2gray`` makes one).
            check_op_name_free(
                OpName(entry["name"], language),
                package=package if index else None,
                other_ops=names,
            )
        except KscaffoldError as error:
            raise AnswersError(f"{path}: 'ops': {error}") from error


def _validated(path: Path, values: dict[str, Any]) -> dict[str, Any]:
    """The answers normalised as ``kscaffold new`` normalises its options, or an AnswersError."""
    backends = values.get("backends")
    example = values.get("example")
    owner = values.get("owner") or None
    version = values.get("version", 1)
    stable_abi = values.get("stable_abi")
    checks: list[tuple[str, object, type | tuple[type, ...]]] = [
        ("name", values.get("name"), str),
        ("backends", backends, list),
        ("example", example, str),
        ("owner", owner, (str, type(None))),
        ("license", values.get("license", "apache-2.0"), str),
        # Recorded only for triton projects: C++ projects' answers read as they always have.
        ("language", values.get("language", CPP_LANGUAGE), str),
        ("stable_abi", stable_abi, (str, type(None))),
    ]
    for key, value, expected in checks:
        if not isinstance(value, expected):
            raise AnswersError(f"{path}: {key} must be {_kind(expected)}, not {value!r}.")
    if not all(isinstance(backend, str) for backend in backends):  # type: ignore[union-attr]
        raise AnswersError(f"{path}: backends must be a list of names, not {backends!r}.")
    if isinstance(version, bool) or not isinstance(version, int):
        raise AnswersError(f"{path}: version must be a whole number, not {version!r}.")
    try:
        spec = ProjectSpec.parse(
            values["name"],
            backends=backends,  # type: ignore[arg-type]
            example=None if example == "none" else example,
            owner=owner,
            license=values.get("license", "apache-2.0"),
            version=version,
            language=values.get("language", CPP_LANGUAGE),
            stable_abi=stable_abi,
        )
    except KscaffoldError as error:
        raise AnswersError(f"{path}: {error}") from error
    return spec.answers()


def _kind(expected: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list", type(None): "empty"}
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(names.get(kind, kind.__name__) for kind in kinds)
