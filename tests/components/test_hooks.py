"""The hooks a plugin's choice plugs into (``components.choice.HOOKS``), each exercised by a test choice here:
``scores`` (a transform of the attention scores), ``branch`` (a module on each branch's output before the residual
add), ``block`` (how the branches join the residual, of which a point takes one), and on the language model
``embedding`` (Gemma's √d scale) and ``logits`` (Gemma-2's final soft cap). Each is free when unused: a
declared choice at a value that builds nothing leaves the model's modules, its init draws, its outputs and
attention's fused SDPA path exactly as a model built without the choice."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import components.attention as attention
from components import ArchConfig, ConfigError, ModelConfig, build_decoder, build_lm
from components.norms import RMSNorm
from components.parallel import BlockConfig, ParallelResidual
from components.registry import Registry
from components.work import Step, Work
from tests.temporary_choice import ExtraConfig, temporary_choice

TOL = dict(atol=1e-6, rtol=1e-6)


class HalfScores(nn.Module):
    """Halves the scores: the same as halving Q, which the fused path computes independently."""

    def __init__(self, cfg: ArchConfig) -> None:
        super().__init__()

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        return Work()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return 0.5 * scores


class PostNorm(RMSNorm):
    """Gemma-2's sandwich norm on a branch's output (``post_attention_layernorm``, ``post_feedforward_layernorm``)."""

    def __init__(self, cfg: ArchConfig) -> None:
        super().__init__(cfg.model.d_model)

    @classmethod
    def work(cls, cfg: ArchConfig, step: Step) -> Work:
        return Work(weights=cfg.model.d_model)


def registry(on: type) -> Registry:
    reg: Registry = Registry("extra.name")
    reg.add("off", None)
    reg.add("on", on)
    return reg


def tiny(pos: str = "learned", attn: str = "mha", kv: int | None = None, **groups: object) -> ArchConfig:
    base = ArchConfig(model=ModelConfig(d_model=32, n_layers=2, n_heads=4, max_seq_len=32))
    return base.replace(pos=base.pos.__class__(pos), attn=base.attn.__class__(attn, kv), **groups).validate()


def built(cfg: ArchConfig, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return build_decoder(cfg)


@pytest.mark.parametrize("hook,cls", [("scores", HalfScores), ("branch", PostNorm)])
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

        monkeypatch.setattr(attention, "transformed_attention", explicit)
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
    cfg = tiny()
    plain = built(cfg)
    with temporary_choice(hook="branch", registry=registry(PostNorm)):
        post = built(tiny(extra=ExtraConfig("on")))
        shared = {k: v for k, v in post.state_dict().items() if k in plain.state_dict()}
        # Registered after the FFN: every module the block had keeps its init draws.
        assert all(torch.equal(v, plain.state_dict()[k]) for k, v in shared.items())
        assert set(post.state_dict()) - set(plain.state_dict()) == {
            f"blocks.{i}.{b}_out.0.weight" for i in range(2) for b in ("attn", "ffn")}
        block = post.blocks[0]
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

    def __init__(self, cfg: ArchConfig) -> None:
        super().__init__()
        self.scale = cfg.model.d_model ** 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class FinalSoftCap(nn.Module):
    """Gemma-2's final logit soft cap, ``final_logit_softcapping`` 30: ``30 · tanh(logits / 30)``."""

    def __init__(self, cfg: ArchConfig) -> None:
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
        cfg = tiny(extra=ExtraConfig("on"), extra2=ExtraConfig("on"))
        torch.manual_seed(0)
        model = build_lm(cfg).double()
        # Written out from the model's own modules: embed, times √d, the decoder, the head, 30 · tanh(· / 30).
        hidden = model.decoder(model.embed(tokens) * 32 ** 0.5)
        expected = 30.0 * torch.tanh(model.head(hidden) / 30.0)
        torch.testing.assert_close(model(tokens), expected, atol=1e-12, rtol=1e-12)
        assert [type(m) for m in (*model.embed_out, *model.logits_out)] == [EmbedScale, FinalSoftCap]
