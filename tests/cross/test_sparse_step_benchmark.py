"""``benchmarks/sparse_step.py`` in quick mode: its rows time the same gradient, each the path it names."""

import pytest
import torch
from torch import nn

from quantile_surrogate.training import _sparse_linear
from tests._benchmarks import load


@pytest.fixture(scope="module")
def bench():
    return load("sparse_step")


@pytest.mark.parametrize("outputs", [1, 64])
def test_every_row_computes_torch_s_gradient_by_the_path_it_names(bench, outputs):
    X = bench.batch(300, 200, 5, "cpu")
    upstream = torch.randn(300, outputs, generator=torch.Generator().manual_seed(0))
    ours, theirs = _sparse_linear.Linear(200, outputs), nn.Linear(200, outputs)
    theirs.load_state_dict(ours.state_dict())
    bench.step_of(theirs, X, upstream)()
    expected = theirs.weight.grad.clone()
    first = bench.step_of(ours, X, upstream, first_pass=True)
    for _ in range(2):  # each step is the first for this batch
        first()
        torch.testing.assert_close(ours.weight.grad, expected, rtol=1e-5, atol=1e-6)
    again = bench.batch(300, 200, 5, "cpu")
    for _ in range(2):  # the "kept transpose" row's batch: on the CPU the same product, nothing kept
        bench.step_of(ours, again, upstream)()
        torch.testing.assert_close(ours.weight.grad, expected, rtol=1e-5, atol=1e-6)
    assert getattr(again, _sparse_linear.TRANSPOSE, None) is None


def test_batches_have_the_stated_shape_and_entries(bench):
    X = bench.batch(50, 40, 6, "cpu", seed=3)
    assert X.shape == (50, 40) and X.col_indices().dtype == torch.int32 and X.values().dtype == torch.float32
    assert torch.equal(X.crow_indices(), torch.arange(0, 301, 6, dtype=torch.int32))


def test_quick_run_writes_its_table_once(bench, tmp_path, monkeypatch):
    monkeypatch.setitem(bench.BATCHES, "text", (2000, 500, 12))
    out = tmp_path / "step.md"
    bench.main(["--quick", "--out", str(out)])
    text = out.read_text()
    assert "| text (2,000 x 500, 12/row) | 1 |" in text and "ours, kept transpose" in text
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--out", str(out)])
    assert out.read_text() == text
