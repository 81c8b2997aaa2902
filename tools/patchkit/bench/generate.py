"""A generated upstream with real proportions, for make bench and the fetch tests.

Thousands of source-like files in a deep directory tree, a long history that keeps changing
them, a few large binaries that change now and then, and, laid into that history, the
miniature's own commits: its release commit tagged as the miniature tags it, and its main
commit near the tip. So every patch set applies to it exactly as to the miniature, while a
clone of it costs what a clone of a big upstream costs.

Everything goes through one `git fast-import` stream, so that generation takes seconds.
Generated paths never fall inside a directory of the miniature (the waiver narrowing lists
those), and never carry a name that pytest or the delta reads (conftest.py, pytest.ini,
pyproject.toml, setup.cfg, tox.ini).
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import miniature, progress, scratch
from ..git import Identity, Repo, Sha, init

# Where generated directories hang: shared with the miniature's layout, but never one of the
# directories that hold the miniature's files (nothing generated lands among them).
ATTACH = ("", "cpp", "cpp/tensorrt_llm", "tensorrt_llm", "tensorrt_llm/_torch", "tests", "tests/unittest/_torch",
          "tests/integration/defs", "examples", "docs/source", "benchmarks", "3rdparty")
RESERVED = {"conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "__init__.py"}
EXTENSIONS = {"cpp": (".cpp", ".h", ".cu", ".cuh", ".txt"), "docs": (".md", ".rst"), "": (".py", ".py", ".py", ".yaml", ".md", ".json")}
IDENTITY = "Bench Upstream <bench@upstream.invalid>"
START = 1_700_000_000  # committer time of the first generated commit


@dataclass(frozen=True)
class Shape:
    """How big the generated upstream is."""

    files: int = 15_000
    dirs: int = 1_700  # some get no file: at least 1,500 hold files
    commits: int = 5_000
    binaries: int = 8  # large incompressible files, each replaced a few times in history
    binary_mib: float = 5.0  # their mean size
    median_bytes: int = 4_000  # text files: log-normal sizes around this median
    changes_per_commit: int = 3
    seed: int = 7


@dataclass(frozen=True)
class Generated:
    path: Path
    files: int
    dirs: int
    commits: int
    tag: str
    seconds: float


def generate(root: Path, dest: Path, shape: Shape = Shape()) -> Generated:
    """Write the generated upstream to dest (a new bare repository): branch main, the miniature's tag."""
    t0 = time.perf_counter()
    rng = random.Random(shape.seed)
    with scratch.folder("benchgen") as tmp:  # held, so a sweep or another run's hygiene check leaves it be
        mini = miniature.build(root, Path(tmp) / "mini")
        layers = [_snapshot(Repo(mini.path), c) for c in mini.commits]
        mini_dirs = {str(PurePosixPath(p).parent) for layer in layers for p in layer}
        repo = init(dest, bare=True)
        dirs = _directories(rng, shape.dirs, mini_dirs)
        paths = _file_paths(rng, dirs, shape.files)
        binaries = _binary_paths(rng, dirs, shape.binaries)
        repo.fast_import(_History(rng, shape, paths, binaries, layers, mini.tag).stream())
    ndirs = len({str(PurePosixPath(name).parent) for _m, _t, name in repo.ls_tree("main")})
    return Generated(dest, len(paths) + len(binaries), ndirs, shape.commits + len(layers), mini.tag,
                     time.perf_counter() - t0)


def shared(root: Path, workdir: Path, shape: Shape | None = None) -> Path:
    """workdir/upstream.git, the generated upstream every section works on: generated here unless
    a section before (the clone bench's, first) already did."""
    base = workdir / "upstream.git"
    if not base.exists():
        shape = shape or Shape()
        with progress.step(f"generating an upstream of {shape.files:,} files and {shape.commits:,} commits"):
            generate(root, base, shape)
    return base


def commit_file(repo: Repo, parent: str, path: str, data: bytes, message: str, who: Identity) -> Sha:
    """A commit on parent that stages data at path, by who (upstream moving on, a pull request's commit)."""
    with repo.temp_index(parent) as index:
        index.add(path, data)
        tree = index.write_tree()
    return repo.commit_tree(tree, [parent], message, author=who, committer=who)


def _snapshot(repo: Repo, commit: str) -> dict[str, bytes]:
    return {name: repo.show_file(commit, name) or b"" for mode, typ, name in repo.ls_tree(commit) if typ == "blob"}


def _name(rng: random.Random) -> str:
    return rng.choice(_WORDS) + rng.choice(("", "_" + rng.choice(_WORDS), "_" + str(rng.randrange(100))))


