"""`python -m audit.judge_eval` moved to audit.cli.judge_eval; this name keeps the command users learned."""

from audit.cli.judge_eval import main

if __name__ == "__main__":
    main()
