// Pipeline metrics charts: every [data-metrics-url] element polls the metrics API (GET .../metrics/?since=...)
// and draws live uPlot charts (vendored): events per second, rows per batch (written, duplicates, dead letters,
// filtered out), the duplicate share, lag per partition and batch duration. New batches are appended (only
// what is new is fetched); a chart is rebuilt only when its series change (a new partition), else updated.
(function () {
  "use strict";

  var MAX_POINTS = 1000;
  var PALETTE = ["#2454d6", "#137a3a", "#b54708", "#b42318", "#6b7280", "#7a2ed6", "#0e7490", "#a16207"];

  function line(label, color, extra) {
    var s = { label: label, stroke: color, width: 2, points: { show: false } };
    for (var k in extra || {}) s[k] = extra[k];
    return s;
  }

  function lagKeys(records) {
    var keys = {};
    records.forEach(function (r) {
      var lag = r.lag || {};
      Object.keys(lag).forEach(function (topic) {
        Object.keys(lag[topic]).forEach(function (p) { keys[topic + "/" + p] = [topic, p]; });
      });
    });
    return Object.keys(keys).sort().map(function (k) { return keys[k]; });
  }

  function num(v) { return typeof v === "number" ? v : null; }

  // Each chart: an id, a title, its series and a function giving one column per series.
  function chartDefs(records) {
    var lags = lagKeys(records);
    return [
      {
        id: "events-per-second", title: "Events in per second",
        series: [line("Events in / s", PALETTE[0]), line("Processed / s", PALETTE[6], { dash: [4, 4] })],
        columns: function (r) { return [num(r.input_rows_per_second), num(r.processed_rows_per_second)]; },
      },
      {
        id: "rows", title: "Rows per batch",
        series: [
          line("Events in", PALETTE[0]), line("Rows written", PALETTE[1]), line("Duplicates dropped", PALETTE[2]),
          line("Dead letters", PALETTE[3]), line("Filtered out", PALETTE[4], { dash: [4, 4] }),
        ],
        columns: function (r) {
          return [num(r.input_rows), num(r.rows_written), num(r.duplicates_dropped), num(r.dead_letters), num(r.filtered_out)];
        },
      },
      {
        id: "duplicates", title: "Duplicates dropped",
        series: [line("Duplicates", PALETTE[2]), line("Share %", PALETTE[5], { scale: "%", dash: [4, 4] })],
        axes: [{ scale: "%", side: 1, grid: { show: false } }],
        columns: function (r) { return [num(r.duplicates_dropped), num(r.duplicate_share) === null ? null : r.duplicate_share * 100]; },
      },
      {
        id: "dead-letters", title: "Dead letters",
        series: [line("Dead letters", PALETTE[3])],
        columns: function (r) { return [num(r.dead_letters)]; },
      },
      {
        id: "lag", title: "Lag per partition (records behind)",
        series: [line("Total", PALETTE[4], { dash: [4, 4], width: 1 })].concat(
          lags.map(function (k, i) { return line(k[0] + " / " + k[1], PALETTE[i % PALETTE.length]); })
        ),
        columns: function (r) {
          return [num(r.total_lag)].concat(
            lags.map(function (k) { var t = (r.lag || {})[k[0]] || {}; return num(t[k[1]]); })
          );
        },
      },
      {
        id: "batch-duration", title: "Batch duration (ms)",
        series: [line("Duration ms", PALETTE[6])],
        columns: function (r) { return [num(r.batch_duration_ms)]; },
      },
    ];
  }

  function Charts(el) {
    this.el = el;
    this.url = el.getAttribute("data-metrics-url");
    this.pollMs = parseInt(el.getAttribute("data-poll-ms") || "5000", 10);
    this.records = [];
    this.since = null;
    this.plots = {};
    this.signatures = {};
  }

  Charts.prototype.fetch = function () {
    var self = this;
    var query = self.since === null ? "?limit=" + MAX_POINTS : "?since=" + self.since;
    return fetch(self.url + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.json().then(function (body) { return [response.ok, body]; }); })
      .then(function (result) {
        if (!result[0]) { self.message(result[1].message || "Metrics unavailable."); return; }
        var body = result[1];
        if (body.records.length) {
          self.records = self.records.concat(body.records).slice(-MAX_POINTS);
          self.since = body.next_since;
          self.render();
        } else if (self.records.length < 2) {
          self.message("The charts appear after two micro-batches.");
        }
        if (body.has_more) return self.fetch();
      })
      .catch(function () { /* a failed poll is retried at the next tick */ });
  };

  Charts.prototype.message = function (text) {
    if (this.records.length >= 2) return;  // keep the charts drawn; the summary above shows the error
    this.el.replaceChildren();
    var p = document.createElement("p");
    p.className = "muted small";
    p.id = "metrics-charts-empty";
    p.textContent = text;
    this.el.appendChild(p);
  };

  Charts.prototype.render = function () {
    var self = this;
    if (self.records.length < 2) { self.message("The charts appear after two micro-batches."); return; }
    var empty = self.el.querySelector("#metrics-charts-empty");
    if (empty) empty.remove();
    var times = self.records.map(function (r) { return r.t_ms / 1000; });
    chartDefs(self.records).forEach(function (def) {
      var data = [times];
      def.series.forEach(function () { data.push([]); });
      self.records.forEach(function (r) {
        def.columns(r).forEach(function (v, i) { data[i + 1].push(v); });
      });
      var signature = def.series.map(function (s) { return s.label; }).join("|");
      var plot = self.plots[def.id];
      if (plot && self.signatures[def.id] === signature) { plot.setData(data); return; }
      var figure = self.el.querySelector('figure[data-chart="' + def.id + '"]');
      if (!figure) {
        figure = document.createElement("figure");
        figure.setAttribute("data-chart", def.id);
        figure.id = "chart-" + def.id;
        var caption = document.createElement("figcaption");
        caption.textContent = def.title;
        figure.appendChild(caption);
        self.el.appendChild(figure);
      }
      if (plot) plot.destroy();
      var target = document.createElement("div");
      figure.querySelectorAll("div").forEach(function (d) { d.remove(); });
      figure.appendChild(target);
      var axes = [{}, {}].concat(def.axes || []);
      self.plots[def.id] = new uPlot({
        width: Math.max(320, figure.clientWidth || 420),
        height: 180,
        series: [{}].concat(def.series),
        axes: axes,
        scales: { x: { time: true } },
      }, data, target);
      self.signatures[def.id] = signature;
    });
  };

  Charts.prototype.start = function () {
    var self = this;
    self.fetch();
    self.timer = setInterval(function () {
      if (!document.body.contains(self.el)) { clearInterval(self.timer); return; }
      if (!document.hidden) self.fetch();
    }, self.pollMs);
  };

  function startAll() {
    if (typeof uPlot === "undefined") return;
    document.querySelectorAll("[data-metrics-url]").forEach(function (el) {
      if (el._charts) return;
      el._charts = new Charts(el);
      el._charts.start();
    });
  }
  document.addEventListener("DOMContentLoaded", startAll);
})();
