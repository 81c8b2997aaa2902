"""pytest plugin: write every test's outcome, keyed by node id, as JSON (--outcomes-json).

Loaded by file path in both modes (it has no imports beyond pytest and the stdlib), so the
same record comes out of a local run and a container run. Categories: passed, failed,
error (setup/teardown or collection), skipped, and not_run (collection failed because the
test file imports what this machine lacks; see sourcemode.NOT_RUNNABLE).
"""
from __future__ import annotations

import json

NOT_RUNNABLE = "not runnable in source mode"


class _Recorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.tests: dict[str, dict] = {}
        self.collect_errors: dict[str, dict] = {}
        self.collected = 0

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            extra = dict(report.sections).get("patchkit", "")
            lines = str(report.longrepr).splitlines()
            why = next((ln for ln in lines if "Error" in ln), lines[-1] if lines else "collection failed")
            outcome = "not_run" if extra.startswith(NOT_RUNNABLE) else "error"
            self.collect_errors[report.nodeid] = {"outcome": outcome, "reason": extra or why.strip("E ").strip()}

    def pytest_collection_finish(self, session) -> None:
        self.collected = len(session.items)

    def pytest_runtest_logreport(self, report) -> None:
        rec = self.tests.setdefault(report.nodeid, {"outcome": "passed", "reason": ""})
        if report.when == "call":
            if report.skipped:
                rec.update(outcome="skipped", reason=_skip_reason(report))
            elif report.failed:
                rec.update(outcome="failed", reason=_first_error(report))
        elif report.skipped and report.when == "setup":
            rec.update(outcome="skipped", reason=_skip_reason(report))
        elif report.failed and rec["outcome"] != "failed":
            rec.update(outcome="error", reason=f"{report.when}: {_first_error(report)}")

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        with open(self.path, "w", encoding="utf-8") as fh:
            json.dump({"exitstatus": int(exitstatus), "collected": self.collected, "tests": self.tests,
                       "collect_errors": self.collect_errors}, fh, indent=1, sort_keys=True)


def _skip_reason(report) -> str:
    lr = report.longrepr
    return str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr or "")


def _first_error(report) -> str:
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    return crash.message.splitlines()[0] if crash and crash.message else "failed"


def pytest_addoption(parser) -> None:
    parser.addoption("--outcomes-json", help="write per-test outcomes to this JSON file")


def pytest_configure(config) -> None:
    path = config.getoption("--outcomes-json")
    if path:
        config.pluginmanager.register(_Recorder(path), "patchkit-outcomes")
