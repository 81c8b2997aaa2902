"""Which modules a Python file imports, and which of them a source tree holds (read with ast,
never run). A ground-floor module: the standard library only.

Where Python would find a module depends on sys.path at run time, which no reader can know
(upstream's tests/unittest/conftest.py appends tests/ to it, then imports
integration.defs.test_list_parser). This follows the rule a test tree is written for: an
absolute import names a module under the importing file's folder or one of the folders above
it (pytest puts the test's folder on sys.path; a conftest or test adds a folder above), the
nearest first; a relative import names one from the file's own package. Two users: the delta
lays out, beside the tests, the modules of the tree they import (delta/trees.py), and the
test images get a stand-in only for what the tree does not hold (container/bases.py).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Import:
    module: str  # the absolute dotted name ('' never: a relative import beyond the top is dropped)
    names: tuple[str, ...]  # what `from module import ...` takes (attributes, or submodules)
    relative: bool  # resolved against the file's own folder, not sys.path


def imports(source: str, folder: Sequence[str]) -> list[Import]:
    """The imports of source, a file in folder (its path's parts without the file name); []
    when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(a.name, (), False) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names if a.name != "*")
            if not node.level:
                found.append(Import(node.module or "", names, False))
                continue
            keep = len(folder) - (node.level - 1)
            if keep < 0:
                continue  # beyond the top: not importable anyway
            full = ".".join([*folder[:keep], *(node.module.split(".") if node.module else [])])
            if full:
                found.append(Import(full, names, True))
    return [i for i in found if i.module]


class Tree:
    """The files of a source tree (paths relative to its top, '/'-separated), and where a dotted
    module name resolves among them."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = set(files)
        self.folders = {str(p) for f in self.files for p in PurePosixPath(f).parents if str(p) != "."}

    def _at(self, root: str, parts: Sequence[str]) -> str:
        return "/".join([root, *parts] if root else parts)

    def holds(self, name: str, root: str) -> bool:
        """Whether root has that module: a .py file, or a package (a folder: namespaces too)."""
        at = self._at(root, name.split("."))
        return f"{at}.py" in self.files or at in self.folders

    def root(self, path: str, imp: Import, with_top: bool = True) -> str | None:
        """The folder an import of the file at path is found from: its own package's top for a
        relative import, else the nearest folder above the file that has the top-level name
        (with_top: the tree's top folder too); None when no folder has it."""
        if imp.relative:
            return ""
        roots = [str(p) for p in PurePosixPath(path).parents if str(p) != "."] + ([""] if with_top else [])
        top = imp.module.split(".")[0]
        return next((r for r in roots if self.holds(top, r)), None)

    def loads(self, name: str, root: str) -> list[str]:
        """The files importing name from root executes: the packages' __init__.py on the way and
        the module itself (a .py file, or a package's __init__.py); [] where root has none."""
        parts = name.split(".")
        out = [self._at(root, [*parts[:i], "__init__.py"]) for i in range(1, len(parts) + 1)]
        out.append(self._at(root, parts) + ".py")
        return [f for f in out if f in self.files]

    def resolve(self, path: str, imp: Import, with_top: bool = True) -> list[str] | None:
        """The files of the tree this import of the file at path loads (with a from-import's
        submodules), or None when the tree does not hold its top-level name."""
        root = self.root(path, imp, with_top)
        if root is None:
            return None
        loaded = self.loads(imp.module, root)
        for name in imp.names:
            if self.holds(f"{imp.module}.{name}", root):
                loaded += self.loads(f"{imp.module}.{name}", root)
        return sorted(set(loaded))

    def missing(self, path: str, imp: Import, with_top: bool = True) -> list[str]:
        """The dotted prefixes of the import's module that the tree does not hold, where it
        would look (all of them when no folder has its top-level name)."""
        parts = imp.module.split(".")
        root = self.root(path, imp, with_top)
        prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
        return prefixes if root is None else [m for m in prefixes if not self.holds(m, root)]


def closure(tree: Tree, start: Iterable[str], read: Callable[[str], str | None], *, with_top: bool = False,
            skip: Callable[[str], bool] = lambda module: False) -> set[str]:
    """The files of tree that the Python files in start import, followed through what those
    import in turn (start itself not included); skip(module) leaves a module out."""
    todo = [f for f in start if f.endswith(".py")]
    seen = set(todo)
    found: set[str] = set()
    while todo:
        path = todo.pop()
        text = read(path)
        if text is None:
            continue
        for imp in imports(text, PurePosixPath(path).parts[:-1]):
            if skip(imp.module):
                continue
            for f in tree.resolve(path, imp, with_top) or []:
                found.add(f)
                if f not in seen:
                    seen.add(f)
                    todo.append(f)
    return found - set(start)
