"""Run from a checkout without installing: the plugin's ``src/`` on the path and named in ``$BLOCKBENCH_PLUGINS``
(what ``plugins=[blockbench_relu2_softcap]`` does on the command line). Installed, its entry point loads it."""

import importlib.util
import os
import sys
from pathlib import Path

if importlib.util.find_spec("blockbench_relu2_softcap") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    os.environ["BLOCKBENCH_PLUGINS"] = "blockbench_relu2_softcap"
