"""The demo is the newcomer's first contact: it must run the whole loop over the real wire."""

from pathlib import Path

from sidecar.demo import run_demo


async def test_demo_npc_reacts_to_rumour_doubt_and_correction(tmp_path: Path) -> None:
    """Mira avoids the well while she believes the rumour, inspects when in doubt, returns after the correction."""
    lines: list[str] = []
    intents = await run_demo(lines.append, db=tmp_path / "demo.db")
    assert intents == ["avoid_well", "inspect_well", "fetch_water"]
    text = "\n".join(lines)
    assert "hearsay from bo" in text
    assert "corrected   46 → 72" in text
