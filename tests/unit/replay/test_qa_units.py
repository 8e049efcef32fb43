"""QA's measures and files (``replay.qa.compare``, ``replay.qa.store``) without a browser."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from index.collection import Collection
from replay.qa import compare, store
from strata.errors import ConfigError


def png(colour, size=(40, 20), box=None, box_colour=(0, 0, 0)) -> bytes:
    image = Image.new("RGB", size, colour)
    if box:
        for x in range(box[0], box[2]):
            for y in range(box[1], box[3]):
                image.putpixel((x, y), box_colour)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def test_screenshot_closeness_is_the_share_of_pixels_that_look_the_same():
    white = png((255, 255, 255))
    assert compare.screenshot_closeness(white, white) == 1.0
    assert compare.screenshot_closeness(white, png((255, 255, 255), box=(0, 0, 10, 20))) == 0.75
    assert compare.screenshot_closeness(white, png((250, 250, 250))) == 1.0  # under pixelmatch's threshold
    assert compare.screenshot_closeness(white, png((255, 255, 255), size=(40, 10))) == 0.5  # the rest differs
    with pytest.raises(ValueError):
        compare.screenshot_closeness(white, b"not a png")


def test_text_closeness_and_the_score():
    assert compare.text_closeness("a b  c\nd", "a b c d") == 1.0
    assert 0 < compare.text_closeness("one two three four five", "one two three four six") < 1
    assert compare.score(1.0, None, 0.5) == 0.5
    assert compare.score(None, None, None) == 0.0


def test_the_patch_queue_keeps_each_url_once_and_refuses_bad_run_ids(tmp_path):
    coll = Collection.open(tmp_path, "c", create=True)
    items = [{"url": "http://a.example/x.json", "page": "http://a.example/", "kind": "xhr"}]
    assert store.queue_patch(coll, "r1", items + items + [{"url": "javascript:alert(1)"}], by="ana") == 1
    assert store.queue_patch(coll, "r1", items) == 0
    assert [(i["url"], i["by"]) for i in store.read_patch(coll, "r1")] == [("http://a.example/x.json", "ana")]
    store.clear_patch(coll, "r1", {"http://a.example/x.json"})
    assert store.read_patch(coll, "r1") == []
    for bad in ("../x", "a/b", "", ".."):
        with pytest.raises(ConfigError):
            store.run_dir(coll, bad)


def test_reviews_are_set_and_cleared(tmp_path):
    coll = Collection.open(tmp_path, "c", create=True)
    store.review(coll, "r1", "http://a.example/", "bad", "blank page", "ana")
    assert store.reviews(coll, "r1")["http://a.example/"]["status"] == "bad"
    store.review(coll, "r1", "http://a.example/", None)
    assert store.reviews(coll, "r1") == {}
    with pytest.raises(ConfigError):
        store.review(coll, "r1", "http://a.example/", "meh")
