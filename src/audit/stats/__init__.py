"""Statistics shared by the methods, so each is written once and tested once.

intervals        Jeffreys intervals of rates, highest-density intervals of posterior draws
bootstrap        bootstrap intervals of a mean and of a difference in means
multiple_testing p-values adjusted over a family of tests (Benjamini-Hochberg, Holm, Bonferroni)
differences      the vectorised mean and mean difference that scipy's resampling tests call
"""
