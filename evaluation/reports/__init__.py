"""What the result pages show, read and assembled here so the views only fetch and render:
one module per page family, and the seed's targets (targets.py) they are held to.

Units: every score is a fraction in [0, 1] tied to one version and one metric name (whose
`@k` is its cut-off); every difference between two scores is in points (hundredths).
Nothing here writes.
"""
