"""Benchmarks (not tests): quality and performance numbers written to bench/results/."""
