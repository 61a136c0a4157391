"""Every invalid architecture is refused with a ValueError that names the offending key."""

from __future__ import annotations

import pytest
import torch

from blockbench import choices
from components import AttnConfig, ConfigError, UnknownVariantError, build_decoder, build_lm, preset, registries
from components.qknorm import QKNormConfig


def test_error_types_are_value_errors():
    assert issubclass(ConfigError, ValueError)
    assert issubclass(UnknownVariantError, ValueError)


@pytest.mark.parametrize(
    "change,key",
    [
        (dict(d_model=30), "model.d_model"),
        (dict(n_heads=5), "model.d_model"),
        (dict(n_layers=0), "model.n_layers"),
        (dict(d_model=0), "model.d_model"),
        (dict(d_model=-32), "model.d_model"),
        (dict(n_heads=0), "model.n_heads"),
        (dict(max_seq_len=0), "model.max_seq_len"),
        (dict(vocab_size=-1), "model.vocab_size"),
    ],
)
def test_model_size_errors(make_arch, change, key):
    arch = make_arch()
    for k, v in change.items():
        setattr(arch.model, k, v)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        arch.validate()
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        build_lm(arch, device="meta")


@pytest.mark.parametrize("n_kv", [3, 0, -2, 8])
def test_gqa_kv_heads_must_divide_heads(make_arch, n_kv):
    with pytest.raises(ConfigError, match=r"attn\.n_kv_heads") as info:
        make_arch(attn="gqa", n_kv_heads=n_kv).validate()
    assert "[1, 2, 4]" in str(info.value)  # the allowed divisors of n_heads=4


def test_gqa_needs_kv_heads_and_mha_mqa_reject_contradictions(make_arch):
    with pytest.raises(ConfigError, match=r"attn\.n_kv_heads"):
        make_arch(attn="gqa", n_kv_heads=None).validate()
    with pytest.raises(ConfigError, match=r"attn\.n_kv_heads"):
        make_arch(attn="mha", n_kv_heads=2).validate()
    with pytest.raises(ConfigError, match=r"attn\.n_kv_heads"):
        make_arch(attn="mqa", n_kv_heads=2).validate()
    # The consistent spellings are accepted.
    make_arch(attn="mha", n_kv_heads=4).validate()
    make_arch(attn="mqa", n_kv_heads=1).validate()
    make_arch(attn="gqa", n_kv_heads=1).validate()


@pytest.mark.parametrize(
    "settings,message",
    [
        (dict(kv_lora_rank=0),
         r"attn\.kv_lora_rank=0 must be a positive integer \(the latent's width; DeepSeek-V2: 512\)"),
        (dict(kv_lora_rank=-8), r"attn\.kv_lora_rank=-8 must be a positive integer"),
        (dict(kv_lora_rank=2.5), r"attn\.kv_lora_rank=2\.5 must be a positive integer"),
        (dict(kv_lora_rank=True), r"attn\.kv_lora_rank=True must be a positive integer"),
        (dict(qk_rope_head_dim=0), r"attn\.qk_rope_head_dim=0 must be a positive integer"),
        (dict(qk_rope_head_dim=5), r"attn\.qk_rope_head_dim=5 must be even \(RoPE rotates pairs\)"),
        (dict(q_lora_rank=0), r"attn\.q_lora_rank=0 must be a positive integer \(.*or null"),
        (dict(n_kv_heads=2), r"attn\.n_kv_heads=2 contradicts attn=mla"),
        (dict(n_kv_heads=4), r"attn\.n_kv_heads=4 contradicts attn=mla"),
        (dict(window=8), r"attn\.window=8 is not supported with attn=mla"),
    ],
)
def test_mla_setting_errors(make_arch, settings, message):
    arch = make_arch()
    arch.attn = AttnConfig("mla", **settings)
    with pytest.raises(ConfigError, match=message):
        arch.validate()


def test_mla_refuses_qknorm_and_its_sizes_belong_to_mla(make_arch):
    arch = make_arch(attn="mla")
    arch.validate()
    arch.attn = AttnConfig("mla", kv_lora_rank=16, qk_rope_head_dim=2, q_lora_rank=8)
    arch.validate()  # every size set, each valid
    arch.qknorm = QKNormConfig("on")
    with pytest.raises(ConfigError, match=r"qknorm=on is not supported with attn=mla"):
        arch.validate()
    for name in ("mha", "mqa"):
        other = make_arch(attn=name)
        other.attn.q_lora_rank = 8
        with pytest.raises(ConfigError, match=rf"attn\.q_lora_rank=8 is an attn=mla setting; attn={name}"):
            other.validate()


