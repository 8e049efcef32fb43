"""Strata's exception hierarchy, rendered in one place (the CLI's ``main`` and the web app's
error handler).

    StrataError                 anything Strata reports to a user; has ``exit_code`` and ``http_status``
     ├── ConfigError            bad job file, bad setting, bad command-line value      (exit 2, HTTP 400)
     ├── CollectionError        unknown or malformed collection, root not usable       (exit 2, HTTP 404)
     ├── HarvestError           a run could not start or was refused                   (exit 1, HTTP 409)
     │    └── CollectionBusy    another process is harvesting the same collection      (exit 1, HTTP 409)
     ├── ArchiveError           a WARC could not be read or repaired                   (exit 1, HTTP 500)
     ├── BackendUnavailable     the shared backend (Redis) cannot be reached           (exit 1, HTTP 503)
     ├── BrowserUnavailable     Chromium or its driver is missing or did not start     (exit 1, HTTP 503)
     └── QueryError             a malformed or over-long search query                  (exit 2, HTTP 400)

Messages say what went wrong and, where there is one, what to type instead.
"""


class StrataError(Exception):
    exit_code = 1
    http_status = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(StrataError):
    exit_code = 2
    http_status = 400


class CollectionError(StrataError):
    exit_code = 2
    http_status = 404


class HarvestError(StrataError):
    exit_code = 1
    http_status = 409


class CollectionBusy(HarvestError):
    pass


class ArchiveError(StrataError):
    exit_code = 1
    http_status = 500


class BackendUnavailable(StrataError):
    exit_code = 1
    http_status = 503


class BrowserUnavailable(StrataError):
    exit_code = 1
    http_status = 503


class QueryError(StrataError):
    exit_code = 2
    http_status = 400
