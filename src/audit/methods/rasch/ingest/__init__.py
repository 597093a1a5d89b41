"""Answers collected elsewhere as a Rasch audit (`python -m audit.ingest`): formats.py reads the
file, tables.py turns it into prompts, responses and labels, stages.py runs them as the method's
design, respond and score stages."""
