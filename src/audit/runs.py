"""`python -m audit.runs` moved to audit.cli.runs; this name keeps the command users learned."""

from audit.cli.runs import main

if __name__ == "__main__":
    raise SystemExit(main())
