"""Values written into unit files run exactly what was asked."""
from __future__ import annotations

import shlex

import pytest

from ansible_collections.v100.llm.plugins.module_utils.service.systemd_unit import environment_line, exec_line, exec_word


def test_plain_words_stay_plain():
    assert exec_line(["/opt/llama.cpp/b1/bin/llama-server", "--port", "8081", "--flash-attn", "on"]) == \
        "/opt/llama.cpp/b1/bin/llama-server --port 8081 --flash-attn on"


@pytest.mark.parametrize(("word", "written"), [
    ("/srv/my models/a.gguf", '"/srv/my models/a.gguf"'),
    ("100%", "100%%"),
    ("$HOME", "$$HOME"),
    ('say "hi"', '"say \\"hi\\""'),
    ("a;b", '"a;b"'),
    ("", '""'),
])
def test_specials_are_escaped(word, written):
    assert exec_word(word) == written


def test_quoted_words_split_back_into_the_argv():
    argv = ["/bin/x", "a b", 'c"d', "e\\f"]
    # systemd's quoting of these cases matches the shell's double quotes.
    assert shlex.split(exec_line(argv)) == argv


def test_a_relative_program_is_refused():
    with pytest.raises(ValueError):
        exec_line(["llama-server"])


def test_environment_lines():
    assert environment_line("CUDA_VISIBLE_DEVICES", "0,1") == '"CUDA_VISIBLE_DEVICES=0,1"'
    assert environment_line("A", '50% "x"') == '"A=50%% \\"x\\""'
    with pytest.raises(ValueError):
        environment_line("1A", "x")


@pytest.mark.parametrize("word", ["a\nb", "tab\there"])
def test_control_characters_are_refused(word):
    with pytest.raises(ValueError):
        exec_word(word)
    with pytest.raises(ValueError):
        environment_line("A", word)
