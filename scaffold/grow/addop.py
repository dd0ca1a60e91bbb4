"""``kscaffold add-op``: one more op, on every backend of a project, merged like ``add-backend``.

The op is recorded in the project's answers (``ops``), so the template renders it like the first
op: a schema in ``torch-ext/torch_binding.h``, ``csrc/<op>.h`` with the input checks, one source
per backend, a typed wrapper and fake implementation in the Python package, ``tests/test_<op>.py``,
``benchmarks/benchmark_<op>.py`` and the ``build.toml`` entries. The difference between the
renderings without and with the op is merged into the user's files three-way
(:mod:`scaffold.grow.evolve`), so every line the user wrote stays as it is.
"""

from __future__ import annotations

from pathlib import Path

from scaffold.errors import InvalidOptionError
from scaffold.grow.evolve import EvolveReport, evolve
from scaffold.project.answers import load_answers
from scaffold.project.names import OpName, check_op_name_free, defined_names
from scaffold.project.schema import find_schemas
from scaffold.project.signature import describe, split_name
from scaffold.project.spec import OpEntry
from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import (
    LIKE_KINDS,
    OP_VARIANT_SUFFIXES,
    SCHEMA_KIND,
    SKELETON_KIND,
    STABLE_ABI_KINDS,
    TORCH_EXT_DIR,
    TRITON_KINDS,
    TRITON_LANGUAGE,
)


def add_op(
    project: Path,
    name: str,
    *,
    like: str | None = None,
    schema: str | None = None,
    markers: bool = False,
) -> EvolveReport:
    """Add the op ``name`` to every backend of ``project``, keeping every edit the user made.

    ``like`` starts the op from a working op of the template (``relu``, ``img2gray`` or
    ``rms_norm``, with its math under the new name); without it, each backend gets a skeleton
    that compiles, registers the op, checks its inputs and raises naming the file to write.
    ``schema`` (``(args) -> returns``) makes that skeleton, its wrapper, fake, tests and
    benchmark for the schema; it is checked before anything is written.
    """
    if schema is not None:
        if like is not None:
            raise InvalidOptionError(
                "Give --like or --schema, not both: --like copies a template op with its own "
                "schema."
            )
        named, schema = split_name(schema)
        if named is not None and named != name:
            raise InvalidOptionError(
                f"The schema names the op '{named}' but the command adds '{name}': leave the "
                "name out of --schema, or make them the same."
            )
    if like is not None and like not in LIKE_KINDS:
        raise InvalidOptionError(
            f"Unknown --like '{like}': start the op from one of {', '.join(LIKE_KINDS)}, "
            "or leave --like out for a skeleton."
        )
    project = project.resolve()
    answers = load_answers(project)
    op = OpName(name, answers.language)  # C++ names are free where no C++ is generated
    if schema is not None:
        stable_abi = bool(answers.values.get("stable_abi"))
        describe(op.name, schema, language=answers.language, stable_abi=stable_abi)
    if answers.values.get("stable_abi") and (like or SKELETON_KIND) not in STABLE_ABI_KINDS:
        raise InvalidOptionError(
            f"--like {like} has no stable-ABI version: in a stable-ABI project start the op from "
            f"one of {', '.join(k for k in STABLE_ABI_KINDS if k != SKELETON_KIND)}, or leave "
            "--like out."
        )
    if answers.language == TRITON_LANGUAGE and (like or SKELETON_KIND) not in TRITON_KINDS:
        raise InvalidOptionError(
            f"--like {like} has no Triton version: in a Triton project start the op from one "
            f"of {', '.join(k for k in TRITON_KINDS if k != SKELETON_KIND)}, or leave --like out."
        )
    declared = {schema.base_name for schema in find_schemas(project)}
    recorded = {entry.name for entry in answers.ops}
    if op.name in recorded or op.name in declared:
        where = "kscaffold's answers" if op.name in recorded else "torch-ext/"
        raise InvalidOptionError(
            f"{project.name} already has an op named '{op.name}' (declared in {where}): "
            "choose another name."
        )
    for suffix, variant in OP_VARIANT_SUFFIXES.items():
        if f"{op.name}{suffix}" in declared:
            raise InvalidOptionError(
                f"{project.name} already declares '{op.name}{suffix}', the name of {variant} "
                f"kscaffold would declare for '{op.name}': choose another name."
            )
    package = str(answers.values["name"]).replace("-", "_")
    init_file = f"{TORCH_EXT_DIR}/{package}/__init__.py"
    init_text = read_regular_text(project / init_file)
    check_op_name_free(
        op,
        package=package,
        other_ops=recorded | declared,
        user_names=defined_names(init_text) if init_text is not None else (),
        init_file=init_file,
    )
    ops = [*(entry.as_answer() for entry in answers.ops)]
    kind = SCHEMA_KIND if schema is not None else like or SKELETON_KIND
    ops.append(OpEntry(op.name, kind, schema).as_answer())
    return evolve(
        project,
        answers,
        answers.with_values(ops=ops),
        markers=markers,
        what=f"add the {op.name} op",
    )
