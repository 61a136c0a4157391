"""Plugins (``components.plugins``, ``ablations.config.command_start``): found, refused in one line when they clash
or fail, recorded in rows, in a point's identity only where they shape it; and an uninstalled copy of the example plugin
working through ``plugins=`` (the installed one: ``tests/ablations/test_plugin_install.py``, extended tier).

The in-process tests write small plugin modules into a temporary folder and take back every declaration,
registration and plugin record after each test (``isolated``: ``tests.temporary_choice.kept``), so no other test
sees them."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ablations.config import command_start
from ablations.config.errors import UsageError, command
from blockbench import choice as choice_of
from blockbench import choices
from components import FFNS, plugins
from components.declared_set import DECLARED
from components.plugins import Plugin, PluginError
from tests.temporary_choice import kept

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "blockbench-relu2-softcap"


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A folder for plugin modules on the path; every declaration, registry entry and plugin record as it was."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(plugins.ENV, "")  # and as it was after: ``plugins=`` writes it for the child processes
    with kept():
        yield tmp_path
    for name in [m for m in sys.modules if m.startswith("plug_")]:
        del sys.modules[name]


def module(folder: Path, name: str, body: str) -> str:
    (folder / f"{name}.py").write_text(textwrap.dedent(body))
    return name


RELU3 = """
    from torch import nn
    from blockbench import FFNS, GeluMLP, choice

    __version__ = "1.2"

    @FFNS.register("relu3")
    class Cubed(GeluMLP):
        def forward(self, x):
            return self.down(self.up(x).relu() ** 3)

    choice("ffn").describe("relu3", "cubed ReLU")
