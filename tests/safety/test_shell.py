"""Remedy commands are safe to paste: a real /bin/sh reads every command `fadoctor.safety.shell` builds
as exactly the words it was given, runs nothing else, and `is_safe` refuses every line that a
shell would read as more than its words."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fadoctor.report import Remedy
from fadoctor.safety.shell import AND, Unsafe, attempt, command, env, is_safe, name, quote, requirement, url
from fadoctor.safety.shell import version as pep440

SHELL_SYNTAX = " \t;&|<>()$`\\\"'*?[]{}~#!=%,.:/@+-^\n"
HOSTILE = ["nvidia-x; touch pwned", '2.5.5"; touch pwned; echo "', "$(touch pwned)",
           "`touch pwned`", "a'b", "x && touch pwned", "> pwned", "*", "~root", "-rf /",
           "a\\", "\x1b]0;title\x07", "x\ny", "\udcff"]


def words_as_sh_reads_them(line: str, cwd: Path) -> List[str]:
    """Run `printf '%s\\0'` followed by `line` in a real /bin/sh, in an empty folder."""
    done = subprocess.run(["/bin/sh", "-c", "printf '%s\\0' " + line], cwd=cwd,
                          capture_output=True, check=True)
    return done.stdout.decode().split("\0")[:-1]


words = st.lists(st.text(alphabet=st.sampled_from(SHELL_SYNTAX + "abcAZ09é"), min_size=1,
                         max_size=12), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(words)
def test_sh_reads_every_command_as_the_words_it_was_given(tmp_path_factory: pytest.TempPathFactory,
                                                        given_words: List[str]) -> None:
    cwd = tmp_path_factory.mktemp("sh")
    try:
        line = command(*given_words)
    except Unsafe:  # control characters: refused, never quoted
        assert any(not w.isprintable() for w in given_words)
        return
    assert is_safe(line)
    assert words_as_sh_reads_them(line, cwd) == given_words
    assert list(cwd.iterdir()) == []  # nothing ran: no file was made


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(SHELL_SYNTAX.replace("&", "") + "ab1"), min_size=1,
               max_size=24))
def test_a_line_is_safe_only_when_sh_reads_it_as_its_shlex_words(
        tmp_path_factory: pytest.TempPathFactory, line: str) -> None:
    if not is_safe(line):
        return
    cwd = tmp_path_factory.mktemp("sh")
    expected = shlex.split(line)
    assert words_as_sh_reads_them(line, cwd) == expected
    assert list(cwd.iterdir()) == []
    rebuilt = command(*expected)  # the same words, quoted as `quote` prefers
    assert words_as_sh_reads_them(rebuilt, cwd) == expected


def test_and_joins_two_commands_and_nothing_else() -> None:
    assert is_safe("cd x && pip install .") and is_safe("cd '&&' && ls")
    for line in ("&&", "&& ls", "ls &&", "ls && && ls", "ls&&ls", "ls & ls", "ls &&  ls"):
        assert not is_safe(line), line


@pytest.mark.parametrize("line", [
    "pip uninstall nvidia-x; touch pwned", 'pip install "flash-attn==2.5.5"; touch pwned; echo ""',
    "pip install $(touch pwned)", "pip install `touch pwned`", "pip install x > pwned",
    "pip install x | sh", "pip install *", "pip  install x", "pip install 'x", "x\ny",
    "pip install \x1b[31mx", "pip install x\\ y", "",
])
def test_hostile_lines_never_reach_a_remedy_as_shell_syntax(line: str) -> None:
    """A line not built word by word is either taken apart into literal words (every `;`, `$(`,
    backquote, `>`, `|`, glob quoted) or refused: never shown as written."""
    assert not is_safe(line)
    try:
        (shown,) = Remedy(summary="s", commands=[line]).commands
    except ValueError:
        return  # refused: it does not split into printable words
    assert is_safe(shown) and shown != line
    words = shlex.split(shown)
    assert words == shlex.split(line)  # the same words, each now a literal
    for syntax in (";", "$(", "`", ">", "|", "*"):
        assert all(syntax not in w or quote(w) in shown for w in words)


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_fail_validation_with_an_inert_reason(value: str) -> None:
    for validate in (name, pep440, url, lambda v: requirement(v, "1.0"),
                     lambda v: requirement("flash-attn", v), lambda v: env(v, "1")):
        with pytest.raises(Unsafe) as caught:
            validate(value)
        assert str(caught.value).isprintable()


@pytest.mark.parametrize("word", ["torch>=2.7", "C:\\Users\\a b\\python.exe", "it's", "a$b",
                                  "a\\", 'x"y', "7.5 8.6", "", "100%", "a\\\\b", "!x", "`id`"])
def test_a_quoted_word_reads_back_alike_and_is_double_quoted_only_where_every_shell_agrees(
        word: str) -> None:
    """sh prints the word back unchanged; double quotes only hold text that cmd.exe and PowerShell
    read literally too (no `"`, `$`, backquote, `!`, `%`, and no backslash before a special one
    or at the end), so `pip install "torch>=2.7"` works pasted into any of them."""
    quoted = quote(word)
    shown = subprocess.run(["sh", "-c", f"printf '%s' {quoted}"], capture_output=True, text=True,
                           check=True).stdout
    assert shown == word and is_safe(f"pip install {quoted}")
    if quoted.startswith('"'):
        assert not set(word) & set('"$`!%') and not word.endswith("\\") and "\\\\" not in word
    else:
        assert quoted == word or quoted == shlex.quote(word)


def test_valid_values_pass_in_their_normal_form() -> None:
    assert name("flash-attn") == "flash-attn" and name("nvidia_cublas.cu12") == "nvidia_cublas.cu12"
    assert pep440("2.5.5") == "2.5.5" and pep440("2.6.0+CU124") == "2.6.0+cu124"
    assert requirement("flash-attn-4", "4.0.0b36", ["cu13"]) == "flash-attn-4[cu13]==4.0.0b36"
    assert command("pip", "install", requirement("flash-attn-4", extras=["cu13"])) == \
        'pip install "flash-attn-4[cu13]"'
    assert command(env("MAX_JOBS", 4), "pip", "install", ".", AND, "cd", "a b") == \
        'MAX_JOBS=4 pip install . && cd "a b"'
    assert url("https://github.com/a/b/releases/download/v2/x-2+cu12-cp311.whl")


def test_attempt_gives_the_reason_instead_of_a_command() -> None:
    assert attempt(lambda: [command("pip", "uninstall", name("nvidia-x; touch pwned"))]) == (
        [], '"nvidia-x; touch pwned" is not a valid distribution name (PEP 508)')
    assert attempt(lambda: [command("pip", "uninstall", name("nvidia-x"))]) == (
        ["pip uninstall nvidia-x"], None)
