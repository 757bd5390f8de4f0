"""Benchmarks run by `make bench`: speed as ratios measured in one run, never timed asserts."""
