"""``strata search``'s filters, scope and order as click options, made from the search's declared
fields (``index.fulltext.fields``): one option per field on captures, page metadata or order, which
the command receives as one ``search_fields`` dict of ``SearchParams`` arguments."""

from __future__ import annotations

import functools

import click

from index.fulltext.fields import FIELDS

OPTION_KINDS = ("capture", "meta", "order")


def search_field_options(command):
    """Add the options to a click command; it receives them as ``search_fields``."""
    fields = [field for field in FIELDS if field.kind in OPTION_KINDS and not field.repeatable]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        return command(*args, search_fields={field.name: kwargs.pop(field.name) for field in fields}, **kwargs)

    wrapped = wrapper
    for field in reversed(fields):
        if field.choices:
            choices = [value for value, _ in field.choices]
            option = click.option(
                field.option, field.name, type=click.Choice(choices), default=field.default, show_default=True,
                help=field.help,
            )  # fmt: skip
        else:
            option = click.option(field.option, field.name, metavar=field.metavar, help=field.help)
        wrapped = option(wrapped)
    return wrapped
