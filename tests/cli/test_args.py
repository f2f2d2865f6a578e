"""quantile_surrogate.cli._args: each ``type=`` accepts the values its option allows and refuses the rest in one line.

Through the whole command (exit status 2, nothing written): test_init.py and test_fit.py.
"""

import argparse

import pytest

from quantile_surrogate.cli import _args

from tests._messages import exact


@pytest.mark.parametrize("text, value", [("1", 1), ("7", 7), ("+3", 3)])
def test_int_at_least_accepts_integers_from_the_minimum(text, value):
    assert _args.int_at_least(1, "100")(text) == value


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "two", ""])
def test_int_at_least_refuses_the_rest_naming_an_example(text):
    with pytest.raises(argparse.ArgumentTypeError,
                       match=exact(_args.INTEGER_AT_LEAST_MESSAGE, minimum=1, text=text, example="100")):
        _args.int_at_least(1, "100")(text)


@pytest.mark.parametrize("text, value", [("1", 1), ("16", 16), ("-1", -1)])
def test_nonzero_int_is_a_number_of_processes_or_all_cores(text, value):
    assert _args.nonzero_int(text) == value


@pytest.mark.parametrize("text", ["0", "-2", "all", "1.0"])
def test_nonzero_int_refuses_zero_and_other_negatives(text):
    with pytest.raises(argparse.ArgumentTypeError, match=exact(_args.PROCESSES_MESSAGE, text=text)):
        _args.nonzero_int(text)


def test_open_unit_interval_follows_check_target():
    parse = _args.open_unit_interval("0.95")
    assert parse("0.95") == 0.95 and parse("1e-9") == 1e-9
    for text in ("0", "1", "1.5", "-0.2", "nan", "inf", "ninety"):
        with pytest.raises(argparse.ArgumentTypeError,
                           match=exact(_args.UNIT_INTERVAL_MESSAGE, text=text, example="0.95")):
            parse(text)


@pytest.mark.parametrize("text, sizes", [("64", (64,)), ("64,32", (64, 32)), ("1,1,1", (1, 1, 1))])
def test_layer_sizes(text, sizes):
    assert _args.layer_sizes(text) == sizes


@pytest.mark.parametrize("text", ["", "8,0", "a", "8,,4", "-1"])
def test_layer_sizes_refuses_what_is_not_a_positive_integer_list(text):
    with pytest.raises(argparse.ArgumentTypeError, match=exact(_args.LAYER_SIZES_MESSAGE, text=text)):
        _args.layer_sizes(text)


def test_one_line_parser_reports_a_bad_option_in_one_line_with_exit_status_2(capsys):
    parser = _args.OneLineParser(prog="tool")
    parser.add_argument("--n", type=_args.int_at_least(2, "3"))
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["--n", "1"])
    assert done.value.code == 2
    message = "argument --n: " + _args.INTEGER_AT_LEAST_MESSAGE.format(minimum=2, text="1", example="3")
    assert capsys.readouterr().err == _args.USAGE_ERROR_LINE.format(prog="tool", message=message)


def test_int_in_range_accepts_both_ends_and_refuses_the_rest():
    parse = _args.int_in_range(1, 10, "5")
    assert parse("1") == 1 and parse("10") == 10
    for text in ("0", "11", "99999999999999999999", "-1", "2.5", "x"):
        with pytest.raises(argparse.ArgumentTypeError,
                           match=exact(_args.INTEGER_RANGE_MESSAGE, minimum=1, maximum=10, text=text, example="5")):
            parse(text)


def test_seed_is_what_numpy_accepts():
    assert _args.seed("0") == 0 and _args.seed(str(2**32 - 1)) == 2**32 - 1
    for text in ("-1", str(2**32)):
        with pytest.raises(argparse.ArgumentTypeError, match=exact(_args.INTEGER_RANGE_MESSAGE, minimum=0,
                                                                   maximum=_args.SEED_MAX, text=text, example="0")):
            _args.seed(text)
