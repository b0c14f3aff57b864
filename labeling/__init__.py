"""Floor 4: pools, judging queues, agreement and adjudication (see ARCHITECTURE.md)."""
