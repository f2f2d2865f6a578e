"""The experiment runner: the vectorised heads equal the library's loss, and the command runs end to end."""

import argparse
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from quantile_surrogate.experiments import PROTOCOLS, run_precision_at_k, summarise
from quantile_surrogate.cli import _reproduce as command
from quantile_surrogate.experiments._heads import head_losses, train_linear_heads
from quantile_surrogate.experiments.report import gap_table, markdown_table
from quantile_surrogate.losses import precision_at_rate_loss


@pytest.mark.parametrize("form", ["fp", "tp"])
def test_each_head_has_the_library_loss_and_gradient(form):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(80, 5, generator=gen, dtype=torch.float64)
    y = (torch.rand(80, generator=gen) < 0.3).long()
    W = torch.randn(5, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    penalized = (y == 0) if form == "fp" else (y == 1)
    losses, thresholds = head_losses(X @ W, penalized, rate=0.1, bandwidth=0.05, form=form)
    losses.sum().backward()
    for h in range(4):
        w = W.detach()[:, h].clone().requires_grad_()
        out = precision_at_rate_loss(X @ w, y, 0.1, form=form, bandwidth=0.05, return_threshold=True)
        out.loss.backward()
        torch.testing.assert_close(losses[h], out.loss)
        torch.testing.assert_close(thresholds[h], out.threshold)
        torch.testing.assert_close(W.grad[:, h], w.grad)


def test_heads_are_independent_and_seeded():
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(60, 3, generator=gen, dtype=torch.float64)
    y = (X[:, 0] + 0.5 * torch.randn(60, generator=gen, dtype=torch.float64) > 1).long()
    kw = dict(rate=0.1, bandwidth=0.05, max_epochs=30)
    W2, b2, l2 = train_linear_heads(X, y, weight_decays=[1e-3, 1e-1], seeds=[5, 6], **kw)
    W1, b1, l1 = train_linear_heads(X, y, weight_decays=[1e-1], seeds=[6], **kw)
    torch.testing.assert_close(W2[:, 1], W1[:, 0])  # a head does not see its neighbours
    torch.testing.assert_close(l2[1], l1[0])
    assert not torch.allclose(W2[:, 0], W2[:, 1])


def test_summarise_paper_selection_picks_the_best_mean_test_value():
    rows = [dict(split=s, tau=0.1, method="LR", parameter="C", value=v, validation=np.nan, test=t)
            for s in range(3) for v, t in ((1.0, 0.5), (10.0, 0.7 + 0.01 * s))]
    summary = summarise(pd.DataFrame(rows))
    assert summary.value.tolist() == [10.0] and summary["mean"].tolist() == pytest.approx([0.71])


def test_tables_put_ours_beside_the_paper():
    summary = pd.DataFrame(dict(tau=[0.01], method=["Q3"], value=[1e-3], mean=[0.9], std=[0.1], n=[100]))
    paper = {"Q3": {0.01: (0.98, 0.10)}}
    table = markdown_table(summary, paper, ("Q3",), (0.01,))
    assert "| 1 | 0.90 ± 0.10 | 0.98 ± 0.10 |" in table
    gaps = gap_table(summary, paper, "Q3", (0.01,))
    assert "| 1 | -0.080 | 0.014 | no |" in gaps


QUICK_IONOSPHERE = command.quick_protocol(PROTOCOLS["ionosphere"])


def small_protocol():
    return dataclasses.replace(QUICK_IONOSPHERE, taus=(0.05, 0.19), max_epochs=60)


@pytest.mark.parametrize("select", ["cv", "paper"])
def test_runner_on_ionosphere(select):
    results = run_precision_at_k(small_protocol(), n_splits=2, select=select, folds=2, n_jobs=1, verbose=False)
    assert set(results.method) == {"LR", "AATP", "Kar", "Q1", "Q3"}
    assert results.test.between(0, 1).all()
    per_split = results.groupby(["tau", "method", "split"]).size()
    assert (per_split == (1 if select == "cv" else 2)).all()  # two grid values in the quick protocol
    if select == "cv":
        assert results.validation.notna().all()


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


def test_label_evidence_prefers_class_g_on_ionosphere():
    from quantile_surrogate.experiments.labels import candidate_labels, label_evidence

    evidence = label_evidence("ionosphere", n_splits=3, grid=(0.1,))
    assert evidence.label.iloc[0] == "class g positive"
    assert evidence.set_index("label").loc["class b positive", "P@5%"] == 1.0
    assert len(candidate_labels("housing")) == 5
    with pytest.raises(ValueError, match="`dataset`"):
        candidate_labels("cover")
