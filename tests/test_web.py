"""The workstation in a browser (docs/architecture.md, "Remote access"): `r2k serve web --as USER` run
as a user runs it, against this session's services, and headless Chromium (the distribution's,
which .ci/run installs when it is missing) driven through its DevTools protocol. The page draws
the terminal on a canvas (xterm.js), so its text is read where the page gets it: the frames of its
websocket, the TUI's own output."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, error_of, r2k

ANSI = re.compile(rb"\x1b\[[0-9;?<>=$ ]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\x1b\][^\x07]*\x07")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
    return value


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def web(ctx, people, tmp_path):
    """`r2k serve web --as alice` on a free port; its log."""
    port = free_port()
    log = tmp_path / "web.log"
    env = {k: v for k, v in os.environ.items() if k != "R2K_USER"}
    env["R2K_START_WORKER"] = "0"
    server = subprocess.Popen([sys.executable, "-m", "r2k.app", "serve", "web", "--as", "alice", "--port", str(port)],
                              cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: server.poll() is not None or answers(port), "the web server to listen")
        assert server.poll() is None, log.read_text()
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# --------------------------------------------------------------------------- headless Chromium

class Page:
    """What the page received and showed: its websocket's bytes, and a screenshot taken once they stop."""

    def __init__(self, received: bytes, screenshot: bytes, body_class: str, requested: list[str] | None = None,
                 fonts: list[str] | None = None):
        self.received, self.screenshot, self.body_class = received, screenshot, body_class
        self.requested = requested or []  # every URL the page asked for (documents, files, fonts, websocket)
        self.fonts = fonts or []          # each font face the page declared: family, status, range

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.received).decode("utf-8", "replace")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "chromium is missing: .ci/run installs Debian's chromium package"
    return found


