"""A run that several workers share, as Redis holds it: who leads it, who works on it, their figures.

    strata:<coll>:run:<run_id>:meta       hash: job, mode, started, status (starting | open | closing | closed),
                                          lead (the worker key of the lead now)
    strata:<coll>:run:<run_id>:workers    hash: worker label -> JSON {beat, left, figures}
    strata:<coll>:run:<run_id>:robots     hash: robots.txt URL -> JSON [status, base64 body] or ["error", why]
    strata:<coll>:run:<run_id>:paging     hash: worker key -> JSON of what it read of the listings (``put_paging``)
    strata:<coll>:shared:<job>            the unfinished shared run of a job (its run id)
    strata:shared                         set of "<coll>\\t<job>\\t<run_id>" open for more workers

The worker that claimed the queue entry leads: it names the run, seeds the shared frontier
(``harvester.shared_frontier``), opens the run to others, and when the frontier is settled waits
for the others to leave (or to be silent longer than a lease: dead), then adds up everyone's
figures and closes the run. A lead that dies leaves the run unfinished; the queue retries the
entry and the next lead resumes the same run id. A lead cut off from Redis longer than the queue
trusts a silent worker may come back to find its entry retried and the run resumed by another:
only the worker named ``lead`` in the run's meta closes it (``close_as_lead``, one script), so the
old lead leaves as a helper would, its figures added by the new one, and the run is closed once.
Robots.txt is fetched once per run: the first worker to ask claims it, the others wait for its answer.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from typing import Any

from harvester.shared_frontier import run_key
from index.storage import redisdb

OPEN = redisdb.key("shared")
_CLOSE_AS_LEAD = """
local lead = redis.call('HGET', KEYS[1], 'lead')
if lead and lead ~= '' and lead ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', 'closing')
redis.call('SREM', KEYS[2], ARGV[2])
return 1
"""


def _job_key(coll: str, job: str | None) -> str:
    return redisdb.key(coll, "shared", job or "")


@dataclasses.dataclass
class SharedRun:
    r: Any
    coll: str
    run_id: str
    job: str | None
    mode: str
    started: str

    def key(self, *parts: str) -> str:
        return run_key(self.coll, self.run_id, *parts)

    # -- finding and making ----------------------------------------------------------------------
    @classmethod
    def load(cls, r: Any, coll: str, run_id: str) -> SharedRun | None:
        meta = r.hgetall(run_key(coll, run_id, "meta"))
        if not meta or meta.get("status") == "closed":
            return None
        return cls(r, coll, run_id, meta.get("job") or None, meta["mode"], meta["started"])

    @classmethod
    def unfinished(cls, r: Any, coll: str, job: str | None) -> SharedRun | None:
        """The job's shared run a dead lead left (to resume), if any."""
        run_id = r.get(_job_key(coll, job))
        return cls.load(r, coll, run_id) if run_id else None

    @classmethod
    def create(
        cls, r: Any, coll: str, job: str | None, run_id: str, mode: str, started: str, lead: str = ""
    ) -> SharedRun:
        run = cls(r, coll, run_id, job, mode, started)
        pipe = r.pipeline(transaction=True)
        meta = {"job": job or "", "mode": mode, "started": started, "status": "starting", "lead": lead}
        pipe.hset(run.key("meta"), mapping=meta)
        pipe.set(_job_key(coll, job), run_id)
        pipe.execute()
        return run

    def open_to_others(self) -> None:
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(self.key("meta"), "status", "open")
        pipe.sadd(OPEN, f"{self.coll}\t{self.job or ''}\t{self.run_id}")
        pipe.execute()

    def take_lead(self, lead: str) -> None:
        """``lead`` leads the run from now on (a retry of the queue entry resumed it)."""
        self.r.hset(self.key("meta"), "lead", lead)

    def close_as_lead(self, lead: str) -> bool:
        """No more workers may join: the lead is about to add up the figures of those that did. Only if
        ``lead`` still leads the run (one script: no other lead slips in between); False, and nothing
        changed, when another worker has taken the run over."""
        member = f"{self.coll}\t{self.job or ''}\t{self.run_id}"
        return bool(self.r.eval(_CLOSE_AS_LEAD, 2, self.key("meta"), OPEN, lead, member))

    def status(self) -> str:
        return self.r.hget(self.key("meta"), "status") or "closed"

    def close(self) -> None:
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(self.key("meta"), "status", "closed")
        pipe.srem(OPEN, f"{self.coll}\t{self.job or ''}\t{self.run_id}")
        pipe.delete(_job_key(self.coll, self.job))
        pipe.execute()

    @staticmethod
    def joinable(r: Any) -> list[tuple[str, str | None, str]]:
        """(collection, job, run id) of the runs open for more workers with URLs queued: a run whose
        frontier is empty waits only for its last leases, and a worker joining it would find nothing."""
        runs = [tuple(member.split("\t")) for member in sorted(r.smembers(OPEN))]
        queued = r.mget([run_key(coll, run_id, "queued") for coll, _, run_id in runs]) if runs else []
        return [
            (coll, job or None, run_id) for (coll, job, run_id), n in zip(runs, queued, strict=True) if int(n or 0) > 0
        ]

    # -- workers -------------------------------------------------------------------------------------
    def beat(self, label: str, figures: dict, left: bool = False) -> None:
        value = {"beat": time.time(), "left": left, "figures": figures}
        self.r.hset(self.key("workers"), label, json.dumps(value, default=str))

    def workers(self) -> dict[str, dict]:
        return {label: json.loads(raw) for label, raw in self.r.hgetall(self.key("workers")).items()}

    def others_done(self, label: str, silent_after: float) -> bool:
        """Every other worker has left, or has been silent longer than ``silent_after`` (dead)."""
        now = time.time()
        return all(w["left"] or now - w["beat"] > silent_after for name, w in self.workers().items() if name != label)

    # -- what each worker read of the listings (vanished pages are told from all of them) ---------------
    def put_paging(self, worker: str, paging: dict) -> None:
        self.r.hset(self.key("paging"), worker, json.dumps(paging, ensure_ascii=False))

    def pagings(self) -> dict[str, dict]:
        return {worker: json.loads(raw) for worker, raw in self.r.hgetall(self.key("paging")).items()}

    # -- robots.txt, once per run --------------------------------------------------------------------
    def robots_answer(self, url: str) -> tuple[str, Any] | None:
        raw = self.r.hget(self.key("robots"), url)
        if not raw:
            return None
        kind, value = json.loads(raw)
        if kind == "error":
            return "error", value
        status, body = value
        return "ok", (status, base64.b64decode(body) if body is not None else None)

    def claim_robots(self, url: str, label: str, seconds: float) -> bool:
        return bool(self.r.set(self.key("robots-claim", url), label, nx=True, px=int(seconds * 1000)))

    def put_robots(self, url: str, status: int | None, body: bytes | None) -> None:
        encoded = base64.b64encode(body).decode() if body is not None else None
        self.r.hset(self.key("robots"), url, json.dumps(["ok", [status, encoded]]))

    def put_robots_error(self, url: str, why: str) -> None:
        self.r.hset(self.key("robots"), url, json.dumps(["error", why]))


def add_figures(total: dict, more: dict) -> None:
    """Add one worker's figures (``RunFigures.as_dict()``) to ``total``: numbers summed, lists joined."""
    for name, value in more.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            total[name] = (total.get(name) or 0) + value
        elif isinstance(value, list):
            total[name] = sorted(set(total.get(name) or []) | set(value))
