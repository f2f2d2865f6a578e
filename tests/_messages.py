"""``match=`` patterns built from the library's message constants, so tests never copy a message's text."""

import re
import string


def exact(message: str, *positional, **fields) -> str:
    """A ``match=`` pattern for a message constant with its fields filled in."""
    return re.escape(message.format(*positional, **fields))


def prefix(message: str, **fields) -> str:
    """A ``match=`` pattern for a message constant up to its first field not in ``fields``."""
    head = ""
    for literal, field, spec, conversion in string.Formatter().parse(message):
        head += literal
        if field is None or field not in fields:
            break
        value = fields[field]
        head += format(repr(value) if conversion == "r" else value, spec)
    return re.escape(head)