def _directories(rng: random.Random, n: int, avoid: set[str]) -> list[str]:
    """n directories below the attach points, shallow ones likelier as parents (as in real trees)."""
    dirs = list(ATTACH)
    seen = set(dirs) | avoid
    while len(dirs) < n:
        parent = rng.choice(dirs)
        if parent.count("/") >= 5 and rng.random() < 0.7:
            continue
        child = f"{parent}/{_name(rng)}".lstrip("/")
        if child in seen or any(child == a or child.startswith(a + "/") for a in avoid if a not in ATTACH):
            continue
        seen.add(child)
        dirs.append(child)
    return [d for d in dirs if d not in avoid] or dirs


def _ext(rng: random.Random, d: str) -> str:
    top = d.split("/", 1)[0]
    return rng.choice(EXTENSIONS.get(top, EXTENSIONS[""]))


def _file_paths(rng: random.Random, dirs: list[str], n: int) -> list[str]:
    weights = [rng.paretovariate(1.3) for _ in dirs]
    out, seen = [], set()
    while len(out) < n:
        d = rng.choices(dirs, weights)[0]
        name = _name(rng) + _ext(rng, d)
        path = f"{d}/{name}".lstrip("/")
        if path in seen or name in RESERVED:
            continue
        seen.add(path)
        out.append(path)
    return out


def _binary_paths(rng: random.Random, dirs: list[str], n: int) -> list[str]:
    return [f"{rng.choice(dirs)}/{_name(rng)}{rng.choice(('.so', '.a', '.png', '.cubin'))}".lstrip("/") for _ in range(n)]