async def _load(url: str, want: str, profile: Path, timeout: float) -> Page:
    import aiohttp

    # Offline, as a machine without the internet: every host but the server's resolves to nothing.
    browser = subprocess.Popen([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1280,800",
                                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                                "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        devtools = None
        for line in browser.stderr:  # Chromium says where its DevTools listen, on stderr
            if found := re.search(rb"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line):
                devtools = int(found.group(1))
                break
        assert devtools, "chromium did not start its DevTools"
        async with aiohttp.ClientSession() as http:
            targets = await (await http.get(f"http://127.0.0.1:{devtools}/json/list")).json()
            page = next(t for t in targets if t["type"] == "page")
            async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as cdp:
                received = bytearray()
                requested: list[str] = []
                last = [time.monotonic()]
                ids = iter(range(1, 1 << 30))

                def seen(message: dict) -> None:
                    if message.get("method") == "Network.requestWillBeSent":
                        requested.append(message["params"]["request"]["url"])
                    elif message.get("method") == "Network.webSocketCreated":
                        requested.append(message["params"]["url"])
                    if message.get("method") == "Network.webSocketFrameReceived":
                        frame = message["params"]["response"]
                        data = frame["payloadData"]
                        received.extend(base64.b64decode(data) if frame["opcode"] == 2 else data.encode())
                        last[0] = time.monotonic()

                async def call(method: str, **params):
                    number = next(ids)
                    await cdp.send_json({"id": number, "method": method, "params": params})
                    while True:
                        message = json.loads((await cdp.receive()).data)
                        seen(message)
                        if message.get("id") == number:
                            return message.get("result", {})

                await call("Network.enable")
                await call("Page.enable")
                await call("Page.navigate", url=url)
                deadline = time.monotonic() + timeout
                # Until the page has what we look for and then nothing new for a moment (drawn).
                while not (want in ANSI.sub(b"", bytes(received)).decode("utf-8", "replace")
                           and time.monotonic() - last[0] > 1.0):
                    if time.monotonic() > deadline:
                        break
                    try:
                        seen(json.loads((await asyncio.wait_for(cdp.receive(), 0.2)).data))
                    except asyncio.TimeoutError:
                        pass
                shot = await call("Page.captureScreenshot", format="png")
                body = await call("Runtime.evaluate", expression="document.body.className")
                fonts = await call("Runtime.evaluate", returnByValue=True, expression=(
                    "[...document.fonts].map(f => ({family: f.family, status: f.status, range: f.unicodeRange}))"))
                return Page(bytes(received), base64.b64decode(shot["data"]), body["result"].get("value", ""),
                            requested, fonts["result"].get("value") or [])
    finally:
        browser.terminate()
        browser.wait()


def load(url: str, want: str, profile: Path, timeout: float = 40.0) -> Page:
    return asyncio.run(_load(url, want, profile, timeout))


def png_colours(data: bytes) -> tuple[int, int, Counter]:
    """Width, height and how many pixels of each colour: a small PNG reader (8-bit RGB or RGBA,
    what Chromium writes), so the test needs no imaging library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        pos += 12 + size
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
        elif kind == b"IDAT":
            idat += body
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    counts: Counter = Counter()
    prev = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        counts.update(bytes(line[x:x + 3]) for x in range(0, stride, bpp))
        prev = line
    return width, height, counts


# The dashboard as the default theme draws it: its section headings (orange), its header band; and
# textual-serve's start dialog, which the page shows until the TUI's first byte.
HEADING = bytes((254, 166, 43))
HEADER = bytes((36, 47, 56))
START_DIALOG = bytes((18, 35, 45))


# --------------------------------------------------------------------------- tests

def web_token(ctx) -> str:
    from r2k.app.remote import web as served

    return served.token_file(ctx.settings.data_dir).read_text().strip()


def test_the_browser_shows_the_dashboard_as_the_served_user(ctx, web, tmp_path):
    page = load(f"{web}?token={web_token(ctx)}", "Dashboard — alice (validator", tmp_path / "profile")
    assert "Dashboard — alice (validator · FACT, RULE)" in page.text  # the page's text names the user
    assert "Candidates by Horn type and state" in page.text
    assert "-first-byte" in page.body_class  # the start dialog gave way to the terminal
    (tmp_path / "dashboard.png").write_bytes(page.screenshot)
    width, height, colours = png_colours(page.screenshot)
    assert width >= 1000 and height >= 500
    assert colours[HEADING] > 200, colours.most_common(8)  # the dashboard's headings are drawn
    assert colours[HEADER] > width * 10, colours.most_common(8)  # its header band, across the page
    assert colours[START_DIALOG] == 0, colours.most_common(8)


def test_the_page_loads_nothing_from_another_host(ctx, web, tmp_path):
    """Offline, the page works whole: every URL it requests (the page, its script and stylesheet, its
    fonts, its websocket) is on the server's own origin, and the font faces it declares load, the
    symbols' one (the header's ⭘) among them. The banner prints no link but the token's (here none:
    its stdout is no terminal)."""
    # The banner, before any request: r2k's line only (not on a terminal: where the token is), no link.
    banner = wait_until(lambda: (text := (tmp_path / "web.log").read_text()) and "r2k: the workstation" in text
                        and text, "the banner")
    assert banner.splitlines()[0].startswith("r2k: the workstation as alice on 127.0.0.1:"), banner
    assert not re.findall(r"\b(?:https?|wss?)://", banner), banner
    page = load(f"{web}?token={web_token(ctx)}", "Dashboard — alice (validator", tmp_path / "profile")
    assert "Dashboard — alice" in page.text
    origin = web.rstrip("/")
    own = (origin + "/", "ws" + origin[len("http"):] + "/")
    assert page.requested and all(url.startswith(own) for url in page.requested), page.requested
    assert any("/r2k-static/fonts/" in url for url in page.requested), page.requested
    faces = [f for f in page.fonts if f["family"].strip('"') == "Roboto Mono"]
    symbols = [f for f in faces if "U+2B00-2BFF" in f["range"].upper()]
    assert symbols and any(f["status"] == "loaded" for f in symbols), page.fonts  # the ⭘ has a font
    assert any(f["status"] == "loaded" and f not in symbols for f in faces), page.fonts  # and the text


def test_nobody_gets_in_without_the_token(ctx, web, tmp_path):
    """Another account on the machine reaches 127.0.0.1 too: without the link's token, no page, no
    files, no websocket; with it, a cookie (not readable by scripts) and the address without it."""
    import stat
    import urllib.error
    import urllib.request

    from r2k.app.remote import web as served

    secret = web_token(ctx)
    path = served.token_file(ctx.settings.data_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)

    def get(url: str, cookie: str | None = None):
        request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
        try:
            with opener.open(request, timeout=10) as response:
                return response.status, dict(response.headers), response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read().decode()

    for url in (web, f"{web}ws", f"{web}static/js/textual.js", f"{web}?token=wrong", f"{web}?token="):
        status, _, body = get(url)
        assert status == 403, url
        assert "needs its link with the token" in body and "Dashboard" not in body
    assert get(web, cookie=f"{served.COOKIE}=wrong")[0] == 403
    status, headers, _ = get(f"{web}?token={secret}")
    assert status == 302 and "token" not in headers["Location"]
    assert f"{served.COOKIE}={secret}" in headers["Set-Cookie"] and "HttpOnly" in headers["Set-Cookie"]
    status, _, body = get(web, cookie=f"{served.COOKIE}={secret}")
    assert status == 200 and "textual" in body.lower()
    log = " ".join((tmp_path / "web.log").read_text().split())  # the log's lines, however it wraps them
    for refusal in ("refused GET / from 127.0.0.1: no token or cookie", "refused GET /ws from 127.0.0.1",
                    "wrong token", "wrong cookie"):
        assert refusal in log, log
    assert secret not in log and "token=wrong" not in log  # neither the token nor a guess at it
    assert "GET /?token=(hidden) HTTP/1.1\" 302" in log


def test_serve_web_refuses_an_unknown_user_before_it_listens(ctx, people):
    port = free_port()
    result = r2k("serve", "web", "--as", "mallory", "--port", str(port))
    assert result.returncode == 7
    assert "unknown user 'mallory'" in error_of(result)["message"]
    assert not answers(port)


def test_serve_web_listens_on_localhost_by_default():
    from r2k.app.cli import build_parser

    args = build_parser().parse_args(["serve", "web", "--as", "alice"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)
    ssh = build_parser().parse_args(["serve", "ssh"])
    assert (ssh.host, ssh.port) == ("127.0.0.1", 2222)


# --------------------------------------------------------------------------- pure: the token file

def test_the_token_is_made_once_readable_by_its_owner_only(tmp_path):
    import stat

    from r2k.app.remote import web as served

    secret = served.token(tmp_path)
    path = served.token_file(tmp_path)
    assert len(secret) >= 43 and served.token(tmp_path) == secret  # kept across restarts
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["token"]  # no draft left behind
    path.chmod(0o644)
    path.parent.chmod(0o755)
    assert served.token(tmp_path) == secret
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("content", ["", "\n", "short"], ids=["empty", "blank", "short"])
def test_a_token_file_too_short_to_be_a_secret_is_refused(tmp_path, content):
    """An empty token would match a request that brings no cookie at all: the server does not start."""
    from r2k.app.remote import web as served
    from r2k.core.errors import InvalidInput

    path = served.token_file(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.write_text(content)
    with pytest.raises(InvalidInput, match="holds no usable token"):
        served.token(tmp_path)
    assert path.read_text() == content
