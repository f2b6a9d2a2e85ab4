// ClearFlow's header: below 1080 px the menu folds behind the "Menu" button (frontend/css/topbar.css).
// Loaded by every page with the header, the API docs and the admin included; needs nothing else.
(function () {
  "use strict";
  function setOpen(bar, button, open) {
    bar.classList.toggle("open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("#menu-toggle");
    var bar = document.getElementById("topbar");
    if (!bar) return;
    var toggle = document.getElementById("menu-toggle");
    if (button) {
      setOpen(bar, toggle, !bar.classList.contains("open"));
    } else if (toggle && bar.classList.contains("open") && !bar.contains(e.target)) {
      setOpen(bar, toggle, false);  // a click elsewhere folds it again
    }
  });
  document.addEventListener("keydown", function (e) {
    var bar = document.getElementById("topbar");
    var toggle = document.getElementById("menu-toggle");
    if (e.key === "Escape" && bar && toggle && bar.classList.contains("open")) {
      setOpen(bar, toggle, false);
      toggle.focus();
    }
  });
})();
