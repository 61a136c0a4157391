"""Which SDPA kernel each attention call used: flash, memory-efficient, cuDNN, or the unfused math path.

SDPA picks its backend per call from the shapes, dtype, mask, device and the ``sdpa_kernel`` settings, and a
GQA flag can send it to the math path (HF transformers #48633): a slow kernel must show in the rows, not pass
for the design choice. Detected once per point and mode, off the timed path: a function mode sees each
``scaled_dot_product_attention`` call and asks ``torch._fused_sdp_choice`` (the function SDPA itself calls to
choose) with the call's own arguments. Under inference mode the aten operators below SDPA are not visible to a
dispatch mode, so asking the chooser is the one way that works in every mode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend
from torch.overrides import TorchFunctionMode

NAMES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "memory-efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
    SDPBackend.OVERRIDEABLE: "overrideable",
}


class _SdpaCalls(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.backends: Counter[str] = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            choice = SDPBackend(torch._fused_sdp_choice(*args, **kwargs))
            self.backends[NAMES.get(choice, choice.name.lower())] += 1
        return func(*args, **kwargs)


def sdpa_backends(fn: Callable[[], object]) -> Counter[str]:
    """Backend name -> number of SDPA calls that used it while ``fn`` ran."""
    with _SdpaCalls() as calls:
        fn()
    return calls.backends
