"""Experiment tracking: the MLflow run of an audit and the parent run of a sweep."""
