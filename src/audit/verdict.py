"""`python -m audit.verdict` moved to audit.cli.verdict; this name keeps the command users know."""

from audit.cli.verdict import main

if __name__ == "__main__":
    raise SystemExit(main())
