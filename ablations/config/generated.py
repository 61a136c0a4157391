"""The Hydra configs derived from the declared choices, stored in the ConfigStore beside ``conf/``'s files.

- ``choices``: the defaults list that puts every choice group in the primary config at GPT-2's value, so
  ``norm=rmsnorm`` overrides it and a new group is selectable without editing ``conf/config.yaml``;
- ``variant/*``: the variants of ``ablations.config.generated_variants``;
- ``sweep/*``: the sweeps of ``ablations.config.generated_sweeps``;
- ``hydra/help/blockbench``: ``--help`` (``ablations.config.help_page``), with every sweep listed;
- ``<group>/<value>``: each value without a file in ``conf/<group>/`` (a plugin's: ``components.plugins``), its
  config dataclass at that value with every other setting at its default.

Hand-written configs stay files in ``conf/`` (sizes, profiles, the ``kv``, ``scale`` and ``gqa_matched`` sweeps,
``gqa_matched``'s variant); a generated name that a file also has is an error at start-up.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from ablations.config.generated_sweeps import sweeps
from ablations.config.generated_variants import all_variants
from ablations.config.help_page import help_node
from ablations.config.paths import conf_dir
from blockbench import choices
from components.baselines import BASELINES


def _check_no_file(group: str, name: str) -> None:
    if (conf_dir() / group / f"{name}.yaml").exists():
        raise RuntimeError(f"conf/{group}/{name}.yaml duplicates the generated {group} {name!r}: delete the file")


def register_generated(cs: ConfigStore) -> None:
    cs.store(name="choices", node={"defaults": [{f"/{choice.group}": choice.gpt2} for choice in choices()]})
    for choice in choices():
        for value in choice.values:
            if not (conf_dir() / choice.group / f"{value}.yaml").exists():
                cs.store(group=choice.group, name=value, node=choice.at(value))
    for v in all_variants():
        _check_no_file("variant", v.name)
        cs.store(group="variant", name=v.name, node=v.node(), package="_global_")
    for name in BASELINES:
        _check_no_file("baseline", name)
        cs.store(group="baseline", name=name, node={"defaults": ["/baseline_schema@_here_"], "name": name})
    for s in sweeps():
        _check_no_file("sweep", s.name)
        cs.store(group="sweep", name=s.name, node=s.node(), package="_global_")
    cs.store(group="hydra/help", name="blockbench", node=help_node(), package="hydra.help")
