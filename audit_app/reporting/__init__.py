"""What pages, the API, CSV and the CLI read: filters, the spend read model, selectors, charts and
the refresh of derived results."""
