"""The unpatched-versus-patched test delta (trees, pytest runs, outcomes, report)."""

# The modes of `make delta`; here, so the CLI can offer them without importing the delta's modules.
MODES = ("source", "container")
