"""Re-render every labelled JSON example of protocol/SPEC.md from vectors.json.

An example in the spec is a line "`<vector name>` — <description>" followed by a ```json
block; after ``python -m tools.vectors`` changes the vectors, run
``python -m tools.render_spec`` so the spec shows exactly what the code sends.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1] / "protocol" / "vectors"
SPEC = HERE.parent / "SPEC.md"
_EXAMPLE = re.compile(r"([a-z_.]+)` — ([^\n]*)\n\n```json\n(.*?)\n```", re.S)


def fmt(value: Any, indent: int = 0) -> str:
    """JSON, one line when it fits in 96 columns, else one member per line."""
    one = json.dumps(value, ensure_ascii=False)
    if len(one) + indent <= 96 or not isinstance(value, dict | list) or not value:
        return one
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {fmt(v, indent + 2)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + fmt(v, indent + 2) for v in value) + "\n" + " " * indent + "]"


def render(spec: str, vectors: dict[str, dict[str, Any]]) -> tuple[str, list[str]]:
    missing: list[str] = []

    def sub(m: re.Match[str]) -> str:
        vector = vectors.get(m.group(1))
        if vector is None or vector.get("json") is None:
            missing.append(m.group(1))
            return m.group(0)
        return f"{m.group(1)}` — {m.group(2)}\n\n```json\n{fmt(vector['json'])}\n```"

    return _EXAMPLE.sub(sub, spec), missing


def main() -> int:
    vectors = {v["name"]: v for v in json.loads((HERE / "vectors.json").read_text("utf-8"))}
    text, missing = render(SPEC.read_text("utf-8"), vectors)
    SPEC.write_text(text, "utf-8")
    if missing:
        print(f"examples naming no vector: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
