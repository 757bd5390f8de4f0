"""Demo data for `make run`: generated traffic, bills and the seed."""
