"""audit: measure how large language models treat people differently by demographic."""
