"""``kscaffold profile``: the op's benchmark workloads under Nsight Compute, one verdict each.

For each workload of an op's ``benchmarks/benchmark*.py`` (listed by its ``--list``), ``ncu`` runs
that file's ``--profile N`` mode (N calls of the kernel, nothing timed) with the GPU's clocks left
alone (``--clock-control none``), only the kernels the op launches profiled (those inside the
workload's NVTX range), and the few metrics below in CSV. :func:`parse_ncu_csv` reads that CSV;
:func:`verdict` names what bounds each kernel, with the thresholds stated in :data:`THRESHOLDS`.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from scaffold.compiler import BuildReporter
from scaffold.compiler.toolchain import find_cuda_tool
from scaffold.errors import InvalidOptionError, ToolchainError

#: Metric name -> the field of :class:`KernelProfile` it fills.
METRICS: dict[str, str] = {
    "gpu__time_duration.sum": "duration_us",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "launch__registers_per_thread": "registers",
    # Executed local-memory loads and stores (warp instructions): register spills, or arrays the
    # compiler could not keep in registers. 0 for a kernel that does not spill.
    "smsp__sass_inst_executed_op_local_ld.sum": "local_loads",
    "smsp__sass_inst_executed_op_local_st.sum": "local_stores",
    # The traffic a kernel causes: what it reads from DRAM, and what its stores send to the L2
    # cache (32-byte sectors), all of which goes on to DRAM. The DRAM counter above misses the
    # writes still in the L2 cache when a kernel ends: a tenth of the bytes of a 30 µs kernel.
    "dram__bytes_read.sum": "dram_read_bytes",
    "lts__t_sectors_srcunit_tex_op_write.sum": "written_sectors",
    # DRAM's peak: bytes per cycle times cycles per second (as ncu's roofline computes it).
    "dram__bytes.sum.peak_sustained": "dram_peak_bytes_per_cycle",
    "dram__cycles_elapsed.avg.per_second": "dram_cycles_per_second",
}
#: Bytes in one L2 sector.
SECTOR_BYTES = 32

#: The verdict's thresholds, printed under the table and written to the JSON.
THRESHOLDS = {
    "launch_bound_below_us": 10.0,
    "memory_bound_from_dram_pct": 60.0,
    "compute_bound_from_sm_pct": 60.0,
}
#: Calls per workload in the harness's --profile mode; the report takes their median.
PROFILE_CALLS = 3

_TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3,
               "ms": 1e3, "second": 1e6, "s": 1e6}  # fmt: skip
#: ncu's unit prefixes (asked for in base units, but read scaled too).
_PREFIXES = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
#: Per-time units of a rate: cycle/nsecond is 1e9 cycles per second.
_PER_TIME = {"second": 1.0, "msecond": 1e3, "usecond": 1e6, "nsecond": 1e9}
_NO_PERMISSION = "ERR_NVGPUCTRPERM"


@dataclass(frozen=True)
class KernelProfile:
    """One kernel of one workload: the medians over its profiled launches, and the verdict."""

    op: str
    workload: str
    kernel: str
    launches: int
    duration_us: float
    dram_pct: float
    #: DRAM reads and the kernel's writes per second, as % of DRAM's peak (0 when unmeasured).
    traffic_pct: float
    sm_pct: float
    occupancy_pct: float
    registers: int
    local_loads: int
    local_stores: int
    verdict: str


def find_ncu() -> Path | None:
    """Nsight Compute of the toolkit, else on PATH."""
    return find_cuda_tool("ncu")


def _number(text: str) -> float:
    cleaned = text.replace(",", "").strip()
    return float(cleaned) if cleaned and cleaned not in {"n/a", "N/A"} else 0.0


def _in_base_units(value: float, unit: str) -> float:
    """``value`` in bytes, sectors, or per second, from a unit ncu may have scaled."""
    unit = unit.strip()
    if unit.endswith("hz"):  # Ghz, Mhz: a frequency
        return value * _PREFIXES.get(unit[:-2].upper(), 1.0)
    amount, _, per = unit.partition("/")
    value *= _PER_TIME.get(per, 1.0)
    for name in ("byte", "sector", "cycle"):
        if amount.endswith(name):
            return value * _PREFIXES.get(amount[: -len(name)], 1.0)
    return value


def traffic_percent(launch: dict[str, object]) -> float:
    """DRAM reads plus the kernel's writes, per second of its duration, as % of DRAM's peak."""

    def value(field: str) -> float:
        return float(str(launch.get(field, 0.0)))

    peak = value("dram_peak_bytes_per_cycle") * value("dram_cycles_per_second")
    seconds = value("duration_us") * 1e-6
    if peak <= 0 or seconds <= 0:
        return 0.0
    moved = value("dram_read_bytes") + SECTOR_BYTES * value("written_sectors")
    return 100.0 * moved / seconds / peak


def ncu_failure(output: str) -> str | None:
    """A one-line reason when ncu could not profile (counters locked, metric unknown...)."""
    if _NO_PERMISSION in output:
        return (
            "ncu cannot read this GPU's performance counters (ERR_NVGPUCTRPERM): run as root, "
            "or let every user read them (nvidia driver option "
            "NVreg_RestrictProfilingToAdminUsers=0; https://developer.nvidia.com/ERR_NVGPUCTRPERM)."
        )
    for line in output.splitlines():
        if line.startswith("==ERROR=="):
            return "ncu: " + line.removeprefix("==ERROR==").strip()
    return None


def parse_ncu_csv(output: str) -> list[dict[str, object]]:
    """The launches in ``ncu --csv`` output: kernel name, and each metric in METRICS.

    ncu prints its own ``==PROF==`` lines and the application's output before the table. The
    raw page (``--page raw``, what kscaffold asks for) is a header row
    (``"ID","Process ID",...,"Kernel Name",...,<metrics>``), a row of units, then one row per
    profiled launch; the details page has one row per launch and metric (``"Metric Name"``,
    ``"Metric Unit"``, ``"Metric Value"``), and is read too. Durations come back in
    microseconds whatever unit ncu chose; thousands separators are dropped.
    """
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    table = [line for line in lines[start:] if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(table))))
    header, body = rows[0], rows[1:]
    # One (name, {metric: (value, unit)}) per launch, from either page.
    launches: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {}
    if "Metric Name" in header:
        for row in body:
            values = dict(zip(header, row, strict=False))
            name, metrics = launches.setdefault(values["ID"], (_kernel_name(values), {}))
            metrics[values["Metric Name"]] = (values["Metric Value"], values.get("Metric Unit", ""))
    else:
        units: dict[str, str] = {}
        if body and not body[0][0]:  # the units row has no ID
            units = dict(zip(header, body[0], strict=False))
            body = body[1:]
        for row in body:
            values = dict(zip(header, row, strict=False))
            metrics = {m: (values[m], units.get(m, "")) for m in METRICS if m in values}
            launches[values["ID"]] = (_kernel_name(values), metrics)
    parsed = []
    for name, metrics in launches.values():
        launch: dict[str, object] = {"kernel": name}
        for metric, field in METRICS.items():
            if metric not in metrics:
                continue
            text, unit = metrics[metric]
            value = _number(text)
            if field == "duration_us":
                value *= _TIME_UNITS.get(unit.strip(), 1e-3)
            elif unit.strip() not in {"", "%"}:
                value = _in_base_units(value, unit)
            launch[field] = value
        launch["traffic_pct"] = traffic_percent(launch)
        parsed.append(launch)
    return parsed


def _kernel_name(values: dict[str, str]) -> str:
    for column in ("Kernel Name", "Demangled Name", "Function Name", "Mangled Name"):
        if values.get(column):
            return values[column]
    return "?"


def short_kernel_name(name: str) -> str:
    """A demangled kernel name without return type, namespaces or parameters.

    ``void img2gray::(anonymous namespace)::img2gray_kernel<unsigned char, true>(const T1 *...)``
    gives ``img2gray_kernel<unsigned char, true>``.
    """
    name = re.sub(r"^void\s+", "", name.strip())
    if name.endswith(")"):  # the parameter list: from the "(" that closes at the end
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    start, depth = 0, 0
    for i, char in enumerate(name):  # after the last "::" outside <> and ()
        if char in "<(":
            depth += 1
        elif char in ">)":
            # Never below 0: ncu writes the anonymous namespace as "unnamed>" (its "<" lost).
            depth = max(depth - 1, 0)
        elif depth == 0 and name.startswith("::", i):
            start = i + 2
    return name[start:]


def verdict(duration_us: float, dram_pct: float, sm_pct: float) -> str:
    """What bounds a kernel, by :data:`THRESHOLDS`.

    ``dram_pct`` is the kernel's share of DRAM's peak (its traffic's, where measured). A kernel
    near either peak is bound by it, however short; one near neither is bound by launch and
    ramp-up latency when it is short, else by the latency of its accesses.
    """
    memory = dram_pct >= THRESHOLDS["memory_bound_from_dram_pct"]
    compute = sm_pct >= THRESHOLDS["compute_bound_from_sm_pct"]
    if memory and (not compute or dram_pct >= sm_pct):
        return f"memory-bound at {dram_pct:.0f} % of DRAM peak"
    if compute:
        return f"compute-bound at {sm_pct:.0f} % of SM peak"
    if duration_us < THRESHOLDS["launch_bound_below_us"]:
        return f"latency/launch-bound ({duration_us:.1f} µs)"
    return f"latency-bound (DRAM {dram_pct:.0f} %, SM {sm_pct:.0f} % of peak)"


def summarize(op: str, workload: str, launches: Sequence[dict[str, object]]) -> list[KernelProfile]:
    """One :class:`KernelProfile` per kernel name: medians over its launches."""
    by_kernel: dict[str, list[dict[str, object]]] = {}
    for launch in launches:
        by_kernel.setdefault(short_kernel_name(str(launch["kernel"])), []).append(launch)
    profiles = []
    for kernel, runs in by_kernel.items():

        def median(field: str, runs: list[dict[str, object]] = runs) -> float:
            values = [float(str(run.get(field, 0.0))) for run in runs]
            return statistics.median(values) if values else 0.0

        duration, dram, sm = median("duration_us"), median("dram_pct"), median("sm_pct")
        traffic = median("traffic_pct")
        profiles.append(
            KernelProfile(
                op=op,
                workload=workload,
                kernel=kernel,
                launches=len(runs),
                duration_us=round(duration, 3),
                dram_pct=round(dram, 1),
                traffic_pct=round(traffic, 1),
                sm_pct=round(sm, 1),
                occupancy_pct=round(median("occupancy_pct"), 1),
                registers=int(median("registers")),
                local_loads=int(median("local_loads")),
                local_stores=int(median("local_stores")),
                # The traffic where measured: the DRAM counter undercounts short kernels.
                verdict=verdict(duration, traffic or dram, sm),
            )
        )
    return profiles


def ncu_command(ncu: Path, benchmark: Path, workload: dict[str, object]) -> list[str]:
    """The ncu command over the harness's --profile mode for one workload.

    The harness calls the op inside an NVTX range named after the workload, and ncu profiles
    the kernels launched inside it: the op's own, whatever their names (C++ kernels in the op's
    namespace, Triton kernels named after their functions, a copy the op makes of its input).
    """
    return [
        str(ncu),
        "--csv",
        "--page", "raw",
        "--clock-control", "none",
        "--metrics", ",".join(METRICS),
        "--print-units", "base",
        "--kernel-name-base", "demangled",
        "--nvtx", "--nvtx-include", f"{workload['name']}/",
        sys.executable, str(benchmark),
        "--profile", str(PROFILE_CALLS),
        "--sizes", str(workload["size"]), "--dtypes", str(workload["dtype"]),
    ]  # fmt: skip


def benchmark_files(project: Path) -> list[Path]:
    return sorted((project / "benchmarks").glob("benchmark*.py"))


def list_workloads(benchmark: Path) -> dict[str, object]:
    """The harness's ``--list``: ``{"op": name, "workloads": [{"name", "size", "dtype"}]}``."""
    result = subprocess.run(
        [sys.executable, str(benchmark), "--list"],
        capture_output=True, text=True, cwd=benchmark.parent.parent, check=False,
    )  # fmt: skip
    last = (result.stdout.strip().splitlines() or [""])[-1]
    try:
        listed = json.loads(last)
    except ValueError:
        listed = None
    if result.returncode != 0 or not isinstance(listed, dict):
        raise ToolchainError(
            f"{benchmark} --list failed ({result.returncode}): "
            f"{(result.stderr or result.stdout).strip()[-400:]} "
            "(a benchmark from an older template has no --list: run kscaffold update)"
        )
    return listed


