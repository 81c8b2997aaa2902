"""make pr's, make dco's and make export's text: the branch, its lint, title and body; the
sign-off verdict; what export wrote."""
from __future__ import annotations

from ..text.table import table

def dco_result(r) -> str:
    head = (f"{r.branch}: {r.checked} commit(s) checked, {r.skipped_merges} merge(s) skipped"
            + (f"; sign-offs added, old tip kept at {r.backup_ref}" if r.fixed else ""))
    if r.ok:
        return head + "; all signed off"
    rows = [(v.commit[:12], v.subject[:50], v.reason) for v in r.violations]
    return head + f"; {len(r.violations)} violation(s):\n" + table(rows, ("commit", "subject", "problem"))


def export_result(r) -> str:
    waiver = (f"\nthe computed waiver edit (recomputed at apply, not part of the set): {r.waiver_patch}"
              if r.waiver_patch else "")
    if r.up_to_date:
        return f"patches/{r.target} is up to date with {r.branch} ({len(r.written)} patch(es), byte-identical)" + waiver
    verb = "differs from" if r.checked_only else "updated from"
    lines = [f"patches/{r.target} {verb} {r.branch}:"]
    lines += [f"  changed: {n}" for n in r.changed] + [f"  removed: {n}" for n in r.removed]
    return "\n".join(lines) + waiver


def lint_line(lint: dict | None) -> str:
    """What the lint a PR was answered from did, in one line: ran or reused, what did not run."""
    if lint is None:
        return "lint: none ran (the coding guidelines item is answered from nothing)"
    if not lint.get("config_found", True):
        return "lint: upstream has no .pre-commit-config.yaml at the ref; no hook ran"
    ran, failing = lint.get("ran", []), {f["hook"] for f in lint.get("failures", [])}
    how = "reused the verdict of an earlier run on exactly these files" if lint.get("memo") else \
        f"ran upstream's hooks on {len(lint.get('paths', []))} file(s)"
    verdict = f"{len(failing)} of {len(ran)} hooks fail ({', '.join(sorted(failing))})" if failing else \
        f"{len(ran)} hooks pass"
    not_run = lint.get("not_run", {})
    return (f"lint: {how}: {verdict}" + (f"; not run here: {', '.join(sorted(not_run))}" if not_run else "")
            + (f"; report: {lint['report']}" if lint.get("report") else ""))


def pr_result(r) -> str:
    if isinstance(r, str):  # the demo's "skipped: ..." when no sign-off identity is set
        return r
    # the sign-off authors the commits unless AUTHOR named another (#33 item 7)
    others = [a for a in r.authors if a.lower() != r.signer.lower()]
    who = (f"signed off by {r.signer}; authored by {', '.join(others)}, as asked" if others
           else f"authored and signed off by {r.signer}")
    lines = [f"branch {r.branch} {r.tip[:12]}: {len(r.messages)} commits, {who}",
             lint_line(r.lint),
             f"body: {r.template}, checked against upstream's title and checklist rules; its last box is left "
             "for the reviewer of record to tick",
             f"written to {r.out_dir}: title.txt, body.md" + (", lint.json" if r.lint else "")
             + f", patches/ ({len(r.patches)})", *(f"note: {n}" for n in r.notes)]
    text = "\n".join(lines) + f"\n\n{r.title}\n\n{r.body}"
    if r.open_with:
        where = "from your fork" if r.fork_known else "from your fork (<you>: your GitHub user)"
        text += f"\nto open it {where}:\n" + "".join(f"  {c}\n" for c in r.open_with)
    return text
