"""`python -m audit.ingest`: the command lives in audit.cli.ingest; this name is the one users type."""

from audit.cli.ingest import main

if __name__ == "__main__":
    main()
