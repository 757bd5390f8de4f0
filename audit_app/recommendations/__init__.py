"""Cheaper places for asynchronous workloads, priced and ranked."""
