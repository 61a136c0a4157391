"""The measurement of one point: paired timing (``timing``), FLOPs (``flops``), memory (``memory``), and
``point``, which runs them for the variant against its GPT-2 baseline."""
