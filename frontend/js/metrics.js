// Pipeline metrics chart: draws every [data-metrics] element with uPlot (vendored), again after htmx swaps.
(function () {
  "use strict";

  function draw(el) {
    if (typeof uPlot === "undefined") return;
    var s = JSON.parse(el.getAttribute("data-metrics"));
    if (!s.t || s.t.length < 2) {
      el.textContent = "The chart appears after two micro-batches.";
      el.className = "muted small";
      return;
    }
    el.replaceChildren();
    var opts = {
      width: Math.max(320, el.clientWidth || 640),
      height: 220,
      series: [
        {},
        { label: "Rows in", stroke: "#2454d6", width: 2 },
        { label: "Rows written", stroke: "#137a3a", width: 2 },
        { label: "Duplicates dropped", stroke: "#b54708", width: 2 },
        { label: "Lag", stroke: "#6b7280", width: 1, dash: [4, 4], scale: "lag" },
      ],
      axes: [{}, { label: "rows per batch" }, { side: 1, scale: "lag", label: "lag", grid: { show: false } }],
    };
    new uPlot(opts, [s.t, s.input_rows, s.rows_written, s.duplicates_dropped, s.total_lag], el);
  }

  function drawAll() { document.querySelectorAll("[data-metrics]").forEach(draw); }
  document.addEventListener("DOMContentLoaded", drawAll);
  document.addEventListener("htmx:afterSettle", drawAll);
})();
