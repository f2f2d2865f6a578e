"""benchmarks/_output.py: the name lists and parameter changes of the command lines, the safe writing of results."""

import pandas as pd
import pytest

from tests._benchmarks import load

output = load("_output")


def test_names_keep_order_drop_repeats_and_refuse_unknown_ones():
    assert output.names("b, a,b", ("a", "b", "c"), "--m") == ["b", "a"]
    with pytest.raises(ValueError, match=r"--m: unknown \['z'\]; choose from a, b"):
        output.names("a,z", ("a", "b"), "--m")
    with pytest.raises(ValueError, match="--m: unknown empty"):
        output.names(" , ", ("a",), "--m")


def test_assignments_read_literals_and_bare_strings_and_refuse_items_without_a_name():
    assert output.assignments(["alpha=0.01", "early_stopping=False", "init=random", "hidden_layer_sizes=(8, 4)",
                               " batch_size =None"], "--set") == {
        "alpha": 0.01, "early_stopping": False, "init": "random", "hidden_layer_sizes": (8, 4), "batch_size": None}
    assert output.assignments([], "--set") == {}
    for bad in ("alpha", "=1"):
        with pytest.raises(ValueError, match=f"--qc-set: expected NAME=VALUE, e.g. --qc-set alpha=0.01; got '{bad}'"):
            output.assignments([bad], "--qc-set")


def test_write_results_leaves_no_file_when_the_move_fails(tmp_path, monkeypatch):
    frame = pd.DataFrame({"x": [1, 2]})
    output.write_results(frame, "# table", tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text() == "x\n1\n2\n" and (tmp_path / "r.md").read_text() == "# table"

    def fail(*_):
        raise KeyboardInterrupt

    import quantile_surrogate._utils.files as files

    monkeypatch.setattr(files.os, "replace", fail)
    with pytest.raises(KeyboardInterrupt):
        output.write_results(frame, "# other", tmp_path / "s.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.md"]  # no s.csv, no temporary file


def test_out_problem_refuses_other_suffixes_existing_files_and_the_data_folder(tmp_path):
    (tmp_path / "old.md").write_text("x")
    data = tmp_path / "data"
    data.mkdir()
    assert output.out_problem(tmp_path / "new.csv", data) is None
    assert "must name a .csv" in output.out_problem(tmp_path / "new.txt")
    assert "exists" in output.out_problem(tmp_path / "old.csv")
    assert "inside the data folder" in output.out_problem(data / "r.csv", data)
