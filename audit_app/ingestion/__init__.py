"""From a file to rows: the format registry, the token-log and billing readers, workload identity,
hourly and daily rollups, latency histograms, uploads, the ingest itself (landing, fan-out,
requeue) and billing supersession."""
