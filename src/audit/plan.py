"""`python -m audit.plan` moved to audit.cli.plan; this name keeps the command users learned."""

from audit.cli.plan import main

if __name__ == "__main__":
    raise SystemExit(main())
