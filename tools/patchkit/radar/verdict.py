"""Each fix's verdict over the range, what to do about it, and the stack's in one line.

A backport is retired when UNTIL has it: its code patches apply there in reverse ("already
upstream at <commit>", the commit since which they do), or its tests pass without it (upstream
took it in another form). Our fix is retired when its own tests, on upstream with the rest of
the stack, give without it what it declares with it ("fixed upstream at <commit>", the commit
they bisect to), or when its code patches apply in reverse; then its docs change is still
wanted while upstream's docs at UNTIL still say one of its pr.docs phrases. Otherwise a fix
whose patches stopped applying cleanly is refreshed (3-way merges it) or reworked, and one
that still applies is still needed. A status the fix already had at SINCE (no first commit in
the range) is said as "at SINCE or before".
"""
from __future__ import annotations

from collections.abc import Sequence

from ..amsession import KEEP
from ..delta import upstreamfix
from ..errors import Hint
from ..git import Repo
from ..model import BACKPORT, Fix, PatchSet
from . import scan

# The stack's action is its most pressing fix's.
URGENCY = ("rework", "refresh", "retire", "nothing")


def conclude(fx, res, ps: PatchSet, fix: Fix, repo: Repo, cands, at_since: Sequence[scan.Status],
             at_until: Sequence[scan.Status], several: bool) -> None:
    """Fill fx (a FixRadar of res, a RadarResult) with the fix's verdict, to do, hints and the
    exit's meaning, from its patches' statuses at SINCE and UNTIL (in the fix's order)."""
    where = (f"fix {fix.id} in " if several else "") + f"patches/{ps.root.name}/patchset.yaml"
    # The words: the set's, where the stack is one fix (as before stacks); the fix's, by its id, in a stack.
    whose, the_fix, declares, without = ((f"fix {fix.id}'s", "it", "it declares", "it") if several else
                                         ("the set's", "the fix", "the set declares", "the set"))
    by_sha = {c.sha: c for c in cands}
    since, until = res.since["commit"], res.until["commit"]
    order = [c.sha for c in cands]

    def said(sha: str | None) -> str:
        if sha is None:
            return f"SINCE {since[:12]} or before"
        c = by_sha[sha]
        return f"{c.short} ({c.date[:10]}, {c.subject})"

    def first_of(shas) -> str | None:  # the earliest of these commits of the range (None: SINCE)
        return min(shas, key=lambda s: -1 if s is None else order.index(s))

    def last_of(shas) -> str | None:  # the latest of these commits of the range (None: SINCE)
        return max(shas, key=lambda s: -1 if s is None else order.index(s))

    t = fx.tests
    fixed_at = next((c for c in t["changes"] if c["fixed"]), None)
    def kinds(statuses: Sequence[scan.Status]) -> list[str]:  # an offset is no change of status
        return [k.kind if k.kind != scan.OFFSET else scan.APPLIES for k in statuses]

    fx.changed = t["since"]["fixed"] != t["until"]["fixed"] or kinds(at_since) != kinds(at_until)
    code = [s for s, p in zip(fx.patches, fix.patches) if not p.tests_only] or list(fx.patches)
    names = [p.name for p in fix.patches]
    statuses = {p.name: scan.series.APPLIED if s.kind in (scan.APPLIES, scan.OFFSET) else s.kind
                for p, s in zip(fix.patches, at_until)}

    if fix.kind == BACKPORT and all(s.until == scan.series.UPSTREAM for s in code):
        # Since when UNTIL has all of it: the last of its code patches to apply in reverse.
        at = last_of([s.first_upstream for s in code])
        fx.action, fx.upstream_at = "retire", at or since
        fx.verdict = (f"already upstream at {said(at)}: {'its patches apply' if len(code) > 1 else 'its patch applies'} "
                      f"there in reverse, so {res.until['rev']} has it")
        fx.todo = _drop(fix, names, where)
        return
    if t["until"]["fixed"]:
        fx.action = "retire"
        if t["since"]["fixed"] or not fixed_at:  # already at SINCE: the commit that fixed it is older than the range
            fx.upstream_at = since
            fx.verdict = f"fixed upstream at {said(None)}: {whose} tests give there without {the_fix} what {declares} with it"
            unknown = (f"it is {since[:12]} or older: radar from an earlier SINCE, where the tests still fail "
                       f"without {without}, names it")
            fx.hints = [Hint.choose("since", also=f"(an earlier commit of the ref, where {whose} tests still fail "
                                    f"without it: radar then names the commit that fixed the bug)")]
            commit = ""
        else:
            at = said(fixed_at["commit"]) if fixed_at["exact"] else \
                f"one of the commits after {fixed_at['after'][:12]} up to {said(fixed_at['commit'])}"
            fx.upstream_at = fixed_at["commit"] if fixed_at["exact"] else ""
            fx.verdict = f"fixed upstream at {at}: {whose} tests give without {the_fix} what {declares} with it"
            unknown = f"one of the commits after {fixed_at['after'][:12]} up to {fixed_at['commit'][:12]}"
            commit = fixed_at["commit"] if fixed_at["exact"] else ""
        if fix.kind == BACKPORT:  # upstream took it in another form: its patches do not apply in reverse
            fx.verdict += " (in another form: its patches do not apply in reverse)"
            fx.todo = _drop(fix, names, where, commit)
            return
        retire, keep, docs = upstreamfix.disposition(ps, repo, until, statuses, fix)
        fx.todo = upstreamfix.advice(where, retire, keep, docs, commit, unknown=unknown)
        _docs(fx, repo, until, res.until["rev"], fix, docs)
        return
    ups = [s for s in fx.patches if s.until == scan.series.UPSTREAM]
    broken = [s for s in fx.patches if s.until in (scan.series.CONFLICT, scan.series.THREEWAY)]
    whole = all(s.until == scan.series.UPSTREAM for s in code)
    if ups and (whole or not broken):  # a patch upstream has, the rest applying: it is retired all the same
        first = first_of([s.first_upstream for s in ups])
        fx.action, fx.upstream_at = "retire", (last_of([s.first_upstream for s in code]) or since) if whole else ""
        fx.verdict = "already upstream: " + "; ".join(f"{s.name} since {said(s.first_upstream)}" for s in ups) \
            + ("" if whole else f"; the rest still applies at {res.until['rev']}")
        fx.todo = (f"retire {', '.join(s.name for s in ups)}: drop {'them' if len(ups) > 1 else 'it'} from the "
                   f"series and record {first[:12] if first else f'the commit that landed it ({since[:12]} or older)'} in "
                   f"status.applied_upstream of {where}")
        _docs(fx, repo, until, res.until["rev"], fix, ())
        return
    # Conflicting already at SINCE: radar's 3-way merges from SINCE, so where it stopped and
    # whether 3-way merges it lie before the range.
    before = [s for s in broken if s.first_break is None and s.until == scan.series.CONFLICT]
    if before:
        fx.action = "rework"
        fx.verdict = "; ".join(
            f"{s.name} already does not apply cleanly at {said(None)} (where it stopped, and whether 3-way "
            f"merges it, is older than the range)" if s in before else
            f"{s.name} stops applying cleanly at {said(s.first_break)}" for s in broken)
        fx.todo = ("find where it stopped applying: radar from an earlier SINCE, where the set still applied, "
                   "names the commit and whether 3-way merges it; then refresh the patch with a 3-way merge "
                   "or rework it by hand")
        fx.hints = [Hint.choose("since", also="(an earlier commit of the ref, where the set still applied)"), _by_hand(ps)]
        return
    if broken:
        first = first_of([s.first_break for s in broken])
        against = first[:12] if first else f"{until[:12]} ({res.until['rev']})"
        if all(s.until == scan.series.THREEWAY for s in broken):
            fx.action = "refresh"
            fx.verdict = "; ".join(f"{s.name} stops applying cleanly at {said(s.first_break)}; 3-way merges it"
                                   for s in broken)
            fx.todo = (f"refresh the patch at {against} with THREEWAY=1: apply with a 3-way merge, "
                       f"then export the branch back into patches/{ps.root.name}")
            fx.hints = [Hint("export", (("target", ps.target),), first=(Hint.run("apply", target=ps.target, threeway=True),))]
        else:
            fx.action = "rework"
            fx.verdict = "; ".join(f"{s.name} stops applying cleanly at {said(s.first_break)}"
                                   + ("; 3-way merges it" if s.until == scan.series.THREEWAY else
                                      "; 3-way merged it there but no longer does" if s.threeway_at_break else
                                      "; 3-way does not merge it either")
                                   for s in broken)
            fx.todo = (f"rework the patch by hand against {against}, where it first stopped applying; upstream "
                       f"has not fixed the bug (its tests still fail without {without}): THREEWAY=keep leaves the "
                       f"conflict in the files, as a git am -3 session to resolve")
            fx.hints = [_by_hand(ps)]
        return
    offsets = [s for s in fx.patches if s.until.startswith(scan.OFFSET)]
    fx.action = "nothing"
    if offsets:
        fx.verdict = "nothing to do: " + "; ".join(f"{s.name} applies at an offset ({s.until.split(' ', 1)[1]}) "
                                                   f"since {said(s.first_offset)}" for s in offsets)
        fx.todo = "nothing; the next make apply and make export record the new line numbers"
    elif kinds(at_since) != kinds(at_until):
        # Every patch applies at UNTIL, and some did not at SINCE: the series was made anew after
        # SINCE (refreshed, a conflict resolved) on a later commit than its recorded base.
        was = [(s, a) for s, a in zip(fx.patches, at_since) if a.kind not in (scan.APPLIES, scan.OFFSET)]
        fx.verdict = (f"nothing to do: every patch applies at {res.until['rev']}; at SINCE {since[:12]} "
                      + ", ".join(f"{s.name} did not ({a.kind})" for s, a in was)
                      + ": the series was made anew after SINCE, on a later commit than its upstream.base")
        fx.todo = (f"nothing; make export of the branch the series was made on records that commit as "
                   f"upstream.base in {where}, and radar starts there")
    else:
        status, paths = ("its status", "the stack's paths") if several else ("the set's status", "its paths")
        fx.verdict = (f"nothing to do: no commit of {since[:12]}..{until[:12]} changes {status} "
                      f"({res.candidates} of {res.commits_in_range} commits touch {paths})")
        fx.todo = "nothing"
    if t["since"]["fixed"] and t["until"]["fixed"] is False:
        fx.verdict += (f"; {whose} tests passed without {without} at SINCE, and fail without {without} again at "
                       f"{res.until['rev']}: upstream took its own fix back")
    if t["until"]["fixed"] is False and t["until"]["counts"] not in ("", "-"):
        fx.verdict += (f"; still needed: {whose} tests still fail without {without} at {res.until['rev']} "
                       f"({t['until']['counts']})")


