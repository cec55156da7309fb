"""`r2k serve web`: the workstation in a browser through textual-serve (docs/architecture.md,
"Remote access"). Each browser tab gets the TUI in a process of its own, acting as the one user the
server was started for (`--as`).

Nobody gets in without a credential: the server's link carries a token, a secret kept in the data
dir (`web/token`, 0600, made at the first start and kept across restarts). The first request with
`?token=` is answered with a cookie holding it and sent on without the token in the address; every
request after that (the page, its files, its websocket) needs the cookie. Anyone else, another
account on the same machine included, gets a 403, logged with its path and address; the token
itself is kept out of the log (aiohttp's access lines show it as hidden). Before exposing it beyond 127.0.0.1, put an
authenticating proxy in front too (README, "In a browser").
"""
from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
import shlex
import sys
from pathlib import Path

from r2k.core.errors import InvalidInput

from ..safe import visible

log = logging.getLogger("r2k.web")

COOKIE = "r2k_web"
MIN_TOKEN = 32  # characters; a made token has 43
PAGE = Path(__file__).resolve().parent / "web_page"  # the page's template and the fonts r2k adds
STATIC_ROUTE = "/r2k-static/"


def command(user: str) -> str:
    """What textual-serve runs for each browser session (a shell line: it starts it with a shell)."""
    return shlex.join([sys.executable, "-m", "r2k.app", "--as", user])


def token_file(data_dir) -> Path:
    return Path(data_dir) / "web" / "token"


def token(data_dir) -> str:
    """The server's secret: read from the data dir, made there at the first start, readable by its
    owner only. It is written whole into a draft and linked into place, so a server starting at the
    same moment never reads it half-written (an empty token would match a request with no cookie);
    a token file too short to be a secret is refused, not served."""
    path = token_file(data_dir)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    if not path.exists():
        draft = path.with_name(f".token.{os.getpid()}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
        try:
            os.link(draft, path)  # the first server's token is the one both keep
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    os.chmod(path, 0o600)
    secret = path.read_text().strip()
    if len(secret) < MIN_TOKEN:
        raise InvalidInput(f"{path} holds no usable token ({len(secret)} characters, at least {MIN_TOKEN}): "
                           "remove it and start again to make a new one")
    return secret


class HideToken(logging.Filter):
    """aiohttp's access log writes each request line whole: the link's token (or a guess at it) is
    shown there as hidden, so the log of a server under a service manager holds no credential."""

    IN_URL = re.compile(r"([?&])token=[^&\s\"]*")

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self.IN_URL.sub(r"\1token=(hidden)", record.getMessage()), None
        return True


def needs_token(secret: str):
    """aiohttp middleware: the token once in the address, then its cookie, on every request."""
    from aiohttp import web

    refused = ("r2k: this workstation needs its link with the token (r2k serve web prints where it is)\n")

    def refuse(request, why: str):
        # The path without its query: a wrong token is still nobody's to read in a log.
        log.warning("refused %s %s from %s: %s", request.method, visible(request.path, multiline=False)[:120],
                    request.remote, why)
        return web.Response(status=403, text=refused)

    @web.middleware
    async def middleware(request, handler):
        given = request.query.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), secret.encode()):
                return refuse(request, "wrong token")
            # The token leaves the address bar (and the browser's history) for a cookie scripts cannot read.
            query = {k: v for k, v in request.query.items() if k != "token"}
            moved = web.HTTPFound(request.rel_url.with_query(query))
            moved.set_cookie(COOKIE, secret, httponly=True, samesite="Strict", path="/",
                             secure=request.secure or request.headers.get("X-Forwarded-Proto") == "https")
            raise moved
        cookie = request.cookies.get(COOKIE)
        if cookie is None:
            return refuse(request, "no token or cookie")
        if not hmac.compare_digest(cookie.encode(), secret.encode()):
            return refuse(request, "wrong cookie")
        return await handler(request)

    return middleware


def serve(user: str, host: str, port: int, data_dir, public_url: str | None = None) -> None:
    import aiohttp_jinja2
    from textual_serve.server import Server

    secret = token(data_dir)

    class TokenServer(Server):
        """textual-serve's server with the token's middleware, r2k's page (PAGE: its template, which
        loads nothing from another host, and the fonts it adds) and no banner of its own: the only
        link printed is r2k's, the one with the token."""

        async def _make_app(self):
            app = await super()._make_app()
            app.middlewares.append(needs_token(secret))
            app.router.add_static(STATIC_ROUTE + "fonts", PAGE / "fonts", name="r2k_fonts")
            return app

        @aiohttp_jinja2.template("app_index.html")
        async def handle_index(self, request):
            context = await Server.handle_index.__wrapped__(self, request)
            return {**context, "r2k_static_url": f"{self.public_url}{STATIC_ROUTE}"}

        async def on_startup(self, app) -> None:
            """textual-serve's banner printed the address without the token: a 403."""

    link = f"{public_url or f'http://{host}:{port}'}/?token={secret}"
    where = token_file(data_dir)
    # The link is the credential: on a terminal it is shown; in a log it is not.
    print(f"r2k: the workstation as {user} on {host}:{port}; "
          + (f"open {link}" if sys.stdout.isatty() else f"its link's token is in {where}"), flush=True)
    logging.getLogger("aiohttp.access").addFilter(HideToken())
    # textual-serve's own static files (its script, its stylesheet, its Roboto Mono) stay where it keeps
    # them; the template is r2k's (Server's templates_path).
    server = TokenServer(command(user), host=host, port=port, title=f"r2k · {user}", public_url=public_url,
                         templates_path=PAGE)
    server.serve()
