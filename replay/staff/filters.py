"""Template helpers: sizes, notices after a redirect (fixed texts: nothing from the URL is shown)."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Flask, request

from replay.staff.charts import human_bytes

NOTICES = {
    "created": "Job created.",
    "saved": "Job saved.",
    "paused": "Job paused: the scheduler will not start it until it is resumed.",
    "resumed": "Job resumed: the scheduler will start it when it is next due.",
    "deleted": "Job deleted. Its harvests stay in the archive; its file was kept beside the others with "
    "a .deleted-<time> suffix.",
    "already_active": "This job already has a run queued or running; here it is.",
    "rule_added": "Rule added: it applies from the next request, on every surface.",
    "rule_removed": "Rule removed: it no longer applies from the next request.",
    "taken_down": "Taken down: from the next request it is withdrawn from replay, listings and search.",
    "revoked": "Those restricted-host sessions have ended.",
    "described": "Description saved: the public pages show it, and the next WACZ package carries it.",
}


def notice() -> str | None:
    return NOTICES.get(request.args.get("notice", ""))


def register(app: Flask) -> None:
    app.jinja_env.filters["bytes"] = lambda n: human_bytes(n or 0)
    app.jinja_env.globals["notice"] = notice
    app.jinja_env.filters["utc"] = lambda t: datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S") if t else ""