def test_rope_needs_even_head_size(make_arch):
    arch = make_arch(pos="rope", d_model=12, n_heads=4)  # head size 3
    with pytest.raises(ConfigError, match=r"pos=rope") as info:
        arch.validate()
    assert "head" in str(info.value)
    make_arch(pos="learned", d_model=12, n_heads=4).validate()  # fine without RoPE


@pytest.mark.parametrize(
    "group,field,value,key",
    [
        ("pos", "layout", "diagonal", "pos.layout"),
        ("pos", "theta", 0.0, "pos.theta"),
        ("norm", "eps", 0.0, "norm.eps"),
        ("ffn", "hidden_dim", 0, "ffn.hidden_dim"),
        ("ffn", "multiple_of", 0, "ffn.multiple_of"),
        ("ffn", "multiplier", -1.0, "ffn.multiplier"),
    ],
)
def test_other_setting_errors(make_arch, group, field, value, key):
    arch = make_arch(pos="rope")
    setattr(getattr(arch, group), field, value)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        arch.validate()


# A name no value of any group will take (a real one, "alibi" once, became a value and the test a false alarm).
@pytest.mark.parametrize("group,bad,known",
                         [(choice.group, f"no-such-{choice.group}", choice.llama2) for choice in choices()])
def test_unknown_variant_lists_known_names(make_arch, group, bad, known):
    arch = make_arch()
    getattr(arch, group).name = bad
    with pytest.raises(UnknownVariantError, match=f"{group}\\.name") as info:
        arch.validate()
    message = str(info.value)
    assert bad in message
    for name in registries()[group].names():
        assert name in message
    assert known in message
    with pytest.raises(UnknownVariantError, match="rmsnorm"):
        registries()["norm"].get("rmsnrm")


def test_unknown_preset_lists_known_ones():
    with pytest.raises(ValueError, match="preset") as info:
        preset("gpt3")
    assert "gpt2" in str(info.value) and "llama2-7b" in str(info.value)


@pytest.mark.parametrize("pos", ["learned", "rope", "none"])
def test_sequence_longer_than_max_seq_len_is_refused_at_forward(make_arch, pos):
    arch = make_arch(pos=pos, max_seq_len=8)
    lm = build_lm(arch)
    lm(torch.zeros(1, 8, dtype=torch.long))  # exactly max_seq_len is fine
    with pytest.raises(ConfigError, match=r"model\.max_seq_len"):
        lm(torch.zeros(1, 9, dtype=torch.long))
    # ...also when the overflow comes from the cache offset.
    cache = lm.new_cache(batch_size=1)
    lm(torch.zeros(1, 6, dtype=torch.long), cache)
    with pytest.raises(ConfigError, match=r"model\.max_seq_len"):
        lm(torch.zeros(1, 3, dtype=torch.long), cache)


def test_decoder_validates_on_construction(make_arch):
    arch = make_arch()
    arch.model.d_model = 30
    with pytest.raises(ConfigError, match=r"model\.d_model"):
        build_decoder(arch)


@pytest.mark.parametrize("window", [0, -3, True, 2.5, "8"])
def test_window_must_be_a_positive_integer_or_null(make_arch, window):
    arch = make_arch(pos="rope")
    arch.attn.window = window
    with pytest.raises(ConfigError, match=r"attn\.window=.* must be a positive integer .* or null") as info:
        arch.validate()
    assert str(info.value).count("\n") == 0
    arch.attn.window = None
    arch.validate()


@pytest.mark.parametrize("window", [64, 65, 1000])
def test_window_must_slide_within_a_learned_position_table(make_arch, window):
    arch = make_arch(pos="learned", max_seq_len=64)
    arch.attn.window = window
    with pytest.raises(ConfigError, match=r"attn\.window.*pos=learned.*model\.max_seq_len=64") as info:
        arch.validate()
    assert "1..63" in str(info.value)
    with pytest.raises(ConfigError, match=r"model\.max_seq_len"):
        build_lm(arch, device="meta")
    arch.attn.window = 63
    arch.validate()
    # Unbounded positions may be built longer than trained, so there any window is allowed.
    for pos in ("rope", "alibi", "none"):
        other = make_arch(pos=pos, max_seq_len=64)
        other.attn.window = window
        other.validate()
