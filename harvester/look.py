"""What the harvest sees in a 2xx HTML payload before it is written: its page kind, its main text's
fingerprint and, where only the main text can tell a changed page from a soft change, how alike
that text is to the one held (``harvester.change``).

The fingerprint is taken whenever the page is parsed anyway: for its links (a payload new to its
URL, from the same parse: ``harvester.change.main_text_and_links``), or for the comparison. A later
change is then told by the fingerprint alone, without reading back and parsing what is stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from harvester.change import NoiseRules, content_digest, main_text, main_text_and_links, similarity
from harvester.fetchresult import FetchResult
from harvester.links import Link
from harvester.schedule import PageKinds
from index.capture import decision
from index.capture.decision import Row
from index.payload import DecodeError, decode_content
from index.storage.state import HarvestState
from strata.charset import charset_param
from strata.media import HTML_TYPES

#: (payload as stored, Content-Type, Content-Encoding) of a capture row, read back from its WARC
StoredBody = Callable[[Row], tuple[bytes | None, str, str | None]]


@dataclasses.dataclass(frozen=True)
class Look:
    page_kind: str | None = None
    fingerprint: str | None = None
    score: float = 0.0
    main_text_same: bool = False
    links: list[Link] | None = None  # the page's links when they came from the parse that gave its main text


class Looker:
    def __init__(
        self,
        kinds: PageKinds,
        noise: NoiseRules,
        change_threshold: float,
        state: HarvestState,
        stored_body: StoredBody,
    ):
        self.kinds = kinds
        self.noise = noise
        self.change_threshold = change_threshold
        self.state = state
        self.stored_body = stored_body

    def look(
        self, url: str, result: FetchResult, previous: Row | None, content_type: str, mime: str, follow: bool
    ) -> Look:
        """The page kind of a 2xx HTML payload and its main text's fingerprint, with, when only the
        main text can tell changed from soft, how alike it is to the text held."""
        if mime not in HTML_TYPES or not decision.is_success(result.status):
            return Look()
        page_kind = self.kinds.kind(url)
        compares = decision.compares_main_text(previous, result.status, result.digest)
        parses_links = follow and (previous is None or previous.get("digest") != result.digest)
        if not compares and not (parses_links and not self.noise.selectors):
            return Look(page_kind)
        charset = charset_param(content_type)
        links = None
        try:
            body = decode_content(result.read_body(), result.header("Content-Encoding"))
        except DecodeError:  # no text; the links' own attempt reports the error
            text = ""
        else:
            if parses_links:
                text, links = main_text_and_links(body, url, charset, self.noise)
            else:
                text = main_text(body, charset, self.noise)
        fingerprint = content_digest(text)
        if not compares:
            return Look(page_kind, fingerprint, links=links)
        assert previous is not None  # compares_main_text says there is a text held
        score = self._main_text_score(text, fingerprint, previous)
        return Look(page_kind, fingerprint, score, score >= self.change_threshold, links)

    def _main_text_score(self, text: str, fingerprint: str, previous: Row) -> float:
        """How alike the new main text is to the stored one (1.0: the same). Below a threshold of 1.0
        that is the Jaccard index; at 1.0 only equality matters, so the stored text is read back
        only when no fingerprint of it was kept, and no index is computed."""
        if previous.get("fingerprint") == fingerprint:
            return 1.0  # the same main text: only noise moved
        exact = self.change_threshold >= 1.0
        if exact and previous.get("fingerprint"):
            return 0.0
        stored = self._stored_main_text(previous)
        if stored is None:
            return 0.0
        return float(text == stored) if exact else similarity(text, stored)

    def _stored_main_text(self, previous: Row) -> str | None:
        """The main text of the payload the collection holds for a URL, read back from its WARC."""
        held = self.state.capture_by_record_id(previous["orig_record_id"]) if previous.get("orig_record_id") else None
        if not held:
            return None
        body, content_type, encoding = self.stored_body(held)
        try:
            decoded = decode_content(body or b"", encoding)
        except DecodeError:
            return None
        return main_text(decoded, charset_param(content_type), self.noise)
