"""HTML views of the audit app."""
