// ClearFlow: small page behaviours. No build step; htmx does the server round trips.
(function () {
  "use strict";

  // A request that times out or fails must never leave a spinner turning: say so in its target.
  function showRequestProblem(event, text) {
    var target = event.detail && event.detail.target;
    if (!target) return;
    var box = document.createElement("div");
    box.className = "alert alert-error";
    box.setAttribute("role", "alert");
    box.textContent = text;
    target.replaceChildren(box);
  }
  document.addEventListener("htmx:timeout", function (e) {
    showRequestProblem(e, "The server did not answer in time. Please try again.");
  });
  document.addEventListener("htmx:sendError", function (e) {
    showRequestProblem(e, "Could not reach the ClearFlow server. Check your network and try again.");
  });
  document.addEventListener("htmx:responseError", function (e) {
    var status = e.detail.xhr ? e.detail.xhr.status : "";
    showRequestProblem(e, "The server answered with an error (" + status + "). Please try again.");
  });

  // Enter in a search box filters (htmx listens for it); it must not submit the step's form.
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && e.target.matches && e.target.matches('input[type="search"]')) e.preventDefault();
  });

  // A form posts once: a second click while the first request is on its way is ignored.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (e.defaultPrevented) return;  // e.g. a "Discard?" confirmation that was cancelled
    if (form.dataset.submitting) {
      e.preventDefault();
      return;
    }
    form.dataset.submitting = "1";
    setTimeout(function () { delete form.dataset.submitting; }, 15000);
  });
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form[data-submitting]").forEach(function (f) { delete f.dataset.submitting; });
  });

  // data-show-when="name=value[|value2]": show an element only while the named input has one of the values.
  function applyShowWhen(root) {
    (root || document).querySelectorAll("[data-show-when]").forEach(function (el) {
      var rule = el.getAttribute("data-show-when").split("=");
      var name = rule[0];
      var values = rule[1].split("|");
      var form = el.closest("form") || document;
      var current = null;
      form.querySelectorAll('[name="' + name + '"]').forEach(function (input) {
        if ((input.type === "radio" || input.type === "checkbox")) {
          if (input.checked) current = input.value;
        } else {
          current = input.value;
        }
      });
      el.classList.toggle("hidden", values.indexOf(current) === -1);
    });
  }
  // A field's error from the last submit is about the value it had then: once the user changes it, it goes.
  // As they type (not on "change", which a text box fires when it loses focus: the page would shift under the
  // click that took the focus away); a box, a radio or a select changes at once.
  function clearFieldError(e) {
    var field = e.target.closest && e.target.closest(".field.has-error");
    if (!field) return;
    field.classList.remove("has-error");
    field.querySelectorAll(":scope > .error").forEach(function (error) { error.remove(); });
  }
  document.addEventListener("input", clearFieldError);
  document.addEventListener("change", function (e) {
    if (e.target.matches && e.target.matches("input[type=checkbox], input[type=radio], select")) clearFieldError(e);
  });
  document.addEventListener("change", function () { applyShowWhen(); });
  document.addEventListener("DOMContentLoaded", function () { applyShowWhen(); });

  // On a narrow screen the wizard's steps are one row that scrolls sideways: show the current one.
  document.addEventListener("DOMContentLoaded", function () {
    var steps = document.querySelector(".steps");
    var current = steps && steps.querySelector(".current");
    if (current && steps.scrollWidth > steps.clientWidth) {
      var offset = current.getBoundingClientRect().left - steps.getBoundingClientRect().left;
      steps.scrollLeft += offset - (steps.clientWidth - current.offsetWidth) / 2;
    }
  });
  document.addEventListener("htmx:afterSettle", function () { applyShowWhen(); });

  // data-add-row="#template-id" data-into="#tbody-id": append a copy of a <template>, numbering __i__.
  document.addEventListener("click", function (e) {
    var button = e.target.closest("[data-add-row]");
    if (button) {
      e.preventDefault();
      var template = document.querySelector(button.getAttribute("data-add-row"));
      var into = document.querySelector(button.getAttribute("data-into"));
      var index = into.querySelectorAll("[data-row]").length;
      var html = template.innerHTML.replace(/__i__/g, String(index + Date.now() % 100000));
      into.insertAdjacentHTML("beforeend", html);
      var first = into.lastElementChild && into.lastElementChild.querySelector("input, select");
      if (first) first.focus();
      return;
    }
    // data-query-from="name,other": a link that carries the current values of those form fields.
    var link = e.target.closest("a[data-query-from]");
    if (link) {
      var form = link.closest("form") || document;
      var params = new URLSearchParams();
      link.getAttribute("data-query-from").split(",").forEach(function (name) {
        form.querySelectorAll('[name="' + name + '"]').forEach(function (input) {
          if ((input.type === "radio" || input.type === "checkbox") && !input.checked) return;
          params.append(name, input.value);
        });
      });
      link.href = link.href.split("?")[0] + "?" + params.toString();
      return;
    }
    // data-copy="#element-id": copy that element's text (e.g. the audit's query) to the clipboard.
    var copy = e.target.closest("[data-copy]");
    if (copy) {
      e.preventDefault();
      var source = document.querySelector(copy.getAttribute("data-copy"));
      if (source && navigator.clipboard) {
        navigator.clipboard.writeText(source.textContent).then(
          function () { copy.textContent = "Copied"; },
          function () { copy.textContent = "Could not copy: select the text instead"; }
        );
      }
      return;
    }
    // data-open-dialog="#dialog-id" opens that <dialog>; data-close-dialog closes the one it is in.
    var opener = e.target.closest("[data-open-dialog]");
    if (opener) {
      var dialog = document.querySelector(opener.getAttribute("data-open-dialog"));
      if (dialog && !dialog.open) dialog.showModal();
      return;
    }
    var closer = e.target.closest("[data-close-dialog]");
    if (closer) {
      var open = closer.closest("dialog");
      if (open) open.close();
      return;
    }
    var remove = e.target.closest("[data-remove-row]");
    if (remove) {
      e.preventDefault();
      var row = remove.closest("[data-row]");
      if (row) row.remove();
      document.body.dispatchEvent(new Event("rows-changed"));
    }
  });

  // What htmx loads into a <dialog> (a dead letter's payload, the replay's forecast) opens it.
  document.addEventListener("htmx:afterSwap", function (e) {
    var dialog = e.detail.target && e.detail.target.closest && e.detail.target.closest("dialog");
    if (dialog && !dialog.open) dialog.showModal();
  });
  // A click on a modal dialog's backdrop closes it.
  document.addEventListener("click", function (e) {
    if (e.target.tagName === "DIALOG" && e.target.open) {
      var box = e.target.getBoundingClientRect();
      var inside = e.clientX >= box.left && e.clientX <= box.right && e.clientY >= box.top && e.clientY <= box.bottom;
      if (!inside) e.target.close();
    }
  });

  // The job log shows its newest lines: it stays scrolled to the end across refreshes unless the reader scrolled up.
  document.addEventListener("scroll", function (e) {
    if (e.target.id === "job-log") {
      var log = e.target;
      log.parentElement.dataset.readingBack = log.scrollTop + log.clientHeight < log.scrollHeight - 8 ? "1" : "";
    }
  }, true);
  document.addEventListener("htmx:afterSettle", function () {
    var log = document.getElementById("job-log");
    if (log && !log.parentElement.dataset.readingBack) log.scrollTop = log.scrollHeight;
  });

  // A "pending" flash (e.g. "Deploy requested.") leaves once the status badge the page polls says nothing is under
  // way any more (pipelines/partials/pipeline_run_state.html).
  document.addEventListener("htmx:afterSettle", function () {
    var flash = document.getElementById("flash-pending");
    var status = document.getElementById("pipeline-status");
    if (flash && status && status.getAttribute("data-under-way") === "no") flash.remove();
  });

  // Forms that destroy something ask first (the question is in data-confirm; no inline handlers under the CSP).
  // Capture phase: it runs before "a form posts once" above, which would otherwise mark a form whose question
  // was answered "Cancel" as submitting and ignore the next click for 15 s.
  document.addEventListener("submit", function (e) {
    var question = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) e.preventDefault();
  }, true);
})();
