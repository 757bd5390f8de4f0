"""What pages, the API, CSV and the CLI read: filters, the spend read model, selectors and
charts."""
