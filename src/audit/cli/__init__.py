"""The commands other than `python -m audit`; their old module names forward here."""
