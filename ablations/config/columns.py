"""How each declared choice is written to a result row, read back from one, and named in labels and tables.

A results table is the harness's, so how a row spells a choice lives here, not beside the components (which say
what a choice is: ``Choice.has``, ``Choice.sized``). A group with no entry in ``FORMATS`` takes the default: its
value in a column of its own name (``norm: rmsnorm``), read back as that value (GPT-2's where a row predates the
group), shown as written, and named in a variant's label by ``Choice.value_name``. The entries below are the groups
whose row or label says more: RoPE's layout, the biases as a bool, attention's KV heads, window and MLA sizes, the
parallel block's norms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from blockbench import Choice, choices
from components import ArchConfig
from components.attention import AttnConfig, attention_kind, mla_sizes
from components.bias import BiasConfig
from components.parallel import BlockConfig
from components.positions import PosConfig


@dataclass(frozen=True)
class RowFormat:
    """One group's way into and out of a result row; a field left None takes the default."""

    # The row's columns for the group (default: ``{group: value}``).
    to_row: Callable[[ArchConfig], dict[str, Any]] | None = None
    # The group's config read back from a row that has its column (default: the value, other settings at defaults).
    from_row: Callable[[Mapping[str, Any]], Any] | None = None
    # The report's "what each variant is" cell (default: the column as written).
    show: Callable[[Mapping[str, Any]], str] | None = None
    # What a variant's label calls the group's setting in an architecture (default: ``Choice.value_name``).
    label: Callable[[ArchConfig], str] | None = None


FORMATS: dict[str, RowFormat] = {}


def _format(choice: Choice) -> RowFormat:
    return FORMATS.get(choice.group, RowFormat())


def _empty(value: object) -> bool:
    """An empty cell: None, or NaN as a table reads it back."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def name_in(choice: Choice, arch: ArchConfig) -> str:
    """What a variant label calls ``choice``'s setting in ``arch`` (``rmsnorm``, ``gqa2``, ``mha-w4096``)."""
    label = _format(choice).label
    return label(arch) if label is not None else choice.value_name(getattr(arch, choice.group).name)


def row_values(choice: Choice, arch: ArchConfig) -> dict[str, Any]:
    """``choice``'s columns of a result row for ``arch``."""
    to_row = _format(choice).to_row
    return to_row(arch) if to_row is not None else {choice.group: getattr(arch, choice.group).name}


def config_from_row(choice: Choice, row: Mapping[str, Any]) -> Any:
    """The config of ``choice`` a result row describes; the value's other settings at their defaults, GPT-2's value
    where the row predates the group."""
    value = row.get(choice.group)
    if _empty(value):
        return choice.config()
    from_row = _format(choice).from_row
    return from_row(row) if from_row is not None else choice.config(name=str(value))


def cell(choice: Choice, row: Mapping[str, Any]) -> str:
    """``choice`` in a result row, as the report's variants table shows it (GPT-2's value if absent)."""
    show = _format(choice).show
    if show is not None:
        try:
            return show(row)
        except (KeyError, TypeError, ValueError):  # a row without the columns it reads predates the choice
            return choice.gpt2
    value = row.get(choice.group)
    return choice.gpt2 if _empty(value) else str(value)


def row_columns() -> list[str]:
    """The result columns the declared choices write, in declaration order."""
    base = ArchConfig()
    return [col for choice in choices() for col in row_values(choice, base)]


# --- pos: RoPE's column names its layout (``rope-half``, ``rope-interleaved``): the two differ in Q/K layout ---------

def _pos_row(arch: ArchConfig) -> dict[str, str]:
    p = arch.pos
    return {"pos": f"rope-{p.layout}" if p.name == "rope" else p.name}


def _pos_from_row(row: Mapping[str, object]) -> PosConfig:
    name, _, layout = str(row["pos"]).partition("-")
    return PosConfig(name, layout=layout) if layout else PosConfig(name)


# --- bias: a bool column -----------------------------------------------------------------------------------------

def _bias_from_row(row: Mapping[str, object]) -> BiasConfig:
    value = row["bias"]
    on = value if isinstance(value, bool) else str(value).lower() in ("true", "1", "on")
    return BiasConfig("on" if on else "off")


# --- attn: KV heads, the window and MLA's sizes ------------------------------------------------------------------

