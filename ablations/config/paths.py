"""Where the package's files are: ``conf/`` (the Hydra configs, hardware and model sizes) and the folder above the
package (the repository, in a source checkout); and the user's own config folder beside them.

The repository keeps ``conf/`` at its top level; a wheel ships the same files inside the package as
``ablations/conf/`` (``package-dir`` in ``setup.py``). ``conf_dir()`` is the one place that knows both: every
reader of ``conf/`` asks it.

The user's folder (``home_dir()``: ``$BLOCKBENCH_HOME``, by default ``~/.config/blockbench``) holds what a user adds
without touching the installed package: ``hardware/`` entries (``blockbench calibrate`` writes this machine's there)
and ``model/`` sizes, each a YAML file as the package's ``conf/<group>/`` holds. Hydra searches it before the
package (``ablations.config.searchpath``), and ``conf_entry`` does the same for the readers that load a file
themselves: a name in both is the user's, and ``user_conf`` says so once, on one line. Below every stage: this
module imports nothing of ``ablations`` but ``errors``.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from ablations.config.errors import PROG, UsageError

PACKAGE = Path(__file__).resolve().parent.parent
# The folder holding the package: the repository in a source checkout or an editable install (``git`` runs
# there), site-packages when installed.
ROOT = PACKAGE.parent
HOME_ENV = "BLOCKBENCH_HOME"
# The groups the user's folder may hold entries of; any other YAML there would shadow the package's configs.
USER_GROUPS = ("hardware", "model")
# The shadowing lines already printed by this process.
_noted: set[str] = set()


@functools.cache
def conf_dir() -> Path:
    """The installed copy (``ablations/conf``) when there is one, else the source checkout's ``conf/``."""
    for folder in (PACKAGE / "conf", ROOT / "conf"):
        if (folder / "config.yaml").is_file():
            return folder
    raise FileNotFoundError(f"no conf/config.yaml in {PACKAGE} or {ROOT}: a broken install (reinstall blockbench)")


def home_dir() -> Path:
    """``$BLOCKBENCH_HOME``, else ``$XDG_CONFIG_HOME/blockbench``, else ``~/.config/blockbench`` (the XDG base
    directory specification, which ignores a relative ``XDG_CONFIG_HOME``). Read at each call: not cached."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config") / "blockbench"


def home_key() -> str:
    """How an error line names the user's folder: the variable that set it, or that it was the default."""
    return f"{HOME_ENV}={home_dir()}" if os.environ.get(HOME_ENV) else f"{HOME_ENV} (unset: {home_dir()})"


def user_conf() -> Path | None:
    """The user's folder to read, None when it does not exist. A file, a folder that cannot be listed, or YAML
    outside ``hardware/`` and ``model/`` is a ``UsageError`` naming it. Says once per process, on stderr, which of
    its entries replace the package's."""
    home = home_dir()
    if not home.exists():
        return None
    allowed = f"a folder holding {' and '.join(f'{g}/' for g in USER_GROUPS)} entries"
    if not home.is_dir():
        raise UsageError(f"{home_key()}: is not a folder; allowed: {allowed}")
    try:
        files = sorted(p.relative_to(home) for p in home.rglob("*.yaml"))
    except OSError as exc:
        raise UsageError(f"{home_key()}: cannot be read ({exc.strerror or exc})") from None
    foreign = [p.as_posix() for p in files if len(p.parts) != 2 or p.parts[0] not in USER_GROUPS]
    if foreign:
        raise UsageError(f"{home_key()}: holds {', '.join(foreign)}, which blockbench does not read there; allowed: "
                         f"{allowed} (group/name.yaml)")
    shadowed = [p.as_posix() for p in files if (conf_dir() / p).is_file()]
    line = (f"{PROG}: note: {', '.join(shadowed)} in {home} replace{'s' if len(shadowed) == 1 else ''} the "
            f"package's of the same name (the user's folder wins)")
    if shadowed and line not in _noted:
        _noted.add(line)
        print(line, file=sys.stderr)
    return home


def conf_entry(group: str, name: str) -> Path | None:
    """``<group>/<name>.yaml`` as Hydra finds it: the user's folder's, else the package's; None when neither."""
    home = user_conf() if group in USER_GROUPS else None
    for folder in (home, conf_dir()):
        if folder is not None and (folder / group / f"{name}.yaml").is_file():
            return folder / group / f"{name}.yaml"
    return None


def conf_names(group: str) -> list[str]:
    """The options of a group: the package's and, for ``USER_GROUPS``, the user's folder's."""
    home = user_conf() if group in USER_GROUPS else None
    folders = [f / group for f in (conf_dir(), home) if f is not None]
    return sorted({p.stem for f in folders for p in f.glob("*.yaml") if not p.stem.endswith("_schema")})
