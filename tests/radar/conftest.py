"""The history miniature, shared by the radar's tests."""
from __future__ import annotations

import pytest

from patchkit import miniature
from helpers import ROOT, build_once


@pytest.fixture(scope="session")
def history_template(tmp_path_factory):
    """The history miniature, built once a session."""
    return build_once(tmp_path_factory, "history", lambda dest: miniature.build(ROOT, dest, variant="history"))