class _History:
    """The fast-import stream: generated files added over time and edited, the miniature laid in."""

    def __init__(self, rng, shape: Shape, paths, binaries, layers, tag) -> None:
        self.rng, self.shape = rng, shape
        self.paths, self.binaries, self.layers, self.tag = paths, binaries, layers, tag
        self.pool = _line_pool(rng, 40_000)
        median = math.log(shape.median_bytes)
        self.sizes = {p: min(300_000, max(120, int(rng.lognormvariate(median, 1.1)))) for p in paths}
        self.text: dict[str, str] = {}
        self.mark = 0
        self.out: list[bytes] = []

    def stream(self) -> bytes:
        """Blobs first, each file's versions one after the other (fast-import deltas a blob
        against the one written just before it, so a file's history packs as small deltas,
        as in a real upstream's pack); then the commits, naming blobs by mark."""
        s, rng = self.shape, self.rng
        plan = self._plan()
        marks: dict[tuple[str, int], int] = {}
        versions: dict[str, int] = {}
        for changes in plan:
            for p in changes:
                versions[p] = versions.get(p, 0) + 1
        for p in self.paths:
            text = self._new_text(self.sizes[p])
            for v in range(versions.get(p, 0)):
                if v:
                    text = self._edit(text)
                marks[(p, v)] = self._blob(text.encode())
        for b in self.binaries:  # large and incompressible: no delta is tried (big-file threshold)
            for v in range(versions.get(b, 0)):
                size = int(rng.uniform(0.5, 1.5) * s.binary_mib * 2**20)
                marks[(b, v)] = self._blob(rng.randbytes(size))
        # Where the miniature's commits go: its release two thirds in, its main near the tip.
        at = {int(s.commits * 0.66): 0, s.commits - 20: 1}
        seen: dict[str, int] = {}
        for c, changes in enumerate(plan):
            lines = []
            for p in changes:
                v = seen[p] = seen.get(p, -1) + 1
                ref = marks[(p, v)]
                lines.append(f"M 100644 :{ref} {p}\n".encode())
            self._commit(c, f"Change {c}: {rng.choice(_WORDS)} {rng.choice(_WORDS)}\n", lines)
            if c in at:
                layer = self.layers[at[c]]
                prev = self.layers[at[c] - 1] if at[c] else {}
                lay = [f"M 100644 inline {p}\ndata {len(t)}\n".encode() + t + b"\n" for p, t in sorted(layer.items())]
                lay += [f"D {p}\n".encode() for p in prev if p not in layer]
                self._commit(c, f"Miniature layer {at[c] + 1}\n", lay)
                if at[c] == 0:
                    self.out.append(f"reset refs/tags/{self.tag}\nfrom :{self.mark}\n\n".encode())
        self.out.append(b"done\n")
        return b"".join(self.out)

    def _plan(self) -> list[list[str]]:
        """Which paths each commit changes: a third of the files at first, the rest arriving
        over the first half of history, hot files edited all the time, binaries now and then."""
        s, rng = self.shape, self.rng
        first = len(self.paths) // 3
        plan: list[list[str]] = [list(self.paths[:first]) + list(self.binaries)] + [[] for _ in range(s.commits - 1)]
        arrive = sorted(rng.randrange(1, max(2, s.commits // 2)) for _ in self.paths[first:])
        for c, p in zip(arrive, self.paths[first:]):  # in path order, so paths[:n] are the present ones
            plan[c].append(p)
        # Hot files change all the time; big files are rarely the hottest (and a hot big file
        # would make generation slow: fast-import reads every version whole).
        cum = list(_accumulate(rng.paretovariate(1.1) / max(1.0, self.sizes[p] / 16_000) for p in self.paths))
        present = first
        for c in range(1, s.commits):
            present += len(plan[c])
            picked = {self.paths[_pick(rng, cum, present)] for _ in range(rng.randint(1, 2 * s.changes_per_commit - 1))}
            plan[c] += sorted(picked - set(plan[c]))
        for b in self.binaries:
            for c in rng.sample(range(1, s.commits), 2):
                plan[c].append(b)
        return plan

    def _blob(self, data: bytes) -> int:
        self.mark += 1
        self.out += [f"blob\nmark :{self.mark}\ndata {len(data)}\n".encode(), data, b"\n"]
        return self.mark

    def _commit(self, c: int, msg: str, changes: list[bytes]) -> None:
        self.mark += 1
        when = START + 3600 * c + self.mark
        self.out.append(f"commit refs/heads/main\nmark :{self.mark}\ncommitter {IDENTITY} {when} +0000\n"
                        f"data {len(msg)}\n{msg}".encode())
        self.out.extend(changes)
        self.out.append(b"\n")

    def _new_text(self, size: int) -> str:
        return "".join(self.rng.choices(self.pool, k=max(3, size // 38)))

    def _edit(self, text: str) -> str:
        """A few lines replaced, inserted and deleted: the file changes but does not keep growing."""
        lines = text.splitlines(keepends=True)
        rng = self.rng
        for _ in range(rng.randint(1, 6)):
            i, k, r = rng.randrange(len(lines) + 1), rng.randint(1, 8), rng.random()
            if r < 0.4 and i < len(lines):
                lines[i] = rng.choice(self.pool)
            elif r < 0.7 or len(lines) < 20:
                lines[i:i] = rng.choices(self.pool, k=k)
            else:
                del lines[i:i + k]
        return "".join(lines)


def _accumulate(ws):
    total = 0.0
    for w in ws:
        total += w
        yield total


def _pick(rng: random.Random, cum: list[float], limit: int) -> int:
    """An index below limit, the hot ones likelier (a few files change all the time)."""
    import bisect
    return bisect.bisect_left(cum, rng.random() * cum[limit - 1], 0, limit)


_SYLLABLES = ("ka", "to", "re", "mi", "an", "el", "or", "us", "ten", "sor", "cache", "kv", "attn", "mod", "lay", "er",
              "block", "pool", "seq", "len", "dec", "enc", "gemm", "quant", "fp", "int", "buf", "ptr", "idx", "max")
_rng0 = random.Random(1)
_WORDS = sorted({"".join(_rng0.choices(_SYLLABLES, k=_rng0.randint(1, 3))) for _ in range(3000)})


def _line_pool(rng: random.Random, n: int) -> list[str]:
    """Lines that look like code: indentation, keywords, identifiers, numbers, punctuation."""
    w = lambda: rng.choice(_WORDS)  # noqa: E731
    forms = (
        lambda: f"{w()} = {w()}.{w()}({w()}, {rng.randrange(4096)})",
        lambda: f"if {w()} is not None and {w()}[{rng.randrange(64)}] > {w()}:",
        lambda: f"def {w()}_{w()}(self, {w()}: int, {w()}: bool = False) -> {w().capitalize()}:",
        lambda: f"return {w()}({w()}) + {w()} * {rng.randrange(1, 128)}",
        lambda: f"# {w()} {w()} {w()} {w()} {w()} {w()}",
        lambda: f"for {w()} in range({w()}.{w()}):",
        lambda: f"{w()}->{w()}[{w()}] = static_cast<{w()}_t>({w()} * {rng.randrange(2, 64)});",
        lambda: f"self.{w()} = {w()}.get(\"{w()}\", {rng.randrange(100)})",
        lambda: "}", lambda: "", lambda: "else:",
    )
    return [" " * (4 * rng.choice((0, 1, 1, 2, 2, 2, 3, 3, 4))) + rng.choice(forms)() + "\n" for _ in range(n)]
