"""``strata serve``: the replay application and, with ``--staff-host``, the staff console on its own
host name (never the replay origin: archived pages run their own scripts)."""

from __future__ import annotations

from pathlib import Path

import click

from cli._base import allow_network_option, cli, root_option
from strata.errors import ConfigError
from strata.ports import check_port_free


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: any free port).",
)
@click.option("--staff-host", metavar="NAME", help="Serve the staff console for this host name (e.g. staff.localhost).")
@click.option("--archive-url", metavar="URL", help="Public address of the replay site, for links from the console.")
@click.option("--with-worker", is_flag=True, help="Also run the worker and scheduler (single-machine install).")
@click.option(
    "--reading-room", "reading_room", multiple=True, metavar="CIDR", help="Reading-room client range (repeatable)."
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    metavar="ADDR",
    help="Reverse proxy whose X-Forwarded-For is believed (repeatable); from others it is ignored.",
)
@click.option(
    "--restricted-host",
    metavar="NAME",
    help="Host name of the restricted replay host for staff (needs --staff-host), e.g. restricted.localhost.",
)
@click.option(
    "--default-collection",
    metavar="NAME",
    envvar="STRATA_DEFAULT_COLLECTION",
    help="Where /web/<ts>/<url> resolves (default: the only collection, if just one). Also STRATA_DEFAULT_COLLECTION.",
)
@allow_network_option
@root_option
def serve(
    host,
    port,
    staff_host,
    archive_url,
    with_worker,
    reading_room,
    trusted_proxies,
    restricted_host,
    default_collection,
    allow_networks,
    root,
) -> None:
    """Serve the collections under --root: replay, calendars, Memento, search (production WSGI server)."""
    serve_archive(
        root,
        host,
        port,
        staff_host=staff_host,
        archive_url=archive_url,
        with_worker=with_worker,
        allow_networks=allow_networks,
        access={"reading_room": list(reading_room), "trusted_proxies": list(trusted_proxies)},
        restricted_host=restricted_host,
        default_collection=default_collection,
    )


def serve_archive(
    root: Path,
    host: str = "127.0.0.1",
    port: int = 8080,
    paths: tuple | list = (),
    staff_host: str | None = None,
    archive_url: str | None = None,
    with_worker: bool = False,
    allow_networks: tuple | list = (),
    access: dict | None = None,
    restricted_host: str | None = None,
    default_collection: str | None = None,
) -> None:
    """Run the application until interrupted; prints the address to open (and ``paths`` on it)."""
    from index.collection import Collection
    from replay import create_app
    from replay import serve as run_server

    if not Path(root).is_dir():
        raise ConfigError(
            f"no collections root at {root}; harvest into it first: strata harvest NAME --seed URL --root {root}"
        )
    if restricted_host and not staff_host:
        raise ConfigError("--restricted-host needs --staff-host: the staff console issues its sessions")
    if default_collection:
        Collection.open(Path(root), default_collection)  # an unknown name is refused before serving
    check_port_free(host, port)  # before the app is built and the worker started
    shown = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    replay_config = {k: v for k, v in (access or {}).items() if v}
    if default_collection:
        replay_config["default_collection"] = default_collection
    if staff_host:
        from replay.hosts import build_site

        port_part = f":{port}" if port and port != 80 else ""
        app = build_site(
            Path(root),
            staff_host,
            archive_url=archive_url or (f"http://{shown}:{port}" if port else None),
            replay_config={**replay_config, "staff_url": f"http://{staff_host}{port_part}"},
            staff_config={"allow_networks": list(allow_networks)},
            restricted_host=restricted_host,
            restricted_url=f"http://{restricted_host}{port_part}" if restricted_host else None,
        )
    else:
        app = create_app(Path(root), replay_config)
    services = None
    if with_worker:
        from replay.hosts import start_services

        services = start_services(Path(root), allow_networks)

    def ready(server) -> None:
        base = f"http://{shown}:{server.address[1]}"
        click.echo(f"Serving {root} at {base}/ (Ctrl-C to stop)", err=True)
        if staff_host:
            click.echo(f"  staff console: http://{staff_host}:{server.address[1]}/", err=True)
        if restricted_host:
            click.echo(
                f"  restricted replay (staff, from the console): http://{restricted_host}:{server.address[1]}/",
                err=True,
            )
        for path in paths:
            click.echo(f"  {base}{path}", err=True)

    try:
        run_server(app, host, port, ready=ready)
    finally:
        if services is not None:
            services.terminate()  # the worker stops its runs cleanly and queues them again
            services.wait(60)
