// The wizard's dedup step: cancel (stop asking for the worker's figures) or repeat the key advice's measurement,
// choose a key from the fields that look like keys, and preselect the window it recommends unless the user picked
// one (data-user-chosen; the hidden input #window-chosen tells the server so).
(function () {
  "use strict";
  var preselecting = false;
  var CHOSEN = { id_window: "window-chosen" };

  document.addEventListener("change", function (e) {
    if (CHOSEN[e.target.id] && !preselecting) {
      e.target.dataset.userChosen = "1";
      var flag = document.getElementById(CHOSEN[e.target.id]);
      if (flag) flag.value = "1";
    }
  });

  function preselect(select, value) {
    if (!value || !select || select.dataset.userChosen) return;
    preselecting = true;
    select.value = value;
    select.dispatchEvent(new Event("change", { bubbles: true }));  // e.g. hides the custom window field
    preselecting = false;
  }

  // "Use as key" on a field that looks like a key: it becomes the only key, and its duplicates are measured.
  function useKey(button) {
    var name = button.getAttribute("data-use-key");
    var boxes = document.querySelectorAll('#step-form input[name="keys"]');
    var box = null;
    boxes.forEach(function (b) { if (b.value === name) box = b; });
    if (!box) {
      button.disabled = true;
      button.textContent = "Not in the schema: add it in step 3";
      return;
    }
    var on = document.querySelector('#step-form input[name="enabled"][value="on"]');
    if (on && !on.checked) { on.checked = true; on.dispatchEvent(new Event("change", { bubbles: true })); }
    boxes.forEach(function (b) { b.checked = b === box; });
    box.dispatchEvent(new Event("change", { bubbles: true }));  // measured again (the inputs' hx-trigger)
    box.focus();
  }

  document.addEventListener("click", function (e) {
    var use = e.target.closest("[data-use-key]");
    if (use) { useKey(use); return; }
    var source = document.getElementById("dedup-inputs");
    if (!source || !window.htmx) return;
    if (e.target.closest("#cancel-analysis, [data-cancel-analysis]")) {
      htmx.trigger(source, "htmx:abort");
      // The worker reads the events; the page stops asking for them (webapp/wizard/key_advice_views.py).
      var reading = document.getElementById("key-advice-reading");
      if (reading) htmx.trigger(reading, "htmx:abort");
      var target = document.getElementById("dedup-analysis");
      target.innerHTML = '<p class="muted" id="analysis-cancelled">Cancelled. "Measure again" reads the events anew.</p>';
    } else if (e.target.closest("#measure-again")) {
      htmx.trigger(source, "measure");
    }
  });

  // A new measurement: stop asking for the figures of the one before, which would otherwise replace its answer.
  document.addEventListener("htmx:beforeRequest", function (e) {
    if (!e.detail.elt || e.detail.elt.id !== "dedup-inputs") return;
    var reading = document.getElementById("key-advice-reading");
    if (reading) { htmx.trigger(reading, "htmx:abort"); reading.removeAttribute("hx-trigger"); reading.remove(); }
  });

  document.addEventListener("htmx:afterSettle", function (e) {
    if (!e.detail.target || e.detail.target.id !== "dedup-analysis") return;
    var advice = document.getElementById("dedup-advice");
    if (!advice) return;
    preselect(document.getElementById("id_window"), advice.dataset.recommendedWindow);
  });
})();
