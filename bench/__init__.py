"""Benchmarks (not tests): quality and performance numbers written to bench/results/."""

import services  # noqa: F401  (sets OpenMP's wait policy before a benchmark loads torch or faiss)
