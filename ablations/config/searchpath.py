"""The user's config folder on Hydra's search path, before the package's ``conf/``: ``hardware=NAME`` and
``model=NAME`` find the user's entries in every command that composes (``run``, ``predict``, ``full-size``), and a
name in both is the user's (``ablations.config.paths.user_conf`` says so once).

A ``SearchPathPlugin`` rather than ``hydra.searchpath`` in the primary configs: Hydra searches that list after the
primary config's folder, so the package would win, and ``blockbench calibrate``'s ``this_machine`` could never replace
the one the package ships. The plugin is registered by hand (``register_configs``), not found by Hydra's scan of
``hydra_plugins``, so it needs no package of its own; it acts only on a search path whose primary folder is this
package's ``conf/``.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin

from ablations.config.paths import HOME_ENV, conf_dir, user_conf

PROVIDER = f"blockbench user folder (${HOME_ENV})"


def _folder(path: str) -> Path:
    return Path(path.removeprefix("file://")).resolve()


class UserConfSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        main = [e for e in search_path.get_path() if e.provider == "main"]
        if not main or _folder(main[0].path) != conf_dir().resolve():
            return
        home = user_conf()
        if home is not None:
            search_path.prepend(PROVIDER, f"file://{home.resolve()}", anchor="main")


def register_search_path() -> None:
    """Hydra's plugin registry keeps a class once, however often this runs."""
    Plugins.instance().register(UserConfSearchPath)
