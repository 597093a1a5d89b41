"""`python -m audit.methods.dif.compare` moved to audit.cli.dif_compare; this name keeps the
documented command."""

from audit.cli.dif_compare import main

if __name__ == "__main__":
    raise SystemExit(main())
