"""`quantile-surrogate evaluate` (cli/_evaluate.py) on small files, through cli.main.

Every bad input ends in exit status 1 (bad data) or 2 (bad option), one line on stderr without a
traceback, and no file created, changed or left behind. Output paths: tests/cross/test_cli_outputs.py.
"""

import numpy as np
import pandas as pd
import pytest
from quantile_surrogate.cli import _args, _file_io
from quantile_surrogate.cli.model_file import load_model

from tests._cli import make_frame, run
from tests.cli.conftest import assert_refused


def test_evaluate_writes_report_and_plot(fitted, tmp_path, capsys):
    model, _ = fitted
    test = tmp_path / "test.csv"
    make_frame(300, seed=5).to_csv(test, index=False)
    out_dir = tmp_path / "eval"
    code, out, err = run(["evaluate", model, test, "--out-dir", out_dir, "--bootstrap", "200"], capsys)
    assert code == 0, err
    report = (out_dir / "test_report.md").read_text()
    assert report.strip() == out.strip()
    for name in ("precision at the deployed threshold", "recall at the deployed threshold",
                 "predicted positive rate at the deployed threshold", "precision at recall 0.9 (the objective)"):
        assert f"| {name} |" in report
    assert (out_dir / "test_pr_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the numbers are the exact metrics on the file, and the bootstrap is seeded
    saved = load_model(model)
    frame = pd.read_csv(test)
    score = saved.decision_function(_file_io.features(frame, saved.schema, test))
    recall = np.mean(score[(frame.y == "yes").to_numpy()] > 0)
    assert f"| recall at the deployed threshold | {recall:.4f} |" in report
    code, again, _ = run(["evaluate", model, test, "--out-dir", out_dir, "--bootstrap", "200"], capsys)
    assert again == out
    assert sorted(p.name for p in out_dir.iterdir()) == ["test_pr_curve.png", "test_report.md"]



@pytest.mark.parametrize("argv, option, message", [
    (["--seed", "-1"], "--seed", _args.INTEGER_RANGE_MESSAGE.format(minimum=0, maximum=_args.SEED_MAX, text="-1",
                                                                    example="0")),
    (["--bootstrap", "99999999999999999999"], "--bootstrap",
     _args.INTEGER_RANGE_MESSAGE.format(minimum=1, maximum=_args.BOOTSTRAP_MAX, text="99999999999999999999",
                                        example="1000")),
    (["--bootstrap", "0"], "--bootstrap",
     _args.INTEGER_RANGE_MESSAGE.format(minimum=1, maximum=_args.BOOTSTRAP_MAX, text="0", example="1000")),
])
def test_bad_evaluate_options_exit_2_in_one_line_naming_the_option_and_its_range(fitted, tmp_path, capsys, argv,
                                                                                  option, message):
    model, _ = fitted
    make_frame(50, seed=3).to_csv(tmp_path / "test.csv", index=False)
    line = _args.USAGE_ERROR_LINE.format(prog="quantile-surrogate evaluate", message=f"argument {option}: {message}")
    assert_refused(tmp_path, capsys, ["evaluate", model, tmp_path / "test.csv", "--out-dir", tmp_path / "r", *argv],
                   2, line.strip())
