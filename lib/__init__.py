"""Floor 1: helpers that import no Goldset app (file formats, ids, hashing, bulk writes).

Everything above may import from here; nothing here imports from an app.
"""
