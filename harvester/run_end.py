"""The figures a run gets when it ends, from what the collection database holds by then: its
full-harvest estimate (``index.storage.state.full_harvest_estimate``) and its per-site change rates
(``harvester.change_rates``). Kept with the run's other figures, so readers need not recompute them."""

from __future__ import annotations

import sqlite3

from harvester.change_rates import run_change_rates
from harvester.report import RunFigures
from index.storage.state import HarvestState, full_harvest_estimate, page_checks


def close_figures(state: HarvestState, run_id: str, job: str | None, started: str, figures: RunFigures) -> None:
    """Never the reason a run's end is not recorded: on a database error the figures stay unset (the
    estimate is then computed by its readers; the change rates are missing for that run)."""
    try:
        figures.change_rates = run_change_rates(page_checks(state.conn, run_id))
        figures.full_estimate = full_harvest_estimate(
            state.conn, {"run_id": run_id, "job": job, "started": started, "figures": figures.as_dict()}
        )
    except sqlite3.Error:
        pass
