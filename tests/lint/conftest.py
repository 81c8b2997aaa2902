"""The lint tests' warm hook environments, in .venv/lint-cache (make lint's default)."""
from __future__ import annotations

import pytest

from helpers import LINT_CACHE


@pytest.fixture(scope="session")
def lint_cache():
    """pre-commit's hook environments, shared by every test and kept between runs beside the
    tools' wheels in .venv (installing them is the slow part; the lint itself is quick once warm)."""
    return LINT_CACHE
