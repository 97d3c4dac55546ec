"""Time the first run of ``scripts/demo`` in a fresh clone: setup, cold index, warm.

Each round clones the repository (``git clone`` of the committed HEAD) into a temporary
directory beside it (so that ``../shared`` resolves as it does for the checkout) and runs
``bash scripts/demo "How do I filter by metadata?"`` three times there:

- fresh clone: creates the lean ``.venv-demo`` (pip, from the machine's configured
  indexes, find-links and cache, as ``scripts/demo`` uses them), ingests docs/ and answers;
- cold index: the same command after deleting the index directory the demo writes
  (``.ragloom-index``): ingest and answer, the venv reused;
- warm: the same command a third time (venv and index reused).

Each command runs under a small measuring process of its own, so that
``resource.getrusage(RUSAGE_CHILDREN)`` gives the CPU time of that command's process tree
only and its peak RSS (the largest single process of the tree). Optionally one more fresh
clone runs with pip's cache disabled (``PIP_NO_CACHE_DIR=1``), to show what the warm cache
is worth. Load average noted before and after every command.

    python3 scripts/bench/bench_first_run.py [--rounds 3] [--cold-cache] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How do I filter by metadata?"
INDEX = ".ragloom-index"
VENV = ".venv-demo"
STAGES = ("fresh_clone", "cold_index", "warm")
GOALS = {"fresh_clone": 120.0, "cold_index": 60.0}

# Run by a fresh interpreter for each command: RUSAGE_CHILDREN then covers that command only.
MEASURE = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[2:], cwd=sys.argv[1], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mb": usage.ru_maxrss / 1024, "returncode": done.returncode,
                  "stdout": done.stdout, "stderr": done.stderr[-2000:]}))
"""


def measured(clone: Path, env: dict[str, str]) -> dict[str, Any]:
    """One ``scripts/demo`` run in ``clone``: wall, CPU of its tree, peak RSS, load."""
    load_before = os.getloadavg()[0]
    command = [sys.executable, "-c", MEASURE, str(clone), "bash", "scripts/demo", QUESTION]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    sample: dict[str, Any] = json.loads(out.stdout)
    if sample["returncode"] != 0:
        raise RuntimeError(f"scripts/demo failed in {clone}: {sample['stderr']}")
    if "Q: " + QUESTION not in sample["stdout"] or "Sources:" not in sample["stdout"]:
        raise RuntimeError(f"scripts/demo printed no answer in {clone}: {sample['stdout']}")
    sample["load_before"], sample["load_after"] = load_before, os.getloadavg()[0]
    del sample["stdout"], sample["stderr"], sample["returncode"]
    return sample


def megabytes(path: Path) -> float:
    """Bytes of the files under ``path`` (symlinks not followed), in MB."""
    total = sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink() and p.is_file())
    return total / 1e6


def one_round(env: dict[str, str], stages: tuple[str, ...] = STAGES) -> dict[str, Any]:
    """A fresh clone beside the checkout and the demo's stages in it, then removed."""
    workdir = Path(tempfile.mkdtemp(prefix="ragloom-first-run-", dir=ROOT.parent))
    try:
        clone = workdir / ROOT.name
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        out: dict[str, Any] = {}
        for stage in stages:
            if stage == "cold_index":
                shutil.rmtree(clone / INDEX)
            out[stage] = measured(clone, env)
            if stage == "fresh_clone":
                out["venv_mb"] = megabytes(clone / VENV)
        return out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def summary(values: list[float]) -> list[float]:
    """Median, lowest and highest."""
    return [statistics.median(values), min(values), max(values)]


