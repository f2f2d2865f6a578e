"""Fixtures of the command-line tests: a small training file and a model fitted on it; a refusal's check."""

import pytest

from tests._cli import assert_one_line_error, make_frame, run, snapshot


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "data.csv"
    make_frame().to_csv(path, index=False)
    return path


@pytest.fixture
def fitted(tmp_path, csv, capsys):
    model = tmp_path / "model.qs"
    code, _, err = run(["fit", csv, "--label", "y", "--target", "0.9", "--max-epochs", "3", "--drop", "id",
                        "--out", model], capsys)
    assert code == 0, err
    return model, err


def assert_refused(tmp_path, capsys, argv, code, *fragments):
    before = snapshot(tmp_path)
    got, out, err = run(argv, capsys)
    assert got == code, err
    assert out == ""
    assert_one_line_error(err, *fragments)
    assert snapshot(tmp_path) == before
