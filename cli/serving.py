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
    "--content-host",
    metavar="NAME",
    help="Serve archived content (replay addresses) from this host name alone, e.g. content.localhost; "
    "without it content shares the archive's origin (README: Origins).",
)
@click.option(
    "--reading-room-host",
    metavar="NAME",
    help="Host name that gives --reading-room clients their level (needed with --reading-room).",
)
@click.option(
    "--tls-cert", type=click.Path(exists=True, dir_okay=False), help="Serve HTTPS with this certificate (PEM)."
)
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="The certificate's private key (PEM).")
@click.option(
    "--hsts",
    "hsts_seconds",
    type=click.IntRange(0, 2 * 365 * 24 * 3600),
    default=0,
    help="Send Strict-Transport-Security with this max-age on HTTPS answers (0: none).",
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
    content_host,
    reading_room_host,
    tls_cert,
    tls_key,
    hsts_seconds,
    default_collection,
    allow_networks,
    root,
) -> None:
    """Serve the collections under --root: replay, calendars, Memento, search (production WSGI server)."""
    if bool(tls_cert) != bool(tls_key):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if reading_room and not reading_room_host:
        raise click.UsageError(
            "--reading-room needs --reading-room-host NAME: reading-room captures are served on an origin of "
            "their own, where public archived pages cannot read them (README: Origins)"
        )
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
        origins={"content_host": content_host, "reading_room_host": reading_room_host},
        tls=(tls_cert, tls_key) if tls_cert else None,
        hsts_seconds=hsts_seconds,
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
    origins: dict | None = None,
    tls: tuple[str, str] | None = None,
    hsts_seconds: int = 0,
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
    scheme = "https" if tls else "http"
    port_part = f":{port}" if port and port != (443 if tls else 80) else ""
    archive_url = archive_url or (f"{scheme}://{shown}{port_part}" if port else None)
    content_host = (origins or {}).get("content_host")
    reading_room_host = (origins or {}).get("reading_room_host")
    _distinct_hosts(archive_url, staff_host, restricted_host, content_host, reading_room_host)
    replay_config = _replay_config(
        access, hsts_seconds, scheme, port_part, archive_url, content_host, reading_room_host
    )
    if default_collection:
        replay_config["default_collection"] = default_collection
    if staff_host:
        from replay.hosts import build_site

        app = build_site(
            Path(root),
            staff_host,
            archive_url=archive_url,
            replay_config={**replay_config, "staff_url": f"{scheme}://{staff_host}{port_part}"},
            staff_config={
                "allow_networks": list(allow_networks),
                "hsts_seconds": hsts_seconds,
                "trusted_proxies": list((access or {}).get("trusted_proxies") or ()),
            },
            restricted_host=restricted_host,
            restricted_url=f"{scheme}://{restricted_host}{port_part}" if restricted_host else None,
        )
    else:
        app = create_app(Path(root), replay_config)
    trusted = (access or {}).get("trusted_proxies")
    if trusted:
        from replay.forwarded import TrustedProxyScheme

        app = TrustedProxyScheme(app, trusted)
    services = None
    if with_worker:
        from replay.hosts import start_services

        services = start_services(Path(root), allow_networks)

    def ready(server) -> None:
        listening = server.address[1]
        base = f"{scheme}://{shown}:{listening}"
        click.echo(f"Serving {root} at {base}/ (Ctrl-C to stop)", err=True)
        for name, what in (
            (content_host, "archived content"),
            (reading_room_host, "reading room"),
            (staff_host, "staff console"),
            (restricted_host, "restricted replay (staff, from the console)"),
        ):
            if name:
                click.echo(f"  {what}: {scheme}://{name}:{listening}/", err=True)
        if not content_host:
            click.echo("  archived content shares the archive's origin (one host; see README: Origins)", err=True)
        for path in paths:
            click.echo(f"  {base}{path}", err=True)
        if services is not None:
            from replay.hosts import watch_services

            watch_services(services, lambda text: click.echo(text, err=True))

    try:
        run_server(app, host, port, ready=ready, tls=tls)
    finally:
        if services is not None:
            services.terminate()  # the worker stops its runs cleanly and queues them again
            services.wait(60)


def _replay_config(
    access: dict | None,
    hsts_seconds: int,
    scheme: str,
    port_part: str,
    archive_url: str | None,
    content_host: str | None,
    reading_room_host: str | None,
) -> dict:
    config: dict = {k: v for k, v in (access or {}).items() if v}
    config["hsts_seconds"] = hsts_seconds
    if content_host:
        config.update(content_url=f"{scheme}://{content_host}{port_part}", pages_url=archive_url)
    if reading_room_host:
        config["reading_room_hosts"] = [reading_room_host]
    return config


def _distinct_hosts(archive_url: str | None, *names: str | None) -> None:
    """Each origin its own host name: two roles on one name would share their authority."""
    from replay.origins import bare_host, url_host

    seen = [url_host(archive_url)] if archive_url else []
    for name in names:
        if not name:
            continue
        host = bare_host(name)
        if host in seen:
            raise ConfigError(
                f"host name {name!r} is given two roles; the archive, content, reading-room, staff and "
                "restricted hosts each need a name of their own"
            )
        seen.append(host)
