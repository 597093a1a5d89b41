"""The Rasch report: figures, numbers, sentences, the HTML page and the MLflow run.

This package holds the `report` role that report.py holds in the other methods (a report.py next
to this folder could not be imported: the package takes the name). The report stage is
`publish.publish_from_files`; the findings the run's summary states are `findings.findings`; the
figures (plots.py), the numbers (metrics.py, summary.py), the sentences (reading.py) and the page
(html.py) are pure functions of tables. Nothing is imported here, so that importing one light
module of the package does not load matplotlib and the backends with publish.py.
"""
