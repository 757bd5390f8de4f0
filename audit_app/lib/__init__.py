"""Plumbing every part uses: bulk writes, CSV export, upload handling, request middleware, the
results cache, number formatting, query parameters and health checks."""
