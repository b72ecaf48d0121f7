"""Real servers for the source tests, started on loopback ports by the tests themselves: Dovecot (Debian's
dovecot-imapd, a foreground process with its own configuration in a temporary folder), a WebDAV share (wsgidav
on cheroot), Git's smart HTTP (``git http-backend``, the real CGI program, behind basic authentication), and a
TCP relay in front of any of them that the tests cut to make a server go away at an exact point of a sync."""

from __future__ import annotations

import base64
import contextlib
import imaplib
import os
import pathlib
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator

from cheroot import wsgi

from services.launcher.probes import free_port


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


# -- Dovecot ---------------------------------------------------------------------------------------
class Dovecot:
    """A Dovecot IMAP server on 127.0.0.1 (plain IMAP, PLAIN/LOGIN auth), one user, maildir in ``root``."""

    def __init__(self, user: str = "ada", password: str = "harbour-secret") -> None:
        if shutil.which("dovecot") is None:
            raise RuntimeError("dovecot is not installed: apt-get install dovecot-imapd (tools/system_packages.sh)")
        # Its own folder, readable on the way down by Dovecot's unprivileged processes (pytest's are 0700).
        root = pathlib.Path(tempfile.mkdtemp(prefix="docuthinker-dovecot-"))
        root.chmod(0o755)
        self.root = root
        self.user, self.password = user, password
        self.port = free_port()
        self._process: subprocess.Popen | None = None
        root.mkdir(parents=True, exist_ok=True)
        (root / "users").write_text(f"{user}:{{PLAIN}}{password}\n")
        # Dovecot's auth process reads it as the dovecot user; the umask may be 077 (the mesh's fixtures set one).
        (root / "users").chmod(0o644)
        running_as = pwd.getpwuid(os.geteuid()).pw_name
        # As root, mail runs as Debian's dovecot user (Dovecot refuses uid 0); otherwise as whoever runs the tests.
        mail_user = "dovecot" if os.geteuid() == 0 else running_as
        login_user = "dovenull" if os.geteuid() == 0 else running_as
        for sub in ("run", "state", "mail"):
            (root / sub).mkdir(exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(root / "mail", mail_user, mail_user)
        (root / "dovecot.conf").write_text(f"""
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_internal_user = {mail_user}
default_login_user = {login_user}
first_valid_uid = 1
mail_location = maildir:{root}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/users
}}
userdb {{
  driver = static
  args = uid={mail_user} gid={mail_user} home={root}/mail/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
  unix_listener anvil-auth-penalty {{
    mode = 0666
  }}
}}
""")

    def start(self) -> Dovecot:
        self._process = subprocess.Popen(["dovecot", "-F", "-c", str(self.root / "dovecot.conf")],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
        wait_for_port(self.port)
        # The listener opens before the auth process answers: under load a first login gets "[UNAVAILABLE]
        # Temporary authentication failure". Ready means a login goes through (bounded).
        deadline = time.monotonic() + 30
        while True:
            try:
                with self.client():
                    break
            except imaplib.IMAP4.error as exc:
                if b"UNAVAILABLE" not in str(exc).encode() or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        return self

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, 15)
            self._process.wait(10)
        self._process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    @contextlib.contextmanager
    def client(self) -> Iterator[imaplib.IMAP4]:
        client = imaplib.IMAP4("127.0.0.1", self.port)
        client.login(self.user, self.password)
        try:
            yield client
        finally:
            with contextlib.suppress(Exception):
                client.logout()

    def deliver(self, raw: bytes, mailbox: str = "INBOX") -> int:
        """Appends a message (as a mail client saving one would); returns its UID."""
        with self.client() as client:
            status, data = client.append(mailbox, None, None, raw)
            assert status == "OK", data
            return int(re.search(rb"APPENDUID \d+ (\d+)", data[0])[1])

    def expunge(self, uid: int, mailbox: str = "INBOX") -> None:
        with self.client() as client:
            client.select(mailbox)
            client.uid("STORE", str(uid), "+FLAGS", r"(\Deleted)")
            client.expunge()


# -- WSGI servers (WebDAV, Git smart HTTP) -------------------------------------------------------------
class WsgiServer:
    def __init__(self, app, port: int | None = None) -> None:
        self.port = port or free_port()
        self._app = app
        self._server: wsgi.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> WsgiServer:
        self._server = wsgi.Server(("127.0.0.1", self.port), self._app, numthreads=4)
        self._server.prepare()
        self._thread = threading.Thread(target=self._server.serve, daemon=True)
        self._thread.start()
        wait_for_port(self.port)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._thread.join(10)
            self._server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def webdav_server(root: pathlib.Path, user: str, password: str) -> WsgiServer:
    """A wsgidav share of ``root``, basic authentication with one user."""
    from wsgidav.wsgidav_app import WsgiDAVApp

    app = WsgiDAVApp({
        "provider_mapping": {"/": str(root)},
        "simple_dc": {"user_mapping": {"*": {user: {"password": password}}}},
        "http_authenticator": {"accept_basic": True, "accept_digest": False, "default_to_digest": False},
        "verbose": 0, "logging": {"enable": False}, "dir_browser": {"enable": False},
    })
    return WsgiServer(app)


def git_http_app(projects: pathlib.Path, user: str, password: str) -> Callable:
    """Git's own smart-HTTP CGI (``git http-backend``) for every repository under ``projects``, behind basic
    authentication (as a web server in front of it would be configured)."""
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def app(environ, start_response):
        if environ.get("HTTP_AUTHORIZATION") != expected:
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Length", "0")])
            return [b""]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        env = {"GIT_PROJECT_ROOT": str(projects), "GIT_HTTP_EXPORT_ALL": "1", "PATH": os.environ["PATH"],
               "REMOTE_USER": user, "REMOTE_ADDR": "127.0.0.1", "GATEWAY_INTERFACE": "CGI/1.1",
               **{k: str(environ.get(k, "")) for k in ("PATH_INFO", "QUERY_STRING", "REQUEST_METHOD",
                                                       "CONTENT_TYPE", "CONTENT_LENGTH")},
               **{k: v for k, v in environ.items() if k.startswith("HTTP_") and isinstance(v, str)}}
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        out = done.stdout
        ends = [(i, len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if (i := out.find(sep)) >= 0]
        cut, width = min(ends) if ends else (len(out), 0)
        head, payload = out[:cut], out[cut + width:]
        status, headers = "200 OK", []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = value.strip()
            elif name:
                headers.append((name.strip(), value.strip()))
        start_response(status, headers)
        return [payload]

    return app


def make_repository(projects: pathlib.Path, name: str, files: dict[str, str], work: pathlib.Path) -> pathlib.Path:
    """A bare repository ``projects/<name>.git`` whose main branch holds ``files`` (one commit); its working copy."""
    bare = projects / f"{name}.git"
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=Tests", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "--bare", "--quiet", str(bare)], check=True)
    subprocess.run([*git, "clone", "--quiet", str(bare), str(work)], check=True, capture_output=True)
    commit(work, files, "first")
    return work


def commit(work: pathlib.Path, files: dict[str, str | None], message: str) -> str:
    """Writes (or with None deletes) files in the working copy, commits and pushes to main; the commit id."""
    for path, text in files.items():
        target = work / path
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    git = ["git", "-C", str(work), "-c", "user.email=t@example.org", "-c", "user.name=Tests"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", message], check=True)
    subprocess.run([*git, "push", "--quiet", "origin", "HEAD:main"], check=True, capture_output=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


# -- a relay that can make a server go away at an exact point ----------------------------------------------
class Relay:
    """Forwards 127.0.0.1:<port> to a server. ``cut_at(pattern, n)``: when the client has sent ``pattern`` the
    n-th time, the request is not forwarded: every connection is closed and the port refuses connections
    (the server is gone) until ``restore``. ``cut`` fires once the cut happened."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.port = free_port()
        self.cut = threading.Event()
        self._pattern: re.Pattern[bytes] | None = None
        self._left = 0
        self._lock = threading.Lock()
        self._connections: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.restore()

    def cut_at(self, pattern: bytes, occurrence: int) -> None:
        with self._lock:
            self._pattern, self._left = re.compile(pattern), occurrence
            self.cut.clear()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._connections += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if from_client and data and self._should_cut(data):
                self.go_away()
                return
            if not data:
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            try:
                sink.sendall(data)
            except OSError:
                return

    def _should_cut(self, data: bytes) -> bool:
        with self._lock:
            if self._pattern is None:
                return False
            self._left -= len(self._pattern.findall(data))
            if self._left > 0:
                return False
            self._pattern = None
            return True

    def go_away(self) -> None:
        """Closes the port and every connection through it."""
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, []
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            listener.close()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()
        self.cut.set()

    def close(self) -> None:
        self.go_away()
