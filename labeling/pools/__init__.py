"""Pools: the judging orders (strategies), the union of runs' tops, building and extending
pools, and each query's window of queued tasks."""
