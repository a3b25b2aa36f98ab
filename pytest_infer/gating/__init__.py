"""Baseline comparison: the answer to "may we upgrade?", as one rule (``rule.RULE``;
docs/guide/gate.md).

The candidate passes only when every target, test and table row the baseline judged has a
counterpart the candidate judged; nothing is judged worse on the outcome order; no failure worsened
in kind (4xx < 5xx < timeout < death, or another failed assertion); no server died where the
baseline's did not; and every suite's own comparison (figures under their rules, keyword shares, API
drift judged against the reference) finds no regression. A regression is FAIL; anything unpaired or
unjudged is INCOMPLETE, never PASS.
"""
