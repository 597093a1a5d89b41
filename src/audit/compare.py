"""`python -m audit.compare A B`: lives in audit.cli.compare; this name is the command users know."""

from audit.cli.compare import main

if __name__ == "__main__":
    raise SystemExit(main())
