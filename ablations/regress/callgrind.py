"""Instructions per call under valgrind's callgrind: a second signal that machine load cannot move.

``torch.utils.benchmark.Timer.collect_callgrind`` starts one valgrind process per statement, and importing
torch under valgrind takes most of a minute, so a dozen cases on two sides would take a quarter of an hour. This
runs the same mechanism torch's timer uses (callgrind started with collection off, switched on around the measured
calls through ``torch._C._valgrind_toggle``, one stats dump per case) in one valgrind process per side, and
reads each dump's total instruction count. The two sides' processes run side by side: an instruction count
does not depend on what else the machine does.

Callgrind also starts with its instrumentation off (``--instr-atstart=no``) where ``callgrind_control`` is
installed (valgrind's own package has it): the import of torch then runs at valgrind's plain speed, several
times faster than instrumented, and the worker switches instrumentation on once, through ``callgrind_control``,
before the first counted calls. Counting is the same either way: collection is only ever on around those calls,
after the case's warm-up.

    python -m ablations.regress.callgrind ROOT OUT NUMBER CASE [CASE ...]   # the worker, run under valgrind
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ablations.config.paths import ROOT

WARMUP_CALLS = 2
CONTROL = "callgrind_control"
INSTRUMENT_LATER = "BLOCKBENCH_CALLGRIND_INSTRUMENT_LATER"  # set by start(): the worker switches it on itself
# Counts repeat to ~0.01% between calls of the same code, so a few calls are enough.
DEFAULT_NUMBER = 3
_TOTALS = re.compile(r"^(?:totals|summary):\s+(\d+)", re.MULTILINE)


def available() -> str | None:
    """None when callgrind can run here, else the reason (one line)."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (Debian: apt-get install valgrind)"
    import torch

    if not torch._C._valgrind_supported_platform():
        return "this torch build has no valgrind bindings"
    return None


def start(root: Path, names: list[str], out: Path, number: int = DEFAULT_NUMBER) -> subprocess.Popen:
    """Start the worker for the tree at ``root`` under callgrind; its dumps land in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    later = shutil.which(CONTROL) is not None
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--instr-atstart={'no' if later else 'yes'}",
           "--dump-instr=no", "--dump-line=no", f"--callgrind-out-file={out}/callgrind.out", sys.executable, "-m",
           "ablations.regress.callgrind", str(root), str(out), str(number), *names]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **{INSTRUMENT_LATER: "1" if later else ""})
    with (out / "valgrind.log").open("w") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)


def finish(proc: subprocess.Popen, out: Path) -> dict[str, float]:
    """Wait for the worker and return instructions per call by case name (a missing case failed to build)."""
    if proc.wait() != 0:
        tail = (out / "valgrind.log").read_text().strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"callgrind worker exited {proc.returncode}: {tail[0]}")
    done = json.loads((out / "cases.json").read_text())
    counts = {}
    for name, dump, number in done:
        found = _TOTALS.findall(Path(dump).read_text())
        if found:
            counts[name] = int(found[-1]) / number
    return counts


def _dumps(out: Path) -> set[Path]:
    return set(out.glob("callgrind.out*"))


def worker(root: Path, out: Path, number: int, names: list[str]) -> None:
    """Under valgrind: build each case from ``root``'s components and count ``number`` calls of it."""
    import torch

    # The cases are the harness's own (derived from its declared choices), listed before ``root``'s components
    # replace the harness's, since a base tree may lack the declarations they are derived from.
    from ablations.regress.cases import by_name

    cases = by_name(names)
    for name in [m for m in sys.modules if m == "components" or m.startswith("components.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))  # this tree's components, ahead of the harness's own checkout
    torch.set_num_threads(1)
    import components

    done = []
    instrument_later = bool(os.environ.get(INSTRUMENT_LATER))
    for case in cases:
        torch.manual_seed(0)
        try:
            subject = case.build(components)
        except Exception as exc:  # a case this tree cannot build is reported by the timing pass already
            print(f"{case.name}: cannot build: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        for _ in range(WARMUP_CALLS):
            subject.call()
        if instrument_later:
            _instrument_on()
            instrument_later = False
        before = _dumps(out)
        torch._C._valgrind_toggle()
        for _ in range(number):
            subject.call()
        torch._C._valgrind_toggle_and_dump_stats()
        new = sorted(_dumps(out) - before, key=lambda p: p.stat().st_mtime)
        if new:
            done.append((case.name, str(new[-1]), number))
    (out / "cases.json").write_text(json.dumps(done))


def _instrument_on() -> None:
    """Switch callgrind's instrumentation on in this process (started with it off), and wait until it is."""
    proc = subprocess.run([CONTROL, "-i", "on", str(os.getpid())], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or "OK" not in proc.stdout:
        raise RuntimeError(f"{CONTROL} could not switch instrumentation on: {(proc.stdout + proc.stderr).strip()}")


if __name__ == "__main__":
    worker(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
