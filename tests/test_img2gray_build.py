"""Slow tier: the worked example builds, loads through `kernels` and passes its own tests.

Also the add-backend scenario end to end: a CUDA-only project grows a CPU backend, keeps every
edit the user made, and the new backend builds, loads and matches Pillow bit for bit.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold.compiler import build_project
from scaffold.grow.create import create_project
from scaffold.grow.evolve import add_backend
from scaffold.project.spec import ProjectSpec
from scaffold.testing.sanitize import cuda_gpu_visible
from tests.helpers import run, run_with_kernel
from tests.test_build import cuda_toolkit_or_skip, find_cuobjdump
from tests.test_evolve import commit_all, make_user_edits

pytestmark = pytest.mark.slow

# Loads the CPU build through `kernels` in a fresh process and compares it with Pillow on an
# image with smooth gradients, hard edges and noise, in several layouts and batch shapes.
PILLOW_CHECK = r"""
import sys
from pathlib import Path
import numpy as np
import torch
from PIL import Image, ImageDraw
from kernels import get_local_kernel

kernel = get_local_kernel(Path(sys.argv[1]), backend="cpu")
picture = Image.new("RGB", (641, 479))
draw = ImageDraw.Draw(picture)
for x in range(641):
    draw.line([(x, 0), (x, 478)], fill=(x * 255 // 640, 255 - x * 255 // 640, (x * 7) % 256))
draw.ellipse([100, 80, 400, 300], fill=(250, 30, 90))
rgb = np.asarray(picture).copy()
rng = np.random.default_rng(0)
rgb[::3] = rng.integers(0, 256, rgb[::3].shape, dtype=np.uint8)
expected = np.asarray(Image.fromarray(rgb).convert("L"))
image = torch.from_numpy(rgb)
assert torch.equal(kernel.img2gray(image), torch.from_numpy(expected)), "single image"
batch = torch.stack([image, image.flip(0)])
assert torch.equal(kernel.img2gray(batch)[1], torch.from_numpy(expected).flip(0)), "batch"
wide = torch.from_numpy(np.ascontiguousarray(rgb.transpose(1, 0, 2))).transpose(0, 1)
assert not wide.is_contiguous()
out = torch.empty(479, 641, dtype=torch.uint8)
assert kernel.img2gray(wide, out=out) is out and torch.equal(out, torch.from_numpy(expected))
print("pillow-bit-exact", kernel.__name__)
"""


def check_against_pillow(project: Path) -> None:
    output = run([sys.executable, "-c", PILLOW_CHECK, project])
    assert "pillow-bit-exact" in output


def run_generated_tests(project: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    summary = result.stdout.strip().splitlines()[-1]
    # A skeleton op's cases are xfailed, as expected; no case may fail or err.
    assert " passed" in summary and not re.search(r"\b(failed|errors?)\b", summary), summary
    return summary


@pytest.fixture(scope="module")
def img2gray_cpu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = ProjectSpec.parse("img2gray", backends="cuda,cpu", example="img2gray")
    project = create_project(spec, tmp_path_factory.mktemp("example") / "img2gray")
    build_project(project, backend="cpu")
    return project


def test_cpu_variant_loads_through_kernels_and_matches_pillow(img2gray_cpu: Path) -> None:
    (variant,) = (img2gray_cpu / "build").iterdir()
    assert variant.name.endswith("-cpu-x86_64-linux") and "-cxx11-" in variant.name
    metadata = json.loads((variant / "metadata.json").read_text())
    assert metadata["name"] == "img2gray" and metadata["backend"] == {"type": "cpu"}
    check_against_pillow(img2gray_cpu)


def test_generated_test_suite_passes(img2gray_cpu: Path) -> None:
    run_generated_tests(img2gray_cpu)


PRODUCTION_TESTS = (
    "side_stream or graph_replay or leave_no_memory or bit_identical or 2_31 or fake_tensors"
)


def test_production_tests_run_fakes_here_and_skip_cuda_with_reasons(img2gray_cpu: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests",
         "-k", PRODUCTION_TESTS],
        cwd=img2gray_cpu, capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = result.stdout
    assert result.returncode == 0, f"{output}\n{result.stderr}"
    # The fake-tensor shapes of the CPU backend run on any machine: one per odd shape.
    assert re.search(r"\b6 passed\b", output), output
    if not cuda_gpu_visible():
        # Five CUDA tests plus the CUDA fake shapes, each skipped with the reason.
        assert re.search(r"\b11 skipped\b", output), output
        assert "needs the CUDA backend and a CUDA GPU" in output, output
        assert "needs a CUDA GPU: torch.cuda.is_available() is False" in output, output


def test_generated_tests_say_build_first_when_nothing_is_built(tmp_path: Path) -> None:
    spec = ProjectSpec.parse("img2gray", backends="cpu", example="img2gray")
    project = create_project(spec, tmp_path / "img2gray", git=False)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout
    assert "run `kscaffold build` first" in result.stdout, result.stdout


def test_cuda_variant_compiles_with_device_code_for_the_archs_asked(img2gray_cpu: Path) -> None:
    cuda_toolkit_or_skip()
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("needs cuobjdump (CUDA toolkit, nvidia-cuda-cuobjdump wheel or triton)")
    (result,) = build_project(img2gray_cpu, backend="cuda", cuda_archs=["8.0", "9.0"])
    library = result.variant_dir / f"{result.ops_name}.abi3.so"
    listing = run([cuobjdump, "--list-elf", library])
    assert "sm_80" in listing and "sm_90" in listing, listing
    metadata = json.loads((result.variant_dir / "metadata.json").read_text())
    assert metadata["backend"] == {"type": "cuda", "archs": ["8.0", "9.0"]}
    # The CUDA variant holds the CUDA kernels only, as kernel-builder's would.
    assert "cpu/img2gray.cpp" not in " ".join(
        json.dumps(c)
        for c in json.loads((img2gray_cpu / "compile_commands.json").read_text())
        if result.variant in c["output"]
    )


def test_add_cpu_backend_to_a_cuda_only_project(tmp_path: Path) -> None:
    spec = ProjectSpec.parse("img2gray", backends="cuda", example="img2gray")
    project = create_project(spec, tmp_path / "img2gray")
    edited = make_user_edits(project)
    user_build_toml = (project / "build.toml").read_text()

    add_backend(project, "cpu")
    for path, content in edited.items():
        assert (project / path).read_bytes() == content, path
    merged = (project / "build.toml").read_text()
    for line in user_build_toml.splitlines():
        if not line.startswith("backends ="):
            assert line in merged.splitlines(), line
    commit_all(project, "add the cpu backend")

    build_project(project, backend="cpu")
    check_against_pillow(project)
    run_generated_tests(project)


def test_example_script_converts_a_photograph_like_pillow(
    img2gray_cpu: Path, tmp_path: Path
) -> None:
    from PIL import Image, ImageDraw, ImageFilter

    photo = Image.new("RGB", (1023, 767))
    draw = ImageDraw.Draw(photo)
    for x in range(1023):
        draw.line([(x, 0), (x, 766)], fill=(x % 256, (x * 3) % 256, 255 - x % 256))
    draw.ellipse([200, 150, 700, 600], fill=(220, 120, 40))
    photo = photo.filter(ImageFilter.GaussianBlur(3))
    photo.save(tmp_path / "photo.jpg", quality=85)  # JPEG: real-world chroma noise

    output = run(
        [
            sys.executable,
            "example.py",
            tmp_path / "photo.jpg",
            tmp_path / "gray.png",
            "--device",
            "cpu",
        ],
        cwd=img2gray_cpu,
    )
    assert "pixels differing from Pillow's convert('L'): 0" in output, output
    gray = Image.open(tmp_path / "gray.png")
    assert gray.mode == "L" and gray.size == (1023, 767)


def test_example_script_turns_a_rotated_phone_photo_upright(
    img2gray_cpu: Path, tmp_path: Path
) -> None:
    from PIL import Image, ImageDraw

    # Stored landscape 400x300, tagged "rotate 90° clockwise to view" (EXIF orientation 6), as
    # phones save portrait shots: viewers show it 300x400, and so must the grayscale result.
    photo = Image.new("RGB", (400, 300), (30, 140, 220))
    ImageDraw.Draw(photo).rectangle([0, 0, 99, 299], fill=(240, 200, 10))
    exif = Image.Exif()
    exif[0x0112] = 6
    photo.save(tmp_path / "phone.jpg", quality=90, exif=exif)
    command = [sys.executable, "example.py", tmp_path / "phone.jpg", tmp_path / "gray.png"]

    output = run([*command, "--device", "cpu"], cwd=img2gray_cpu)

    assert "(300x400)" in output and "convert('L'): 0" in output, output
    gray = Image.open(tmp_path / "gray.png")
    upright = Image.open(tmp_path / "phone.jpg").transpose(Image.Transpose.ROTATE_270)
    assert gray.size == (300, 400)
    assert gray.tobytes() == upright.convert("L").tobytes()


def test_example_script_reports_an_unreadable_image(img2gray_cpu: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.jpg").write_text("not a picture")
    command = [sys.executable, "example.py", tmp_path / "notes.jpg", tmp_path / "gray.png"]

    result = subprocess.run(
        [*command, "--device", "cpu"], cwd=img2gray_cpu, capture_output=True, text=True
    )

    assert result.returncode == 1
    assert f"Cannot read {tmp_path / 'notes.jpg'} as an image" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "gray.png").exists()


def test_skeleton_for_a_user_op_compiles_registers_and_names_the_file(tmp_path: Path) -> None:
    from tests.test_evolve import replace_with_user_op

    spec = ProjectSpec.parse("my-kernel", backends="cuda")
    project = create_project(spec, tmp_path / "my-kernel")
    replace_with_user_op(project)
    add_backend(project, "cpu")
    commit_all(project, "add the cpu backend")
    build_project(project, backend="cpu")

    call = (
        "try:\n    kernel.ops.scale(torch.ones(3), 2.0)\n"
        "except NotImplementedError as error:\n    print('raised:', error)\n"
    )
    output = run_with_kernel(project, call)
    assert "raised: my_kernel: scale has no CPU implementation yet" in output, output
    assert "write it in csrc/cpu/my_kernel_cpu.cpp" in output, output

    # The generated tests of the cpu backend are expected to fail until the skeleton is written.
    tests = project / "tests" / "test_scale_cpu.py"
    tests.write_text(
        "from .conftest import load_kernel\nimport torch\n\n"
        "def test_scale(backend):\n"
        "    kernel = load_kernel(backend)\n"
        "    result = kernel.ops.scale(torch.ones(2), 2.0)\n"
        "    torch.testing.assert_close(result, torch.full((2,), 2.0))\n"
    )
    (project / "tests" / "test_relu.py").unlink()  # the template's relu tests: relu is gone
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rx", "-p", "no:cacheprovider", "tests"],
        cwd=project, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "1 xfailed" in result.stdout and "csrc/cpu/my_kernel_cpu.cpp is a skeleton" in result.stdout
    ), result.stdout


# Every pixel count from 1 to 100 and a few around the SIMD steps' edges, uint8 and float16, as
# computed by the CPU path the environment selects; printed as JSON lists.
CPU_PATH_VALUES = r"""
torch.manual_seed(0)
results = {}
for dtype in (torch.uint8, torch.float16):
    for pixels in [*range(1, 101), 1023, 4097, 131073, 300007]:
        if dtype == torch.uint8:
            image = torch.randint(0, 256, (pixels, 3), dtype=dtype)
        else:
            image = torch.randn(pixels, 3).to(dtype) * 300  # rounding and overflow to inf
        image = image.reshape(1, pixels, 3)
        results[f"{dtype} {pixels}"] = kernel.img2gray(image).view(-1).tolist()
print(json.dumps(results))
"""


def test_cpu_simd_paths_match_the_portable_loop_at_every_tail_length(
    img2gray_cpu: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The AVX2 and SSSE3 byte-shuffle paths give the portable loop's values, bit for bit."""
    by_path = {}
    for isa in ("portable", "ssse3", "avx2"):
        monkeypatch.setenv("IMG2GRAY_CPU_ISA", isa)
        by_path[isa] = json.loads(run_with_kernel(img2gray_cpu, CPU_PATH_VALUES))
    assert len(by_path["portable"]) == 2 * 104
    assert by_path["ssse3"] == by_path["portable"]
    assert by_path["avx2"] == by_path["portable"]


def test_benchmark_checks_then_reports_every_column(img2gray_cpu: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    markdown = tmp_path / "results.md"
    printed = run(
        [
            sys.executable,
            img2gray_cpu / "benchmarks" / "benchmark.py",
            "--backend=cpu",
            "--sizes=224x224",
            "--dtypes=uint8",
            f"--json={out}",
            f"--markdown={markdown}",
        ]
    )
    results = json.loads(out.read_text())
    assert results["op"] == "img2gray" and results["torch"] == torch_version()
    (row,) = results["rows"]
    assert row["workload"] == "uint8 224x224" and row["bytes"] == 224 * 224 * 4
    assert set(row["us"]) == {"kernel", "eager", "compile", "copy"}
    assert all(us > 0 for us in row["us"].values())
    header = "workload  µs  GB/s  % of copy  × eager  × compile"
    assert " ".join(header.split()) in " ".join(printed.split())
    table = markdown.read_text()
    assert results["machine"] in table and results["date"] in table
    assert "| uint8 224x224 |" in table


def test_benchmark_refuses_a_kernel_that_computes_wrong_values(img2gray_cpu: Path) -> None:
    # The harness verifies before it times: a kernel that is fast but wrong never gets a row.
    body = f"""
sys.path.insert(0, {str(img2gray_cpu / "benchmarks")!r})
import benchmark, harness
wrong = type("Wrong", (), {{}})()
wrong.img2gray = lambda image, out=None: kernel.img2gray(image.flip(-1), out=out)
workload = next(w for w in benchmark.OP.workloads if w.name == "uint8 224x224")
try:
    harness.measure(benchmark.OP, wrong, workload, benchmark.reference, torch.device("cpu"))
except AssertionError as error:
    print("refused:", str(error).splitlines()[0])
"""
    assert run_with_kernel(img2gray_cpu, body).startswith("refused: Tensor-likes are not equal")


def torch_version() -> str:
    return run([sys.executable, "-c", "import torch; print(torch.__version__, end='')"])
