"""Benchmarks: each performance target as a ratio measured side by side in one run.

``python -m benchmarks`` (``make bench``) prints the table quoted in README.md.
"""
