"""Does a first run tell the truth about time? The example suite on an empty cache, in a
pseudo-terminal as a person would see it: for every step that draws a bar, how long it really
took, whether its note was printed, and how far each time-left figure was from the time really
left (issue 27 item 3: within 2x from the first figure).

Runs `pytest example_suite` (no xdist, an empty temporary cache) with its output on a pty, and
timestamps each line the bars draw as it arrives. A step is the lines from its `0/N` bar to its
`done in` line; the time really left at a figure is the step's end minus the figure's arrival.
Figures drawn with 2 s or less really left are not judged (rounding to the second dominates).

Printed per step: its duration, whether a note came, the first figure and the time really left
then, and the worst ratio (the larger of estimate/actual and actual/estimate).

Run: python benchmarks/bench_first_run.py   (a cold example suite: about 7 minutes here)
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "example_suite"
BAR = re.compile(r"^(?P<step>.+?) \[[#-]+\] (?P<done>\d+)/(?P<total>\d+)(?P<rest>.*)$")
UNITS = {"h": 3600, "min": 60, "s": 1}


def seconds(shown: str) -> float:
    parts = shown.split()
    return float(sum(int(n) * UNITS[u] for n, u in zip(parts[::2], parts[1::2], strict=True)))


@dataclass
class Step:
    name: str
    started: float
    ended: float | None = None
    noted: bool = False
    figures: list[tuple[float, float]] = field(default_factory=list)  # (arrival, left)


def run_on_pty(cache: Path) -> tuple[list[tuple[float, str]], int]:
    """Each piece of text the suite wrote (split at \\r and \\n), with its arrival time."""
    leader, follower = pty.openpty()
    plugins_off = ["-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist"]
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *plugins_off, f"--ragmetrics-cache-dir={cache}"],
        cwd=SUITE,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"},
    )
    os.close(follower)
    pieces: list[tuple[float, str]] = []
    pending = ""
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            data = os.read(leader, 65536).decode("utf-8", "replace")
        except OSError:  # the child closed the pty
            break
        if not data:
            break
        now = time.monotonic()
        pending += data
        *whole, pending = re.split(r"[\r\n]", pending)
        pieces.extend((now, piece.rstrip()) for piece in whole if piece.strip())
    os.close(leader)
    return pieces, process.wait()


def steps_of(pieces: list[tuple[float, str]]) -> list[Step]:
    steps: list[Step] = []
    current: Step | None = None
    for at, text in pieces:
        found = BAR.match(text)
        if found is None:  # a note has its own line: "<what and why>; about 4 min 10 s in all"
            if current is not None and ("; about " in text or "; estimating how long" in text):
                current.noted = True
            continue
        if current is None:
            current = Step(found["step"], at)
            steps.append(current)
        rest = found["rest"]
        if rest.startswith(", done in"):
            current.ended = at
            current = None
        elif rest.endswith(" left") and "estimating" not in rest:
            current.figures.append((at, seconds(rest.rsplit(", ", 1)[1].removesuffix(" left"))))
    return steps


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        start = time.monotonic()
        pieces, status = run_on_pty(Path(folder) / "cache")
        took = time.monotonic() - start
    if status != 0:
        sys.exit("example suite failed:\n" + "\n".join(text for _, text in pieces[-60:]))
    print(f"cold example suite on a pty: {took:.1f} s")
    for step in steps_of(pieces):
        if step.ended is None:
            print(f"  {step.name}: never finished")
            continue
        took = step.ended - step.started
        judged = [(at, left, step.ended - at) for at, left in step.figures if step.ended - at > 2]
        line = f"  {step.name}: {took:.1f} s, note {'yes' if step.noted else 'no'}"
        if judged:
            at, left, actual = judged[0]
            worst = max(max(left / actual, actual / max(left, 0.5)) for _, left, actual in judged)
            line += (
                f"; first figure {left:.0f} s left at {at - step.started:.1f} s "
                f"(really {actual:.1f} s); worst ratio {worst:.2f} over {len(judged)} figures"
            )
        print(line)


if __name__ == "__main__":
    main()
