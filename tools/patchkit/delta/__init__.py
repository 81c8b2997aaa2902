"""The unpatched-versus-patched test delta (trees, pytest runs, outcomes, report)."""
