"""`python -m audit.iat` moved to audit.cli.iat; this name keeps the command users learned."""

from audit.cli.iat import main

if __name__ == "__main__":
    raise SystemExit(main())
