"""The hooks a plugin's choice plugs into (``blockbench.HOOKS``), each exercised by a test choice here:
``qkv`` (Primer's depthwise convolutions on Q, K and V), ``scores`` (a transform of the attention scores),
``branch`` (a module on each branch's output before the residual add), ``block`` (how the branches join the
residual, of which a point takes one: OLMo 2's norms after the branches, against transformers' layer), ``init``
(DeepNet's β), an ``attn`` value that alternates local and global layers (Gemma 2), and on the language model
``embedding`` (Gemma's √d scale) and ``logits`` (Gemma-2's final soft cap). Each is free when unused: a
declared choice at a value that builds nothing leaves the model's modules, its init draws, its outputs and
attention's fused SDPA path exactly as a model built without the choice."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import components.attention as attention
import components.kernels as kernels
from blockbench import Registry, Step, Work
from components import ArchConfig, ConfigError, ModelConfig, build_decoder, build_lm
from components.norms import RMSNorm
from components.parallel import BlockConfig, ParallelResidual
from tests.temporary_choice import ExtraConfig, kept, temporary_choice

TOL = dict(atol=1e-6, rtol=1e-6)


class HalfScores(nn.Module):
    """Halves the scores: the same as halving Q, which the fused path computes independently."""

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        return Work()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return 0.5 * scores


class PostNorm(RMSNorm):
    """Gemma-2's sandwich norm on a branch's output (``post_attention_layernorm``, ``post_feedforward_layernorm``)."""

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__(arch.model.d_model)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        return Work(weights=arch.model.d_model)


class PrimerDConv(nn.Module):
    """Primer's multi-dconv-head attention (So et al. 2021, §3.1): after the projections, a causal depthwise
    convolution of width 3 over the sequence on every channel of each head's Q, K and V. It mixes positions, so it
    sees only the step's own: a decode would need the step's last two inputs kept (not done here)."""

    WIDTH = 3

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        h, kv, d = arch.model.n_heads, arch.n_kv_heads, arch.head_dim
        self.wq, self.wk, self.wv = (nn.Parameter(torch.zeros(self.WIDTH, n, 1, d)) for n in (h, kv, kv))

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        channels = (arch.model.n_heads + 2 * arch.n_kv_heads) * arch.head_dim
        return Work(linear_flops=2 * cls.WIDTH * channels * step.tokens, weights=cls.WIDTH * channels)

    @classmethod
    def conv(cls, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        padded = torch.nn.functional.pad(x, (0, 0, cls.WIDTH - 1, 0))  # zeros before the first position: causal
        t = x.shape[2]
        return sum(w[i] * padded[:, :, i:i + t] for i in range(cls.WIDTH))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.conv(q, self.wq), self.conv(k, self.wk), self.conv(v, self.wv)


def registry(on: type) -> Registry:
    reg: Registry = Registry("extra.name")
    reg.add("off", None)
    reg.add("on", on)
    return reg


def tiny(pos: str = "learned", attn: str = "mha", kv: int | None = None, **groups: object) -> ArchConfig:
    base = ArchConfig(model=ModelConfig(d_model=32, n_layers=2, n_heads=4, max_seq_len=32))
    return base.replace(pos=base.pos.__class__(pos), attn=base.attn.__class__(attn, kv), **groups).validate()


def built(arch: ArchConfig, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return build_decoder(arch)


class DeepNetBeta:
    """DeepNet's initialisation (Wang et al. 2022, §3 and Figure 2, decoder-only): the FFN's, V's and the output
    projection's weights scaled by β = (8N)^(-1/4), N layers; Q's and K's left as drawn."""

    SCALED = ("ffn.up.weight", "ffn.down.weight", "ffn.gate.weight", "attn.v.weight", "attn.out.weight")

    def __init__(self, arch: ArchConfig) -> None:
        self.beta = (8 * arch.model.n_layers) ** -0.25

    def __call__(self, name: str, parameter: torch.Tensor) -> None:
        if name.endswith(self.SCALED):
            parameter.mul_(self.beta)


@pytest.mark.parametrize("hook,cls", [("scores", HalfScores), ("branch", PostNorm), ("qkv", PrimerDConv),
                                      ("init", DeepNetBeta)])
