"""quantile_surrogate.cli._report: evaluate's Markdown, cell by cell (values, intervals, n/a) and the model's line.

The whole report from a file: test_evaluate.py; per group: tests/cross/test_cli_groups.py.
"""

from types import SimpleNamespace

import numpy as np

from quantile_surrogate.cli._report import group_lines, report_text


def saved_model(**changes):
    """The part of a SavedModel that the report reads."""
    fields = dict(delta=None, calibration_size=None, groups=None, model_kind="linear", objective="precision_at_recall",
                  target=0.9, trained_on="/data/train.csv", n_rows=400, version="0.1.0", classes=["no", "yes"])
    return SimpleNamespace(**{**fields, **changes})


def test_group_table_cells_with_intervals_and_n_a():
    rows = [("east", 10, 3, [("precision", 0.5, 0.25, 0.75), ("recall", np.nan, np.nan, np.nan)], 990),
            ("west", 5, 0, [("precision", 0.2, np.nan, np.nan), ("recall", 1.0, 1.0, 1.0)], 0)]
    lines = group_lines("region", rows)
    assert lines[:6] == ["## Per group (column 'region')", "",
                         "| group | rows | positives | precision | recall | resamples used |",
                         "|---|---|---|---|---|---|",
                         "| east | 10 | 3 | 0.5000 [0.2500, 0.7500] | n/a | 990 |",
                         "| west | 5 | 0 | 0.2000 [n/a] | 1.0000 [1.0000, 1.0000] | 0 |"]
    assert lines[6] == "" and lines[-1] == "" and len(lines) == 9


def test_report_names_the_model_the_rows_and_the_guarantee():
    table = [("precision at the deployed threshold", 0.75, 0.5, 0.875)]
    text = report_text(saved_model(), "/m/model.qs", "/d/test.csv", table, 998, 1000, 7, 300, 90, "test_pr.png")
    lines = text.split("\n")
    assert lines[0] == "# model.qs on test.csv"
    assert lines[2] == ("Model: QuantileClassifier (linear), objective precision_at_recall, target 0.9; trained on "
                        "train.csv (400 rows) with quantile-surrogate 0.1.0.")
    assert lines[3] == "Test rows: 300, of which 90 positive (class 'yes')."
    assert "| precision at the deployed threshold | 0.7500 | [0.5000, 0.8750] |" in lines
    assert lines[-2] == "![precision-recall curve](test_pr.png)" and lines[-1] == ""
    assert any(line.startswith("Percentile bootstrap over rows: 998 of 1000 resamples") and "seed 7" in line
               for line in lines)
    guaranteed = report_text(saved_model(delta=0.05, calibration_size=0.3, groups="region"), "m.qs", "t.csv",
                             table, 1, 1, 0, 1, 1, "p.png").split("\n")[2]
    assert (", threshold calibrated on a held-out 30% of the training rows so that the constraint holds with "
            "probability >= 0.95, one threshold per group of column 'region' (the guarantee holds in each "
            "group); trained on") in guaranteed
