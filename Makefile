# Every target is one line: the patchkit CLI with its variables. See README.md.
PYTHON     ?= python3
BUILD      ?= build
TRTLLM     ?= main
TRTLLM_SRC ?= $(BUILD)/trtllm-$(TRTLLM)
TRTLLM_URL ?=
THREEWAY   ?=
DEST       ?= $(BUILD)/miniature
VENV       ?= .venv
SETUP      ?= $(VENV)/.installed
PATCHKIT   ?= $(VENV)/bin/patchkit
PYTEST     ?= $(VENV)/bin/python -m pytest
# The CLI says its hints as make variables (THREEWAY=1) when make runs it, as flags otherwise.
export PATCHKIT_VIA_MAKE = 1

# Variables reach the CLI through the environment ("$$VAR"), never pasted into the shell line:
# BRANCH='x;touch /tmp/p' or SIGNOFF with quotes, backticks or $$(...) stays one argument.
export BASE BRANCH BUILD BUILDER DEST FIX MODE REGISTRY REPORT SIGNOFF THREEWAY TLS_VERIFY TRTLLM TRTLLM_SRC TRTLLM_URL VARIANT

.PHONY: setup demo test apply unapply check miniature targets bench delta waivers pr dco export check-export container container-push
setup: $(SETUP)
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install -q --disable-pip-version-check -e . && touch $@

demo: $(SETUP) ; $(PATCHKIT) demo --workdir="$$BUILD/demo" $(if $(SIGNOFF),--signoff="$$SIGNOFF")
test: $(SETUP) ; $(PYTEST) -q
apply: $(SETUP) ; $(PATCHKIT) apply --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(if $(TRTLLM_URL),--url="$$TRTLLM_URL") $(if $(THREEWAY),--threeway)
unapply: $(SETUP) ; $(PATCHKIT) unapply --target="$$TRTLLM" --src="$$TRTLLM_SRC"
check: $(SETUP) ; $(PATCHKIT) check --src="$$TRTLLM_SRC"
VARIANT    ?=
miniature: $(SETUP) ; $(PATCHKIT) miniature --dest="$$DEST" $(if $(VARIANT),--variant="$$VARIANT")
targets: $(SETUP) ; $(PATCHKIT) targets
bench: $(SETUP) ; $(PATCHKIT) bench --workdir="$$BUILD/bench"
MODE       ?=
REPORT     ?=
delta: $(SETUP) ; $(PATCHKIT) delta --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(if $(TRTLLM_URL),--url="$$TRTLLM_URL") $(if $(MODE),--mode="$$MODE") $(if $(REPORT),--report="$$REPORT") $(if $(BASE),--base="$$BASE") $(if $(BUILDER),--builder="$$BUILDER")
waivers: $(SETUP) ; $(PATCHKIT) waivers --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(if $(TRTLLM_URL),--url="$$TRTLLM_URL")
BRANCH     ?= overlay/$(TRTLLM)
SIGNOFF    ?=
FIX        ?=
pr: $(SETUP) ; $(PATCHKIT) pr --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(if $(REPORT),--report="$$REPORT") $(if $(SIGNOFF),--signoff="$$SIGNOFF")
dco: $(SETUP) ; $(PATCHKIT) dco --src="$$TRTLLM_SRC" --branch="$$BRANCH" $(if $(FIX),--fix) $(if $(SIGNOFF),--signoff="$$SIGNOFF")
export: $(SETUP) ; $(PATCHKIT) export --target="$$TRTLLM" --src="$$TRTLLM_SRC" --branch="$$BRANCH"
check-export: $(SETUP) ; $(PATCHKIT) check-export --target="$$TRTLLM" --src="$$TRTLLM_SRC" --branch="$$BRANCH"
BUILDER    ?=
BASE       ?=
REGISTRY   ?=
TLS_VERIFY ?= true
container: $(SETUP) ; $(PATCHKIT) container --target="$$TRTLLM" --src="$$TRTLLM_SRC" $(if $(TRTLLM_URL),--url="$$TRTLLM_URL") $(if $(BASE),--base="$$BASE") $(if $(BUILDER),--builder="$$BUILDER")
container-push: $(SETUP) ; $(PATCHKIT) container-push --target="$$TRTLLM" --registry="$$REGISTRY" --tls-verify="$$TLS_VERIFY" $(if $(BASE),--base="$$BASE") $(if $(BUILDER),--builder="$$BUILDER")
