"""`python -m audit.params` moved to audit.cli.params; this name keeps the command users learned."""

from audit.cli.params import main

if __name__ == "__main__":
    raise SystemExit(main())
