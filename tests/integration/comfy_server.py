"""Start a real ComfyUI headless on 127.0.0.1 with this pack linked in, and talk to it.

The server runs from ``COMFYUI_DIR`` with ``COMFYUI_PYTHON`` against a throw-away base directory
(``--base-directory``, its own SQLite database), so neither the ComfyUI tree nor the pack is
modified.  Bytecode goes to a persistent ``PYTHONPYCACHEPREFIX`` so later starts are quick.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

PACK_DIR_NAME = "gameanim"
PYCACHE = Path(os.environ.get("GAMEANIM_COMFY_PYCACHE", Path.home() / ".cache" / "gameanim-comfy-pycache"))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ComfyServer:
    comfy_dir: Path
    python: str
    pack_root: Path
    base: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen | None = None
    api_nodes: bool = False  # define ComfyUI's API nodes (comfy_api_nodes); they call paid services when run

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.base / "comfyui.log"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def start(self, timeout: float = 600.0) -> None:
        for sub in ("custom_nodes", "models", "input", "output", "temp", "user"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        link = self.base / "custom_nodes" / PACK_DIR_NAME
        if not link.exists():
            link.symlink_to(self.pack_root, target_is_directory=True)
        PYCACHE.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(PYCACHE), PYTHONUNBUFFERED="1")
        cmd = [
            self.python,
            "main.py",
            "--cpu",
            "--listen",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--disable-auto-launch",
            *([] if self.api_nodes else ["--disable-api-nodes"]),
            "--base-directory",
            str(self.base),
            "--database-url",
            f"sqlite:///{self.base / 'user' / 'comfyui.db'}",
        ]
        log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            cmd, cwd=self.comfy_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"ComfyUI exited during start-up (code {self.process.returncode}):\n{self.log()[-4000:]}"
                )
            try:
                if requests.get(f"{self.url}/system_stats", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(1.0)
        raise TimeoutError(f"ComfyUI was not ready after {timeout:.0f} s:\n{self.log()[-4000:]}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=15)
        except ProcessLookupError:
            pass

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return requests.get(f"{self.url}{path}", timeout=60, **kwargs)

    def queue(self, prompt: dict[str, Any]) -> requests.Response:
        return requests.post(f"{self.url}/prompt", json={"prompt": prompt, "client_id": uuid.uuid4().hex}, timeout=60)

    def wait_idle(self, timeout: float = 600.0) -> None:
        """Poll ``/queue`` until nothing runs or waits: prompts that earlier tests queued (the browser tests queue
        from the page) must not write their files while a test compares the output folder before and after."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queue = self.get("/queue").json()
            if not queue.get("queue_running") and not queue.get("queue_pending"):
                return
            time.sleep(0.5)
        raise TimeoutError(f"the queue was still busy after {timeout:.0f} s")

    def wait_history(self, prompt_id: str, timeout: float = 600.0) -> dict[str, Any]:
        """Poll ``/history/<id>`` until the prompt finished; on time-out interrupt it and fail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            history = self.get(f"/history/{prompt_id}").json()
            entry = history.get(prompt_id)
            if entry and entry.get("status", {}).get("completed") is not None and entry["status"].get("status_str"):
                return entry
            time.sleep(0.5)
        requests.post(f"{self.url}/interrupt", json={"prompt_id": prompt_id}, timeout=10)
        raise TimeoutError(f"prompt {prompt_id} did not finish in {timeout:.0f} s")


def describe_failure(entry: dict[str, Any]) -> str:
    """The execution error of a history entry, as readable text."""
    for event, data in entry.get("status", {}).get("messages", []):
        if event == "execution_error":
            return json.dumps(
                {k: data.get(k) for k in ("node_type", "exception_type", "exception_message", "traceback")}, indent=1
            )
    return json.dumps(entry.get("status"), indent=1)
