"""Queue GameAnim workflows on a running ComfyUI from the command line (stdlib + websocket-client).

    python scripts/gameanim_client.py run workflows/pose_from_rig.json --out renders/ \\
        --set "Pose From BVH.camera=side_left" --set "12.seed=7"
    python scripts/gameanim_client.py batch workflows/api/vc2_sprite_t2v.json jobs.csv --out renders/
    python scripts/gameanim_client.py convert workflows/pose_from_rig.json > pose_api.json

A UI-format workflow (what the browser saves: subgraphs, reroutes, primitives, bypassed nodes, files
from older frontends) is converted to API format with the server's ``/object_info`` as the frontend's
``app.graphToPrompt()`` does (``workflow_format/convert.py``); API files are queued as they are.  ``--set TARGET.INPUT=VALUE`` overrides an input,
TARGET being a node title or id; VALUE is JSON when it parses (``7``, ``true``, ``"text"``), else text,
and is converted to the input's declared type.  The client shows a progress bar from the websocket,
downloads every file the workflow's nodes wrote into ``--out`` (sheets, atlases, ``.tres``, ``.meta``,
keypoint JSON, GIF/WebP: whatever the history lists with type ``output``; temporary previews only with
``--previews``) and exits with status 1 and the server's error text when validation or execution fails.  ``batch`` reads a CSV (one column per ``TARGET.INPUT``) or a JSON list
of ``{"TARGET.INPUT": value}`` objects, queues one job per row into ``--out/row-NNNN/``, and records
finished rows in a state file so an interrupted batch resumes where it stopped.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The workflow tooling is loaded by path (stdlib only), so the client needs neither torch nor the node pack.
_FORMAT_DIR = Path(__file__).resolve().parents[1] / "workflow_format"
_spec = importlib.util.spec_from_file_location(
    "gameanim_workflow_format", _FORMAT_DIR / "__init__.py", submodule_search_locations=[str(_FORMAT_DIR)]
)
wf = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = wf
_spec.loader.exec_module(wf)


class ClientError(Exception):
    """A failure to report to the user as text (server error, bad override, bad file)."""


# ----------------------------------------------------------------------------- HTTP


def server_url(text: str) -> str:
    """The ComfyUI address ``text`` as an ``http(s)://host:port`` base URL: an address typed without its scheme
    (``127.0.0.1:8188``) is taken as http; another scheme, no host or a port that is no port is a ClientError."""
    url = text.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    try:
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:  # a port that is no number
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ClientError(
            f"--server must be ComfyUI's http:// or https:// address (e.g. http://127.0.0.1:8188); got {text!r}"
        )
    return url


class Server:
    def __init__(self, url: str, timeout: float = 60.0):
        self.url = server_url(url)
        self.timeout = timeout
        self._object_info: dict[str, Any] | None = None

    def request(self, method: str, path: str, payload: Any = None) -> tuple[int, bytes]:
        data = json.dumps(payload).encode("utf-8") if payload is not None else None
        req = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:  # noqa: S310 - user-given ComfyUI URL
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()
        except urllib.error.URLError as err:
            raise ClientError(f"cannot reach ComfyUI at {self.url}: {err.reason}") from err

    def json(self, method: str, path: str, payload: Any = None) -> tuple[int, Any]:
        status, body = self.request(method, path, payload)
        try:
            return status, json.loads(body or b"null")
        except json.JSONDecodeError:
            return status, {"error": {"message": body.decode("utf-8", "replace")[:2000]}}

    def object_info(self) -> dict[str, Any]:
        if self._object_info is None:
            status, info = self.json("GET", "/object_info")
            if status != 200:
                raise ClientError(f"/object_info answered HTTP {status}")
            self._object_info = info
        return self._object_info


# ----------------------------------------------------------------------------- prompts


def load_prompt(path: Path, object_info: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """An API prompt from a UI or API workflow file (``{"prompt": ...}`` wrappers accepted)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ClientError(f"cannot read workflow {path}: {err}") from err
    if isinstance(data, dict) and isinstance(data.get("prompt"), dict):
        data = data["prompt"]
    if wf.is_api_format(data):
        return data
    if wf.is_ui_format(data):
        try:
            return wf.ui_to_api(data, object_info())
        except wf.WorkflowError as err:
            raise ClientError(f"{path}: {err}") from err
    raise ClientError(f"{path} is neither a UI nor an API workflow")


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _coerce(value: Any, spec: Any, where: str) -> Any:
    kind = spec[0] if isinstance(spec, list) and spec else None
    try:
        if kind == "INT":
            return int(value)
        if kind == "FLOAT":
            return float(value)
        if kind == "BOOLEAN":
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes")
            return bool(value)
        if kind == "STRING":
            return value if isinstance(value, str) else json.dumps(value)
    except (TypeError, ValueError) as err:
        raise ClientError(f"{where}: {value!r} is not a valid {kind}") from err
    return value


