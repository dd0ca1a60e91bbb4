"""The op schema and registration reader that check and add-backend share."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold.project.schema import (
    Argument,
    SchemaError,
    find_registrations,
    find_schemas,
    parse_schema,
    parse_schemas,
    scan_registrations,
)
from tests.projects import new_project


def test_a_schema_is_read_into_name_arguments_and_returns() -> None:
    schema = parse_schema("relu.out(Tensor x, *, Tensor(a!) out, float alpha=1.0) -> Tensor(a!)")

    assert schema.name == "relu.out"
    assert (schema.base_name, schema.overload) == ("relu", "out")
    assert schema.arguments == (
        Argument("Tensor", "x"),
        Argument("Tensor(a!)", "out", keyword_only=True),
        Argument("float", "alpha", "1.0", keyword_only=True),
    )
    assert schema.returns == (Argument("Tensor(a!)"),)
    assert schema.mutates


@pytest.mark.parametrize(
    ("text", "returns"),
    [
        ("f(Tensor x) -> ()", ()),
        ("f(Tensor x) -> (Tensor, Tensor)", (Argument("Tensor"), Argument("Tensor"))),
        (
            "f(Tensor x) -> (Tensor values, Tensor indices)",
            (
                Argument("Tensor", "values"),
                Argument("Tensor", "indices"),
            ),
        ),
        ("f(int[2] size=[1, 1], Tensor? w=None) -> Tensor[]", (Argument("Tensor[]"),)),
    ],
)
def test_return_forms(text: str, returns: tuple[Argument, ...]) -> None:
    assert parse_schema(text).returns == returns


def test_nested_brackets_do_not_split_arguments() -> None:
    schema = parse_schema("f(int[2] size=[1, 1], Tensor? w=None) -> Tensor")
    assert [arg.name for arg in schema.arguments] == ["size", "w"]
    assert schema.arguments[0].default == "[1, 1]"
    assert not schema.mutates


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("relu", "no argument list"),
        ("relu(Tensor x)", "no '-> returns' part"),
        ("relu(Tensor x -> Tensor", "unclosed argument list"),
        ("2relu(Tensor x) -> Tensor", "invalid name '2relu'"),
        ("relu(Tensor x) ->", "empty return type"),
    ],
)
def test_bad_schemas_are_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        parse_schema(text)


CPP = r"""
#include <torch/library.h>
// ops.def("commented_out(Tensor x) -> Tensor");
/* m.impl("also_commented", &f); */
inline void define_ops(torch::Library& ops) {
  ops.def("plain(Tensor x) -> Tensor");
  ops.def("split" "_literal(Tensor x) -> Tensor");
  ops.def(R"(raw(Tensor x,
                 str n="it's") -> Tensor)");
  ops.def("plain.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
}
const char* brace = "{ not a block }";
int big = 1'000'000;
TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, m) {
  m.impl("plain", &plain_cpu);
  if (true) { m.impl("plain.out", &plain_out_cpu); }
}
TORCH_LIBRARY_IMPL(my_ns, CUDA, lib) {
  lib.impl("plain", TORCH_FN(plain_cuda));
}
TORCH_LIBRARY_FRAGMENT(my_ns, frag) {
  frag.impl("raw", c10::DispatchKey::CUDA, &raw_cuda);
  frag.def("composite(Tensor x) -> Tensor", &composite);
}
"""


def test_schemas_and_registrations_are_read_from_cpp(tmp_path: Path) -> None:
    source = tmp_path / "ops.cpp"
    source.write_text(CPP)

    schemas = parse_schemas([source])
    registrations = scan_registrations([source])

    assert [s.name for s in schemas] == [
        "plain",
        "split_literal",
        "raw",
        "plain.out",
        "composite",
    ]
    assert schemas[0].line == 6 and schemas[2].arguments[1].default == '"it\'s"'
    assert {(r.op, r.dispatch_key) for r in registrations} == {
        ("plain", "CPU"),
        ("plain.out", "CPU"),
        ("plain", "CUDA"),
        ("raw", "CUDA"),
        ("composite", "CompositeImplicitAutograd"),
    }
    assert {r.op: r.line for r in registrations if r.dispatch_key == "CPU"} == {
        "plain": 15,
        "plain.out": 16,
    }


def test_a_generated_project_has_its_schemas_and_registrations(tmp_path: Path) -> None:
    project = new_project(tmp_path / "k", backends=("cpu", "cuda"), git=False)

    assert [schema.name for schema in find_schemas(project)] == ["relu", "relu_no_grad", "relu_out"]
    assert find_registrations(project) == {
        "CPU": {"relu", "relu_no_grad", "relu_out"},
        "CUDA": {"relu", "relu_no_grad", "relu_out"},
    }


INFERRED = """\
#include <torch/library.h>
#include <pybind11/pybind11.h>

at::Tensor twice(const at::Tensor& x) { return x * 2; }

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("twice", &twice);
  ops.def("thrice", thrice_fn);
  ops.def("typed(Tensor x) -> Tensor");
}

TORCH_LIBRARY(other_ns, m) { m.def("helper", &helper); }

PYBIND11_MODULE(ext, m) { m.def("python_only", &python_only); }
"""


def test_ops_with_an_inferred_schema_are_declared_and_registered(tmp_path: Path) -> None:
    source = tmp_path / "torch_binding.cpp"
    source.write_text(INFERRED)

    schemas = parse_schemas([source])

    assert [(s.name, s.inferred) for s in schemas] == [
        ("twice", True),
        ("thrice", True),
        ("typed", False),
        ("helper", True),
    ]
    assert schemas[0].line == 7 and schemas[0].arguments == () and schemas[0].returns == ()
    # The function passed along is the op's kernel for every backend (a composite kernel).
    assert {(r.op, r.dispatch_key) for r in scan_registrations([source])} == {
        ("twice", "CompositeImplicitAutograd"),
        ("thrice", "CompositeImplicitAutograd"),
        ("helper", "CompositeImplicitAutograd"),
    }
