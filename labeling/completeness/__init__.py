"""Completeness: how much of what the runs retrieve is judged (pools' progress, Judged@k,
leave-one-run-out), completeness samples and their estimate, with the completeness page."""
