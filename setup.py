"""The packages: ``ablations``, ``components`` and ``blockbench`` (the API plugins rely on), blockbench's sweeper in
Hydra's ``hydra_plugins`` namespace (where Hydra looks for sweepers), and the repository's top-level ``conf/`` shipped
inside ``ablations`` as ``ablations/conf`` (``ablations.config.paths.conf_dir`` finds either).
pyproject.toml's ``[tool.setuptools.packages.find]`` cannot give a folder another package's name; everything else is
there."""

from setuptools import find_namespace_packages, find_packages, setup

setup(
    packages=[*find_packages(include=["ablations*", "blockbench*", "components*"]),
              *find_namespace_packages(include=["hydra_plugins"]), "ablations.conf"],
    package_dir={"ablations.conf": "conf"},
    package_data={"ablations.conf": ["**/*.yaml"]},
)
