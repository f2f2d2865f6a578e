"""``match=`` patterns built from the library's message constants, so tests never copy a message's text."""

import re
import string


def exact(message: str, *positional, **fields) -> str:
    """A ``match=`` pattern for a message constant with its fields filled in."""
    return re.escape(message.format(*positional, **fields))


def text(message: str, **fields) -> str:
    """A message constant's text up to its first field not in ``fields`` (a fragment to look for in output)."""
    head = ""
    for literal, field, spec, conversion in string.Formatter().parse(message):
        head += literal
        if field is None or field not in fields:
            break
        value = fields[field]
        head += format(repr(value) if conversion == "r" else value, spec)
    return head


def prefix(message: str, **fields) -> str:
    """A ``match=`` pattern for a message constant up to its first field not in ``fields``."""
    return re.escape(text(message, **fields))
