# -*- coding: utf-8 -*-
"""Writing values into systemd unit files (systemd.syntax(7), systemd.service(5))."""
from __future__ import annotations

import re
from typing import Sequence

# Characters that make systemd split or interpret an unquoted word.
_NEEDS_QUOTES = re.compile(r"""[\s"'\\;]""")


def exec_word(word: str) -> str:
    """One argument for ExecStart=: '%' and '$' escaped (specifiers and
    variable expansion), quoted when it holds spaces, quotes, backslashes or ';'."""
    if any(ord(char) < 32 for char in str(word)):
        raise ValueError("%r has a control character (a newline would end the unit line)" % (word,))
    text = str(word).replace("%", "%%").replace("$", "$$")
    if text == "" or _NEEDS_QUOTES.search(text):
        return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')
    return text


def exec_line(argv: Sequence[str]) -> str:
    """argv -> the value of an ExecStart= line that runs exactly argv."""
    if not argv or not str(argv[0]).startswith("/"):
        raise ValueError("ExecStart needs an absolute program path first (got %r)" % (list(argv)[:1],))
    return " ".join(exec_word(word) for word in argv)


def environment_line(name: str, value: str) -> str:
    """NAME=value for Environment=, quoted as one assignment, '%' escaped."""
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        raise ValueError("%r is not an environment variable name" % name)
    if any(ord(char) < 32 for char in str(value)):
        raise ValueError("%r has a control character" % (value,))
    text = ("%s=%s" % (name, value)).replace("%", "%%").replace("\\", "\\\\").replace('"', '\\"')
    return '"%s"' % text
