"""What a call must do (FLOPs, bytes) and how long a machine needs for it: the roofline and its calibration.

Below ``measure``, ``report`` and ``predict``, which all read it; it imports nothing of ``ablations``.
"""

from pathlib import Path

# conf/hardware/: the datasheet machines and this machine's calibration.
HARDWARE_DIR = Path(__file__).resolve().parents[2] / "conf" / "hardware"
