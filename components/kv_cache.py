"""What attention keeps per token while it decodes: K and V of every position (``KVCache``), or of the last
``window`` only (``RollingKVCache``, for a sliding window), or MLA's latent (``LatentCache``)."""

from __future__ import annotations

import copy

import torch

from components.config import ArchConfig


class KVCache:
    """Preallocated K/V for every layer, sized by n_kv_heads: (layers, batch, n_kv_heads, max_len, head_dim).

    ``pos`` is the number of positions filled. Layers write at ``pos`` during a forward; the model
    advances ``pos`` once all layers ran. Setting ``pos`` back rewinds the cache (used to time one
    decode step repeatedly at a fixed context).
    """

    def __init__(self, n_layers: int, batch_size: int, n_kv_heads: int, max_seq_len: int, head_dim: int,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        shape = (n_layers, batch_size, n_kv_heads, max_seq_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.max_seq_len = max_seq_len
        self.pos = 0

    @classmethod
    def for_model(cls, arch: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                  n_layers: int | None = None, **kw: object) -> KVCache:
        return cls(n_layers or arch.model.n_layers, batch_size, arch.n_kv_heads, max_seq_len or arch.model.max_seq_len,
                   arch.head_dim, **kw)

    def tensors(self) -> list[torch.Tensor]:
        return [self.k, self.v]

    def randomize_(self) -> None:
        """Random contents: decode cost does not depend on the cached values, so timing needs no prefill."""
        for t in self.tensors():
            t.normal_()

    @property
    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def bytes_per_token(self) -> int:
        """K and V bytes one stored position takes over all layers and the whole batch: what a token adds while
        the cache has room for it."""
        return self.nbytes // self.k.shape[3]

    def clone(self) -> KVCache:
        """The same contents and position in newly allocated memory."""
        other = copy.copy(self)
        other.k, other.v = self.k.clone(), self.v.clone()
        return other

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's K/V at ``pos`` and return the keys and values its queries may see for ``layer``: here
        views of every position cached so far, 0..pos + t - 1, in position order."""
        end = self._end(k.shape[2])
        self.k[layer, :, :, self.pos : end] = k
        self.v[layer, :, :, self.pos : end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def keys_rolled(self, t: int, s: int) -> int:
        """How many places the ``s`` keys ``update`` returned for a step of ``t`` tokens are rolled from position
        order (key i holds the i-th key in position order rolled right by this much): never, here."""
        return 0

    def _end(self, t: int) -> int:
        end = self.pos + t
        if end > self.max_seq_len:
            raise ValueError(f"KV cache holds {self.max_seq_len} positions; position {end - 1} does not fit")
        return end


class RollingKVCache(KVCache):
    """Mistral's rolling buffer: K/V of only the last ``window`` positions, for sliding-window attention.

    No query sees a key more than ``window - 1`` positions before it, so nothing older is ever read again. Storage
    is (layers, batch, n_kv_heads, slots, head_dim) with ``slots = min(window, max_seq_len)``, however long the
    context: ``max_seq_len`` only bounds ``pos`` (positions keep counting), and position p lives in slot p % slots.

    A single-token step (decode) writes its K/V into its slot and attends over the filled slots as they lie, with
    no copy. Slot order does not matter: RoPE was applied to each key before it was cached, so a key carries its
    position in its values, and softmax(scores) V is a sum over keys, the same in any order of them. Only a score
    bias that depends on key positions (ALiBi) must follow the slots, which ``keys_rolled`` tells the attention.

    A chunk of t > 1 tokens needs the window mask on true positions, so ``update`` gathers the cached tail its
    first query sees (the last window - 1 positions, in position order: a copy), appends the new keys, and writes
    the last ``slots`` new ones back.

    Rewinding ``pos`` by one token and decoding it again is exact (the timing code does this at a fixed context):
    the step rewrites the one slot it wrote. Rewinding r > 1 tokens gives a step of the same cost, but the r - 1
    oldest keys of its window were overwritten by later positions. Rewinding to 0 (a prefill again) is exact.
    """

    def __init__(self, n_layers: int, batch_size: int, n_kv_heads: int, max_seq_len: int, head_dim: int, window: int,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        self.window = window
        self.slots = min(window, max_seq_len)
        super().__init__(n_layers, batch_size, n_kv_heads, self.slots, head_dim, dtype, device)
        self.max_seq_len = max_seq_len

    @classmethod
    def for_model(cls, arch: ArchConfig, batch_size: int, max_seq_len: int | None = None,
                  n_layers: int | None = None, **kw: object) -> RollingKVCache:
        return cls(n_layers or arch.model.n_layers, batch_size, arch.n_kv_heads, max_seq_len or arch.model.max_seq_len,
                   arch.head_dim, arch.attn.window, **kw)

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's K/V into its slots and return the keys and values its queries may see for ``layer``.

        One token: views of the filled slots, in slot order (``keys_rolled``). A chunk: the cached window - 1
        positions before it and the chunk itself, in position order, newly allocated.
        """
        start, t = self.pos, k.shape[2]
        end = self._end(t)
        ks, vs = self.k[layer], self.v[layer]
        if t == 1:
            ks[:, :, start % self.slots] = k[:, :, 0]
            vs[:, :, start % self.slots] = v[:, :, 0]
            filled = min(end, self.slots)
            return ks[:, :, :filled], vs[:, :, :filled]
        # Gathered before the write below, which may overwrite the very slots the first queries read.
        tail = torch.arange(max(0, start - self.window + 1), start, device=k.device) % self.slots
        keys, values = torch.cat((ks[:, :, tail], k), dim=2), torch.cat((vs[:, :, tail], v), dim=2)
        kept = min(t, self.slots)
        written = torch.arange(end - kept, end, device=k.device) % self.slots
        ks.index_copy_(2, written, k[:, :, t - kept :])
        vs.index_copy_(2, written, v[:, :, t - kept :])
        return keys, values

    def keys_rolled(self, t: int, s: int) -> int:
        """A single-token step's keys lie in slot order: the first key in position order, at position
        pos + 1 - s, sits in slot (pos + 1 - s) % slots. A chunk's keys are in position order."""
        return (self.pos + 1 - s) % self.slots if t == 1 else 0


class LatentCache:
    """What MLA caches: per layer, sequence and position, the normalised latent ``c_kv`` followed by the rotated
    RoPE key: shape (layers, batch, max_len, kv_lora_rank + qk_rope_head_dim).

    The interface of ``KVCache``: ``pos`` is the number of positions filled, layers write at ``pos`` during a
    forward, the model advances it after the last layer, and setting it back rewinds the cache. MLA's ``new_cache``
    sizes it (``components.mla``).
    """

    def __init__(self, n_layers: int, batch_size: int, max_seq_len: int, width: int,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        self.latent = torch.zeros((n_layers, batch_size, max_seq_len, width), dtype=dtype, device=device)
        self.max_seq_len = max_seq_len
        self.pos = 0

    def tensors(self) -> list[torch.Tensor]:
        return [self.latent]

    def randomize_(self) -> None:
        """Random contents: decode cost does not depend on the cached values, so timing needs no prefill."""
        self.latent.normal_()

    @property
    def nbytes(self) -> int:
        return self.latent.nbytes

    def bytes_per_token(self) -> int:
        """Latent and RoPE-key bytes one token adds over all layers and the whole batch."""
        return self.nbytes // self.max_seq_len

    def clone(self) -> LatentCache:
        """The same contents and position in newly allocated memory."""
        other = copy.copy(self)
        other.latent = self.latent.clone()
        return other

    def update(self, layer: int, latent: torch.Tensor) -> torch.Tensor:
        """Write this step's rows (batch, t, width) at ``pos``; return a view of every row cached so far for
        ``layer``, (batch, pos + t, width)."""
        end = self.pos + latent.shape[1]
        if end > self.max_seq_len:
            raise ValueError(f"latent cache holds {self.max_seq_len} positions; position {end - 1} does not fit")
        self.latent[layer, :, self.pos : end] = latent
        return self.latent[layer, :, :end]
