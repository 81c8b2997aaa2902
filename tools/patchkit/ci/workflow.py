"""make workflow: render .github/workflows/patchkit.yml from the sets on disk and the Makefile.

The matrix is `make targets` (a new directory under patches/ adds its jobs); a job step is
rendered only for a make target the Makefile has, so the workflow never calls one that is
not there (make lint and make radar land separately). Actions are pinned by commit.

A set whose stack needs a wheel build (a fix changes cpp/, CMake, setup.py: stack.wheel_files)
gets a wheel job on the large build machine (BUILD_RUNNER), its build trees and compiler cache
kept between runs by actions/cache, and the wheel handed to the container job as an artifact
(#32 item 6): the GPU runner then lays it over the release image instead of compiling.
"""
from __future__ import annotations

import importlib.resources
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from .. import patchset, schema as S, stack
from ..errors import BadInput, Hint, NotFound

OUTPUT = Path(".github/workflows/patchkit.yml")
# actionlint (in many pre-commit configs) knows GitHub's hosted runners' labels and not a
# self-hosted runner's own: its config file declares those, or it reports `label "gpu" is
# unknown` on the container job (#27 item 9).
ACTIONLINT_CONFIG = Path(".github/actionlint.yaml")
TEMPLATE = "patchkit.yml.j2"
DEFAULT_GPU_RUNNER = ("self-hosted", "gpu")
DEFAULT_BUILD_RUNNER = ("self-hosted", "build")
# Each setting of runner labels: its default, and the job whose runs-on it is.
RUNNERS = {"gpu_runner": (DEFAULT_GPU_RUNNER, "container"), "build_runner": (DEFAULT_BUILD_RUNNER, "wheel")}
# Where make wheel keeps what a second build reuses (the Makefile's --cache=$(BUILD)/wheel-cache,
# wheel/tree.py's trees/<set>-<devel> and ccache/<devel>), and where it writes the wheel.
WHEEL_CACHE = "build/wheel-cache"
WHEEL_OUT = "build/wheel"
PYTHON = "3.12"

# Each action pinned by the full commit of a release, its tag in the comment. We cannot reach
# GitHub from here: each commit was read from other public workflows pinning the same release
# with the tag beside it (see the commit message), and the five agree across repositories.
PINS = {
    "checkout": ("actions/checkout", "11bd71901bbe5b1630ceea73d27597364c9af683", "v4.2.2"),
    "setup_python": ("actions/setup-python", "a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    "cache": ("actions/cache", "5a3ec84eff668545956fd18022155c47e93e2684", "v4.2.3"),
    "upload": ("actions/upload-artifact", "ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    "download": ("actions/download-artifact", "d3f86a106a0bac45b974a628896c90dbdf5c8093", "v4.3.0"),
}

_TARGET_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?!=)")
_VARIABLE_LINE = re.compile(r"^(?:export\s+|override\s+)?([A-Z][A-Z0-9_]*)\s*(?:\?|:|::|\+)?=")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class WorkflowResult:
    path: str
    changed: bool  # a file differed from what was rendered (check: it is stale)
    check: bool
    targets: list[str]
    container_targets: list[str]
    jobs: list[str]
    steps_left_out: list[str]  # make targets the jobs would call that the Makefile lacks
    config_path: str = ""  # .github/actionlint.yaml: the self-hosted runner's labels for actionlint
    runner_labels: tuple[str, ...] = ()  # the labels it declares
    changed_files: tuple[str, ...] = ()  # which of the two differed

    @property
    def ok(self) -> bool:
        return not (self.check and self.changed)


def make_targets(makefile: Path) -> set[str]:
    """The targets a Makefile of our shape defines (one line each, `name: ...`)."""
    names = set()
    for line in makefile.read_text(encoding="utf-8").splitlines():
        m = _TARGET_LINE.match(line)
        if m and not line.startswith("\t"):
            names.add(m.group(1))
    return names


def runner_labels(text: str | None, setting: str = "gpu_runner") -> list[str]:
    """GPU_RUNNER (or BUILD_RUNNER) as labels: 'self-hosted,gpu' or '[self-hosted, gpu]'."""
    default = RUNNERS[setting][0]
    if text is None or not text.strip():
        return list(default)
    labels = [x.strip().strip("'\"") for x in text.strip().removeprefix("[").removesuffix("]").split(",")]
    bad = [x for x in labels if not _LABEL.match(x)]
    if bad or not labels:
        raise BadInput(f"must be runner labels separated by commas, like {','.join(default)}; not {text!r}",
                       setting=setting, hint=Hint.choose(setting))
    return labels


def needs_wheel(ps: patchset.PatchSet) -> bool:
    """Whether a fix of the set's stack changes what the wheel is built from."""
    return any(stack.wheel_files(ps, f) for f in ps.fixes)


def render(root: Path, gpu_runner: list[str] | None = None,
           build_runner: list[str] | None = None) -> tuple[str, WorkflowResult]:
    """The workflow text for the project at root, and what went into it."""
    makefile = root / "Makefile"
    if not makefile.is_file():
        raise NotFound(f"no Makefile in {root}: the workflow's steps call its targets")
    have = make_targets(makefile)
    sets = [patchset.load(root, t) for t in patchset.targets(root)]
    if not sets:
        raise NotFound(f"no patch sets under {root / 'patches'}: nothing to verify")
    targets = [s.target for s in sets]
    container_targets = [s.target for s in sets if s.container.base]
    wanted = ("setup", "apply", "delta", "lint", "radar", "wheel", "container", "summary")
    # The wheel job's matrix: each set that needs one, with the devel image and architectures
    # its build trees and compiler cache are kept for (the cache's key).
    wheels = [{"target": s.target, "devel": s.container.devel, "archs": s.container.cuda_archs}
              for s in sets if s.container.base and needs_wheel(s)] if "wheel" in have else []
    ctx = {
        "targets": json.dumps(targets), "container_targets": json.dumps(container_targets),
        "wheels": json.dumps(wheels), "wheel_targets": json.dumps([w["target"] for w in wheels]),
        "wheel_cache": WHEEL_CACHE, "wheel_out": WHEEL_OUT,
        "has": {name: name in have for name in wanted},
        "gpu_runner": json.dumps(gpu_runner or list(DEFAULT_GPU_RUNNER)),
        "build_runner": json.dumps(build_runner or list(DEFAULT_BUILD_RUNNER)),
        "python": PYTHON,
        "pin": {k: f"{repo}@{sha} # {tag}" for k, (repo, sha, tag) in PINS.items()},
    }
    missing = [n for n in wanted if n not in have]
    if "setup" in missing or "summary" in missing:
        raise NotFound(f"{makefile} has no {' or '.join(n for n in ('setup', 'summary') if n in missing)} target; "
                       "every job needs it")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                             lstrip_blocks=True, loader=jinja2.FunctionLoader(_template),
                             # GitHub's own expressions are ${{ ... }}: ours are << ... >>
                             variable_start_string="<<", variable_end_string=">>")
    text = env.get_template(TEMPLATE).render(**ctx)
    jobs = ["verify"] + (["radar"] if ctx["has"]["radar"] else []) + (["wheel"] if wheels else []) \
        + (["container"] if container_targets and ctx["has"]["container"] else []) + ["summary"]
    return text, WorkflowResult(str(root / OUTPUT), False, False, targets, container_targets, jobs, missing)


