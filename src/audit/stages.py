"""`python -m audit.stages` moved to audit.cli.stages; this name keeps the command users learned."""

from audit.cli.stages import main

if __name__ == "__main__":
    raise SystemExit(main())
