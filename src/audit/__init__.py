"""audit: measure how large language models treat people differently by demographic."""

from audit.logs import silence_library_warnings

# Before any entry point imports arviz, which warns on import.
silence_library_warnings()
