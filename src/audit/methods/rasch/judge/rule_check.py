"""Do the rules read every group's answers alike? The LLM judge re-reads a stratified sample.

The rules label most audit answers, and the gold set measures them only on its own answers. A
rule that misreads one group's answers more often (say, a phrasing the model uses only for one
group) would plant a gap the fit cannot see through, since the per-path rates are shared by
every group. So the score stage also asks the judge panel about a few rule-labelled answers of
every demographic cell (``judge.rule_check_per_group``, drawn with a fixed seed; the rule label
stands, the panel's votes go to the votes table), and the report shows, per level of each
attribute, how often the panel agrees with the rules, and warns when one level's agreement
differs from the rest's beyond chance.

The test: each level against the other levels of its attribute, Fisher's exact test on the 2 x 2
table (agree or not, this level or not), Bonferroni over the levels of the attribute (one test
for a two-level attribute: its two levels' tables are the same table). Exact, because the
samples are small by design; with the default two answers a cell it detects only large
differences (a rule that fails on most of one group's answers), which is what it is for: a cheap
alarm, not a measurement. Too few answers a level and even total disagreement cannot reach
CHECK_ALPHA (two answers of each of two genders: p = 1/3 at best), so each row also carries the
smallest adjusted p its sample sizes allow, and the warnings say when no level can be flagged
instead of leaving a silent alarm. The agreement intervals are Jeffreys intervals.
"""

from __future__ import annotations

import polars as pl
from scipy import stats

from audit.methods.rasch.judge.agreement import majority
from audit.methods.rasch.schemas import JUDGE_FAILED
from audit.stats.intervals import jeffreys_interval

CHECK_ALPHA = 0.05  # family-wise, per attribute
INTERVAL = 0.94
AGREEMENT_COLUMNS = ("attribute", "level", "n", "agree", "agreement", "agreement_low",
                     "agreement_high", "p_adjusted", "p_min_adjusted")


def rule_check_sample(labels: pl.DataFrame, prompts: pl.DataFrame, attributes: list[str],
                      per_group: int, seed: int) -> list[str]:
    """Prompt ids of up to ``per_group`` rule-labelled answers from each demographic cell (model
    x levels of the attributes; personas without a level, such as null personas, are left out)."""
    present = [attribute for attribute in attributes if attribute in prompts.columns]
    if per_group <= 0 or not present:
        return []
    ruled = (labels.filter(pl.col("label_source") == "rule").select("prompt_id")
             .join(prompts.select("prompt_id", "model_name", *present), on="prompt_id")
             .drop_nulls(present))
    if ruled.is_empty():
        return []
    cells = ["model_name", *present]
    sampled = (ruled.sort("prompt_id")
               .with_columns(pl.int_range(pl.len()).shuffle(seed).over(cells).alias("order"))
               .filter(pl.col("order") < per_group))
    return sorted(sampled["prompt_id"].to_list())


def panel_labels(votes: pl.DataFrame, answer_ids: list[str]) -> pl.DataFrame:
    """The panel's majority label for each answer in answer_ids that the panel voted on."""
    chosen = votes.filter(pl.col("answer_id").is_in(answer_ids))
    rows = [{"prompt_id": answer_id,
             "judge_label": majority(dict(zip(group["judge"], group["label"], strict=True))).label}
            for (answer_id,), group in chosen.group_by("answer_id", maintain_order=True)]
    return pl.DataFrame(rows, schema={"prompt_id": pl.String, "judge_label": pl.String})