def find_node(prompt: dict[str, Any], target: str, object_info: dict[str, Any] | None) -> str:
    """The id of the node named ``target`` (an id, a title, or a node type's display name)."""
    if target in prompt:
        return target
    by_title = [nid for nid, node in prompt.items() if node.get("_meta", {}).get("title") == target]
    if not by_title and object_info:
        by_title = [
            nid for nid, node in prompt.items() if object_info.get(node["class_type"], {}).get("display_name") == target
        ]
    if not by_title:
        by_title = [nid for nid, node in prompt.items() if node["class_type"] == target]
    if len(by_title) != 1:
        titles = sorted({n.get("_meta", {}).get("title", n["class_type"]) for n in prompt.values()})
        what = "no node" if not by_title else f"{len(by_title)} nodes"
        raise ClientError(f"--set target {target!r}: {what} with that id or title; titles here: {titles}")
    return by_title[0]


def apply_overrides(
    prompt: dict[str, Any], overrides: dict[str, Any], object_info: dict[str, Any] | None
) -> dict[str, Any]:
    """A copy of ``prompt`` with ``{"TARGET.INPUT": value}`` applied (values typed by ``object_info``)."""
    result = json.loads(json.dumps(prompt))
    for key, raw in overrides.items():
        target, sep, name = key.rpartition(".")
        if not sep or not target or not name:
            raise ClientError(f"override {key!r} must look like 'Node title.input' or '12.input'")
        node_id = find_node(result, target, object_info)
        node = result[node_id]
        spec = None
        if object_info and node["class_type"] in object_info:
            inputs = object_info[node["class_type"]].get("input", {})
            specs = {**inputs.get("required", {}), **inputs.get("optional", {})}
            if name not in specs:
                raise ClientError(
                    f"node {node_id} ({node['class_type']}) has no input {name!r}; inputs: {sorted(specs)}"
                )
            spec = specs[name]
        value = _parse_value(raw) if isinstance(raw, str) else raw
        node["inputs"][name] = _coerce(value, spec, f"{key}") if spec is not None else value
    return result


def parse_set_args(items: list[str]) -> dict[str, Any]:
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ClientError(f"--set {item!r} needs '=' (e.g. --set \"Sprite Prompt.character=a knight\")")
        overrides[key.strip()] = value
    return overrides


# ----------------------------------------------------------------------------- running


def format_rejection(body: Any) -> str:
    """ComfyUI's 400 body (or dropped outputs on 200) as readable lines."""
    lines = []
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        lines.append(f"{error.get('message', 'rejected')}: {error.get('details', '')}".rstrip(": "))
    elif error:
        lines.append(str(error))
    for node_id, info in (body.get("node_errors") or {}).items() if isinstance(body, dict) else []:
        for err in info.get("errors", []):
            lines.append(f"  node {node_id} ({info.get('class_type')}): {err.get('message')} — {err.get('details')}")
    return "\n".join(lines) or json.dumps(body)[:2000]


