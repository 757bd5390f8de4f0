"""What tokens and GPUs cost: provider names, price cards and the catalog, the cost model, a
window's rollups priced, GPU pool attribution, bills and reconciliation."""
