"""Run from a checkout without installing: the plugin's ``src/`` on the path (unless already there) and named in
``$BLOCKBENCH_PLUGINS``, which is what ``plugins=[blockbench_scalenorm]`` does on the command line. Installed, its
entry point loads it."""

import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

MODULE = "blockbench_scalenorm"

if not any(ep.module == MODULE for ep in importlib.metadata.entry_points(group="blockbench.choices")):
    if importlib.util.find_spec(MODULE) is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    named = [m for m in os.environ.get("BLOCKBENCH_PLUGINS", "").split(",") if m]
    os.environ["BLOCKBENCH_PLUGINS"] = ",".join(dict.fromkeys([*named, MODULE]))
