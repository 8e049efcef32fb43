"""No request stalls the others (one gevent loop serves every request of ``strata serve``): beside a
steady replay client, a catastrophic CDX regex, a login flood and an expanding page each leave its
median latency under 100 ms. The precise figures are the bench's (``bench/isolation_bench.py``);
these bounds hold on a loaded two-core machine with room to spare."""

from __future__ import annotations

import statistics
import threading
import time

import httpx
import pytest

from tests.integration.test_replay_isolation import SITE, hostile_root  # noqa: F401 (the collection, a fixture)
from tests.support.replay_fixtures import StrataServer
from tests.support.staff_helpers import add_user, csrf_from

pytestmark = pytest.mark.slow
ATTACK_SECONDS = 4.0
CATASTROPHIC = "~urlkey:^.{1}([^!]+)+!"  # Python's re: 2**n steps for a key of n characters


@pytest.fixture(scope="module")
def server(hostile_root, tmp_path_factory):  # noqa: F811 (the fixture above)
    add_user(hostile_root)
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    strata = StrataServer(hostile_root, log, ("--staff-host", "staff.localhost"))
    yield strata.base_url
    strata.stop()


def _steady(base: str, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            started = time.perf_counter()
            response = client.get(f"{base}/h/2024id_/{SITE}/page.html")
            out.append(time.perf_counter() - started)
            assert response.status_code == 200


def _beside(base: str, attack, clients: int = 2) -> tuple[float, list]:
    """Replay's median latency while ``clients`` threads run ``attack(base, stop, results)``."""
    stop = threading.Event()
    latencies: list[float] = []
    results: list = []
    attackers = [threading.Thread(target=attack, args=(base, stop, results)) for _ in range(clients)]
    for t in attackers:
        t.start()
    time.sleep(0.5)  # the attack under way
    steady = threading.Thread(target=_steady, args=(base, stop, latencies))
    steady.start()
    time.sleep(ATTACK_SECONDS)
    stop.set()
    for t in [steady, *attackers]:
        t.join(60)
    assert len(latencies) > 10
    return statistics.median(latencies), results


def test_a_catastrophic_cdx_regex(server):
    def attack(base, stop, results):
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                started = time.perf_counter()
                r = client.get(
                    f"{base}/h/cdx", params={"url": "hostile.example/", "matchType": "prefix", "filter": CATASTROPHIC}
                )
                results.append((r.status_code, time.perf_counter() - started))

    p50, results = _beside(server, attack)
    assert p50 < 0.1, p50
    assert results and all(status in (200, 404) for status, _ in results)
    assert max(seconds for _, seconds in results) < 5  # Python's re: hours for one answer


def test_a_login_flood(server):
    def attack(base, stop, results):
        staff = {"Host": f"staff.localhost:{base.rsplit(':', 1)[1]}"}
        with httpx.Client(timeout=60, headers=staff) as client:
            token = csrf_from(client.get(f"{base}/login").text)
            while not stop.is_set():
                r = client.post(f"{base}/login", data={"name": "ana", "password": "wrong guess!", "csrf_token": token})
                results.append(r.status_code)

    p50, results = _beside(server, attack)
    assert p50 < 0.1, p50
    assert 401 in results and set(results) <= {401, 429, 503}


def test_an_expanding_page(server):
    def attack(base, stop, results):
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                received = 0
                try:
                    with client.stream("GET", f"{base}/h/2024mp_/{SITE}/bomb.html") as r:
                        for chunk in r.iter_raw():
                            received += len(chunk)
                except httpx.HTTPError:
                    pass  # cut off at its bound: the connection closes
                results.append(received)

    p50, results = _beside(server, attack)
    assert p50 < 0.1, p50
    assert results and max(results) < 32 << 20