"""


def test_a_plugin_registers_and_is_recorded_with_its_version(isolated):
    plugins.load_explicit([module(isolated, "plug_relu3", RELU3)])
    assert "relu3" in FFNS and FFNS.source("relu3") == "plugin plug_relu3 (plug_relu3)"
    [p] = [p for p in plugins.loaded() if p.module == "plug_relu3"]
    assert (p.name, p.version, p.groups, p.values) == ("plug_relu3", "1.2", (), (("ffn", "relu3"),))
    from ablations.results.provenance import plugins_loaded

    assert "plug_relu3==1.2" in plugins_loaded().split()


@pytest.mark.parametrize("body,said", [
    ("from blockbench import FFNS\nFFNS.register('swiglu')(object)\n",
     "plugin plug_dup (plug_dup): ffn.name=swiglu is registered twice: by blockbench and by plugin plug_dup "
     "(plug_dup)"),
    ("from dataclasses import dataclass\nfrom blockbench import Choice, Registry, declare\n"
     "@dataclass\nclass C:\n    name: str = 'a'\nr = Registry('norm.name'); r.add('a', None)\n"
     "declare(Choice(group='norm', config=C, registry=r, gpt2='a', llama2='a', hook='flag', order=9999))\n",
     "plugin plug_dup (plug_dup): choice group 'norm' is declared twice: by blockbench and by plugin plug_dup "
     "(plug_dup)"),
    ("from dataclasses import dataclass\nfrom blockbench import Choice, Registry, declare\n"
     "@dataclass\nclass C:\n    name: str = 'a'\nr = Registry('moe.name'); r.add('a', None)\n"
     "declare(Choice(group='moe', config=C, registry=r, gpt2='a', llama2='a', hook='ffn', order=9999))\n",
     "plugin plug_dup (plug_dup): choice group 'moe': hook='ffn' is group 'ffn''s (by blockbench), whose one module "
     "the block builds; register a value into its registry (ffn.name) instead"),
])
def test_a_duplicate_is_one_line_naming_both_sources(isolated, body, said):
    with pytest.raises(PluginError) as info:
        plugins.load_explicit([module(isolated, "plug_dup", body)])
    assert str(info.value) == said


@pytest.mark.parametrize("body,said", [
    ("from blockbench import FFNS\nFFNS.register('relu4')(object)\n",
     "ffn.name=relu4: the ffn hook builds a module: object must subclass torch.nn.Module"),
    ("from torch import nn\nfrom blockbench import NORMS\n@NORMS.register('half')\nclass Half(nn.Module):\n"
     "    def forward(self, x):\n        return x / 2\n",
     "norm.name=half: the norm hook calls work, which Half does not define"),
    ("from torch import nn\nfrom blockbench import POSITIONS\n@POSITIONS.register('p')\nclass P(nn.Module):\n"
     "    def embed(self, x, offset=0):\n        return x\n    @classmethod\n    def work(cls, arch, step):\n"
     "        return None\n",
     "pos.name=p: the pos hook calls rotation, score_bias, which P does not define"),
    ("from dataclasses import dataclass\nfrom blockbench import Choice, Registry, declare\n"
     "@dataclass\nclass C:\n    name: str = 'a'\nr = Registry('lean.name'); r.add('a', None); r.add('b', int)\n"
     "declare(Choice(group='lean', config=C, registry=r, gpt2='a', hook='flag', about={'a': 'x', 'b': 'y'}))\n",
     "lean.name=b: the flag hook builds nothing: register every value as None"),
])
def test_a_class_without_what_its_hook_calls_is_one_line_at_registration(isolated, body, said):
    """A value is held to its hook's interface (``components.choice.INTERFACES``) when it is registered into a
    declared group, or when the group that holds it is declared: the plugin fails to import, and nothing of it
    stays declared."""
    before = {c.group for c in choices()}
    with pytest.raises(PluginError) as info:
        plugins.load_explicit([module(isolated, "plug_iface", body)])
    message = str(info.value)
    assert message.startswith(f"plugin plug_iface failed to import: InterfaceError: {said}"), message
    assert "\n" not in message and "What each hook's class provides" in message
    assert {c.group for c in choices()} == before and "relu4" not in FFNS


def test_two_plugins_registering_one_value_name_each_other_and_leave_nothing_half_declared(isolated):
    plugins.load_explicit([module(isolated, "plug_a", RELU3)])
    second = "from blockbench import FFNS, GeluMLP\nFFNS.register('relu4')(GeluMLP)\n" + textwrap.dedent(RELU3)
    with pytest.raises(PluginError, match=r"ffn.name=relu3 is registered twice: by plugin plug_a \(plug_a\) and by "
                                          r"plugin plug_b \(plug_b\)$"):
        plugins.load_explicit([module(isolated, "plug_b", second)])
    assert "relu4" not in FFNS  # registered before the clash, taken back with it


def test_a_plugin_that_fails_to_import_is_one_line_and_exit_2(isolated, capsys):
    name = module(isolated, "plug_broken", "import not_a_module_anywhere\n")
    with pytest.raises(SystemExit) as info:
        command_start.start("report", [f"plugins=[{name}]", "DIR"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == ("blockbench report: error: plugin plug_broken failed to import: ModuleNotFoundError: No module "
                   "named 'not_a_module_anywhere'\n")


@pytest.mark.parametrize("value,allowed", [("[a.b, c]", ["a.b", "c"]), ("a.b", ["a.b"]), ("a,b", ["a", "b"])])
def test_plugins_takes_a_list_of_modules(value, allowed):
    assert command_start.parse(value) == allowed


@pytest.mark.parametrize("value", ["[]", "[a-b]", "1x"])
def test_a_bad_plugins_value_is_one_line(value):
    with pytest.raises(UsageError) as info:
        command_start.parse(value)
    assert "\n" not in info.value.message and info.value.message.startswith(f"plugins={value}: ")


def test_the_environment_variable_is_named_once():
    assert command_start.ENV == plugins.ENV


def test_a_broken_installed_plugin_is_skipped_with_a_warning_and_named_where_input_is_bad(isolated, monkeypatch,
                                                                                         capsys):
    point = importlib.metadata.EntryPoint(name="gone", value="plug_not_there", group=plugins.GROUP)
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [point])
    monkeypatch.setattr(DECLARED, "plugins_started", False)
    plugins.load_plugins()  # goes on: the run may not need it
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and warning.startswith("blockbench: warning: installed plugin gone (entry point "
                                                           "blockbench.choices: gone = plug_not_there): plugin ")
    assert "ModuleNotFoundError" in warning and warning.endswith("; skipped\n")

    @command("run")
    def main(argv: list[str] | None = None) -> None:
        raise UsageError("ffn=relu9 is not a known variant")

    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ffn=relu9 is not a known variant (skipped, and perhaps what provides it: " \
        "installed plugin gone" in err


def test_a_plugin_enters_the_identity_only_where_it_shapes_the_point(isolated, monkeypatch):
    from ablations.results.identity import point_identity
    from blockbench.testing import compose

    plain = compose([])
    before = point_identity(plain)
    shaping = Plugin("relu-pkg", "2.0", "relu_pkg", (), (("ffn", "swiglu"),))  # as if it provided swiglu
    unrelated = Plugin("other-pkg", "1.0", "other_pkg", (), (("ffn", "relu9"),))
    monkeypatch.setitem(DECLARED.plugins, "other_pkg", unrelated)
    assert point_identity(plain) == before  # installed, not used: no identity changes
    cfg = compose(["ffn=swiglu"])
    without = point_identity(cfg)
    monkeypatch.setitem(DECLARED.plugins, "relu_pkg", shaping)
    assert point_identity(cfg) == {**without, "plugins": {"relu-pkg": "2.0"}}
    monkeypatch.setitem(DECLARED.plugins, "relu_pkg", Plugin("relu-pkg", "2.1", "relu_pkg", (), shaping.values))
    assert point_identity(cfg)["plugins"] == {"relu-pkg": "2.1"}  # a new version: a new point
    assert point_identity(plain) == before
    # A group it declares shapes a point only off GPT-2's value.
    assert plugins.shaping({"qknorm": "off"}) == []
    owner = Plugin("qk-pkg", "1.0", "qk_pkg", ("qknorm",), (("qknorm", "off"), ("qknorm", "on")))
    monkeypatch.setitem(DECLARED.plugins, "qk_pkg", owner)
    assert plugins.shaping({"qknorm": "on"}) == [owner] and plugins.shaping({"qknorm": "off"}) == []


def test_an_uninstalled_copy_works_through_plugins(tmp_path):
    # The example plugin's package, copied beside the user; no install, named on the command line.
    shutil.copytree(EXAMPLE / "src" / "blockbench_relu2_softcap", tmp_path / "blockbench_relu2_softcap")
    proc = subprocess.run([sys.executable, "-m", "ablations.commands", "run", "--help",
                           "plugins=[blockbench_relu2_softcap]"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**_env(), "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    lines = {ln.split()[0]: ln for ln in proc.stdout.splitlines() if ln.startswith("  ") and ln.split()}
    assert "relu2" in lines["ffn"] and "softcap" in lines and "on" in lines["softcap"]
    assert "llama2_relu2" in lines["modern"] or "llama2_relu2" in proc.stdout
    # Without it, neither is known: the plugin, not this process, provided them.
    assert "softcap" not in {choice.group for choice in choices()} and "relu2" not in choice_of("ffn").values


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", plugins.ENV)}


def test_blockbench_list_names_every_sweep_choice_and_value_a_plugins_included(tmp_path):
    from ablations.config.generated_sweeps import sweep_lines
    from ablations.tools.catalog import catalog_lines

    listed = {tuple(line.split()[:2]) for line in catalog_lines()}
    assert {("sweep", name) for name in sweep_lines()} <= listed
    for declared in choices():
        assert ("choice", declared.group) in listed
        assert {("value", f"{declared.group}={v}") for v in declared.values} <= listed
    shutil.copytree(EXAMPLE / "src" / "blockbench_relu2_softcap", tmp_path / "blockbench_relu2_softcap")
    proc = subprocess.run([sys.executable, "-m", "ablations.commands", "list", "plugins=[blockbench_relu2_softcap]"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**_env(), "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    names = {line.split()[1] for line in proc.stdout.splitlines()}
    assert {"ffn=relu2", "softcap", "softcap=on"} <= names
