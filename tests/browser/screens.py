"""Both screens every page is checked at (a laptop, 1440x900, and a phone, 390x844), what "readable" means on
them, and the screenshots a person looks at (test-artifacts/pages/<screen>/<page>.png).

`readable(page)` lists what a reader would trip on: a page wider than the window (the whole page scrolls
sideways), text cut off by its box (an input or select whose value does not fit, or text clipped by an ellipsis
or by hidden overflow), and a figure of 1,000 or more without its thousands grouped (the one number format).
A table wider than its card is fine when it scrolls inside the card, except where a page is checked with
`tables=True`: there a table cut by its card (a column out of sight until one scrolls it sideways) is a problem
too, as its rows become labelled cards on a phone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Page, expect

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "pages"


@dataclass(frozen=True)
class Screen:
    name: str
    width: int
    height: int

    @property
    def narrow(self) -> bool:
        return self.width < 800


LAPTOP = Screen("laptop", 1440, 900)
PHONE = Screen("phone", 390, 844)
SCREENS = (LAPTOP, PHONE)

_PROBLEMS_JS = r"""
(tables) => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth + 1) {
    problems.push(`the page is ${root.scrollWidth}px wide in a ${window.innerWidth}px window`);
  }
  const canvas = document.createElement("canvas").getContext("2d");
  const name = (el) => {
    const id = el.id ? "#" + el.id : "";
    const label = el.getAttribute("aria-label") || el.getAttribute("name") || "";
    return `${el.tagName.toLowerCase()}${id}${label ? "[" + label + "]" : ""}`;
  };
  const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
  const skip = ".visually-hidden, .uplot, #swagger-ui, [data-cut-ok]";
  const TEXT_INPUTS = "input:not([type]), input[type=text], input[type=search], input[type=url], "
    + "input[type=number], input[type=email]";
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest(skip) || !shown(el)) continue;
    const style = getComputedStyle(el);
    if (el.matches(TEXT_INPUTS)) {
      if (el.value && el.scrollWidth > el.clientWidth + 1) problems.push(`${name(el)} cuts its value "${el.value}"`);
    } else if (el.tagName === "SELECT") {
      const option = el.options[el.selectedIndex];
      if (!option) continue;
      canvas.font = style.font;
      const text = canvas.measureText(option.text).width;
      // The arrow takes about 20 px besides the padding.
      const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
      if (text > room + 1) problems.push(`${name(el)} cuts its choice "${option.text}"`);
    } else if ((style.textOverflow === "ellipsis" || ["hidden", "clip"].includes(style.overflowX))
               && el.scrollWidth > el.clientWidth + 1 && el.textContent.trim()) {
      problems.push(`${name(el)} cuts its text "${el.textContent.trim().slice(0, 60)}"`);
    }
  }
  // One number format: a count or figure of 1,000 or more has its thousands grouped (an offset is an identifier).
  for (const el of document.querySelectorAll(".num, .stat > b")) {
    if (el.closest(skip) || !shown(el) || el.closest("[data-raw-number]")) continue;
    const text = el.textContent.trim();
    if (/(^|[^\d,.])\d{4,}/.test(text)) problems.push(`${name(el)} shows "${text.slice(0, 40)}" without grouping`);
  }
  // Tables cut by their card: wider than the box they scroll in.
  if (tables) {
    for (const wrap of document.querySelectorAll(".table-wrap")) {
      const table = wrap.querySelector("table");
      if (!table || wrap.closest(skip) || !shown(wrap)) continue;
      if (table.scrollWidth > wrap.clientWidth + 1) {
        problems.push(`${name(table)} is cut: ${table.scrollWidth}px wide in a ${wrap.clientWidth}px card`);
      }
    }
  }
  return problems;
}
"""


def readable(page: Page, *, tables: bool = False) -> list[str]:
    """What is cut off or makes the page scroll sideways (empty: nothing); with `tables`, cut tables too."""
    return page.evaluate(_PROBLEMS_JS, tables)


def shoot(page: Page, screen: Screen, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot (of the whole page, or of the window: an open dialog is where the window is) once no
    request (and no spinner) is in flight."""
    expect(page.locator(".htmx-request")).to_have_count(0)
    path = ARTIFACTS / screen.name / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=full_page)
    return path


def check_page(page: Page, screen: Screen, name: str, *, full_page: bool = True, tables: bool = False) -> None:
    """Screenshot the page, then fail on anything `readable` finds (the screenshot shows it)."""
    shoot(page, screen, name, full_page=full_page)
    problems = readable(page, tables=tables)
    assert not problems, f"{name} at {screen.width}px: " + "; ".join(problems)


def open_menu(page: Page, screen: Screen) -> None:
    """On a phone the header's links are behind the Menu button: open it (a no-op on a laptop)."""
    if screen.narrow and page.locator("#menu-toggle").get_attribute("aria-expanded") != "true":
        page.locator("#menu-toggle").click()
        expect(page.locator("#topbar-menu")).to_be_visible()


def nav_link(page: Page, screen: Screen, name: str):
    """A link of the header's main navigation, the menu opened first on a phone."""
    open_menu(page, screen)
    return page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True)
