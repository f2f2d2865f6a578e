"""``benchmarks/ranking.py`` (issue 26): its query folds, measures and target lines, and quick runs.

The runs read ``../shared/data/lightgbm_rank`` and are skipped where it is absent; the ``qr`` run is
skipped until ``QuantileRanker`` can be imported.
"""

import numpy as np
import pandas as pd
import pytest

from tests._benchmarks import load

bench = load("ranking")


def needs_data():
    if not bench.has_data():
        pytest.skip(f"the shared data ({bench.DATA_DIR / 'lightgbm_rank'}) is absent")


def test_folds_deal_whole_queries_and_parts_keep_queries_consecutive():
    sizes = np.array([3, 1, 4, 2, 5, 2, 3])
    query = np.repeat(np.arange(sizes.size), sizes)
    fold_of = bench.folds(sizes.size, 3, seed=0)
    assert sorted(np.bincount(fold_of).tolist()) == [2, 2, 3]  # near-equal numbers of queries
    assert not np.array_equal(fold_of, bench.folds(sizes.size, 3, seed=1))  # a seed per repeat
    for fold in range(3):
        rows, part_sizes = bench.part(query, sizes, fold_of != fold)
        test = bench.part(query, sizes, fold_of == fold)[0]
        assert not set(query[rows]) & set(query[test]) and len(rows) + len(test) == sizes.sum()
        assert np.all(np.diff(rows) > 0) and part_sizes.sum() == len(rows)
        # the group sizes describe the part's consecutive runs of one query
        assert np.array_equal(np.repeat(np.arange(part_sizes.size), part_sizes),
                              np.unique(query[rows], return_inverse=True)[1])


def test_measures_binarise_by_the_setting_and_grade_ndcg():
    graded = np.array([3, 0, 0, 1, 2, 0, 0, 0])
    query = np.array([0, 0, 0, 0, 0, 0, 1, 1])  # query 1 has no relevant row: left out
    score = np.arange(8, 0, -1, dtype=float)
    three, two = bench.measures(score, graded, query, "3"), bench.measures(score, graded, query, "2")
    assert three["p_at_5"] == pytest.approx(1 / 5) and three["p_at_10"] == pytest.approx(1 / 6)
    assert two["p_at_5"] == pytest.approx(2 / 5) and two["p_at_10"] == pytest.approx(2 / 6)
    dcg = 7 + 1 / np.log2(5) + 3 / np.log2(6)
    ideal = 7 + 3 / np.log2(3) + 1 / np.log2(4)
    assert three["ndcg_at_5"] == pytest.approx(dcg / ideal) == two["ndcg_at_5"]


def rows_of(values: dict, setting="3"):
    """Rows of the CSV from {method: (p_at_5 per (repeat, fold), ndcg, ms per round, ms per round trained)}."""
    rows = []
    for method, (p5, ndcg, ms, ms_trained) in values.items():
        for i, p in enumerate(p5):
            rows.append(dict(setting=setting, method=method, repeat=i // 2, fold=i % 2, p_at_5=p, p_at_10=0.3,
                             ndcg_at_5=ndcg, fit_seconds=1.0, rounds=100, seconds_per_round=ms / 1e3,
                             rounds_trained=100, seconds_per_round_trained=ms_trained / 1e3, n_train_queries=100,
                             n_test_queries=50))
    return pd.DataFrame(rows)


def test_targets_say_met_or_missed_with_paired_numbers():
    rows = rows_of({"qr": ([0.40, 0.42, 0.38, 0.40], 0.65, 20.0, 8.0),
                    "lambdarank": ([0.41] * 4, 0.70, 5.0, 5.0),
                    "pointwise": ([0.38, 0.40, 0.36, 0.38], 0.60, 4.0, 4.0)})
    lines = "\n".join(bench.targets(rows))
    # differences -0.01, 0.01, -0.03, -0.01: s.e. 0.0082 over folds; repeat means 0 and -0.02: s.e. 0.01
    assert ("- (1) P@5 >= `lambdarank` within one s.e.: qr - lambdarank = -0.0100 ± 0.0082 "
            "(s.e. over repeat means 0.0100): missed") in lines
    assert "- (2) P@5 >= `pointwise` + 0.01: qr - pointwise = +0.0200 ± 0.0000" in lines and ": met" in lines
    assert ("- (3) fit seconds per round of the model <= 2 x `lambdarank`'s: qr 20.00 ms, lambdarank 5.00 ms "
            "(ratio 4.00): missed; per round trained, counting qr's fits on held-out queries: 8.00 ms "
            "(ratio 1.60)") in lines
    assert "- (4) NDCG@5: lambdarank - qr = +0.0500 ± 0.0000" in lines and "lambdarank wins" in lines
    assert bench.targets(rows[rows.method != "qr"]) == ["- targets: no `qr` rows"]
    alone = bench.targets(rows[rows.method == "qr"])
    assert "- (1) P@5 against `lambdarank`: no rows" in alone and len(alone) == 4
    text = bench.summary(rows)
    assert "| qr | 0.400 ± 0.008 (0.010) |" in text and "| 20.00 | -" in text


