"""kscaffold sanitize and profile: their parsers on recorded output, and their refusals here."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold.cli import app
from scaffold.errors import InvalidOptionError
from scaffold.testing import profiling, sanitize
from scaffold.testing.profiling import (
    ncu_command,
    ncu_failure,
    parse_ncu_csv,
    profile_json,
    profile_table,
    short_kernel_name,
    summarize,
    verdict,
)
from scaffold.testing.sanitize import (
    SANITIZER_TOOLS,
    ToolRun,
    parse_pytest_counts,
    parse_sanitizer_summary,
    parse_tools,
    sanitize_table,
)

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# --- sanitize ------------------------------------------------------------------------------------


def test_a_clean_memcheck_run_is_parsed() -> None:
    output = _fixture("sanitizer_memcheck_clean.txt")
    assert parse_sanitizer_summary(output) == (0, None)
    counts = parse_pytest_counts(output)
    assert counts == {"passed": 180, "skipped": 12, "deselected": 402}
    run = ToolRun("memcheck", 0, None, counts, 0)
    assert run.tests_run == 180 and run.clean


def test_racecheck_hazards_and_failed_tests_are_findings() -> None:
    output = _fixture("sanitizer_racecheck_hazard.txt")
    assert parse_sanitizer_summary(output) == (1, 1)
    run = ToolRun("racecheck", 1, 1, parse_pytest_counts(output), 1)
    assert run.tests_run == 180 and not run.clean


def test_initcheck_errors_are_counted() -> None:
    assert parse_sanitizer_summary(_fixture("sanitizer_initcheck_errors.txt")) == (2, None)


def test_a_run_without_summary_is_not_clean() -> None:
    assert parse_sanitizer_summary("Segmentation fault\n") == (None, None)
    assert not ToolRun("memcheck", None, None, {}, -11).clean


def test_the_table_has_one_row_per_tool() -> None:
    runs = [
        ToolRun("memcheck", 0, None, {"passed": 180}, 0),
        ToolRun("racecheck", 1, 1, {"passed": 179, "failed": 1}, 1),
        ToolRun("initcheck", 0, None, {"passed": 180}, 0),
        ToolRun("synccheck", None, None, {}, 139),
    ]
    lines = sanitize_table(runs).splitlines()
    assert lines[0].split() == ["tool", "errors", "hazards", "tests", "run", "verdict"]
    assert lines[1].split() == ["memcheck", "0", "-", "180", "clean"]
    assert lines[2].split() == ["racecheck", "1", "1", "180", "FINDINGS"]
    assert lines[4].split()[:4] == ["synccheck", "?", "-", "0"]


def test_tools_are_checked_before_anything_runs() -> None:
    assert parse_tools(None) == SANITIZER_TOOLS
    assert parse_tools("initcheck, memcheck,initcheck") == ("initcheck", "memcheck")
    with pytest.raises(InvalidOptionError, match="Unknown compute-sanitizer tool leakcheck"):
        parse_tools("memcheck,leakcheck")


def test_cuda_tests_are_chosen_unless_the_arguments_choose() -> None:
    assert sanitize._cuda_args(["-x"]) == ["-k", "cuda", "-x"]
    assert sanitize._cuda_args(["-k", "out and cuda"]) == ["-k", "out and cuda"]


@pytest.mark.parametrize("command", ["sanitize", "profile"])
def test_without_a_gpu_the_command_refuses_in_one_line(
    command: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sanitize, "cuda_gpu_visible", lambda: False)
    result = runner.invoke(app, [command, str(project)])
    assert result.exit_code == 1, result.output
    assert result.output.strip().count("\n") == 0, result.output
    assert f"kscaffold {command} needs a CUDA GPU, and none is visible here" in result.output


@pytest.mark.parametrize(
    ("command", "tool", "finder"),
    [
        ("sanitize", "compute-sanitizer", (sanitize, "find_compute_sanitizer")),
        ("profile", "ncu (Nsight Compute)", (profiling, "find_ncu")),
    ],
)
def test_without_the_tool_the_command_refuses_in_one_line(
    command: str,
    tool: str,
    finder: tuple[object, str],
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sanitize, "cuda_gpu_visible", lambda: True)
    monkeypatch.setattr(*finder, lambda: None)
    result = runner.invoke(app, [command, str(project)])
    assert result.exit_code == 1, result.output
    assert f"Error: {tool} was not found in $CUDA_HOME/bin" in result.output
    assert result.output.strip().count("\n") == 0, result.output


# --- profile -------------------------------------------------------------------------------------


def test_ncu_raw_csv_is_parsed_in_microseconds() -> None:
    launches = parse_ncu_csv(_fixture("ncu_img2gray_uint8_8K.txt"))
    assert len(launches) == 3
    assert launches[0]["duration_us"] == pytest.approx(30.656)
    assert launches[0]["dram_pct"] == pytest.approx(82.64)
    assert launches[0]["registers"] == 32
    assert launches[0]["dram_read_bytes"] == 99_546_624
    assert launches[0]["written_sectors"] == 1_036_800
    small = parse_ncu_csv(_fixture("ncu_img2gray_uint8_224x224.txt"))
    assert [launch["duration_us"] for launch in small] == pytest.approx([2.656, 2.624, 2.656])


def test_a_large_memory_bound_workload_is_named_so() -> None:
    launches = parse_ncu_csv(_fixture("ncu_img2gray_uint8_8K.txt"))
    (profile,) = summarize("img2gray", "uint8 8K", launches)
    # Recorded on an H200 by kscaffold profile (the example's kernel, clocks not locked).
    assert profile.kernel == "img2gray_kernel<unsigned char, 1>"
    assert profile.launches == 3
    assert profile.duration_us == pytest.approx(30.688)
    assert (profile.dram_pct, profile.traffic_pct) == (82.4, 90.0)
    assert profile.occupancy_pct == pytest.approx(79.3)
    assert (profile.registers, profile.local_loads, profile.local_stores) == (32, 0, 0)
    assert profile.verdict == "memory-bound at 90 % of DRAM peak"


def _raw_page(units: dict[str, str], values: dict[str, str]) -> str:
    """An ncu --page raw table of one launch: a header, a row of units, a row of values."""
    header = ["ID", "Kernel Name", *units]
    rows = [header, ["", "", *units.values()], ["0", "void k::k_kernel(char *)", *values.values()]]
    return "\n".join(",".join(f'"{cell}"' for cell in row) for row in rows) + "\n"


def test_traffic_counts_the_writes_the_dram_counter_misses() -> None:
    # 100 MB read and 1 M sectors (32 MB) written in 30 µs, against 1536 bytes per cycle at
    # 3.125 GHz (4.8 TB/s): 132 MB / 30 µs is 4.4 TB/s, 91.7 % of the peak, where the DRAM
    # counter, blind to the writes still in the L2 cache, said 82 %.
    metrics = {
        "gpu__time_duration.sum": ("nsecond", "30,000"),
        "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("%", "82.0"),
        "dram__bytes_read.sum": ("byte", "100,000,000"),
        "lts__t_sectors_srcunit_tex_op_write.sum": ("sector", "1,000,000"),
        "dram__bytes.sum.peak_sustained": ("byte/cycle", "1,536"),
        "dram__cycles_elapsed.avg.per_second": ("cycle/second", "3,125,000,000"),
    }
    base = {name: unit for name, (unit, _) in metrics.items()}
    values = {name: value for name, (_, value) in metrics.items()}
    (launch,) = parse_ncu_csv(_raw_page(base, values))
    assert launch["traffic_pct"] == pytest.approx(100 * 132e6 / 30e-6 / 4.8e12)
    (profile,) = summarize("k", "w", [launch])
    assert (profile.dram_pct, profile.traffic_pct) == (82.0, 91.7)
    assert profile.verdict == "memory-bound at 92 % of DRAM peak"
    # The same launch in the units ncu picks when not asked for base units.
    scaled = {**base, "dram__bytes_read.sum": "Mbyte", "lts__t_sectors_srcunit_tex_op_write.sum":
              "Msector", "dram__cycles_elapsed.avg.per_second": "cycle/nsecond",
              "gpu__time_duration.sum": "usecond"}  # fmt: skip
    scaled_values = {**values, "dram__bytes_read.sum": "100", "gpu__time_duration.sum": "30",
                     "lts__t_sectors_srcunit_tex_op_write.sum": "1",
                     "dram__cycles_elapsed.avg.per_second": "3.125"}  # fmt: skip
    (again,) = parse_ncu_csv(_raw_page(scaled, scaled_values))
    assert again["traffic_pct"] == pytest.approx(launch["traffic_pct"])


def test_without_the_traffic_metrics_the_dram_counter_decides() -> None:
    # Recorded by an earlier kscaffold, which asked ncu for no traffic metrics.
    older = parse_ncu_csv(_fixture("ncu_img2gray_uint8_8K_older_metrics.txt"))
    (profile,) = summarize("img2gray", "uint8 8K", older)
    assert profile.traffic_pct == 0.0
    assert profile.verdict == "memory-bound at 91 % of DRAM peak"
    assert "-" in profile_table([profile]).splitlines()[1].split()


def test_a_tiny_workload_is_launch_bound() -> None:
    launches = parse_ncu_csv(_fixture("ncu_img2gray_uint8_224x224.txt"))
    (profile,) = summarize("img2gray", "uint8 224x224", launches)
    assert profile.verdict == "latency/launch-bound (2.7 µs)"


def test_verdict_thresholds() -> None:
    assert verdict(100.0, 20.0, 85.0) == "compute-bound at 85 % of SM peak"
    assert verdict(100.0, 70.0, 65.0) == "memory-bound at 70 % of DRAM peak"
    assert verdict(100.0, 30.0, 20.0) == "latency-bound (DRAM 30 %, SM 20 % of peak)"
    # Near a peak, even a short kernel is bound by it; near neither, a short one by its launch.
    assert verdict(8.0, 85.0, 10.0) == "memory-bound at 85 % of DRAM peak"
    assert verdict(8.0, 30.0, 20.0) == "latency/launch-bound (8.0 µs)"


def test_locked_counters_give_one_line() -> None:
    failure = ncu_failure(_fixture("ncu_no_permission.txt"))
    assert failure is not None and "ERR_NVGPUCTRPERM" in failure and "\n" not in failure
    assert parse_ncu_csv(_fixture("ncu_no_permission.txt")) == []
    assert ncu_failure(_fixture("ncu_img2gray_uint8_8K.txt")) is None


def test_kernel_names_are_shortened() -> None:
    assert short_kernel_name("void relu::(anonymous namespace)::relu_kernel<float, true>"
                             "(const T1 *, T1 *, long)") == "relu_kernel<float, true>"  # fmt: skip
    assert short_kernel_name("rms_norm::rms_kernel(float*, int)") == "rms_kernel"
    # As ncu names the template's kernels on an H200, and other demanglers' anonymous namespaces.
    assert short_kernel_name("img2gray_kernel<unsigned char, 1>(const T1 *, T1 *, long)") == (
        "img2gray_kernel<unsigned char, 1>"
    )
    assert short_kernel_name("void g::<unnamed>::k<char, (bool)1>(const T1 *)") == (
        "k<char, (bool)1>"
    )
    assert short_kernel_name("void unnamed>::img2gray_kernel<unsigned char, 1>(const T1 *)") == (
        "img2gray_kernel<unsigned char, 1>"
    )


def test_the_table_and_json_carry_every_kernel() -> None:
    profiles = summarize(
        "img2gray", "uint8 8K", parse_ncu_csv(_fixture("ncu_img2gray_uint8_8K.txt"))
    )
    profiles += summarize(
        "img2gray", "uint8 224x224", parse_ncu_csv(_fixture("ncu_img2gray_uint8_224x224.txt"))
    )
    table = profile_table(profiles)
    assert "memory-bound at 90 % of DRAM peak" in table and "latency/launch-bound" in table
    assert "latency/launch-bound under 10 µs, else latency-bound" in table
    data = json.loads(profile_json(profiles))
    assert data["thresholds"]["memory_bound_from_dram_pct"] == 60.0
    assert [k["workload"] for k in data["kernels"]] == ["uint8 8K", "uint8 224x224"]


def test_the_ncu_command_leaves_clocks_alone_and_profiles_the_workloads_range() -> None:
    workload = {"name": "uint8 8K", "size": "8K", "dtype": "uint8"}
    command = ncu_command(Path("/cuda/bin/ncu"), Path("b.py"), workload)
    assert command[command.index("--clock-control") + 1] == "none"
    assert command[command.index("--csv") + 1 : command.index("--csv") + 3] == ["--page", "raw"]
    assert set(command[command.index("--metrics") + 1].split(",")) == set(profiling.METRICS)
    assert command[command.index("--print-units") + 1] == "base"
    # The harness's NVTX range of the workload: the op's kernels, C++ or Triton, named anything.
    assert "--nvtx" in command and command[command.index("--nvtx-include") + 1] == "uint8 8K/"
    assert "--kernel-name" not in command
    assert command[-6:] == ["--profile", "3", "--sizes", "8K", "--dtypes", "uint8"]


def test_the_harness_lists_its_workloads(tmp_path: Path) -> None:
    from scaffold.grow.create import ProjectSpec, create_project

    spec = ProjectSpec.parse("gray", backends="cpu", example="img2gray")
    project = create_project(spec, tmp_path / "gray", git=False)
    listed = profiling.list_workloads(project / "benchmarks" / "benchmark.py")
    assert listed["op"] == "img2gray"
    workloads = listed["workloads"]
    assert isinstance(workloads, list)
    assert {"name": "uint8 8K", "size": "8K", "dtype": "uint8"} in workloads
    assert len(workloads) == 21
    profile = subprocess.run(
        [sys.executable, "benchmarks/benchmark.py", "--profile", "1", "--sizes", "8K"],
        cwd=project, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if not sanitize.cuda_gpu_visible():
        assert profile.returncode != 0, profile.stdout + profile.stderr
        assert "--profile needs a CUDA GPU" in profile.stderr, profile.stderr


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_tool_run_streams_its_output_and_names_the_tool_to_the_tests(tmp_path: Path) -> None:
    # A stand-in for compute-sanitizer: runs the command, then prints a summary of its own.
    sanitizer = _script(
        tmp_path / "compute-sanitizer",
        'shift 2\n"$@"\necho "========= ERROR SUMMARY: 3 errors"\nexit 1\n',
    )
    pytest_like = (
        "import os; print('tool', os.environ['KSCAFFOLD_SANITIZER'], "
        "os.environ['PYTORCH_NO_CUDA_MEMORY_CACHING'], os.environ['EXTRA']); "
        "print('7 passed, 1 failed, 2 skipped in 1.00s')"
    )
    echoed: list[str] = []
    run = sanitize.run_tool(
        sanitizer,
        "initcheck",
        [sys.executable, "-c", pytest_like],
        tmp_path,
        {"EXTRA": "seen"},
        echoed.append,
    )
    assert "tool initcheck 1 seen" in echoed
    assert run == ToolRun("initcheck", 3, None, {"passed": 7, "failed": 1, "skipped": 2}, 1)
    assert run.tests_run == 8 and not run.clean


def _running(pid: int) -> bool:
    """Whether a process runs (a killed one no parent has reaped yet is a zombie, not running)."""
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(FileNotFoundError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def _still_running_after(pid: int, grace_s: float) -> bool:
    """Whether ``pid`` still runs ``grace_s`` seconds on.

    A killed process closes its files (ending the tool's output) before it turns zombie; on a
    loaded machine the test can look in between.
    """
    deadline = time.monotonic() + grace_s
    while _running(pid):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
    return False


def test_a_tool_that_hangs_is_stopped_and_the_test_it_hung_in_named(tmp_path: Path) -> None:
    # A stand-in for compute-sanitizer whose tests hang after the first: it and the child it
    # started are stopped at the timeout.
    sanitizer = _script(
        tmp_path / "compute-sanitizer",
        "echo 'tests/test_op.py::test_out[cuda] PASSED   [ 50%]'\n"
        "sleep 600 &\necho $! > child.pid\nwait\n",
    )
    echoed: list[str] = []
    run = sanitize.run_tool(sanitizer, "synccheck", ["pytest"], tmp_path, {}, echoed.append, 1.5)
    assert run.timed_out_after == 1.5 and run.last_test == "tests/test_op.py::test_out[cuda]"
    assert not run.clean
    child = int((tmp_path / "child.pid").read_text())
    assert not _still_running_after(child, 5.0), "the tool's child outlived the timeout"
    table = sanitize_table([run])
    assert "stopped after 1.5 s, in the test after tests/test_op.py::test_out[cuda]" in table


def test_profile_reports_each_workload_from_ncus_csv(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in for ncu that answers every workload with one recorded 8K run.
    ncu = _script(tmp_path / "ncu", f"cat {FIXTURES / 'ncu_img2gray_uint8_8K.txt'}\n")
    monkeypatch.setattr(sanitize, "cuda_gpu_visible", lambda: True)
    monkeypatch.setattr(profiling, "find_ncu", lambda: ncu)
    monkeypatch.setattr("scaffold.compiler.build_project", lambda *args, **kwargs: [])
    report = tmp_path / "profile.json"
    result = runner.invoke(app, ["profile", str(project), "--op", "relu", "--json", str(report)])
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    workloads = profiling.list_workloads(project / "benchmarks" / "benchmark.py")["workloads"]
    assert isinstance(workloads, list)
    assert [k["workload"] for k in data["kernels"]] == [w["name"] for w in workloads]
    assert {k["verdict"] for k in data["kernels"]} == {"memory-bound at 90 % of DRAM peak"}
    assert "memory-bound at 90 % of DRAM peak" in result.output


def test_profile_refuses_an_unknown_op(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sanitize, "cuda_gpu_visible", lambda: True)
    monkeypatch.setattr(profiling, "find_ncu", lambda: tmp_path / "ncu")
    monkeypatch.setattr("scaffold.compiler.build_project", lambda *args, **kwargs: [])
    result = runner.invoke(app, ["profile", str(project), "--op", "softmax"])
    assert result.exit_code == 2, result.output
    assert "No benchmark of an op 'softmax': the project has relu." in result.output


def test_locked_counters_stop_profile_in_one_line(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ncu = _script(tmp_path / "ncu", f"cat {FIXTURES / 'ncu_no_permission.txt'}\n")
    monkeypatch.setattr(sanitize, "cuda_gpu_visible", lambda: True)
    monkeypatch.setattr(profiling, "find_ncu", lambda: ncu)
    monkeypatch.setattr("scaffold.compiler.build_project", lambda *args, **kwargs: [])
    result = runner.invoke(app, ["profile", str(project)])
    assert result.exit_code == 1, result.output
    assert "Error: ncu cannot read this GPU's performance counters (ERR_NVGPUCTRPERM)" in (
        result.output
    )


def test_ncus_details_page_is_read_too() -> None:
    (launch,) = parse_ncu_csv(_fixture("ncu_relu_float32_details_page.txt"))
    assert launch["duration_us"] == pytest.approx(30.94)
    assert launch["registers"] == 16 and launch["local_stores"] == 0
    (profile,) = summarize("relu", "float32 4096x4096", [launch])
    assert profile.kernel == "relu_kernel<float, true>"
    assert profile.verdict == "memory-bound at 92 % of DRAM peak"
