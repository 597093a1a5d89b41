"""The shared LLM plumbing: the request engine, the response store, preflight and backends."""
