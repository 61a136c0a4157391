"""Where the package's files are: ``conf/`` (the Hydra configs, hardware and model sizes) and the folder above the
package (the repository, in a source checkout).

The repository keeps ``conf/`` at its top level; a wheel ships the same files inside the package as
``ablations/conf/`` (``package-dir`` in ``setup.py``). ``conf_dir()`` is the one place that knows both: every
reader of ``conf/`` asks it. Below every stage: this module imports nothing of ``ablations``.
"""

from __future__ import annotations

import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# The folder holding the package: the repository in a source checkout or an editable install (``git`` runs
# there), site-packages when installed.
ROOT = PACKAGE.parent


@functools.cache
def conf_dir() -> Path:
    """The installed copy (``ablations/conf``) when there is one, else the source checkout's ``conf/``."""
    for folder in (PACKAGE / "conf", ROOT / "conf"):
        if (folder / "config.yaml").is_file():
            return folder
    raise FileNotFoundError(f"no conf/config.yaml in {PACKAGE} or {ROOT}: a broken install (reinstall blockbench)")
