"""Messages on the pages are cut at a word boundary, never inside a word that fits, and the
whole text stays one click away (``relay.service.templating.cut_words``, the ``message``
macro)."""

from __future__ import annotations

from relay.service.templating import cut_words, env


def test_cut_at_a_word_boundary() -> None:
    text = "AssertionError: Tensor-likes are not close! Mismatched elements: 3 / 40"
    cut = cut_words(text, 40)
    assert cut == "AssertionError: Tensor-likes are not …" and len(cut) <= 42
    assert cut_words("short message", 40) == "short message"
    assert cut_words("x" * 100, 10) == "x" * 10 + " …"  # one long word: cut inside it


def test_the_message_macro_keeps_the_whole_text_one_click_away() -> None:
    macro = env.from_string('{% import "_macros.html" as m %}{{ m.message(text, 20) }}')
    long = "device output differs from CPU <b> by 0.05 at index 3"
    html = macro.render(text=long)
    assert html.startswith('<details class="msg"><summary>device output …</summary>')
    assert "<pre class=\"message\">device output differs from CPU &lt;b&gt; by 0.05 at index 3</pre>" in html
    assert macro.render(text="all good") == "all good"
