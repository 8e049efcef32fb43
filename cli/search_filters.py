"""The metadata filters and scope of ``strata search`` (``index.fulltext.filters``), as click options
that arrive in the command as one ``meta_filters`` dict of ``SearchParams`` fields."""

from __future__ import annotations

import functools

import click

_OPTIONS = (
    ("--title", "title", "WORDS", "Pages whose title has these words."),
    ("--author", "author", "NAME", "Pages whose author or publisher has these words."),
    (
        "--keyword",
        "keyword",
        "WORDS",
        "Pages whose keywords (meta keywords, DC.subject, PDF keywords) have these words.",
    ),
    ("--lang", "lang", "CODE", "Pages in this language: en, ja, zh ..."),
    (
        "--published-from",
        "published_from",
        "DATE",
        "Pages published (by their own date) from: 2024, 2024-03, 2024-03-05.",
    ),
    ("--published-to", "published_to", "DATE", "Pages published up to (inclusive)."),
)


def meta_filter_options(command):
    """Add the options to a click command; it receives them as ``meta_filters``."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        meta = {name: kwargs.pop(name) for _, name, _, _ in _OPTIONS}
        meta["scope"] = kwargs.pop("scope")
        return command(*args, meta_filters=meta, **kwargs)

    wrapped = click.option(
        "--in",
        "scope",
        type=click.Choice(["all", "main"]),
        default="all",
        show_default=True,
        help="all: main text and boilerplate (menus, headers, footers; weighing less); main: main text only.",
    )(wrapper)
    for flag, name, metavar, text in reversed(_OPTIONS):
        wrapped = click.option(flag, name, metavar=metavar, help=text)(wrapped)
    return wrapped
