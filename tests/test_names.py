"""Name and option validation mirrors the Hub's rules."""

from __future__ import annotations

import pytest

from scaffold.errors import InvalidNameError, InvalidOptionError
from scaffold.project.names import (
    MAX_NAME_LENGTH,
    KernelName,
    parse_backends,
    parse_license,
    parse_repo_owner,
    suggest_kernel_name,
)


@pytest.mark.parametrize("name", ["a1", "my-kernel", "img2gray", "flash-attn-3", "ab"])
def test_valid_kernel_names(name: str) -> None:
    assert KernelName(name).name == name


@pytest.mark.parametrize(
    ("raw", "suggestion"),
    [
        ("My_Kernel", "my-kernel"),
        ("my_kernel", "my-kernel"),
        ("MyKernel", "mykernel"),
        ("my kernel!", "my-kernel"),
        ("3d-conv", "d-conv"),
        ("kernel-", "kernel"),
    ],
)
def test_invalid_names_get_a_suggestion(raw: str, suggestion: str) -> None:
    assert suggest_kernel_name(raw) == suggestion
    with pytest.raises(InvalidNameError, match=f"try '{suggestion}'"):
        KernelName(raw)


@pytest.mark.parametrize("raw", ["a", "-", "___", ""])
def test_hopeless_names_are_refused_without_suggestion(raw: str) -> None:
    with pytest.raises(InvalidNameError) as error:
        KernelName(raw)
    assert "try" not in str(error.value)
    assert f"2 to {MAX_NAME_LENGTH} characters" in str(error.value)


def test_derived_identifiers() -> None:
    name = KernelName("my-fast-kernel")
    assert name.python_name == "my_fast_kernel"
    assert name.class_name == "MyFastKernel"


def test_backends_are_canonical_and_deduplicated() -> None:
    assert parse_backends("cpu,cuda") == ("cuda", "cpu")
    assert parse_backends(["CPU", "cpu"]) == ("cpu",)
    with pytest.raises(InvalidOptionError, match="'rocm'.*supported backends are cuda, cpu"):
        parse_backends("cuda,rocm")
    with pytest.raises(InvalidOptionError, match="No backend"):
        parse_backends(" , ")


def test_license_and_owner() -> None:
    assert parse_license("MIT") == "mit"
    with pytest.raises(InvalidOptionError, match="Unknown license 'wtfpl'"):
        parse_license("wtfpl")
    assert parse_repo_owner("kernels-community") == "kernels-community"
    for bad in ("has space", "a/b", "-lead", "x" * 97):
        with pytest.raises(InvalidNameError):
            parse_repo_owner(bad)