@pytest.mark.parametrize("pos", ["learned", "alibi"])
def test_an_unused_hook_is_free(hook, cls, pos, monkeypatch):
    before = built(tiny(pos))
    x = torch.randn(2, 7, 32)
    with temporary_choice(hook=hook, registry=registry(cls)):
        after = built(tiny(pos, extra=ExtraConfig("off")))
        # The same modules and init draws (every parameter, from the same seed), and the fused path untouched.
        assert [n for n, _ in after.named_modules()] == [n for n, _ in before.named_modules()]
        assert before.state_dict().keys() == after.state_dict().keys()
        assert all(torch.equal(before.state_dict()[k], after.state_dict()[k]) for k in before.state_dict())
        assert type(after.blocks[0]).forward is type(before.blocks[0]).forward
        assert "forward" not in vars(after.blocks[0])  # the class's forward: no branch wrapper on the way

        def explicit(*args: object, **kwargs: object) -> None:
            raise AssertionError("an unused scores hook must keep attention's fused paths")

        monkeypatch.setattr(kernels, "transformed_attention", explicit)
        torch.testing.assert_close(after(x), before(x), atol=0, rtol=0)


@pytest.mark.parametrize("pos,attn,kv", [("learned", "mha", None), ("rope", "gqa", 2), ("alibi", "gqa", 2)])
def test_a_scores_transform_applies_before_the_mask_and_bias(pos, attn, kv):
    # Halving the scores is halving Q: the reference is the fused path with Q's projection halved.
    plain = built(tiny(pos, attn, kv))
    x = torch.randn(2, 9, 32)
    with temporary_choice(hook="scores", registry=registry(HalfScores)):
        halved = built(tiny(pos, attn, kv, extra=ExtraConfig("on")))
        assert isinstance(halved.blocks[0].attn.scores[0], HalfScores)
        assert halved.state_dict().keys() == plain.state_dict().keys()  # a transform without parameters
        with torch.no_grad():
            for block in plain.blocks:
                block.attn.q.weight.mul_(0.5)
                block.attn.q.bias.mul_(0.5)
        torch.testing.assert_close(halved(x), plain(x), **TOL)
        # Through the KV cache, a prefill then one token at a time: the same rows.
        cache = halved.new_cache(2, 9)
        rows = [halved(x[:, :4], cache), *(halved(x[:, i:i + 1], cache) for i in range(4, 9))]
        torch.testing.assert_close(torch.cat(rows, dim=1), plain(x), **TOL)


