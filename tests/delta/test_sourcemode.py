"""Source mode's placeholders: they serve the modules loaded from source, and no one else."""
from __future__ import annotations

import sys

from helpers import sh


def test_placeholders_do_not_leak_to_the_test_process(tmp_path):
    """Once the source module is loaded, 'import torch' from a test must still fail."""
    tree = tmp_path / "t"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_text(
        "from typing import Optional\nimport torch\nfrom .sibling import Base\n\n@torch.no_grad()\ndef f(x):\n    return x + 1\n\n"
        "class C(Base):\n    dtype = torch.float16\n    table = {torch.int8: 1}\n    hint = torch.Tensor[int]\n"
        "    def m(self) -> Optional[torch.Tensor]:\n        return torch.zeros(2)(3)[0]\n")
    (tree / "test_it.py").write_text(
        "import importlib, pytest\nfrom pkg.mod import f, C\n\n"
        "def test_source_code_runs():\n    assert f(1) == 2 and C.dtype is not None and C().m() is not None\n\n"
        "def test_torch_is_not_there_for_tests():\n    with pytest.raises(ImportError):\n        importlib.import_module('torch')\n")
    res = sh(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "patchkit.delta.sourcemode",
             "--source-root", tree, "--source-module", "pkg.mod", "--rootdir", tree, tree / "test_it.py",
             cwd=tree, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 passed" in res.stdout