def test_unknown_names_and_bad_outputs_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "lambdarank,bogus"])
    assert "--methods: unknown ['bogus']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--settings", "4"])
    assert "--settings: unknown ['4']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "pointwise", "--data-dir", str(tmp_path),
                    "--out", str(tmp_path / "a.csv")])
    assert "inside the data folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "pointwise", "--data-dir", str(tmp_path)])
    assert "no lightgbm_rank/rank.train" in capsys.readouterr().err
    (tmp_path / "b.md").write_text("kept")
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "pointwise", "--out", str(tmp_path / "b.csv")])
    assert "exists" in capsys.readouterr().err and (tmp_path / "b.md").read_text() == "kept"


def test_the_data_are_the_readme_s():
    needs_data()
    X, graded, query, sizes = bench.load()
    assert X.shape == (3005, 300) and sizes.size == 201 and np.bincount(graded).tolist() == [645, 1211, 858, 222, 69]
    relevant = graded >= 3
    assert relevant.sum() == 291 and np.unique(query[relevant]).size == 101


def test_quick_run_of_the_baselines(tmp_path, capsys):
    needs_data()
    out = tmp_path / "rows.csv"
    bench.main(["--quick", "--methods", "lambdarank,xendcg,pointwise,xgb_ndcg", "--out", str(out)])
    printed = capsys.readouterr().out
    rows = pd.read_csv(out, dtype={"setting": str})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv", "rows.md"]  # no temporary file left
    assert out.with_suffix(".md").read_text() in printed
    assert len(rows) == 2 * 4 * 2  # settings x methods x folds
    assert (rows.n_train_queries + rows.n_test_queries == 201).all() and set(rows.rounds) == {bench.QUICK_ROUNDS}
    for column in ("p_at_5", "p_at_10", "ndcg_at_5"):
        assert rows[column].between(0, 1).all()
    # a graded method fits once per fold: both settings share its fit, so its seconds and NDCG@5
    graded = rows[rows.method.isin(bench.GRADED)].pivot_table(index=["method", "fold"], columns="setting",
                                                              values=["fit_seconds", "ndcg_at_5"])
    assert np.allclose(graded["fit_seconds"]["3"], graded["fit_seconds"]["2"])
    assert np.allclose(graded["ndcg_at_5"]["3"], graded["ndcg_at_5"]["2"])
    assert (rows[rows.setting == "2"].p_at_5.mean() > rows[rows.setting == "3"].p_at_5.mean())  # more relevant rows
    assert printed.count("- targets: no `qr` rows") == 2 and "P@5 out-of-fold, repeat 0 [95 %]" in printed
    with pytest.raises(SystemExit):  # a second run refuses to overwrite
        bench.main(["--quick", "--methods", "pointwise", "--out", str(out)])


def test_quick_run_of_qr():
    needs_data()
    if not bench.has_ranker():
        pytest.skip("quantile_surrogate.QuantileRanker cannot be imported yet")
    rows = bench.main(["--quick", "--methods", "lambdarank,pointwise,qr"])
    qr = rows[rows.method == "qr"]
    assert len(qr) == 2 * 2 and qr.p_at_5.between(0, 1).all() and (qr.rounds >= bench.QUICK_ROUNDS).all()
    assert (qr.rounds_trained >= qr.rounds).all() and (qr.fit_seconds > 0).all()
    text = bench.summary(rows)
    for number in ("(1)", "(2)", "(3)", "(4)"):
        assert text.count(f"- {number} ") == 2  # one per setting


def test_qr_is_refused_with_a_hint_where_quantile_ranker_is_missing(monkeypatch, capsys):
    needs_data()
    monkeypatch.setattr(bench, "has_ranker", lambda: False)
    with pytest.raises(SystemExit):
        bench.main(["--quick", "--methods", "lambdarank,qr"])
    assert "leave qr out" in capsys.readouterr().err