def profile_project(
    project: Path,
    *,
    op: str | None = None,
    sizes: Sequence[str] = (),
    dtypes: Sequence[str] = (),
    reporter: BuildReporter | None = None,
    echo: Callable[[str], None] = print,
) -> list[KernelProfile]:
    """Build the CUDA variant if stale, then profile every workload of ``op`` (default: all).

    ``sizes`` and ``dtypes`` (as the benchmark names them) keep only those workloads.
    """
    from scaffold.compiler import build_project
    from scaffold.testing.sanitize import cuda_gpu_visible, require_gpu_tool

    ncu = require_gpu_tool("profile", find_ncu(), gpu=cuda_gpu_visible())
    project = project.resolve()
    build_project(project, backend="cuda", reporter=reporter or BuildReporter())
    listings = [(path, list_workloads(path)) for path in benchmark_files(project)]
    known = [str(listed["op"]) for _, listed in listings]
    if op is not None and op not in known:
        raise InvalidOptionError(
            f"No benchmark of an op {op!r}: the project has {', '.join(known)}."
        )
    profiles: list[KernelProfile] = []
    for path, listed in listings:
        name = str(listed["op"])
        if op is not None and name != op:
            continue
        workloads = listed["workloads"]
        assert isinstance(workloads, list)
        chosen = [
            w
            for w in workloads
            if (not sizes or w["size"] in sizes) and (not dtypes or w["dtype"] in dtypes)
        ]
        if not chosen:
            raise InvalidOptionError(
                f"No workload of {name} has the sizes and dtypes asked for: it has "
                f"{', '.join(str(w['name']) for w in workloads)}."
            )
        for workload in chosen:
            echo(f"profiling {name} {workload['name']}")
            command = ncu_command(ncu, path, workload)
            result = subprocess.run(
                command, capture_output=True, text=True, cwd=project, check=False
            )
            output = result.stdout + result.stderr
            failure = ncu_failure(output)
            if failure is not None:
                raise ToolchainError(failure)
            launches = parse_ncu_csv(result.stdout)
            if result.returncode != 0 or not launches:
                raise ToolchainError(
                    f"ncu profiled no kernel of {name} for {workload['name']} "
                    f"(exit {result.returncode}): {output.strip()[-400:]}"
                )
            profiles += summarize(name, str(workload["name"]), launches)
    return profiles


