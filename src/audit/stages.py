"""`python -m audit.stages` moved to audit.methods.rasch.stages; this name keeps the command users learned."""

from audit.methods.rasch.stages import main

if __name__ == "__main__":
    raise SystemExit(main())
