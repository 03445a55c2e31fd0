"""The shared foundation: path confinement, atomic writes, weight files, progress/cancel, host fallbacks."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
import torch
from gameanim.core import host, threads
from gameanim.core.atomic import atomic_target, write_text_atomic
from gameanim.core.buffers import zeroed
from gameanim.core.errors import ModelFileError, UnsafePathError
from gameanim.core.model_folders import MODEL_FOLDERS, describe_expected
from gameanim.core.paths import confined, sanitize_relative
from gameanim.core.progress import Cancelled, CancelToken, tracked
from gameanim.core.threads import halves, run_chunks
from gameanim.core.weights import read_state_dict, safetensors_metadata, save_safetensors_atomic

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "bad", ["", "  ", "../x", "a/../../x", "/etc/passwd", "C:\\x", "\\\\server\\share", "..\\..\\x", "a\x00b"]
)
def test_unsafe_names_are_rejected(bad, tmp_path):
    with pytest.raises(UnsafePathError):
        confined(tmp_path, bad)


def test_names_too_long_for_a_file_system_are_rejected_with_the_limit(tmp_path):
    with pytest.raises(UnsafePathError, match=r"is 201 bytes long; keep each folder and file name within 200 bytes"):
        confined(tmp_path, "sprites/" + "a" * 201)
    with pytest.raises(UnsafePathError, match="is 202 bytes long"):  # counted in UTF-8, as file systems count
        confined(tmp_path, "é" * 101)
    assert confined(tmp_path, "sprites/" + "a" * 200).name == "a" * 200


def test_safe_names_stay_inside(tmp_path):
    assert sanitize_relative("sprites\\knight/./run") == "sprites/knight/run"
    assert confined(tmp_path, "a/b.png") == (tmp_path / "a" / "b.png").resolve()


def test_symlink_escape_is_rejected(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "base"
    base.mkdir()
    (base / "link").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        confined(base, "link/file.txt")


def test_atomic_write_keeps_old_file_when_writer_fails(tmp_path):
    target = tmp_path / "save.json"
    write_text_atomic(target, "good")
    with pytest.raises(RuntimeError), atomic_target(target) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("crash mid-write")
    assert target.read_text(encoding="utf-8") == "good"
    assert [p.name for p in tmp_path.iterdir()] == ["save.json"]


def test_atomic_write_gives_normal_permissions(tmp_path):
    reference = tmp_path / "plain.txt"
    reference.write_text("x")
    target = write_text_atomic(tmp_path / "atomic.txt", "x")
    assert target.stat().st_mode & 0o777 == reference.stat().st_mode & 0o777


def test_atomic_write_refuses_to_overwrite(tmp_path):
    target = tmp_path / "lora.safetensors"
    write_text_atomic(target, "first", overwrite=False)
    with pytest.raises(FileExistsError):
        write_text_atomic(target, "second", overwrite=False)
    assert target.read_text(encoding="utf-8") == "first"


def test_safetensors_round_trip_with_metadata(tmp_path):
    path = tmp_path / "w.safetensors"
    save_safetensors_atomic({"a.weight": torch.arange(6.0).view(2, 3)}, path, {"rank": 4, "base": "vc2"})
    assert safetensors_metadata(path) == {"rank": "4", "base": "vc2"}
    loaded = read_state_dict(path)
    assert torch.equal(loaded["a.weight"], torch.arange(6.0).view(2, 3))


def test_pickle_checkpoint_reads_state_dict_and_ignores_optimizer(tmp_path):
    path = tmp_path / "lightning.ckpt"
    torch.save(
        {
            "state_dict": {"model.x": torch.ones(3)},
            "optimizer_states": [{"state": {0: {"exp_avg": torch.zeros(3)}}}],
            "global_step": 7,
        },
        path,
    )
    loaded = read_state_dict(path, select=lambda k: k.startswith("model."))
    assert list(loaded) == ["model.x"] and torch.equal(loaded["model.x"], torch.ones(3))


def test_truncated_and_empty_files_give_clear_errors(tmp_path):
    path = tmp_path / "model.ckpt"
    torch.save({"state_dict": {"w": torch.randn(64, 64)}}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="truncated or corrupt"):
        read_state_dict(path)
    empty = tmp_path / "empty.safetensors"
    empty.write_bytes(b"")
    with pytest.raises(ModelFileError, match="empty"):
        read_state_dict(empty)
    with pytest.raises(ModelFileError, match="does not exist"):
        read_state_dict(tmp_path / "missing.ckpt")


def test_pickles_with_code_objects_are_refused(tmp_path):
    path = tmp_path / "evil.ckpt"
    torch.save({"state_dict": {"w": torch.ones(1)}, "callback": types.SimpleNamespace(a=1)}, path)
    with pytest.raises(ModelFileError, match="other than tensors"):
        read_state_dict(path)


def test_cancel_token_stops_a_tracked_loop():
    token = CancelToken()
    seen = []
    progress = token.progress(lambda done, total: seen.append((done, total)))
    with pytest.raises(Cancelled):
        for i in tracked(range(10), 10, progress):
            if i == 3:
                token.cancel()
    assert seen[-1] == (4, 10)


@pytest.mark.parametrize("workers", [1, 3])
def test_run_chunks_covers_every_item_once_reports_in_order_and_stops_on_error(workers):
    done, reports = [], []
    run_chunks(lambda a, b: done.extend(range(a, b)), 10, 4, lambda d, t: reports.append((d, t)), workers)
    assert sorted(done) == list(range(10)) and reports == [(4, 10), (8, 10), (10, 10)]
    reports.clear()  # one item per task, progress still every 4 items
    run_chunks(lambda a, b: None, 10, 1, lambda d, t: reports.append((d, t)), workers, every=4)
    assert reports == [(4, 10), (8, 10), (10, 10)]

    def fail_second(start, stop):
        if start == 4:
            raise ValueError("bad frame")

    reports.clear()
    with pytest.raises(ValueError, match="bad frame"):
        run_chunks(fail_second, 10, 4, lambda d, t: reports.append(d), workers)
    assert reports == [4]  # nothing is reported past the failing chunk


@pytest.mark.parametrize("count", [0, 1, 2, 7, 8])
def test_halves_cover_every_item_once_on_two_threads_and_an_error_reaches_the_caller(count, monkeypatch):
    monkeypatch.setattr(threads, "WORKERS", 2)
    done, where = [], set()

    def work(start: int, stop: int) -> None:
        done.extend(range(start, stop))
        where.add(threading.current_thread().name)

    halves(work, count)
    assert sorted(done) == list(range(count))
    caller = {threading.current_thread().name}
    assert where - caller if count >= 2 else where <= caller  # the first half on the helper thread

    def fail_first(start: int, stop: int) -> None:
        if start == 0:
            raise ValueError("bad frame")

    with pytest.raises(ValueError, match="bad frame"):
        halves(fail_first, max(count, 2))
    monkeypatch.setattr(threads, "WORKERS", 1)  # one worker: all on the calling thread
    where.clear()
    halves(work, 8)
    assert where == caller


def test_zeroed_arrays_are_zero_writable_and_outlive_their_maker():
    small, large = zeroed((3, 5), "float32"), zeroed((16, 256, 256, 3), "float32")  # 12 MiB: mapped on Linux
    assert small.shape == (3, 5) and not small.any()
    assert large.shape == (16, 256, 256, 3) and large.dtype == "float32" and large.flags.c_contiguous
    assert not large.any()
    large[3, 7] = 1.0
    tensor = torch.from_numpy(large)
    del large
    assert float(tensor.sum()) == 256 * 3 and float(tensor[3, 7].sum()) == 256 * 3


def test_host_fallbacks_outside_comfyui(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMEANIM_BASE_DIR", str(tmp_path))
    assert not host.in_comfyui()
    assert host.models_dir() == tmp_path / "models"
    folder = tmp_path / "models" / "videocrafter"
    folder.mkdir(parents=True)
    (folder / "model.ckpt").write_bytes(b"x")
    (folder / "notes.txt").write_text("not a model")
    assert host.model_list("videocrafter") == ["model.ckpt"]
    assert host.model_path("videocrafter", "model.ckpt") == (folder / "model.ckpt").resolve()
    with pytest.raises(ModelFileError) as err:
        host.model_path("videocrafter", "missing.ckpt")
    assert "models/videocrafter" in str(err.value) and "VideoCrafter2" in str(err.value)
    with pytest.raises(UnsafePathError):
        host.model_path("videocrafter", "../../etc/passwd")
    assert host.output_path("sheets/a.png").parent.is_dir()
    report = host.progress(3)
    report(1, 3)
    assert str(host.torch_device()) in ("cpu", "cuda", "mps")


def test_model_folders_register_once_with_comfyui(monkeypatch, tmp_path):
    fake = types.ModuleType("folder_paths")
    fake.models_dir = str(tmp_path / "models")
    fake.folder_names_and_paths = {"checkpoints": ([str(tmp_path / "models" / "checkpoints")], {".ckpt"})}
    monkeypatch.setitem(sys.modules, "folder_paths", fake)
    host.register_model_folders()
    host.register_model_folders()
    for key, folder in MODEL_FOLDERS.items():
        paths, exts = fake.folder_names_and_paths[key]
        assert paths == [str(Path(fake.models_dir, *folder.subdir.split("/")))]
        assert exts == set(folder.extensions)
    assert "models/loras/gameanim" in describe_expected("gameanim_loras")


def test_pack_imports_by_path_under_any_name_without_comfyui():
    code = (
        "import importlib.util, sys, time\n"
        f"root = {str(ROOT)!r}\n"
        "t = time.time()\n"
        "spec = importlib.util.spec_from_file_location('any_name_x', root + '/__init__.py', submodule_search_locations=[root])\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['any_name_x'] = m; spec.loader.exec_module(m)\n"
        "assert m.WEB_DIRECTORY == 'web' and m.NODE_CLASS_MAPPINGS\n"
        "heavy = [n for n in ('comfy', 'folder_paths', 'diffusers', 'transformers', 'open_clip') if n in sys.modules]\n"
        "print(repr(heavy), round(time.time() - t, 2))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd="/")
    assert result.returncode == 0, result.stderr
    heavy, _seconds = result.stdout.strip().rsplit(" ", 1)
    assert heavy == "[]", f"importing the pack pulled in {heavy}; import heavy libraries lazily"


def test_conftest_import_matches_spec_contract():
    spec = importlib.util.find_spec("gameanim")
    assert spec is not None and Path(spec.origin).resolve() == ROOT / "__init__.py"