COLUMNS = (
    "op", "workload", "kernel", "µs", "traffic %", "DRAM %", "occupancy %", "regs", "spills",
    "verdict",
)  # fmt: skip


def profile_table(profiles: Sequence[KernelProfile]) -> str:
    """The report: one row per kernel and workload, then the thresholds of the verdicts."""
    rows = [list(COLUMNS)]
    for p in profiles:
        rows.append(
            [
                p.op,
                p.workload,
                p.kernel,
                f"{p.duration_us:.1f}",
                f"{p.traffic_pct:.1f}" if p.traffic_pct else "-",
                f"{p.dram_pct:.1f}",
                f"{p.occupancy_pct:.1f}",
                str(p.registers),
                str(p.local_loads + p.local_stores),
                p.verdict,
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    t = THRESHOLDS
    lines.append(
        f"Medians of {PROFILE_CALLS} launches per workload, clocks not locked. Verdicts: "
        f"memory-bound from {t['memory_bound_from_dram_pct']:g} % of DRAM peak, compute-bound "
        f"from {t['compute_bound_from_sm_pct']:g} % of SM peak; below both, "
        f"latency/launch-bound under {t['launch_bound_below_us']:g} µs, else latency-bound. "
        "traffic %: DRAM reads and the kernel's writes per second, as % of DRAM peak (what "
        "the verdict uses); DRAM %: the DRAM counter, which misses writes still in the L2 cache "
        "when the kernel ends. spills: local-memory load and store instructions executed."
    )
    return "\n".join(lines)


def profile_json(profiles: Sequence[KernelProfile]) -> str:
    return (
        json.dumps({"thresholds": THRESHOLDS, "kernels": [asdict(p) for p in profiles]}, indent=2)
        + "\n"
    )