class ProgressPrinter:
    """A one-line terminal progress bar fed by websocket messages."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream

    def __call__(self, message: dict[str, Any]) -> None:
        kind, data = message.get("type"), message.get("data", {})
        if kind == "progress" and data.get("max"):
            width = 30
            filled = int(width * data["value"] / data["max"])
            self.stream.write(
                f"\r  node {data.get('node')}: [{'#' * filled}{'.' * (width - filled)}] {data['value']}/{data['max']}"
            )
            self.stream.flush()
        elif kind == "executing" and data.get("node"):
            self.stream.write(f"\n  running node {data['node']}")
            self.stream.flush()


def _watch(
    server: Server, client_id: str, prompt_id: str, on_message: Callable[[dict[str, Any]], None], timeout: float
) -> None:
    """Follow websocket messages until the prompt is done (or fall back to polling without websocket-client)."""
    try:
        import websocket
    except ImportError:
        websocket = None
    deadline = time.monotonic() + timeout
    if websocket is not None:
        ws_url = server.url.replace("http", "ws", 1) + f"/ws?clientId={client_id}"
        try:
            conn = websocket.create_connection(ws_url, timeout=5)
        except OSError:
            conn = None
        if conn is not None:
            try:
                while time.monotonic() < deadline:
                    try:
                        raw = conn.recv()
                    except websocket.WebSocketTimeoutException:
                        if _finished(server, prompt_id):
                            return
                        continue
                    if not isinstance(raw, str):
                        continue
                    message = json.loads(raw)
                    if message.get("data", {}).get("prompt_id") not in (None, prompt_id):
                        continue
                    on_message(message)
                    if message.get("type") in ("execution_success", "execution_error", "execution_interrupted"):
                        return
                    if message.get("type") == "executing" and message["data"].get("node") is None:
                        return
            finally:
                conn.close()
    while time.monotonic() < deadline:
        if _finished(server, prompt_id):
            return
        time.sleep(0.5)
    server.request("POST", "/interrupt", {"prompt_id": prompt_id})
    raise ClientError(f"prompt {prompt_id} did not finish within {timeout:.0f} s; it was interrupted")


def _finished(server: Server, prompt_id: str) -> bool:
    _, history = server.json("GET", f"/history/{prompt_id}")
    entry = history.get(prompt_id) if isinstance(history, dict) else None
    return bool(entry and entry.get("status", {}).get("status_str"))


def _history_entry(server: Server, prompt_id: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, history = server.json("GET", f"/history/{prompt_id}")
        if (
            isinstance(history, dict)
            and prompt_id in history
            and history[prompt_id].get("status", {}).get("status_str")
        ):
            return history[prompt_id]
        time.sleep(0.3)
    raise ClientError(f"no history for prompt {prompt_id}")


def _execution_error(entry: dict[str, Any]) -> str | None:
    status = entry.get("status", {})
    if status.get("status_str") == "success":
        return None
    for event, data in status.get("messages", []):
        if event == "execution_error":
            return f"node {data.get('node_id')} ({data.get('node_type')}) failed: {data.get('exception_type')}: {data.get('exception_message')}"
        if event == "execution_interrupted":
            return f"interrupted at node {data.get('node_id')} ({data.get('node_type')})"
    return f"prompt ended with status {status.get('status_str')}"


def output_items(entry: dict[str, Any], previews: bool = False) -> list[dict[str, Any]]:
    """Every file a prompt's nodes listed in its history, once each, in the order listed.

    Nodes list files as ``{filename, subfolder, type}`` under any ``ui`` key (``images``, ``gifs``,
    ``audio``, ``3d``, GameAnim's ``files`` for atlases, ``.tres``, ``.meta`` and JSON, or nested, as
    in GameAnim's ``gameanim_preview`` frames).  ``type`` ``output`` files are the results; ``temp``
    ones are previews (``PreviewImage``'s ``ComfyUI_temp_*``, animation preview frames), taken only
    with ``previews``.
    """
    wanted = ("output", "temp") if previews else ("output",)
    found: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("filename"), str) and "type" in value:
                key = (str(value["type"]), str(value.get("subfolder") or ""), value["filename"])
                if value["type"] in wanted and key not in seen:
                    seen.add(key)
                    found.append(value)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(entry.get("outputs", {}))
    return found


def _local_path(out_dir: Path, item: dict[str, Any], taken: set[Path]) -> Path:
    """Where a listed file is saved: ``OUT/<name>``; a name already taken in this run (or a preview) keeps its
    sub-folder (``OUT/<subfolder>/<name>``, previews under ``OUT/previews/``).  Server paths never leave ``OUT``."""
    parts = [p for p in str(item.get("subfolder") or "").replace("\\", "/").split("/") if p not in ("", ".")]
    name = Path(str(item["filename"]).replace("\\", "/")).name
    if ".." in parts or not name or name in (".", ".."):
        raise ClientError(f"refusing to save {item!r}: its path leaves the output folder")
    if item.get("type") == "temp":
        return out_dir.joinpath("previews", *parts, name)
    flat = out_dir / name
    return flat if flat not in taken else out_dir.joinpath(*parts, name)


def download_outputs(server: Server, entry: dict[str, Any], out_dir: Path, previews: bool = False) -> list[Path]:
    """Fetch every file a prompt's nodes listed (see :func:`output_items`) into ``out_dir`` through ``/view``."""
    saved: list[Path] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for item in output_items(entry, previews):
        query = urllib.parse.urlencode({k: item.get(k) or "" for k in ("filename", "subfolder", "type")})
        status, body = server.request("GET", f"/view?{query}")
        if status != 200:
            raise ClientError(f"could not download {item['filename']} (HTTP {status})")
        target = _local_path(out_dir, item, set(saved))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        saved.append(target)
    return saved


def run_prompt(
    server: Server,
    prompt: dict[str, Any],
    out_dir: Path | None,
    timeout: float,
    on_message=None,
    previews: bool = False,
) -> tuple[dict[str, Any], list[Path]]:
    """Queue ``prompt``, follow it to the end and download its outputs; raise :class:`ClientError` on failure."""
    client_id = uuid.uuid4().hex
    status, body = server.json("POST", "/prompt", {"prompt": prompt, "client_id": client_id})
    if status != 200:
        raise ClientError(f"ComfyUI rejected the workflow (HTTP {status}):\n{format_rejection(body)}")
    if body.get("node_errors"):
        raise ClientError(f"ComfyUI dropped some outputs:\n{format_rejection(body)}")
    prompt_id = body["prompt_id"]
    _watch(server, client_id, prompt_id, on_message or (lambda message: None), timeout)
    entry = _history_entry(server, prompt_id)
    error = _execution_error(entry)
    if error:
        raise ClientError(error)
    files = download_outputs(server, entry, out_dir, previews) if out_dir is not None else []
    return entry, files


# ----------------------------------------------------------------------------- batch


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Override rows from a CSV (header = ``TARGET.INPUT`` columns) or a JSON list of objects."""
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as handle:
            return [{k: v for k, v in row.items() if k and v != ""} for row in csv.DictReader(handle)]
    rows = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ClientError(f"{path} must hold a JSON list of {{'Node title.input': value}} objects")
    return rows


def _write_state(path: Path, state: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=1)
    os.replace(tmp, path)


def run_batch(
    rows: list[dict[str, Any]],
    state_path: Path,
    run_row: Callable[[int, dict[str, Any]], Any],
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run ``run_row(index, overrides)`` for every row not yet recorded as done in ``state_path``.

    The state file is rewritten atomically after each finished row, so killing the batch at any
    point loses at most the row in progress; a failed row is recorded with its error and retried
    on the next run.
    """
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else {"done": {}, "failed": {}}
    for index, row in enumerate(rows):
        key = str(index)
        if key in state["done"]:
            continue
        try:
            result = run_row(index, row)
        except ClientError as err:
            state["failed"][key] = str(err)
            log(f"row {index}: FAILED: {err}")
        else:
            state["done"][key] = result
            state["failed"].pop(key, None)
            log(f"row {index}: done")
        _write_state(state_path, state)
    return state


# ----------------------------------------------------------------------------- CLI

PREVIEWS_HELP = "also save temporary previews (PreviewImage's ComfyUI_temp_* files, animation preview frames)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--server", default=os.environ.get("COMFYUI_URL", "http://127.0.0.1:8188"), help="ComfyUI address"
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for one prompt")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="queue one workflow and download its outputs")
    run.add_argument("workflow", type=Path)
    run.add_argument("--set", action="append", default=[], metavar="TARGET.INPUT=VALUE")
    run.add_argument("--out", type=Path, default=Path("gameanim_outputs"))
    run.add_argument("--previews", action="store_true", help=PREVIEWS_HELP)
    batch = sub.add_parser("batch", help="queue one job per row of a CSV/JSON file of overrides, resumable")
    batch.add_argument("workflow", type=Path)
    batch.add_argument("rows", type=Path)
    batch.add_argument("--set", action="append", default=[], metavar="TARGET.INPUT=VALUE", help="applied to every row")
    batch.add_argument("--out", type=Path, default=Path("gameanim_outputs"))
    batch.add_argument("--state", type=Path, help="progress file (default: OUT/batch_state.json)")
    batch.add_argument("--previews", action="store_true", help=PREVIEWS_HELP)
    convert = sub.add_parser(
        "convert", help="print the API-format prompt of a workflow (UI conversion uses /object_info)"
    )
    convert.add_argument("workflow", type=Path)
    convert.add_argument("--object-info", type=Path, help="read node definitions from this JSON instead of the server")
    args = parser.parse_args(argv)

    try:
        server = Server(args.server)
        if args.command == "convert":
            info = (
                (lambda: json.loads(args.object_info.read_text(encoding="utf-8")))
                if args.object_info
                else server.object_info
            )
            print(json.dumps(load_prompt(args.workflow, info), indent=1))
            return 0
        prompt = load_prompt(args.workflow, server.object_info)
        common = parse_set_args(args.set)
        if args.command == "run":
            prompt = apply_overrides(prompt, common, server.object_info())
            _, files = run_prompt(server, prompt, args.out, args.timeout, ProgressPrinter(), args.previews)
            print(f"\nsaved {len(files)} file(s) to {args.out}")
            for path in files:
                print(f"  {path}")
            return 0
        rows = read_rows(args.rows)
        args.out.mkdir(parents=True, exist_ok=True)
        state_path = args.state or args.out / "batch_state.json"

        def run_row(index: int, row: dict[str, Any]) -> list[str]:
            job = apply_overrides(prompt, {**common, **row}, server.object_info())
            _, files = run_prompt(
                server, job, args.out / f"row-{index:04d}", args.timeout, ProgressPrinter(), args.previews
            )
            return [str(p) for p in files]

        state = run_batch(rows, state_path, run_row)
        print(f"{len(state['done'])}/{len(rows)} rows done; state in {state_path}")
        return 0 if len(state["done"]) == len(rows) else 1
    except ClientError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
