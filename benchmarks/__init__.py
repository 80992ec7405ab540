"""Benchmarks: `make bench` (python -m benchmarks.run). Figures are ratios measured in one run."""
