"""HTML tags with very many attributes: parse + convert time without and with the guard.

lexbor's parse time is quadratic in the distinct attributes of one tag; the transformer
drops those after ``max_attributes`` (1000) before parsing. For each n it times one
``<div a0="x" ... a{n-1}="x">`` page converted by selectolax alone (parse + the same text
walk, what the transformer did before the guard) and by ``HtmlToTextDocumentTransformer``;
then the guard's own cost on a normal page of 680 KB (with a script and an inline
``<svg>``), against its parse + convert (interleaved rounds).

    .venv/bin/python scripts/bench/bench_html_attributes.py [--sizes 16000 64000 256000]
        [--unguarded-max 256000]

Unguarded runs above ``--unguarded-max`` attributes are skipped (256k takes minutes).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from _common import interleave, spread
from selectolax.lexbor import LexborHTMLParser

from ragloom.core import Document
from ragloom.transformers.html import HtmlToTextDocumentTransformer
from ragloom.transformers.html.attributes import DEFAULT_MAX_ATTRIBUTES, limit_attributes
from ragloom.transformers.html.extract import render


def hostile(n: int) -> str:
    attributes = " ".join(f'a{i}="x"' for i in range(n))
    return f"<html><body><p>before</p><div {attributes}>hi</div><p>after</p></body></html>"


def normal_page(rows: int = 3000) -> str:
    cells = "".join(
        f'<tr class="r{i % 7}"><td><a href="/item/{i}" title="item {i}">item {i}</a></td>'
        f'<td data-v="{i * i}">{i * i}</td></tr>'
        for i in range(rows)
    )
    paragraphs = "".join(
        f'<p id="p{i}" class="text">Paragraph {i} with <b>bold</b> and '
        f'<img src="/i/{i}.png" alt="picture {i}"> words.</p>'
        for i in range(rows)
    )
    svg = '<svg viewBox="0 0 8 8"><path d="M0 0h8v8z"/></svg>'
    script = "<script>for (var i = 0; i<n; i++) { s += '<b title=\"' + i + '\">'; }</script>"
    return f"<html><head>{script}</head><body>{svg}{paragraphs}<table>{cells}</table></body></html>"


def unguarded(html: str) -> str:
    body = LexborHTMLParser(html).body
    return render(body, base=None, include_links=False) if body else ""


def guarded(html: str) -> str:
    return HtmlToTextDocumentTransformer().transform(Document(html)).text


def once(run: Callable[[str], str], html: str) -> tuple[float, str]:
    started = time.perf_counter()
    text = run(html)
    return time.perf_counter() - started, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16_000, 64_000, 256_000])
    parser.add_argument("--unguarded-max", type=int, default=256_000)
    args = parser.parse_args()

    print(f"{'attributes':>10} {'KB':>8} {'unguarded s':>12} {'guarded s':>10}  text")
    for n in args.sizes:
        html = hostile(n)
        before = "skipped"
        if n <= args.unguarded_max:
            seconds, text = once(unguarded, html)
            before = f"{seconds:.3f}"
            assert text == "before\n\nhi\n\nafter", text
        seconds, text = once(guarded, html)
        print(f"{n:>10} {len(html) / 1e3:>8.0f} {before:>12} {seconds:>10.3f}  {text!r}")

    page = normal_page()
    assert guarded(page) == unguarded(page)
    assert limit_attributes(page, DEFAULT_MAX_ATTRIBUTES)[0] is page
    timings = interleave(
        {
            "parse + convert": lambda: unguarded(page),
            "guard": lambda: limit_attributes(page, DEFAULT_MAX_ATTRIBUTES),
        },
        9,
    )
    parse, guard = timings.median("parse + convert"), timings.median("guard")
    print(
        f"normal page, {len(page) / 1e3:.0f} KB: parse + convert {parse * 1e3:.1f} ms, "
        f"guard {guard * 1e3:.1f} ms, ratio {spread(timings.ratio('guard', 'parse + convert'))}"
    )


if __name__ == "__main__":
    main()
