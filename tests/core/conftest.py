from __future__ import annotations

import pytest
from core_helpers import make_registry

from flowbuilder.registry import NodeRegistry


@pytest.fixture
def registry() -> NodeRegistry:
    return make_registry()
