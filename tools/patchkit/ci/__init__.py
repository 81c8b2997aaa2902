"""Past one machine: the GitHub Actions workflow (workflow.py) and one summary of many reports (summary.py)."""
