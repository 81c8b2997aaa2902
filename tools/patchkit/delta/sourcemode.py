"""pytest plugin: run a test file against modules loaded from a source tree, on any CPU machine.

The modules a patch set changes (--source-module) are executed from the tree (--source-root).
Every import *those modules* make of something outside that set (torch, compiled bindings,
the rest of tensorrt_llm) gets a permissive placeholder that can be called, subscripted,
subclassed and used as a decorator: the pattern of Sphinx's autodoc_mock_imports. The
placeholders serve only the source modules while they load: a test file that itself imports
what this machine lacks fails to import, and is reported as not runnable here (needs the
container), never graded against placeholders.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path

import pytest

from .reportplugin import NOT_RUNNABLE


class Placeholder:
    """Stands in for any object of a module this machine does not have."""

    def __init__(self, name: str = "placeholder") -> None:
        object.__setattr__(self, "_name", name)

    def __repr__(self) -> str:
        return f"<placeholder {self._name}>"

    def __getattr__(self, attr: str) -> "Placeholder":
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator: keep the decorated function
        return Placeholder(f"{self._name}()")

    def __getitem__(self, key) -> "Placeholder":
        return Placeholder(f"{self._name}[...]")

    def __mro_entries__(self, bases):
        return (type(self._name.rsplit(".", 1)[-1], (), {"__getattr__": lambda s, a: Placeholder(a)}),)

    def __iter__(self):
        return iter(())

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


class PlaceholderModule(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__ = []  # so that submodules can be imported from it
        self.__file__ = f"<placeholder {name}>"

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self.__name__}.{attr}")


class _Loader(importlib.abc.Loader):
    def __init__(self, finder: "SourceFinder", path: Path | None) -> None:
        self.finder, self.path = finder, path

    def create_module(self, spec):
        return PlaceholderModule(spec.name) if self.path is None else None

    def exec_module(self, module) -> None:
        if self.path is None:
            return
        self.finder.serving += 1
        try:
            code = compile(self.path.read_text(encoding="utf-8"), str(self.path), "exec")
            exec(code, module.__dict__)
        finally:
            self.finder.serving -= 1
            if not self.finder.serving:
                self.finder.forget_placeholders()


class SourceFinder(importlib.abc.MetaPathFinder):
    """Loads the set's modules from source; serves placeholders to them while they load."""

    def __init__(self, root: Path, modules: list[str]) -> None:
        self.root = root
        self.modules = set(modules)
        self.packages = {".".join(m.split(".")[:i]) for m in modules for i in range(1, m.count(".") + 1)}
        self.serving = 0
        self.placeholders: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name in self.modules:
            file = self.root / (name.replace(".", "/") + ".py")
            return importlib.util.spec_from_file_location(name, file, loader=_Loader(self, file))
        if name in self.packages:
            # A stand-in package: the real __init__ would import half the library.
            spec = importlib.machinery.ModuleSpec(name, _Loader(self, None), is_package=True)
            spec.submodule_search_locations = [str(self.root / name.replace(".", "/"))]
            return spec
        if self.serving:
            self.placeholders.append(name)
            return importlib.machinery.ModuleSpec(name, _Loader(self, None), is_package=True)
        return None

    def forget_placeholders(self) -> None:
        """The loaded source modules keep what they imported; nobody else may find it."""
        for name in self.placeholders:
            mod = sys.modules.get(name)
            if isinstance(mod, PlaceholderModule):
                del sys.modules[name]
                parent, _, child = name.rpartition(".")
                if parent in sys.modules and getattr(sys.modules[parent], child, None) is mod:
                    try:
                        delattr(sys.modules[parent], child)
                    except AttributeError:
                        pass


def pytest_addoption(parser) -> None:
    group = parser.getgroup("patchkit source mode")
    group.addoption("--source-root", help="tree the source modules are loaded from")
    group.addoption("--source-module", action="append", default=[], help="dotted module to load from source")


def pytest_configure(config) -> None:
    root = config.getoption("--source-root")
    if root:
        sys.meta_path.insert(0, SourceFinder(Path(root).resolve(), config.getoption("--source-module")))
        config.addinivalue_line("markers", "cpu_only: runs without a GPU")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        lines = str(report.longrepr).splitlines()
        why = next((ln for ln in lines if "ModuleNotFoundError:" in ln), None) or \
            next((ln for ln in lines if "ImportError" in ln), None)
        if why:
            report.sections.append(("patchkit", f"{NOT_RUNNABLE}: {why.strip().lstrip('E').strip()}"))
