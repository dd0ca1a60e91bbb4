"""build.toml reader: what it accepts, and that each malformed file names the key at fault."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scaffold.errors import BuildConfigError, NotAProjectError
from scaffold.project.buildconfig import load_build_config

VALID = """\
[general]
name = "img2gray"
version = 2
license = "apache-2.0"
backends = ["cuda", "cpu"]
edition = 5
python-depends = ["einops"]

[general.hub]
repo-id = "me/img2gray"

[general.cuda]
python-depends = ["nvidia-cutlass-dsl"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.img2gray_cuda]
backend = "cuda"
depends = ["torch"]
src = ["csrc/cuda/img2gray.cu"]
cuda-capabilities = ["8.0", "9.0"]
cuda-flags = ["-lineinfo"]

[kernel.img2gray_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/cpu/img2gray.cpp"]
cxx-flags = ["-march=native"]
include = ["csrc/include"]
"""


def write(project: Path, text: str) -> Path:
    project.mkdir(parents=True, exist_ok=True)
    (project / "build.toml").write_text(text, encoding="utf-8")
    return project


def test_reads_every_field(tmp_path: Path) -> None:
    config = load_build_config(write(tmp_path, VALID))
    assert config.name.name == "img2gray"
    assert config.python_name == "img2gray"
    assert (config.version, config.license) == (2, "apache-2.0")
    assert config.backends == ("cuda", "cpu")
    assert config.hub_repo_id == "me/img2gray"
    assert config.torch.src == ("torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h")
    assert config.torch.pyext == ("py", "pyi")
    cuda, cpu = config.kernels
    assert (cuda.label, cuda.backend, cuda.src) == (
        "img2gray_cuda",
        "cuda",
        ("csrc/cuda/img2gray.cu",),
    )
    assert cuda.cuda_capabilities == ("8.0", "9.0")
    assert cuda.cuda_flags == ("-lineinfo",)
    assert cpu.cuda_capabilities is None
    assert (cpu.cxx_flags, cpu.include) == (("-march=native",), ("csrc/include",))
    assert config.kernels_for("cpu") == (cpu,)
    assert config.python_depends_for("cpu") == ("einops",)
    assert config.python_depends_for("cuda") == ("einops", "nvidia-cutlass-dsl")
    assert config.source_files()[-1] == "csrc/cpu/img2gray.cpp"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'src = ["csrc/cuda/img2gray.cu"]\n',
            "",
            "build.toml: [kernel.img2gray_cuda] is missing 'src'",
        ),
        ("version = 2", 'version = "2"', "build.toml: general.version must be an integer"),
        ("version = 2", "version = true", "build.toml: general.version must be an integer"),
        ("edition = 5", "edition = 4", "build.toml: general.edition is 4, which kscaffold cannot"),
        ("edition = 5", "edition = 7", "general.edition is 7, which kscaffold cannot read"),
        ("edition = 5", 'edition = "5"', "build.toml: general.edition must be an integer"),
        ('license = "apache-2.0"\n', "", "build.toml: [general] is missing 'license'"),
        ('name = "img2gray"', 'name = "Img2Gray"', "build.toml: general.name: Invalid kernel name"),
        ('backends = ["cuda", "cpu"]', 'backends = ["cuda", "gpu"]', "'gpu' is not a backend"),
        ("cuda-flags", "cuda-flag", "[kernel.img2gray_cuda] has unknown key 'cuda-flag'"),
        ("cxx-flags = [", "cuda-flags = [", "[kernel.img2gray_cpu] has unknown key 'cuda-flags'"),
        ('repo-id = "me/img2gray"', 'repo = "x"', "[general.hub] has unknown key 'repo'"),
        (
            'src = ["csrc/cpu/img2gray.cpp"]',
            'src = "csrc/cpu/img2gray.cpp"',
            "kernel.img2gray_cpu.src must be a list of strings",
        ),
        (
            'src = ["csrc/cpu/img2gray.cpp"]',
            'src = ["../x.cpp"]',
            "kernel.img2gray_cpu.src must be paths inside the project",
        ),
        (
            'backend = "cpu"',
            'backend = "rocm"',
            "kernel.img2gray_cpu.backend is 'rocm', which general.backends does not list",
        ),
        ("[torch]", "[torch-noarch]", "[torch-noarch] has unknown key 'src' (edition 5 allows"),
        ("[torch]", "[tvm-ffi]\nsrc = []\n[torch]", "needs exactly one of [torch], [torch-noarch]"),
        (
            "[torch]\n",
            '[torch]\nstable-abi = "2.x"\n',
            "torch.stable-abi must be a version such as \"2.9\", not '2.x'",
        ),
        (
            'cuda-flags = ["-lineinfo"]',
            'cuda-minver = "twelve"',
            "kernel.img2gray_cuda.cuda-minver must be a version",
        ),
        ("name = ", "name == ", "build.toml: not valid TOML"),
    ],
)
def test_malformed_file_names_the_key(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in VALID
    with pytest.raises(BuildConfigError, match=re.escape(message)):
        load_build_config(write(tmp_path, VALID.replace(old, new, 1)))


def test_missing_torch_table(tmp_path: Path) -> None:
    text = VALID.split("[torch]")[0]
    with pytest.raises(BuildConfigError, match=re.escape("(found none)")):
        load_build_config(write(tmp_path, text))


LEGACY = """\
[general]
name = "legacy"
version = 1
license = "mit"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]
stable-abi = "2.10"
minver = "2.9"

