"""quantile_surrogate.experiments.report: ours beside the paper's, and the gap in standard errors."""

import pandas as pd

from quantile_surrogate.experiments.report import gap_table, markdown_table


def test_tables_put_ours_beside_the_paper():
    summary = pd.DataFrame(dict(tau=[0.01], method=["Q3"], value=[1e-3], mean=[0.9], std=[0.1], n=[100]))
    paper = {"Q3": {0.01: (0.98, 0.10)}}
    table = markdown_table(summary, paper, ("Q3",), (0.01,))
    assert "| 1 | 0.90 ± 0.10 | 0.98 ± 0.10 |" in table
    gaps = gap_table(summary, paper, "Q3", (0.01,))
    assert "| 1 | -0.080 | 0.014 | no |" in gaps  # s.e. = sqrt(0.1^2/100 + 0.1^2/100) = 0.0141; -0.08 < -2 s.e.


def test_a_method_or_tau_without_numbers_is_a_dash_or_skipped():
    summary = pd.DataFrame(dict(tau=[0.01], method=["LR"], mean=[0.5], std=[float("nan")], n=[1]))
    table = markdown_table(summary, {"Q3": {0.05: (0.98, 0.07)}}, ("LR", "Q3"), (0.01,)).splitlines()
    assert table == ["| tau % | LR ours | Q3 ours | Q3 paper |", "|---|---|---|---|", "| 1 | 0.50 ± 0.00 | - | - |"]
    assert gap_table(summary, {"Q3": {0.05: (0.98, 0.07)}}, "Q3", (0.01, 0.05)).count("\n") == 1  # header only
