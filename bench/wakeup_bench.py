"""How much more the same work costs when a process sleeps between its pieces (issue 14).

A harvest's processes wake for every answer: at 5 ms of latency over 4 connections one arrives every
1.25 ms, at 20 ms every 5 ms. On a virtual machine each wake-up may find the caches cold and the core
slower, so the same Python costs more CPU the longer it slept. This bench times a fixed unit of work
(``--unit python``: SHA-1s into a dict, dumped as JSON, about 0.4 ms; ``--unit zlib``: deflating
64 KiB) back to back and with sleeps of each ``--gaps`` between units, and prints the CPU a unit
(``time.process_time``), median (min-max) over ``--repeat`` alternations, and its ratio to back to
back. It says what "CPU a request" at one latency is worth at another on this machine: nothing of
Strata is run.

    .venv/bin/python bench/wakeup_bench.py                  # both units, 3 repeats, about 40 s
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
import zlib
from collections.abc import Callable

KEYS = [f"x{i}" * 50 for i in range(400)]
DEFLATE_INPUT = os.urandom(16 * 1024) * 4  # 64 KiB that deflate finds repeats in
MAX_UNITS = 3000
SECONDS_A_GAP = 3.0


def python_unit() -> None:
    json.dumps({key: hashlib.sha1(key.encode()).hexdigest() for key in KEYS})


def zlib_unit() -> None:
    zlib.compress(DEFLATE_INPUT, 6)


UNITS: dict[str, Callable[[], None]] = {"python": python_unit, "zlib": zlib_unit}


def machine_speed(seconds: float = 0.3) -> float:
    """Microseconds of CPU the Python unit takes back to back, over about *seconds*: how fast this
    machine is just now (``harvest_bench.py`` takes it before each tool's run)."""
    return cpu_a_unit(python_unit, 0.0, seconds)


def cpu_a_unit(unit: Callable[[], None], gap: float, seconds: float = SECONDS_A_GAP) -> float:
    """Microseconds of CPU a unit, over at most MAX_UNITS units or *seconds*."""
    for _ in range(20):  # warm up
        unit()
    started, count = time.process_time(), 0
    deadline = time.monotonic() + seconds
    while count < MAX_UNITS and time.monotonic() < deadline:
        unit()
        count += 1
        if gap:
            time.sleep(gap)
    return 1e6 * (time.process_time() - started) / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unit", choices=[*UNITS, "both"], default="both")
    parser.add_argument("--gaps", default="0,1.25,5,20", help="milliseconds slept between units, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="alternations over the gaps (default 3)")
    args = parser.parse_args(argv)
    try:
        gaps = [float(value) / 1000 for value in args.gaps.split(",")]
    except ValueError:
        parser.error(f"--gaps: not a list of numbers: {args.gaps!r}")
    if any(gap < 0 or gap > 1 for gap in gaps) or not 1 <= args.repeat <= 20:
        parser.error("--gaps must be 0-1000 ms, --repeat 1-20")
    names = list(UNITS) if args.unit == "both" else [args.unit]
    print(f"load average {os.getloadavg()[0]:.2f}; CPU a unit, microseconds, median (min-max) of {args.repeat}")
    for name in names:
        found: dict[float, list[float]] = {gap: [] for gap in gaps}
        for _ in range(args.repeat):
            for gap in gaps:
                found[gap].append(cpu_a_unit(UNITS[name], gap))
        base = statistics.median(found[gaps[0]])
        for gap in gaps:
            values = found[gap]
            median = statistics.median(values)
            print(
                f"  {name:6s} sleeping {gap * 1000:6.2f} ms between units: {median:8.1f} "
                f"({min(values):.1f}-{max(values):.1f}) us, {median / base:5.2f} x the first"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
