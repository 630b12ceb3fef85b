"""``/export``: the session as a self-contained HTML page with compaction summaries collapsed."""

from __future__ import annotations

import importlib.util
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from builders import assistant, chain, compaction, header, tool_call, tool_result, user, write_session
from ui_harness import FakeModel, make_state

from pi_compact.ui.commands import dispatch


class Outline(HTMLParser):
    """Tags seen, and the text inside each <details> (with whether it is open)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.sources: list[str] = []
        self.details: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.sources += [value or "" for name, value in attrs if name in ("src", "href")]
        if tag == "details":
            assert ("open", None) not in attrs
            self._depth += 1
            self.details.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.details[-1] += data


def exported(project: Path) -> tuple[str, Outline]:
    write_session(project / "s.jsonl", chain(
        user("first <b>question</b>"), assistant("first answer"),
        compaction("## Goal\nKeep the parser & lexer apart", "test-id-3", tokens_before=4321),
        user("run it"), assistant("Running.", tool_calls=[tool_call("bash", {"command": "make"}, "c1")]),
        tool_result("all good", tool_call_id="c1"), assistant("Done."),
    ), header())
    state, buffer = make_state(project, FakeModel())
    assert dispatch(state, "/export out.html") == "continue"
    target = project / "out.html"
    assert f"Exported the session to {target}" in buffer.getvalue()
    page = target.read_text(encoding="utf-8")
    outline = Outline()
    outline.feed(page)
    return page, outline


def test_export_writes_a_self_contained_page_with_the_summary_collapsed(project: Path) -> None:
    page, outline = exported(project)
    assert "script" not in outline.tags and outline.sources == []
    assert "first &lt;b&gt;question&lt;/b&gt;" in page  # session text is escaped, never markup
    summaries = [d for d in outline.details if "Keep the parser & lexer apart" in d]
    assert len(summaries) == 1 and "Compaction 1: 4321 tokens summarized — click to read" in summaries[0]
    assert any("all good" in d for d in outline.details)  # tool results are collapsed too
    assert page.index("Compaction 1") < page.index("run it") < page.index("Done.")


def test_export_to_a_directory_that_cannot_be_written_says_so(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/export /nonexistent-dir/x.html")
    assert "Could not write /nonexistent-dir/x.html" in buffer.getvalue()


SYSTEM_BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def browser_path() -> str | None:
    """A system Chromium for Playwright (None: use the browser Playwright downloaded, if any)."""
    return next((found for name in SYSTEM_BROWSERS if (found := shutil.which(name)) is not None), None)


@pytest.mark.skipif(importlib.util.find_spec("playwright") is None,
                    reason="Playwright is not installed here (.ci/run installs it: pip install playwright)")
def test_export_opens_in_a_headless_browser_with_the_summary_expandable(project: Path) -> None:
    from playwright.sync_api import Error, sync_playwright

    exported(project)
    requests: list[str] = []
    with sync_playwright() as driver:
        try:
            browser = driver.chromium.launch(executable_path=browser_path())
        except Error as exc:
            pytest.skip(f"no Chromium to run (.ci/run installs Debian's chromium-headless-shell): {exc}")
        page = browser.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.route("http*://**", lambda route, _request: route.abort())  # the page must need no network
        page.goto((project / "out.html").as_uri())
        summary = page.locator(".compaction details").first
        text = page.get_by_text("Keep the parser & lexer apart")
        assert not summary.evaluate("d => d.open") and not text.is_visible()  # collapsed
        summary.locator("summary").click()
        assert summary.evaluate("d => d.open") and text.is_visible()  # one click expands it
        assert page.get_by_text("first <b>question</b>").is_visible()  # escaped text, shown as typed
        assert page.get_by_text("Done.").is_visible()
        call = page.locator("details", has_text="▸ bash")
        assert call.locator("summary").is_visible() and not page.get_by_text('"make"').is_visible()
        call.locator("summary").click()
        assert page.get_by_text('"make"').is_visible()  # the tool call's arguments
        browser.close()
    assert [url for url in requests if not url.startswith("file://")] == []