def test_a_branch_module_wraps_each_branch_output_before_the_residual_add():
    arch = tiny()
    plain = built(arch)
    with temporary_choice(hook="branch", registry=registry(PostNorm)):
        post = built(tiny(extra=ExtraConfig("on")))
        shared = {k: v for k, v in post.state_dict().items() if k in plain.state_dict()}
        # Registered after the FFN: every module the block had keeps its init draws.
        assert all(torch.equal(v, plain.state_dict()[k]) for k, v in shared.items())
        assert set(post.state_dict()) - set(plain.state_dict()) == {
            f"blocks.{i}.{b}_out.0.weight" for i in range(2) for b in ("attn", "ffn")}
        block = post.blocks[0]
        assert "forward" not in vars(block)  # the class's one forward, which branches on the hook
        with torch.no_grad():
            block.attn_out[0].weight.uniform_(0.5, 1.5)  # not ones, so a swapped branch would be caught
            block.ffn_out[0].weight.uniform_(0.5, 1.5)
        x = torch.randn(2, 6, 32) * 3

        def rms(y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:  # written out; RMSNorm's eps, 1e-5
            return y / torch.sqrt(y.pow(2).mean(-1, keepdim=True) + 1e-5) * w

        h = x + rms(block.attn(block.norm1(x)), block.attn_out[0].weight)
        want = h + rms(block.ffn(block.norm2(h)), block.ffn_out[0].weight)
        torch.testing.assert_close(block(x), want, **TOL)
        # Under the parallel residual too: the hook is the block's, not one residual's.
        par = tiny(extra=ExtraConfig("on"), block=BlockConfig("parallel"))
        pblock = built(par).blocks[0]
        h = pblock.norm1(x)
        want = x + pblock.attn_out[0](pblock.attn(h)) + pblock.ffn_out[0](pblock.ffn(h))
        torch.testing.assert_close(pblock(x), want, **TOL)
        # Its work: two norms' weights a block.
        from components import Block

        step = Step(1, 4, 4)
        on, off = (Block.work(tiny(extra=ExtraConfig(v)), step).weights for v in ("on", "off"))
        assert on - off == 2 * 32


def test_a_branch_module_may_take_one_branch_only():
    class AfterAttention(PostNorm):
        """NormFormer's post-attention norm: attention's output only."""

        branches = ("attn",)

    with temporary_choice(hook="branch", registry=registry(AfterAttention)):
        block = built(tiny(extra=ExtraConfig("on"))).blocks[0]
        assert len(block.attn_out) == 1 and len(block.ffn_out) == 0
        x = torch.randn(2, 5, 32)
        h = x + block.attn_out[0](block.attn(block.norm1(x)))
        torch.testing.assert_close(block(x), h + block.ffn(block.norm2(h)), **TOL)


def test_two_residual_classes_are_refused_with_one_line():
    class Scaled(ParallelResidual):
        """A second residual join (DeepNet's scaled residual would be one)."""

    with temporary_choice(hook="block", registry=registry(Scaled)):
        tiny(extra=ExtraConfig("on"))  # alone, it is the block's join
        with pytest.raises(ConfigError) as info:
            tiny(extra=ExtraConfig("on"), block=BlockConfig("parallel"))
    message = str(info.value)
    assert "\n" not in message and "block=parallel and extra=on" in message and "extra=off" in message


class EmbedScale(nn.Module):
    """Gemma's token-embedding scale: the embeddings times √d before the first block."""

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        self.scale = arch.model.d_model ** 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class FinalSoftCap(nn.Module):
    """Gemma-2's final logit soft cap, ``final_logit_softcapping`` 30: ``30 · tanh(logits / 30)``."""

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return 30.0 * torch.tanh(logits / 30.0)


@pytest.mark.parametrize("hook,cls", [("embedding", EmbedScale), ("logits", FinalSoftCap)])
def test_an_unused_model_hook_is_free(hook, cls):
    torch.manual_seed(0)
    before = build_lm(tiny())
    tokens = torch.randint(0, tiny().model.vocab_size, (2, 7))
    with temporary_choice(hook=hook, registry=registry(cls)):
        torch.manual_seed(0)
        after = build_lm(tiny(extra=ExtraConfig("off")))
        assert [n for n, _ in after.named_modules()] == [n for n, _ in before.named_modules()]
        assert all(torch.equal(v, after.state_dict()[k]) for k, v in before.state_dict().items())
        assert "forward" not in vars(after)  # the class's forward
        assert torch.equal(after(tokens), before(tokens))


def test_the_model_hooks_scale_the_embeddings_and_cap_the_logits_as_written_out():
    tokens = torch.randint(0, tiny().model.vocab_size, (2, 7))
    with temporary_choice(hook="embedding", registry=registry(EmbedScale)), \
            temporary_choice(group="extra2", hook="logits", registry=registry(FinalSoftCap)) :
        arch = tiny(extra=ExtraConfig("on"), extra2=ExtraConfig("on"))
        torch.manual_seed(0)
        model = build_lm(arch).double()
        assert "forward" not in vars(model)  # the class's one forward, which branches on the hooks
        # Written out from the model's own modules: embed, times √d, the decoder, the head, 30 · tanh(· / 30).
        hidden = model.decoder(model.embed(tokens) * 32 ** 0.5)
        expected = 30.0 * torch.tanh(model.head(hidden) / 30.0)
        torch.testing.assert_close(model(tokens), expected, atol=1e-12, rtol=1e-12)
        assert [type(m) for m in (*model.embed_out, *model.logits_out)] == [EmbedScale, FinalSoftCap]


def test_a_qkv_transform_convolves_q_k_and_v_as_written_out():
    with temporary_choice(hook="qkv", registry=registry(PrimerDConv)):
        arch = tiny("rope", "gqa", 2, extra=ExtraConfig("off"))
        on = tiny("rope", "gqa", 2, extra=ExtraConfig("on"))
        attn = built(on).blocks[0].attn.double()
        with torch.no_grad():
            for w in (attn.qkv[0].wq, attn.qkv[0].wk, attn.qkv[0].wv):
                w.normal_()
        x = torch.randn(2, 7, 32, dtype=torch.float64)
        # Written out in float64: each channel at position i is w[2]·x[i] + w[1]·x[i-1] + w[0]·x[i-2], zero before 0.
        def conv(y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            out = torch.zeros_like(y)
            for i in range(y.shape[2]):
                for lag in range(3):
                    if i - lag >= 0:
                        out[:, :, i] += w[2 - lag, :, 0] * y[:, :, i - lag]
            return out

        def heads(y: torch.Tensor, n: int) -> torch.Tensor:
            return y.view(2, 7, n, 8).transpose(1, 2)

        q, k, v = heads(attn.q(x), 4), heads(attn.k(x), 2), heads(attn.v(x), 2)
        q, k, v = conv(q, attn.qkv[0].wq), conv(k, attn.qkv[0].wk), conv(v, attn.qkv[0].wv)
        k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
        weights = torch.softmax((q @ k.transpose(-2, -1)) / 8 ** 0.5
                                + torch.full((7, 7), float("-inf"), dtype=x.dtype).triu(1), dim=-1)
        want = attn.out((weights @ v).transpose(1, 2).reshape(2, 7, 32))
        torch.testing.assert_close(attn(x), want, atol=1e-12, rtol=1e-12)
        # Its work and parameters are the block's, beside attention's own.
        from components import Block

        step = Step(2, 7, 7)
        extra = Block.work(on, step).flops - Block.work(arch, step).flops
        assert extra == PrimerDConv.work(on, step).flops == 2 * 3 * (4 + 2 + 2) * 8 * 14
        with pytest.raises(ConfigError) as info:
            tiny(attn="mla", extra=ExtraConfig("on"))
    assert "\n" not in str(info.value) and "extra=on is not supported with attn=mla" in str(info.value)


def test_an_init_choice_adjusts_the_draws_it_names_also_under_common_random_init():
    from components import common_random_init

    plain = build_lm(tiny())
    common_random_init(plain, 3)
    with temporary_choice(hook="init", registry=registry(DeepNetBeta)):
        deep = build_lm(tiny(extra=ExtraConfig("on")))
        common_random_init(deep, 3)
    beta = 16 ** -0.25
    for name, p in plain.state_dict().items():
        scaled = name.endswith(DeepNetBeta.SCALED)
        torch.testing.assert_close(deep.state_dict()[name], p * beta if scaled else p, atol=0, rtol=0)
    assert sum(name.endswith(DeepNetBeta.SCALED) for name in plain.state_dict()) == 2 * 4  # no gate in GELU's FFN


class Olmo2Residual:
    """OLMo 2's block (Team OLMo 2024, "2 OLMo 2 Furious", §3.2; HF ``Olmo2DecoderLayer``): no norm before either
    branch, each branch's output normed before it is added: ``h = x + norm1(attn(x))``, ``h + norm2(ffn(h))``."""

    @staticmethod
    def norms(arch: ArchConfig) -> int:
        return 2

    @staticmethod
    def forward(block: nn.Module, x: torch.Tensor, attend, feed) -> torch.Tensor:
        h = x + block.norm1(attend(x))
        return h + block.norm2(feed(h))

    @staticmethod
    def work(arch: ArchConfig, step: Step) -> Work:
        return Work()


def test_a_residual_may_put_its_norms_after_the_branches_as_olmo2_does():
    transformers = pytest.importorskip("transformers")
    from transformers.models.olmo2.modeling_olmo2 import Olmo2DecoderLayer

    with temporary_choice(hook="block", registry=registry(Olmo2Residual)):
        arch = tiny("rope", norm=tiny().norm.__class__("rmsnorm"), extra=ExtraConfig("on"))
        block = built(arch).blocks[0].double()
        with torch.no_grad():
            block.norm1.weight.uniform_(0.5, 1.5)
            block.norm2.weight.uniform_(0.5, 1.5)
    hf_config = transformers.Olmo2Config(hidden_size=32, intermediate_size=128, num_attention_heads=4,
                                      num_key_value_heads=4, num_hidden_layers=2, rms_norm_eps=1e-5)
    layer = Olmo2DecoderLayer(hf_config, layer_idx=0).double()
    with torch.no_grad():
        layer.post_attention_layernorm.weight.copy_(block.norm1.weight)
        layer.post_feedforward_layernorm.weight.copy_(block.norm2.weight)

    class Ours(nn.Module):  # our branches in HF's places: what is compared is where the norms and adds go
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, hidden_states: torch.Tensor, *args: object, **kwargs: object):
            return self.inner(hidden_states), None

    layer.self_attn, layer.mlp = Ours(block.attn), block.ffn
    x = torch.randn(2, 6, 32, dtype=torch.float64)
    got = layer(x, position_embeddings=None, attention_mask=None)
    got = got[0] if isinstance(got, tuple) else got
    # HF's RMSNorm computes in float32 whatever the input's precision: float32's tolerance, not float64's.
    torch.testing.assert_close(block(x), got, **TOL)


def test_a_residual_may_take_no_norm():
    class NoNorm(Olmo2Residual):
        @staticmethod
        def norms(arch: ArchConfig) -> int:
            return 0

        @staticmethod
        def forward(block: nn.Module, x: torch.Tensor, attend, feed) -> torch.Tensor:
            h = x + attend(x)
            return h + feed(h)

    with temporary_choice(hook="block", registry=registry(NoNorm)):
        block = built(tiny(extra=ExtraConfig("on"))).blocks[0]
    assert not hasattr(block, "norm1") and not hasattr(block, "norm2")
    x = torch.randn(2, 5, 32)
    h = x + block.attn(x)
    torch.testing.assert_close(block(x), h + block.ffn(h), **TOL)


def test_an_attention_value_may_alternate_local_and_global_layers_as_gemma2_does():
    class LocalGlobal(attention.CausalSelfAttention):
        """Gemma 2 (HF ``Gemma2Attention``: ``sliding_window`` on even layers): a window of 4 on layers 0, 2, ...,
        every key on the others; decodes with the full cache, which the global layers need."""

        def __init__(self, arch: ArchConfig, layer: int = 0) -> None:
            super().__init__(arch, layer)
            self.window = 4 if layer % 2 == 0 else None

        @classmethod
        def new_cache(cls, arch: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                      n_layers: int | None = None, **kw: object) -> attention.KVCache:
            return attention.KVCache.for_model(arch, batch_size, max_seq_len, n_layers, **kw)

    with kept():  # a value for this test, taken back after it
        attention.ATTENTIONS.add("local_global", LocalGlobal)
        alternating = built(tiny(attn="local_global"))
        local, full = built(tiny(attn="mha").replace(attn=attention.AttnConfig("mha", window=4)).validate()), \
            built(tiny(attn="mha"))
        assert alternating.state_dict().keys() == full.state_dict().keys()
        for model in (local, full):
            model.load_state_dict(alternating.state_dict())
        x = torch.randn(2, 11, 32)
        # Layer 0 windowed as the all-local model's, layer 1 over every key as the all-global model's.
        h0 = alternating.blocks[0](x, None, None, None)
        torch.testing.assert_close(h0, local.blocks[0](x, None, None, None), **TOL)
        torch.testing.assert_close(alternating.blocks[1](h0, None, None, None), full.blocks[1](h0, None, None, None),
                                   **TOL)
        cache = alternating.new_cache(2, 11)
        rows = [alternating(x[:, :5], cache), *(alternating(x[:, i:i + 1], cache) for i in range(5, 11))]
        torch.testing.assert_close(torch.cat(rows, dim=1), alternating(x), **TOL)


def test_the_plugin_guide_lists_every_hook_once_in_each_table():
    # The contracts' table is the one place each hook's contract is written; the hooks' table says what each serves.
    from pathlib import Path

    from blockbench import HOOKS

    text = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text()
    for section in ("## What each hook's class provides", "## The hooks"):
        rows = [line.split("`")[1] for line in text.split(section)[1].split("\n## ")[0].splitlines()
                if line.startswith("| `")]
        assert rows == list(HOOKS), section


def test_the_contracts_table_names_what_each_hook_calls():
    """Each method a hook's interface holds a class to (``components.choice.INTERFACES``, checked at registration)
    is in that hook's row of the contracts' table, and the rows that say *work* are the hooks that require it."""
    from pathlib import Path

    from components.choice import INTERFACES

    text = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text()
    section = text.split("## What each hook's class provides")[1].split("\n## ")[0]
    rows = {line.split("`")[1]: line for line in section.splitlines() if line.startswith("| `")}
    for hook, need in INTERFACES.items():
        named = [m for m in need.methods if m != "__call__"]
        assert all(f"`{m}(" in rows[hook] for m in named), (hook, named)
        assert need.work == ("*work*" in rows[hook] or "`work(" in rows[hook]), hook
