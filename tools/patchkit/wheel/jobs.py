"""How many compile jobs a wheel build runs (JOBS), from the memory the build may use.

Upstream's build is memory-bound: out-of-memory kills are its common failure, and the
maintainers' answer is "lower -j" (there is no official figure per job). The rule, stated in
docs/commands/wheel.md and printed with every build:

    JOBS = max(1, min(CPUs, usable memory // 4 GiB))

where usable memory is MemAvailable (/proc/meminfo), or less where this process's cgroup has
a memory limit (the limit less what the cgroup already uses: a container's limit counts, not
the host's memory). A build run by buildah or podman without a memory limit of its own shares
this process's cgroup and the host's memory, so it is read here, where patchkit runs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

JOB_MEMORY = 4 << 30  # bytes a compile job may take: our rule (upstream states none)
_UNLIMITED = 1 << 60  # cgroup v1 says "no limit" with a number near 2**63


@dataclass(frozen=True)
class Memory:
    available: int | None  # MemAvailable, bytes
    cgroup_limit: int | None  # None: no limit
    cgroup_used: int | None
    cpus: int

    @property
    def usable(self) -> int | None:
        room = None if self.cgroup_limit is None else self.cgroup_limit - (self.cgroup_used or 0)
        values = [v for v in (self.available, room) if v is not None]
        return max(min(values), 0) if values else None


def read_memory(root: Path = Path("/")) -> Memory:
    """This process's CPUs, MemAvailable and its cgroup's memory limit and use (v2, else v1)."""
    available = None
    try:
        for line in (root / "proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except OSError:
        pass
    limit, used = _cgroup(root)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return Memory(available, limit, used, cpus)


def _cgroup(root: Path) -> tuple[int | None, int | None]:
    try:
        lines = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if controllers == "" and (root / "sys/fs/cgroup/cgroup.controllers").exists():  # v2
            for at in (root / "sys/fs/cgroup" / path.lstrip("/"), root / "sys/fs/cgroup"):
                limit = _number(at / "memory.max")
                if (at / "memory.max").exists():
                    return limit, _number(at / "memory.current")
        if "memory" in controllers.split(","):  # v1
            for at in (root / "sys/fs/cgroup/memory" / path.lstrip("/"), root / "sys/fs/cgroup/memory"):
                if (at / "memory.limit_in_bytes").exists():
                    return _number(at / "memory.limit_in_bytes"), _number(at / "memory.usage_in_bytes")
    return None, None


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text.isdigit():
        return None  # "max"
    value = int(text)
    return None if value >= _UNLIMITED else value


@dataclass(frozen=True)
class Jobs:
    value: int
    why: str  # as printed: how the value was chosen


def choose(given: int | None, memory: Memory) -> Jobs:
    """JOBS as given, else by the rule above; why, in words."""
    if given is not None:
        return Jobs(given, f"JOBS={given}, as given")
    usable = memory.usable
    if usable is None:
        return Jobs(1, "JOBS=1: this machine says nothing of its memory (no MemAvailable, no cgroup limit)")
    by_memory = usable // JOB_MEMORY
    value = max(1, min(memory.cpus, by_memory))
    where = ("MemAvailable" if memory.cgroup_limit is None
             else f"the cgroup's {_gib(memory.cgroup_limit)} limit less {_gib(memory.cgroup_used or 0)} in use, "
                  f"MemAvailable {_gib(memory.available or 0)}")
    return Jobs(value, f"JOBS={value}: min({memory.cpus} CPUs, {_gib(usable)} usable ({where}) / "
                       f"{_gib(JOB_MEMORY)} a job = {by_memory}), at least 1")


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"