[kernel.legacy_cuda]
backend = "cuda"
depends = ["torch"]
src = ["csrc/k.cu"]
cuda-capabilities = ["9.0a"]
cuda-minver = "12.8"
"""


def test_a_file_without_edition_is_read_as_edition_4(tmp_path: Path) -> None:
    config = load_build_config(write(tmp_path, LEGACY))
    assert (config.edition, config.framework, config.is_noarch) == (4, "torch", False)
    assert config.torch.stable_abi["cuda"] == (2, 10) == config.torch.stable_abi["cpu"]
    assert config.torch.minver == (2, 9)
    (kernel,) = config.kernels
    assert (kernel.cuda_capabilities, kernel.cuda_minver) == (("9.0a",), (12, 8))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # Keys edition 5 added are unknown to the legacy format, as in kernel-builder's parser.
        ('license = "mit"', 'license = "mit"\nkernel-depends = []', "unknown key 'kernel-depends'"),
        ('stable-abi = "2.10"', 'stable-abi = { cuda = "2.10" }', "(edition 4)"),
    ],
)
def test_edition_4_keeps_its_own_rules(tmp_path: Path, old: str, new: str, message: str) -> None:
    with pytest.raises(BuildConfigError, match=re.escape(message)) as raised:
        load_build_config(write(tmp_path, LEGACY.replace(old, new)))
    assert "edition 4" in str(raised.value)


def test_stable_abi_by_backend_and_noarch_tables(tmp_path: Path) -> None:
    text = VALID.replace("[torch]\n", '[torch.stable-abi]\ncuda = "2.11"\n\n[torch]\n')
    config = load_build_config(write(tmp_path / "stable", text))
    assert dict(config.torch.stable_abi) == {"cuda": (2, 11)}
    noarch = """\
[general]
name = "pure"
version = 1
edition = 5
license = "mit"
backends = ["cuda", "xpu"]

[general.xpu]
python-depends = ["einops"]

[torch-noarch]
pyext = ["py", "json"]
cuda_capabilities = ["8.0", "9.0"]

[kernel]
"""
    config = load_build_config(write(tmp_path / "noarch", noarch))
    assert (config.framework, config.is_noarch, config.kernels) == ("torch-noarch", True, ())
    assert config.torch.pyext == ("py", "json") and config.torch.src == ()
    assert dict(config.torch.noarch_archs) == {"cuda": ("8.0", "9.0")}
    assert config.python_depends_for("xpu") == ("einops",)


def test_missing_sources_are_listed_by_path(tmp_path: Path) -> None:
    config = load_build_config(write(tmp_path, VALID))
    (tmp_path / "torch-ext").mkdir()
    (tmp_path / "torch-ext" / "torch_binding.cpp").write_text("")
    (tmp_path / "torch-ext" / "torch_binding.h").write_text("")
    with pytest.raises(BuildConfigError) as caught:
        config.check_sources()
    message = str(caught.value)
    assert (
        f"[kernel.img2gray_cuda] src: csrc/cuda/img2gray.cu ({tmp_path / 'csrc/cuda/img2gray.cu'})"
        in message
    )
    assert "[kernel.img2gray_cpu] src: csrc/cpu/img2gray.cpp" in message
    assert "torch-ext/img2gray/__init__.py" in message
    assert "torch_binding.cpp" not in message


def test_not_a_project(tmp_path: Path) -> None:
    with pytest.raises(NotAProjectError, match="has no build.toml"):
        load_build_config(tmp_path)


def test_backend_kernel_depends_join_the_general_ones(tmp_path: Path) -> None:
    text = VALID.replace(
        'python-depends = ["einops"]\n',
        'python-depends = ["einops"]\nkernel-depends = [{ repo-id = "org/base", version = 1 }]\n',
    ).replace(
        'python-depends = ["nvidia-cutlass-dsl"]\n',
        'python-depends = ["nvidia-cutlass-dsl"]\n'
        'kernel-depends = [{ repo-id = "org/gemm", revision = "abc" }]\n',
    )
    config = load_build_config(write(tmp_path, text))
    assert [dep.repo_id for dep in config.kernel_depends_for("cpu")] == ["org/base"]
    assert [dep.repo_id for dep in config.kernel_depends_for("cuda")] == ["org/base", "org/gemm"]
    bad = text.replace(', revision = "abc"', "")
    with pytest.raises(BuildConfigError, match=r"general\.cuda\.kernel-depends\[0\] needs exactly"):
        load_build_config(write(tmp_path / "bad", bad))
