"""The Rasch audit: design, respond, judge, IRT fit, report."""
