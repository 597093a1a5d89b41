"""The counterfactual generation method: paired open-ended prompts."""
