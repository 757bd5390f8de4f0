"""What tokens and GPUs cost: provider names, price cards and the catalog, the cost model, GPU pool
attribution, bills and reconciliation."""
