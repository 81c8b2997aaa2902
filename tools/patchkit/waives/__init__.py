"""Upstream's waives.txt and test-db: parsing, the two matching levels, and narrowing.

Named after upstream's file so it stays apart from this project's top-level waivers/ data.
"""
