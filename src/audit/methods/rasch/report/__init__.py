"""The Rasch report: figures, numbers, sentences, the HTML page and the MLflow run."""