def actionlint_config(labels: list[str]) -> tuple[str, tuple[str, ...]]:
    """actionlint's config declaring the self-hosted runners' labels (the container job's, and the
    wheel job's when there is one), and those labels."""
    own = tuple(dict.fromkeys(x for x in labels if x != "self-hosted"))  # actionlint knows self-hosted itself
    lines = ["# Written by make workflow (patchkit): actionlint, run in this repository, learns here the",
             "# labels of the self-hosted runners the container and wheel jobs ask for (GPU_RUNNER,",
             "# BUILD_RUNNER), which it cannot know otherwise. make workflow rewrites it with the jobs.",
             "self-hosted-runner:", "  labels:" + ("" if own else " []")]
    return "\n".join(lines + [f"    - {json.dumps(x)}" for x in own]) + "\n", own


def write(root: Path, gpu_runner: list[str] | None = None, check: bool = False,
          build_runner: list[str] | None = None) -> WorkflowResult:
    """Render the workflow and actionlint's config; write them (atomically) unless checking; say
    whether they changed. A runner not given keeps the labels the file has."""
    path = root / OUTPUT
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    gpu = gpu_runner or (_labels_in(old, "gpu_runner") if old else None) or list(DEFAULT_GPU_RUNNER)
    build = build_runner or (_labels_in(old, "build_runner") if old else None) or list(DEFAULT_BUILD_RUNNER)
    text, res = render(root, gpu, build)
    config, own = actionlint_config(gpu + (build if "wheel" in res.jobs else []))
    changed = []
    for rel, new in ((OUTPUT, text), (ACTIONLINT_CONFIG, config)):
        dest = root / rel
        if (dest.read_text(encoding="utf-8") if dest.is_file() else None) == new:
            continue
        changed.append(str(dest))
        if not check:
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{dest.name}.tmp")
            tmp.write_text(new, encoding="utf-8")
            tmp.replace(dest)
    return WorkflowResult(res.path, bool(changed), check, res.targets, res.container_targets, res.jobs,
                          res.steps_left_out, str(root / ACTIONLINT_CONFIG), own, tuple(changed))


def _labels_in(text: str, setting: str) -> list[str] | None:
    """The runner labels of the setting's job in a workflow we rendered before: a fork's
    GPU_RUNNER (BUILD_RUNNER) stays when make workflow runs again without it (a new target
    must not reset it)."""
    try:
        data = S.load_yaml(text, str(OUTPUT))
        labels = data["jobs"][RUNNERS[setting][1]]["runs-on"]
    except (BadInput, KeyError, TypeError):
        return None
    labels = [labels] if isinstance(labels, str) else labels
    ok = isinstance(labels, list) and labels and all(isinstance(x, str) and _LABEL.match(x) for x in labels)
    return list(labels) if ok else None


def _template(name: str) -> str:
    return importlib.resources.files("patchkit").joinpath("templates", name).read_text(encoding="utf-8")
