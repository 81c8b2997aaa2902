"""Preparing the upstream PR: title, body, signed-off branch, DCO check and fix, export."""
