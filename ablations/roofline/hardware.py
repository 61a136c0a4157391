"""A machine as the performance model sees it: ceilings, efficiencies, and where each number comes from.

Read from ``hardware/*.yaml`` entries: the package's ``conf/hardware/`` (datasheets) and the user's folder
(``$BLOCKBENCH_HOME/hardware/``, where ``blockbench calibrate`` writes this machine's). Ceilings are what the
hardware can do at best (datasheet peaks, or this machine's best measured round); efficiencies are the fractions
of them that real kernels of each kind reach, measured by the calibration or taken from a cited publication. Every
prediction names the ``source`` of both.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from dataclasses import dataclass, field

import yaml

from ablations.config.paths import conf_entry


@dataclass(frozen=True)
class Hardware:
    name: str
    # Dense matrix-multiply peak (FLOP/s) in the dtype predicted, and memory bandwidth (bytes/s).
    peak_flops: float
    bandwidth: float
    # Device memory (bytes) for the largest batch that fits.
    memory_bytes: float
    # Fixed cost of one kernel call (s): Python, dispatch and launch.
    call_overhead: float
    # GPUs launch asynchronously, so call overhead hides behind kernels longer than it; a CPU pays it in line.
    overlapped_calls: bool
    # Achieved fraction of peak_flops by matrix products with N rows (N = tokens per call), as
    # [[N, fraction], ...] sorted by N; one entry means the same fraction at every N.
    matmul_efficiency: list[list[float]]
    # Achieved fraction of bandwidth by weight-streaming matrix products and norms.
    memory_efficiency: float
    # Attention: fraction of bandwidth reading the KV cache, and of peak_flops in its products.
    attention_memory_efficiency: float
    attention_compute_efficiency: float
    dtype: str
    source: str
    efficiency_source: str
    measured: dict = field(default_factory=dict)
    # Whether attention's products hide behind its cache reads (a GPU's fused kernels: the larger of the two)
    # or follow them (a CPU core computes a block's scores, then stalls on the next block: their sum).
    attention_overlapped: bool = True

    @classmethod
    def from_dict(cls, d: dict) -> Hardware:
        # YAML 1.1 (PyYAML) reads a datasheet's ``989.0e12`` as a string (its floats need a signed exponent);
        # OmegaConf reads it as a float. Either way the numbers here are floats.
        floats = {f.name for f in dataclasses.fields(cls) if f.type in ("float", float)}
        return cls(**{k: float(v) if k in floats else v for k, v in d.items() if k in cls.__dataclass_fields__})

    def matmul_fraction(self, rows: int) -> float:
        """Efficiency at ``rows`` tokens: interpolated in log(rows) between calibrated points, clamped at the ends."""
        points = sorted(self.matmul_efficiency)
        xs = [p[0] for p in points]
        i = bisect.bisect_left(xs, rows)
        if i == 0:
            return points[0][1]
        if i == len(points):
            return points[-1][1]
        (x0, y0), (x1, y1) = points[i - 1], points[i]
        w = (math.log(rows) - math.log(x0)) / (math.log(x1) - math.log(x0))
        return y0 + w * (y1 - y0)


def load_hardware(name: str) -> Hardware | None:
    """The ``hardware`` entry ``name`` as a ``Hardware``, from where Hydra would take it (the user's folder, else
    the package's: ``ablations.config.paths.conf_entry``); None when there is none."""
    path = conf_entry("hardware", name)
    return Hardware.from_dict(yaml.safe_load(path.read_text())) if path else None
