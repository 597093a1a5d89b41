"""`python -m audit.fit` moved to audit.cli.fit; this name keeps the command users learned."""

from audit.cli.fit import main

if __name__ == "__main__":
    raise SystemExit(main())
