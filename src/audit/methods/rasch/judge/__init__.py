"""The judge: turns free-text answers into labels, rules first and an LLM for the rest."""
