// The wizard's dedup step: cancel or repeat the key advice's measurement, and preselect the window it
// recommends (and RocksDB when the state would be large) unless the user chose (data-user-chosen).
(function () {
  "use strict";
  var preselecting = false;

  document.addEventListener("change", function (e) {
    if ((e.target.id === "id_window" || e.target.id === "id_state_store") && !preselecting) {
      e.target.dataset.userChosen = "1";
    }
  });

  function preselect(select, value) {
    if (!value || !select || select.dataset.userChosen) return;
    preselecting = true;
    select.value = value;
    select.dispatchEvent(new Event("change", { bubbles: true }));  // e.g. hides the custom window field
    preselecting = false;
  }

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
    if (!advice) return;
    preselect(document.getElementById("id_window"), advice.dataset.recommendedWindow);
    // RocksDB only when the state would be large; otherwise the user's (or the automatic) choice stands.
    preselect(document.getElementById("id_state_store"), advice.dataset.recommendedStateStore);
  });
})();
