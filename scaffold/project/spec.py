"""What a new project is made of: the validated options of ``kscaffold new`` and its ops.

Shared by the answers file (which records them), the template (which renders them) and the
commands that grow a project, so it lives here, below all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scaffold.errors import InvalidNameError, InvalidOptionError
from scaffold.project.names import (
    KernelName,
    OpName,
    parse_backends,
    parse_license,
    parse_repo_owner,
)
from scaffold.project.signature import describe, split_name
from scaffold.project.stableabi import parse_stable_abi
from scaffold.vocabulary import (
    CPP_LANGUAGE,
    DEFAULT_BACKENDS,
    DEFAULT_OP,
    LANGUAGES,
    SCHEMA_KIND,
    STABLE_ABI_KINDS,
    TRITON_KINDS,
    TRITON_LANGUAGE,
)


@dataclass(frozen=True)
class OpEntry:
    """One op of a project, as the answers record it: its name and the kind it was made from.

    An op of kind ``schema`` also records the schema it was generated from (``(args) -> returns``).
    """

    name: str
    kind: str
    schema: str | None = None

    def as_answer(self) -> dict[str, str]:
        answer = {"name": self.name, "kind": self.kind}
        if self.schema is not None:
            answer["schema"] = self.schema
        return answer


def default_ops(example: str | None) -> list[dict[str, str]]:
    """The ``ops`` answer of a new project: its one op, the example's or the default op."""
    op = example if example and example != "none" else DEFAULT_OP
    return [OpEntry(op, op).as_answer()]


#: The largest major version: build.toml's version is a TOML integer (64-bit signed).
MAX_VERSION = 2**63 - 1
#: Worked examples the template can start from, besides the default op.
EXAMPLES: tuple[str, ...] = ("img2gray", "rms_norm")


@dataclass(frozen=True)
class ProjectSpec:
    """Everything ``kscaffold new`` needs to know, validated on construction."""

    name: KernelName
    backends: tuple[str, ...] = DEFAULT_BACKENDS
    example: str | None = None
    owner: str | None = None
    license: str = "apache-2.0"
    version: int = 1
    #: What the ops are written in: ``cpp`` (C++/CUDA) or ``triton`` (Triton and PyTorch).
    language: str = CPP_LANGUAGE
    #: The torch version ("2.10") the ops target through torch's stable ABI; None: ATen's ABI.
    stable_abi: str | None = None
    extra_answers: dict[str, Any] = field(default_factory=dict)
    #: The first op when it is generated from a schema (``new --schema``), else None.
    schema_op: OpEntry | None = None

    @classmethod
    def parse(
        cls,
        name: str,
        *,
        backends: Sequence[str] | str = DEFAULT_BACKENDS,
        example: str | None = None,
        owner: str | None = None,
        license: str = "apache-2.0",
        version: int = 1,
        language: str = CPP_LANGUAGE,
        stable_abi: str | None = None,
        schema: str | None = None,
    ) -> ProjectSpec:
        """Validate raw user input (as typed on the command line) into a spec.

        ``schema`` makes the first op from an op schema (``[op_name](args) -> returns``; the op
        is named after the kernel when the schema names none).
        """
        if example is not None and example not in EXAMPLES:
            raise InvalidOptionError(
                f"Unknown example '{example}': available examples are {', '.join(EXAMPLES)}."
            )
        if language not in LANGUAGES:
            raise InvalidOptionError(
                f"Unknown language '{language}': kscaffold writes ops in {', '.join(LANGUAGES)}."
            )
        if language == TRITON_LANGUAGE and example is not None and example not in TRITON_KINDS:
            raise InvalidOptionError(
                f"--example {example} has no Triton version: use --example "
                f"{' or '.join(k for k in EXAMPLES if k in TRITON_KINDS)} with --triton, "
                "or leave --triton out."
            )
        if stable_abi is not None and language == TRITON_LANGUAGE:
            raise InvalidOptionError(
                "--stable-abi applies to C++ ops: a Triton project compiles nothing and loads on "
                "every torch already; leave out --stable-abi or --triton."
            )
        if stable_abi is not None and example is not None and example not in STABLE_ABI_KINDS:
            raise InvalidOptionError(
                f"--example {example} has no stable-ABI version: use --example "
                f"{' or '.join(k for k in EXAMPLES if k in STABLE_ABI_KINDS)} with --stable-abi, "
                "or leave --stable-abi out."
            )
        if not 1 <= version <= MAX_VERSION:
            raise InvalidOptionError(
                f"Invalid version {version}: use a positive integer such as 1 (at most "
                f"{MAX_VERSION}, the largest integer TOML holds)."
            )
        kernel = KernelName(name)
        schema_op = None
        if schema is not None:
            if example is not None:
                raise InvalidOptionError(
                    "Give --example or --schema, not both: the first op is either the worked "
                    "example or one generated from your schema."
                )
            op_name, text = split_name(schema)
            if op_name is None:  # named after the kernel, unless that name cannot be an op's
                try:
                    op_name = OpName(kernel.name.replace("-", "_"), language).name
                except InvalidNameError as error:
                    raise InvalidNameError(
                        f"{str(error).rstrip('.')} (the op is named after the kernel): name it "
                        "in the schema, as in --schema 'my_op(Tensor x) -> Tensor'."
                    ) from error
            op_name = OpName(op_name, language).name
            describe(op_name, text, language=language, stable_abi=stable_abi is not None)
            schema_op = OpEntry(op_name, SCHEMA_KIND, text)
        return cls(
            name=kernel,
            backends=parse_backends(list(backends) if not isinstance(backends, str) else backends),
            example=example,
            owner=parse_repo_owner(owner) if owner else None,
            license=parse_license(license),
            version=version,
            language=language,
            stable_abi=parse_stable_abi(stable_abi) if stable_abi is not None else None,
            schema_op=schema_op,
        )

    def answers(self) -> dict[str, Any]:
        """The copier answers for this spec (``language`` only when it is not the default)."""
        language = {} if self.language == CPP_LANGUAGE else {"language": self.language}
        return {
            "name": self.name.name,
            "backends": list(self.backends),
            "example": self.example or "none",
            "owner": self.owner or "",
            "license": self.license,
            "version": self.version,
            **language,
            "ops": ([self.schema_op.as_answer()] if self.schema_op else default_ops(self.example)),
            # Recorded only when set, so that other projects' answers files stay as they were.
            **({"stable_abi": self.stable_abi} if self.stable_abi else {}),
            **self.extra_answers,
        }
