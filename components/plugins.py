"""Plugins: a user's package that declares choices with the API the built-ins use, found without editing blockbench.

The loading lives with the declared set it fills (``components.declarations``, one owner); these names are kept
here for the modules that import them from ``components.plugins``.
"""

from components.declarations import (
    ENV,
    GROUP,
    Plugin,
    PluginError,
    broken_note,
    load_explicit,
    load_plugins,
    loaded,
    named_in_env,
    shaping,
)

__all__ = ["ENV", "GROUP", "Plugin", "PluginError", "broken_note", "load_explicit", "load_plugins", "loaded",
           "named_in_env", "shaping"]