def _by_hand(ps: PatchSet) -> Hint:
    """make apply THREEWAY=keep: the conflict left as a git am -3 session, its next steps printed."""
    return Hint("apply", (("target", ps.target), ("threeway", KEEP)), "resolve the conflict by hand; "
                "it prints the next steps")


def _drop(fix: Fix, names: Sequence[str], where: str, commit: str = "") -> str:
    """What to do with a backport upstream has: drop it from the stack."""
    return (f"retire fix {fix.id}: drop it from the stack ({', '.join(names)}, and its entry under fixes: of "
            f"{where.split(' in ')[-1]})" + (f"; upstream has it since {commit[:12]}" if commit else ""))


def _docs(fx, repo: Repo, until: str, rev: str, fix: Fix, kept: Sequence[tuple[str, str]]) -> None:
    """Our fix whose code is retired: is its docs change still wanted? Yes while a page under
    docs/ at UNTIL still says one of its pr.docs phrases (the behaviour its change describes)."""
    if fix.kind == BACKPORT or not fix.pr.docs:
        return
    tree = repo.commit_info(until).tree
    [found] = repo.files_at([tree], ["docs"])
    repo.prefetch(sha for _mode, sha in found.values())  # one batch, not a fetch per page git grep reads
    pages: dict[str, list[str]] = {}
    for phrase in fix.pr.docs:
        for page in repo.grep_files(until, [phrase], "docs"):
            pages.setdefault(page, []).append(phrase)
    fx.docs = {"phrases": list(fix.pr.docs), "pages": dict(sorted(pages.items())), "wanted": bool(pages)}
    covered = {page for _name, page in kept}
    rest = {p: ph for p, ph in pages.items() if p not in covered}
    if rest:
        fx.todo += ("; its docs change is still wanted: " + "; ".join(
            f"{page} still says " + ", ".join(f'"{p}"' for p in ph) for page, ph in rest.items())
            + f" at {rev} (its pr.docs phrases)")
    elif not pages:
        fx.todo += (f"; its docs change is no longer wanted: no page under docs/ says any of its pr.docs phrases "
                    f"at {rev}")


def combine(res) -> None:
    """The stack's verdict from its fixes': changed if any changed, the most pressing action,
    one line of verdicts and of things to do ("fix <id>: ..." each where there are several)."""
    fixes = res.fixes
    res.changed = any(f.changed for f in fixes)
    res.action = min((f.action for f in fixes), key=URGENCY.index, default="nothing")
    if len(fixes) == 1:
        res.verdict, res.todo = fixes[0].verdict, fixes[0].todo
    else:
        res.verdict = "; ".join(f"fix {f.id}: {f.verdict}" for f in fixes)
        res.todo = "; ".join(f"fix {f.id}: {f.todo}" for f in fixes)
    res.hints = list(dict.fromkeys(h for f in fixes for h in f.hints))
