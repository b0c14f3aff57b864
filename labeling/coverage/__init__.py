"""Slice coverage: which slices of a version rest on too few labels or too low a recall, and
the action that pools them, with the coverage page."""
