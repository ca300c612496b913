"""Benchmark harness (run as `python -m benchmarks.<name>`); results are kept under results/."""
