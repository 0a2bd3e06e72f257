"""The command palette (ctrl+p) on a machine without ~/Downloads: "Screenshot" saves an SVG of
the screen in the current directory and says where; Textual's "Keys" panel (escape did not
close it, `q` there quit the app) is not offered: `?` is the help."""

import xml.etree.ElementTree as ET

from ui_helpers import paused_at_start, run, sample_app, wait_for


def test_palette_screenshot_saves_in_the_current_directory(tmp_path, monkeypatch):
    home = tmp_path / "home"  # no Downloads in it
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app) as pilot:
            await pilot.press("ctrl+p", *"Screenshot")
            await pilot.pause(0.2)
            await pilot.press("enter")
            await wait_for(pilot, lambda: any(work.glob("*.svg")), "the screenshot file")
            notes = [str(n.message) for n in app._notifications]
            saved = next(work.glob("*.svg"))
            assert any(note == f"saved {saved}" for note in notes), notes
            svg = ET.parse(saved).getroot()  # a whole SVG document: the write had finished
            assert svg.tag.endswith("svg")
            assert "fc1" in saved.read_text()  # the module tree is in the picture
            assert not (home / "Downloads").exists()

    run(script())


def test_palette_offers_no_keys_panel_and_one_quit():
    app = sample_app("seed.py")

    async def script():
        async with paused_at_start(app):
            titles = [str(c.title) for c in app.get_system_commands(app.screen)]
            assert "Keys" not in titles
            assert titles.count("Screenshot") == 1
            assert sum(t.lower().startswith("quit") for t in titles) == 1, titles
            assert any(t.startswith("This help") for t in titles)

    run(script())