def _int_or_none(value: object) -> int | None:
    """A row cell as an int: None for an empty cell."""
    return None if _empty(value) else int(value)


def _attn_label(arch: ArchConfig) -> str:
    """The kind, and ``-w<window>`` when a window is set (so a point without one keeps the label it always had)."""
    window = arch.attn.window
    return attention_kind(arch) + (f"-w{window}" if window is not None else "")


# The row columns beyond ``attn`` and ``n_kv_heads``: the same for every row (empty where they do not apply).
_ROW_SIZES = ("kv_lora_rank", "qk_rope_head_dim", "q_lora_rank")


def _attn_row(arch: ArchConfig) -> dict[str, object]:
    """``attn``, ``n_kv_heads``, ``window`` (None: none), and MLA's sizes as built (None for other attention)."""
    a = arch.attn
    row: dict[str, object] = {"attn": a.name, "n_kv_heads": arch.n_kv_heads, "window": a.window,
                              **dict.fromkeys(_ROW_SIZES)}
    if a.name == "mla":
        s = mla_sizes(a, arch.head_dim)
        row.update(kv_lora_rank=s.kv_lora_rank, qk_rope_head_dim=s.rope_dim, q_lora_rank=s.q_lora_rank)
    return row


def _attn_from_row(row: Mapping[str, object]) -> AttnConfig:
    """By KV heads: a row's ``gqa`` at every head's own KV head is MHA (the kernels and bytes are MHA's); MLA by its
    name, with its sizes (null where they are the defaults at the row's head size, as a default point was
    configured). A row without either column (no ``window``, no MLA sizes) has no window."""
    window = _int_or_none(row.get("window"))
    if str(row.get("attn")) == "mla":
        sizes = {k: _int_or_none(row.get(k)) for k in _ROW_SIZES}
        if row.get("d_model") is not None and row.get("n_heads") is not None:
            default = mla_sizes(AttnConfig("mla"), int(row["d_model"]) // int(row["n_heads"]))
            for key, value in (("kv_lora_rank", default.kv_lora_rank), ("qk_rope_head_dim", default.rope_dim)):
                if sizes[key] == value:
                    sizes[key] = None
        return AttnConfig("mla", window=window, **sizes)
    heads, kv = int(row["n_heads"]), int(row["n_kv_heads"])
    if kv >= heads:
        return AttnConfig("mha", window=window)
    return AttnConfig("mqa", window=window) if str(row.get("attn")) == "mqa" else AttnConfig("gqa", kv, window=window)


def _attn_show(row: Mapping[str, object]) -> str:
    """``2 / 8`` (KV heads / query heads); MLA's cached widths, ``latent 256+32`` (and ``q 96`` when the query is
    compressed); ``, window 4096`` when windowed."""
    if str(row.get("attn")) == "mla":
        cell = f"latent {int(row['kv_lora_rank'])}+{int(row['qk_rope_head_dim'])}"
        q = _int_or_none(row.get("q_lora_rank"))
        cell += f", q {q}" if q is not None else ""
    else:
        cell = f"{int(row['n_kv_heads'])} / {int(row['n_heads'])}"
    window = _int_or_none(row.get("window"))
    return cell + (f", window {window}" if window is not None else "")


# --- block: the parallel block with a norm per branch is its own form --------------------------------------------

def _block_form(arch: ArchConfig) -> str:
    """``sequential``, ``parallel`` (one shared norm, GPT-J) or ``parallel-2norm`` (GPT-NeoX)."""
    b = arch.block
    return b.name if b.name != "parallel" or b.shared_norm else "parallel-2norm"


def _block_from_row(row: Mapping[str, object]) -> BlockConfig:
    form = str(row["block"])
    return BlockConfig("parallel", shared_norm=False) if form == "parallel-2norm" else BlockConfig(form)


FORMATS.update(
    pos=RowFormat(to_row=_pos_row, from_row=_pos_from_row),
    bias=RowFormat(to_row=lambda arch: {"bias": arch.bias.enabled}, from_row=_bias_from_row,
                   show=lambda row: _bias_from_row(row).name),
    attn=RowFormat(to_row=_attn_row, from_row=_attn_from_row, show=_attn_show, label=_attn_label),
    block=RowFormat(to_row=lambda arch: {"block": _block_form(arch)}, from_row=_block_from_row, label=_block_form),
)
