"""Fixtures of the ablations tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig


@pytest.fixture
def as_job() -> Iterator[Callable[[DictConfig], None]]:
    """``as_job(cfg)`` makes ``cfg``'s Hydra node the current job's (tests/ablations/jobs.py); cleared after."""
    yield HydraConfig.instance().set_config
    HydraConfig.instance().cfg = None
