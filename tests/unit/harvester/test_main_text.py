"""The main text from a tree, and from the parser events that also give the links.

``harvester.change.main_text`` builds a tree; ``main_text_and_links`` takes the text from the
events of the parse that finds the links (when the job names no noise selectors). The two must
give the same text, or a page fingerprinted one way and compared the other would read as changed;
and the one parse must give exactly the links that ``extract_links`` gives.
"""

from __future__ import annotations

import random

import pytest

from demo.sample_site import SampleSite
from harvester import links as links_module
from harvester.change import _BOILERPLATE, NoiseRules, _folded, main_text, main_text_and_links
from harvester.links import extract_links, links_and_text

BARE = NoiseRules()
TAGS = (
    "html head body div p span b i a nav script style noscript template table tr td ul li title br img select option "
    "textarea pre form iframe svg math frameset frame object h1 header footer section dl dt"
).split()
BITS = (
    "hello",
    "世界",
    "&amp;",
    "&nbsp;",
    "&#x41;",
    "&bogus;",
    " ",
    "\n",
    "<!-- c -->",
    "<![CDATA[x]]>",
    "<?pi x?>",
    "<!DOCTYPE html>",
    "a<b",
    "</",
    "<",
    ">",
    "'",
    '"',
    "\u00a0",
    "x\u3000y",
    "\t",
)


def soup(rng: random.Random) -> bytes:
    """Random tag soup: unclosed, misnested and stray tags, boilerplate inside boilerplate, comments,
    CDATA, processing instructions, entities, CJK and odd whitespace."""
    out = []
    for _ in range(rng.randint(0, 40)):
        draw = rng.random()
        tag = rng.choice(TAGS)
        if draw < 0.35:
            out.append(f"<{tag}{' class=x' if rng.random() < 0.3 else ''}>")
        elif draw < 0.6:
            out.append(f"</{tag}>")
        else:
            out.append(rng.choice(BITS))
    return "".join(out).encode()


def event_text(body: bytes) -> str | None:
    text = links_and_text(body, "http://site.test/", "utf-8", _BOILERPLATE)[1]
    return None if text is None else _folded(text, BARE)


def test_events_and_tree_give_the_same_text_on_tag_soup():
    rng = random.Random(20261203)
    for _ in range(3000):
        body = soup(rng)
        assert event_text(body) == main_text(body, "utf-8", BARE), body


def test_text_after_the_end_of_html_is_kept_as_a_browser_shows_it():
    # libxml2 opens a second <html> for what follows </html>, beside the first root
    body = b"<html><body><p>first</p></body></html><p>after the end</p><script>x()</script>!<!-- c -->"
    assert main_text(body, "utf-8", BARE) == event_text(body) == "firstafter the end!"


def test_nested_boilerplate_is_dropped():
    # Dropping elements while walking the tree ended the walk inside the first one dropped, so a
    # later <nav> stayed in the text.
    body = b"<nav><nav>menu</nav></nav><p>kept</p><nav>later menu</nav><script>x()</script><p>too</p>"
    assert main_text(body, "utf-8", BARE) == event_text(body) == "kepttoo"
    assert main_text(body, "utf-8", NoiseRules(selectors=(".counter",))) == "kepttoo"


def sample_pages() -> list[tuple[str, bytes]]:
    pages = []
    for version in (1, 2):
        for path in sorted(SampleSite.paths(version)):
            resource = SampleSite.resource(version, path)
            content_type = dict(resource.headers).get("Content-Type", "")
            if resource.status == 200 and content_type.startswith("text/html"):
                pages.append((path, resource.body))
    return pages


@pytest.mark.parametrize(
    "rules", [BARE, NoiseRules(selectors=tuple(SampleSite.NOISE_SELECTORS))], ids=["bare", "selectors"]
)
def test_one_parse_gives_what_two_give(rules):
    pages = sample_pages()
    assert len(pages) > 20
    rng = random.Random(7)
    pages += [(f"/soup/{n}", soup(rng)) for n in range(300)]
    for path, body in pages:
        url = "http://site.test" + path
        text, found = main_text_and_links(body, url, None, rules)
        assert text == main_text(body, None, rules), path
        assert found == extract_links(body, url, "text/html"), path


def test_the_text_is_whole_when_the_links_stop_at_their_limit():
    # past the parser's first 64 KB chunk, after which the links alone would stop reading
    body = ("<p>intro</p>" + "".join(f'<a href="/p{n}">item {n}</a>' for n in range(4000)) + "<p>end</p>").encode()
    assert len(body) > 64 * 1024
    found, text = links_and_text(body, "http://site.test/", None, frozenset({"nav"}), max_links=3)
    assert found == extract_links(body, "http://site.test/", "text/html", max_links=3)
    assert len(found) == 3
    assert text is not None and text.endswith("item 3999end")


def test_a_body_over_the_byte_limit_gives_no_text_and_the_tree_takes_over():
    body = b"<p>start</p>" + b"<p>filler</p>" * 100 + b"<p>last</p>"
    found, text = links_and_text(body, "http://site.test/", None, frozenset(), max_bytes=200)
    assert text is None
    assert found == extract_links(body, "http://site.test/", "text/html", max_bytes=200)
    assert main_text(body, None, BARE).endswith("last")


def test_the_parser_kept_for_the_next_page_holds_no_text():
    links_and_text(b"<p>secret words</p>", "http://site.test/", None, frozenset())
    held = links_module._parser_slot.held
    assert held is not None and held[1].text is None
    found = extract_links(b'<a href="/x">x</a>', "http://site.test/", "text/html")
    assert [link.url for link in found] == ["http://site.test/x"]
    assert links_module._parser_slot.held[1].text is None
