"""Quality: inter-annotator agreement, adjudication of disagreements, hidden gold checks and
each annotator's figures, with their pages."""
