"""`quantile-surrogate reproduce` (cli/_reproduce.py): the paper's experiments, run quick, write a table and a plot."""

import argparse
import dataclasses

import pandas as pd

from quantile_surrogate.cli import _reproduce as command
from quantile_surrogate.experiments import PROTOCOLS

from tests.experiments._protocols import small_protocol


def test_quick_protocol_keeps_two_values_per_grid_and_shortens_training():
    quick = command.quick_protocol(PROTOCOLS["ionosphere"])
    assert quick.grids["LR"] == ("C", (0.1, 100.0)) and quick.grids["Q"] == ("weight_decay", (1e-4, 1e-1))
    assert (quick.n_splits, quick.aatp_candidates, quick.max_epochs) == (3, 8, 250)
    assert command.quick_protocol(PROTOCOLS["cover"]).grids["LR"] == ("C", (1.0,))  # a one-value grid is kept
    assert dataclasses.replace(quick, taus=(0.05, 0.19), max_epochs=60) == small_protocol()


def test_reproduce_command_quick(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(command, "quick_protocol", lambda protocol: small_protocol())
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(["reproduce", "ionosphere", "--quick", "--splits", "1", "--jobs", "1",
                              "--out", str(tmp_path)])
    assert args.handler(args) == 0
    table = (tmp_path / "table.md").read_text()
    assert "Q3 paper" in table and "0.98 ± 0.07" in table  # the paper's Q3 at tau = 5 %
    assert (tmp_path / "precision_at_tau.png").read_bytes()[:4] == b"\x89PNG"
    assert len(pd.read_csv(tmp_path / "results.csv")) == 2 * 5
    assert "Wrote" in capsys.readouterr().out


def test_synthetic_command_quick(tmp_path):
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(["reproduce", "synthetic", "--quick", "--splits", "1", "--jobs", "1", "--out", str(tmp_path)])
    assert args.handler(args) == 0
    results = pd.read_csv(tmp_path / "results.csv")
    q = results[(results.method == "Q") & (results.recall == 0.9)].test.mean()
    lr = results[(results.method == "LR") & (results.recall == 0.9)].test.mean()
    assert q > lr + 0.1
    assert (tmp_path / "synthetic.png").exists()
