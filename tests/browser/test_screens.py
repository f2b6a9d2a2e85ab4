"""The browser tests' reading of a page (tests/browser/screens.py: `readable`) finds what a reader trips on, and
nothing on a page that reads well: otherwise the checks at both widths would prove nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.browser.screens import PHONE, readable

pytestmark = pytest.mark.browser

STYLE = "<style>body{margin:0;font:14px sans-serif} .cut{width:60px;overflow:hidden;white-space:nowrap}</style>"


def test_readable_finds_cut_text_sideways_scrolling_and_ungrouped_figures(page: Page):
    page.set_viewport_size({"width": PHONE.width, "height": PHONE.height})
    page.set_content(
        STYLE
        + '<div class="cut">a sentence far too long for its box</div>'
        + '<input id="column" style="width:40px" value="address_country_code">'
        + '<table><tr><td class="num">8225</td><td class="num" data-raw-number>8225</td></tr></table>'
        + '<div style="width:900px">wide</div>'
    )
    problems = readable(page)
    assert any("cuts its text" in p for p in problems), problems
    assert any('input#column cuts its value "address_country_code"' in p for p in problems), problems
    assert any('shows "8225" without grouping' in p for p in problems), problems
    assert sum("without grouping" in p for p in problems) == 1, "an offset is an identifier, not a figure"
    assert any("the page is 900px wide in a 390px window" in p for p in problems), problems


def test_readable_finds_nothing_on_a_page_that_reads_well(page: Page):
    page.set_viewport_size({"width": PHONE.width, "height": PHONE.height})
    page.set_content(
        STYLE
        + "<p>A short line.</p>"
        + '<input value="event_id"><table><tr><td class="num">8,225</td><td class="num">12.5</td></tr></table>'
        + '<div style="overflow-x:auto"><table><tr><td style="white-space:nowrap">'
        + "a table wider than the phone scrolls inside its card " * 4
        + "</td></tr></table></div>"
    )
    assert readable(page) == []


def test_readable_with_tables_finds_a_table_cut_by_its_card(page: Page):
    page.set_viewport_size({"width": PHONE.width, "height": PHONE.height})
    row = "<tr>" + '<td style="white-space:nowrap">a column far too wide for a phone</td>' * 3 + "</tr>"
    page.set_content(
        STYLE
        + f'<div class="table-wrap" style="overflow-x:auto"><table id="wide">{row}</table></div>'
        + '<div class="table-wrap" style="overflow-x:auto"><table id="fits"><tr><td>short</td></tr></table></div>'
    )
    assert readable(page) == [], "without tables=True a table that scrolls inside its card is fine"
    problems = readable(page, tables=True)
    assert len(problems) == 1 and problems[0].startswith("table#wide is cut: "), problems
