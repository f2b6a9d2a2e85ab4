// The wizard's dedup step: cancel or repeat the dedup advisor's measurement, and preselect the window it
// recommends unless the user chose one (the select then carries data-user-chosen).
(function () {
  "use strict";
  var preselecting = false;

  document.addEventListener("change", function (e) {
    if (e.target.id === "id_window" && !preselecting) e.target.dataset.userChosen = "1";
  });

  document.addEventListener("click", function (e) {
    var source = document.getElementById("dedup-inputs");
    if (!source || !window.htmx) return;
    if (e.target.closest("#cancel-analysis")) {
      htmx.trigger(source, "htmx:abort");
      var target = document.getElementById("dedup-analysis");
      target.innerHTML = '<p class="muted" id="analysis-cancelled">Cancelled. "Measure again" reads the events anew.</p>';
    } else if (e.target.closest("#measure-again")) {
      htmx.trigger(source, "measure");
    }
  });

  document.addEventListener("htmx:afterSettle", function (e) {
    if (!e.detail.target || e.detail.target.id !== "dedup-analysis") return;
    var advice = document.getElementById("dedup-advice");
    var select = document.getElementById("id_window");
    var recommended = advice && advice.dataset.recommendedWindow;
    if (!recommended || !select || select.dataset.userChosen) return;
    preselecting = true;
    select.value = recommended;
    select.dispatchEvent(new Event("change", { bubbles: true }));  // hides the custom window field
    preselecting = false;
  });
})();
