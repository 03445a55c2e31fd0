"""Write the UI-format twin of an API workflow: ``python scripts/workflow_ui.py workflows/api/X.json``.

Shipped workflows are authored in API format (exact inputs by name); the UI file users drag into
ComfyUI is generated from it, and ``tests/test_workflows.py`` checks that converting the UI file
back gives the API file (less the ``_meta.group`` stage marks, which only the UI shows).  The UI
file also carries what the API format cannot: ``workflows/notes/<name>.md`` as a MarkdownNote, a
group per stage (``_meta.group``) and ``properties.models`` on every loader, from the model table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _pack import ROOT, import_pack


def main(argv: list[str]) -> int:
    pack = import_pack()
    from gameanim.core.model_folders import loader_models
    from gameanim.workflow_format import api_to_ui, node_definitions, ui_to_api, validate_api, without_stages

    definitions = json.loads((ROOT / "tests" / "data" / "core_object_info.json").read_text(encoding="utf-8"))
    definitions.update(node_definitions(pack.NODE_CLASS_MAPPINGS, pack.NODE_DISPLAY_NAME_MAPPINGS))
    status = 0
    for arg in argv:
        api_path = Path(arg)
        prompt = json.loads(api_path.read_text(encoding="utf-8"))
        problems = validate_api(prompt, definitions)
        if problems:
            print(f"{api_path}: " + "; ".join(problems), file=sys.stderr)
            status = 1
            continue
        note_path = api_path.parent.parent / "notes" / f"{api_path.stem}.md"
        note = note_path.read_text(encoding="utf-8").strip() if note_path.is_file() else None
        models = {node_id: loader_models(entry["class_type"], entry["inputs"]) for node_id, entry in prompt.items()}
        ui = api_to_ui(prompt, definitions, note=note, models=models)
        assert ui_to_api(ui, definitions) == without_stages(prompt), "round trip failed: give every node a _meta.title"
        ui_path = api_path.parent.parent / api_path.name
        ui_path.write_text(json.dumps(ui, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {ui_path}")
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
