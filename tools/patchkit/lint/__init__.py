"""make lint: upstream's own pre-commit hooks, at the pinned revs, on the series' files."""
