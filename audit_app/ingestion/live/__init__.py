"""Live ingestion: records pushed to the server (OTLP/HTTP traces, LiteLLM's generic API
callback) are kept as they arrive (`receive`), then landed by a periodic micro-batch into one
stream upload per source and day (`landing`). Billing exports pulled on a schedule are
`audit_app.ingestion.sources`.
"""