def suite_part(rounds: int, cold_cache: bool) -> dict[str, Any]:
    """``run_suite.py``'s part: ``rounds`` fresh clones, each through the three stages,
    and optionally one fresh clone with pip's cache disabled."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    runs = [one_round(env) for _ in range(rounds)]
    result: dict[str, Any] = {"question": QUESTION, "rounds": rounds, "runs": runs}
    for stage in STAGES:
        result[stage] = {
            key: summary([r[stage][key] for r in runs]) for key in ("wall", "cpu", "peak_rss_mb")
        }
    result["venv_mb"] = summary([r["venv_mb"] for r in runs])
    cache = Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip"))
    result["pip_cache_mb"] = megabytes(cache) if cache.is_dir() else 0.0
    if cold_cache:
        result["no_pip_cache"] = one_round(dict(env, PIP_NO_CACHE_DIR="1"), ("fresh_clone",))
    return result


def section(result: dict[str, Any]) -> list[str]:
    """The benchmarks page's rows for ``suite_part``'s result."""

    def spread(values: list[float], unit: str, digits: int = 1) -> str:
        return f"{values[0]:.{digits}f} {unit} ({values[1]:.{digits}f}-{values[2]:.{digits}f})"

    runs = result["runs"]
    loads = [r[s][k] for r in runs for s in STAGES for k in ("load_before", "load_after")]
    labels = {
        "fresh_clone": "fresh clone: venv setup, ingest, answer",
        "cold_index": "after setup, cold index: ingest, answer",
        "warm": "warm: index reused, answer",
    }
    lines = [
        "## First run of the demo",
        "",
        f'`bash scripts/demo "{result["question"]}"` in a fresh `git clone` of the',
        "repository (`scripts/bench/bench_first_run.py`), three times in a row: from the",
        "fresh clone (it creates the lean `.venv-demo`, ingests docs/ and answers), again after",
        "deleting the index it wrote (`.ragloom-index`: ingest and answer), and a third time",
        "(index reused). CPU is that of the whole process tree (`RUSAGE_CHILDREN`), peak RSS",
        f"that of its largest process. Median (lowest-highest) over {result['rounds']} fresh",
        f"clones; load average {min(loads):.1f}-{max(loads):.1f}.",
        "",
        "| stage | wall | CPU | peak RSS | goal (wall) |",
        "|---|---|---|---|---|",
    ]
    for stage in STAGES:
        r = result[stage]
        goal = f"≤ {GOALS[stage]:.0f} s" if stage in GOALS else "-"
        lines.append(
            f"| {labels[stage]} | {spread(r['wall'], 's')} | {spread(r['cpu'], 's')} | "
            f"{spread(r['peak_rss_mb'], 'MB', 0)} | {goal} |"
        )
    lines += [
        "",
        f"The demo's venv takes {spread(result['venv_mb'], 'MB', 0)} on disk. The fresh-clone",
        "figure depends on the machine's pip configuration: the wheels come from the local",
        "`file://` indexes and find-links of its pip.conf and from pip's cache (here",
        f"{result['pip_cache_mb']:.0f} MB), while the default index (PyPI) stays configured,",
        "so pip also asks it over the network for each requirement.",
    ]
    cold = result.get("no_pip_cache")
    if cold:
        c = cold["fresh_clone"]
        saved = c["wall"] - result["fresh_clone"]["wall"][0]
        lines += [
            "One more fresh clone with pip's cache disabled (`PIP_NO_CACHE_DIR=1`):",
            f"{c['wall']:.1f} s wall, {c['cpu']:.1f} s CPU (load average",
            f"{c['load_before']:.1f} before, {c['load_after']:.1f} after), so the warm cache",
            f"is worth {saved:+.1f} s against the median here. pip then reads every index page",
            "and wheel anew (from the local indexes, PyPI for what they lack): not a",
            "network-free cold run; a machine without the local indexes downloads the wheels",
            f"of the venv ({result['venv_mb'][0]:.0f} MB installed), which this does not measure.",
        ]
    else:
        lines.append("A run with pip's cache disabled was not measured.")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh clones")
    parser.add_argument("--cold-cache", action="store_true", help="one more, no pip cache")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    result = suite_part(args.rounds, args.cold_cache)
    print("\n".join(section(result)))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
