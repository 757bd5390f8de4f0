"""Plumbing every part uses: bulk writes, CSV export, upload handling, request middleware, the
data version and results cache, whether derived results are current, tasks queued by name,
number formatting, query parameters and health checks."""
