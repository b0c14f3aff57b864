"""Judging: the annotators' queue (who judges which pair next, leases, undo), their progress
and the blind judging screen."""