def rule_agreement(labels: pl.DataFrame, votes: pl.DataFrame, prompts: pl.DataFrame,
                   attributes: list[str]) -> pl.DataFrame:
    """Per attribute level: the rule-labelled answers the panel re-read, how many it agreed on,
    the Jeffreys interval, and the Bonferroni-adjusted Fisher p of this level against the rest."""
    ruled = labels.filter(pl.col("label_source") == "rule").select("prompt_id", "label")
    # A re-read whose judge request failed is no reading: neither agreement nor disagreement.
    checked = (panel_labels(votes, ruled["prompt_id"].to_list()).join(ruled, on="prompt_id")
               .filter(pl.col("judge_label") != JUDGE_FAILED))
    present = [attribute for attribute in attributes if attribute in prompts.columns]
    rows = []
    if checked.is_empty():
        return pl.DataFrame(schema={column: (pl.String if column in ("attribute", "level")
                                             else pl.Float64) for column in AGREEMENT_COLUMNS})
    checked = checked.with_columns(agree=pl.col("judge_label") == pl.col("label")).join(
        prompts.select("prompt_id", *present), on="prompt_id")
    for attribute in present:
        counts = (checked.drop_nulls(attribute).group_by(attribute)
                  .agg(n=pl.len(), agree=pl.col("agree").sum()).sort(attribute))
        total_n, total_agree = int(counts["n"].sum()), int(counts["agree"].sum())
        tests = 1 if counts.height == 2 else counts.height
        for level, n, agree in counts.iter_rows():
            rest_n, rest_agree = total_n - n, total_agree - agree
            p_value = p_min = 1.0
            if rest_n:
                _, p_value = stats.fisher_exact([[agree, n - agree],
                                                 [rest_agree, rest_n - rest_agree]])
                # The most extreme table these sizes allow: the judge disagrees with every rule
                # label of this level and agrees with every other (or the reverse; same p).
                _, p_min = stats.fisher_exact([[0, n], [rest_n, 0]])
            low, high = jeffreys_interval(agree, n, INTERVAL)
            rows.append({"attribute": attribute, "level": str(level), "n": float(n),
                         "agree": float(agree), "agreement": agree / n, "agreement_low": float(low),
                         "agreement_high": float(high),
                         "p_adjusted": min(1.0, float(p_value) * tests),
                         "p_min_adjusted": min(1.0, float(p_min) * tests)})
    return pl.DataFrame(rows, schema={column: (pl.String if column in ("attribute", "level")
                                               else pl.Float64) for column in AGREEMENT_COLUMNS})


def agreement_warnings(agreement: pl.DataFrame, alpha: float = CHECK_ALPHA) -> list[str]:
    """One sentence per attribute whose levels' agreement with the rules differs beyond chance,
    and one for the attributes whose re-read sample is too small for any level to be flagged at
    all (per sample size and smallest p: the smoke run said the same sentence for gender and for
    race)."""
    found = []
    blind: dict[str, list[str]] = {}  # the sentence's reason -> its attributes
    for (attribute,), rows in agreement.group_by("attribute", maintain_order=True):
        # Tables written before p_min_adjusted existed do not say; they get no such sentence.
        # One level has nothing to be compared with: no test, and nothing to say.
        if rows.height < 2:
            continue
        if "p_min_adjusted" in rows.columns and rows["p_min_adjusted"].min() >= alpha:
            reason = (f"with {_sizes(rows['n'])} answers a level, even disagreeing with every "
                      "rule label of one level gives an adjusted p of "
                      f"{rows['p_min_adjusted'].min():.3f} or more (alpha {alpha})")
            blind.setdefault(reason, []).append(attribute)
            continue
        flagged = rows.filter(pl.col("p_adjusted") < alpha).sort("p_adjusted", "agreement")
        if flagged.height:
            level, share, p_value = flagged.select("level", "agreement", "p_adjusted").row(0)
            others = ", ".join(f"{row_level} {row_share:.0%}" for row_level, row_share in
                               rows.select("level", "agreement").iter_rows() if row_level != level)
            found.append(f"the judge agrees with the rules on {share:.0%} of {attribute}={level} "
                         f"answers against {others} for the other levels (Fisher p={p_value:.3f}, "
                         f"Bonferroni): the rules may misread one group's answers; read "
                         "judge_rule_agreement.csv and check the rules (judge/rules.py) on them")
    for reason, attributes in blind.items():
        found.append(f"the judge's re-read of rule labels cannot flag any "
                     f"{' or '.join(attributes)} level: {reason}; raise "
                     "judge.rule_check_per_group to make it an alarm")
    return found


def _sizes(sizes: pl.Series) -> str:
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low}" if low == high else f"{low} to {high}"
