"""The compact constraint text (constraints/_parse.py): the same constraints as rate() and gap(), and one clear error."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quantile_surrogate.constraints import RATES, gap, parse_constraint, rate
from quantile_surrogate.constraints import _parse as P
from quantile_surrogate.constraints._vocabulary import ALIASES

from tests._messages import exact


@pytest.mark.parametrize("text, built, by", [
    ("recall gap <= 0.05 by sex", gap("recall", at_most=0.05), "sex"),
    ("fpr <= 0.05", rate("false_positive_rate", at_most=0.05), None),
    ("recall >= 0.7 in each group by race", rate("recall", at_least=0.7, in_each_group=True), "race"),
    ("positive_rate gap <= 0.05 by region", gap("positive_rate", at_most=0.05), "region"),
    ("  Selection_Rate   GAP<=5%   BY  Home Region ", gap("positive_rate", at_most=0.05), "Home Region"),
    ("TPR>=0.8 by race IN EACH GROUP", rate("recall", at_least=0.8, in_each_group=True), "race"),
    ("true_positive_rate >= 1", rate("recall", at_least=1.0), None),
    ("fpr ≤ 0%", rate("fpr", at_most=0.0), None),
    ("precision >= 0.8", rate("precision", at_least=0.8), None),
    ("ppv >= 70% in each group by sex", rate("precision", at_least=0.7, in_each_group=True), "sex"),
])
def test_examples_parse_to_the_constraints_rate_and_gap_build(text, built, by):
    constraint, column = parse_constraint(text)
    assert constraint == built and constraint.name == built.name
    assert column == by


def spaced(words):
    """``words`` joined by runs of spaces (at least one between words)."""
    return st.lists(st.sampled_from([" ", "  ", "\t"]), min_size=len(words) + 1, max_size=len(words) + 1).map(
        lambda gaps: gaps[0] + "".join(w + g for w, g in zip(words, gaps[1:])))


def random_case(word):
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(word, upper)))


@st.composite
def constraint_texts(draw):
    name = draw(st.sampled_from(RATES + tuple(ALIASES)))
    precision = ALIASES.get(name, name) == "precision"  # a floor, on all rows or in each group
    scope = draw(st.sampled_from(["all", "each_group"] + ([] if precision else ["gap"])))
    floor = scope != "gap" and (precision or draw(st.booleans()))
    if draw(st.booleans()):
        percent = draw(st.integers(0, 100))
        number, bound = f"{percent}%", percent / 100
    else:
        bound = draw(st.floats(0, 1))
        number = repr(bound)
    words = [draw(random_case(name))] + (["gap"] if scope == "gap" else []) + [">=" if floor else "<=", number]
    words += ["in", "each", "group"] if scope == "each_group" else []
    column = draw(st.from_regex(r"[A-Za-z_][A-Za-z0-9_ ]{0,10}[A-Za-z0-9_]|[A-Za-z]", fullmatch=True))
    words += ["by", column] if scope != "all" else []
    text = draw(spaced(words))
    if scope == "gap":
        built = gap(name, at_most=bound)
    else:
        built = rate(name, in_each_group=scope == "each_group", **{"at_least" if floor else "at_most": bound})
    return text, built, column if scope != "all" else None


@given(constraint_texts())
def test_any_rate_bound_and_scope_round_trips(case):
    text, built, by = case
    constraint, column = parse_constraint(text)
    assert (constraint, constraint.name, column) == (built, built.name, by)
    # the canonical name (bounds to 6 significant digits) with its `by` reads back as a constraint of that name
    again, column = parse_constraint(constraint.name + ("" if by is None else f" by {by}"))
    assert (again.name, again.rate, again.scope, column) == (built.name, built.rate, built.scope, by)


@pytest.mark.parametrize("text, problem", [
    ("recall", P.SHAPE_PROBLEM),
    ("recall gap < 0.05 by sex", P.SHAPE_PROBLEM),
    ("recall >= 0.7 by", P.SHAPE_PROBLEM),
    ("", P.SHAPE_PROBLEM),
    ("recall_at_k >= 0.5", P.RATE_PROBLEM.format(rate="recall_at_k", known=P._KNOWN_RATES)),
    ("PPV gap <= 0.1 by sex", P.PRECISION_GAP_PROBLEM),
    ("precision <= 0.9", P.PRECISION_CEILING_PROBLEM),
    ("recall <= abc", P.NUMBER_PROBLEM.format(number="abc")),
    ("recall <= 1.5", P.RANGE_PROBLEM.format(number="1.5")),
    ("fpr <= 150%", P.RANGE_PROBLEM.format(number="150%")),
    ("fpr <= nan", P.RANGE_PROBLEM.format(number="nan")),
    ("recall gap >= 0.1 by g", P.GAP_FLOOR_PROBLEM),
    ("recall gap <= 0.1 in each group by g", P.GAP_EACH_PROBLEM),
    ("recall gap <= 0.1", P.BY_NEEDED_PROBLEM.format(what="a gap")),
    ("recall >= 0.7 in each group", P.BY_NEEDED_PROBLEM.format(what="a rate in each group")),
    ("fpr <= 0.05 by sex", P.BY_UNUSED_PROBLEM.format(column="sex")),
])
def test_a_bad_text_is_one_error_quoting_it_with_the_grammar(text, problem):
    with pytest.raises(ValueError, match=exact(P.PARSE_MESSAGE, text=text, problem=problem)) as error:
        parse_constraint(text)
    assert P.CONSTRAINT_GRAMMAR in str(error.value) and "\n" not in str(error.value)


def test_a_constraint_that_is_not_text_is_a_type_error():
    with pytest.raises(TypeError, match=exact(P.NOT_TEXT_MESSAGE, type_name="RateConstraint")):
        parse_constraint(gap("recall", at_most=0.1))
