// Pipeline metrics charts: every [data-metrics-url] element polls the metrics API (GET .../metrics/?since=...)
// and draws live uPlot charts (vendored): events per second, rows per batch (written, duplicates, dead letters,
// filtered out), the duplicate share, lag per partition (the worker's readings from the brokers, GET .../lag/,
// from the element's data-lag-url) and batch duration. New batches and readings are appended (only what is new
// is fetched); a chart is rebuilt only when its series change (a new partition), else updated.
//
// The time range (15 min, 1 h, 6 h, 24 h; the buttons of data-range-control) sets what the charts show, ending
// now (or at the last batch, when the pipeline has not run within the range). The y-scales follow what is shown:
// a start-up backlog outside the range, or outside a zoomed-in stretch (drag across a chart; double-click zooms
// out), does not flatten the rest. The legends show the values under the cursor, else those of the last batch,
// in the pages' one number format (ClearFlow.formatNumber, js/format.js).
(function () {
  "use strict";

  var MAX_POINTS = 10000; // the metrics history keeps at most this many batches (clearflow_spec/protocol.py)
  var MAX_LAG_POINTS = 2160; // six hours of lag readings at one every 10 s (protocol.LAG_KEEP_SECONDS)
  var FIRST_PAGE = 1000;
  var MAX_RANGE_MS = 24 * 3600 * 1000;
  var PALETTE = ["#2454d6", "#137a3a", "#b54708", "#b42318", "#6b7280", "#7a2ed6", "#0e7490", "#a16207"];

  function formatNumber(v) {
    return window.ClearFlow && window.ClearFlow.formatNumber ? window.ClearFlow.formatNumber(v) : String(v);
  }

  function line(label, color, extra) {
    var s = {
      label: label, stroke: color, width: 2, points: { show: false },
      value: function (u, v) { return v === null || v === undefined ? "–" : formatNumber(v); },
    };
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
  // The lag chart draws the lag the worker reads from the brokers (readings of GET .../lag/) when there are any:
  // they go on while a job is slow or stuck, where a batch's own lag stops with its batches.
  function lagChart(records, readings) {
    var fromBrokers = readings.length >= 2;
    var rows = fromBrokers ? readings : records;
    var lags = lagKeys(rows);
    return {
      id: "lag", title: "Lag per partition (records behind)", rows: rows,
      series: [line("Total", PALETTE[4], { dash: [4, 4], width: 1 })].concat(
        lags.map(function (k, i) { return line(k[0] + " / " + k[1], PALETTE[i % PALETTE.length]); })
      ),
      columns: function (r) {
        return [num(fromBrokers ? r.total : r.total_lag)].concat(
          lags.map(function (k) { var t = (r.lag || {})[k[0]] || {}; return num(t[k[1]]); })
        );
      },
    };
  }

  function chartDefs(records, readings) {
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
      lagChart(records, readings || []),
      {
        id: "batch-duration", title: "Batch duration (ms)",
        series: [line("Duration ms", PALETTE[6])],
        columns: function (r) { return [num(r.batch_duration_ms)]; },
      },
    ];
  }

  // A y-axis wide enough for its longest label in the one number format.
  function numberAxis(extra) {
    var axis = {
      values: function (u, splits) { return splits.map(formatNumber); },
      size: function (u, values) {
        var longest = (values || []).reduce(function (n, v) { return Math.max(n, String(v).length); }, 0);
        return Math.max(40, longest * 7 + 18);
      },
    };
    for (var k in extra || {}) axis[k] = extra[k];
    return axis;
  }

  // Times in UTC, as everywhere else on the pages.
  function pad(n) { return n < 10 ? "0" + n : String(n); }
  function timeText(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    var d = new Date(seconds * 1000);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
      pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
  }
  var timeAxis = {
    values: function (u, splits) {
      return splits.map(function (s) { var d = new Date(s * 1000); return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()); });
    },
  };

  function Charts(el) {
    this.el = el;
    this.url = el.getAttribute("data-metrics-url");
    this.lagUrl = el.getAttribute("data-lag-url");
    this.lagReadings = [];
    this.lagSince = null;
    this.pollMs = parseInt(el.getAttribute("data-poll-ms") || "5000", 10);
    this.control = document.querySelector(el.getAttribute("data-range-control") || "#none");
    this.rangeMs = 3600 * 1000;
    if (this.control) {
      var pressed = this.control.querySelector('[aria-pressed="true"]');
      if (pressed) this.rangeMs = parseInt(pressed.getAttribute("data-range-minutes"), 10) * 60000;
    }
    this.records = [];
    this.since = null;
    this.loadedFromMs = null; // every batch since this time is loaded (null: only the newest FIRST_PAGE)
    this.complete = false; // every batch the history holds is loaded
    this.plots = {};
    this.signatures = {};
    this.zoomed = false; // the reader zoomed in: the range does not move the x-scale until they zoom out
  }

  Charts.prototype.get = function (query) {
    return fetch(this.url + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.json().then(function (body) { return [response.ok, body]; }); });
  };

  // The lag readings, newest at first, then what came after the last one (its own poll: a job that publishes no
  // batch still has its lag read).
  Charts.prototype.fetchLag = function () {
    var self = this;
    if (!self.lagUrl || self.loadingLag) return Promise.resolve();
    self.loadingLag = true;
    var query = "?limit=" + MAX_LAG_POINTS + (self.lagSince === null ? "" : "&since=" + self.lagSince);
    return fetch(self.lagUrl + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) {
        var readings = body ? body.readings || [] : [];
        if (!readings.length) return;
        self.lagReadings = self.lagReadings.concat(readings).slice(-MAX_LAG_POINTS);
        self.lagSince = readings[readings.length - 1].t_ms;
        if (self.records.length >= 2) self.render();
      })
      .catch(function () { /* retried at the next tick */ })
      .then(function () { self.loadingLag = false; });
  };

  // The newest batches at first; then each poll asks for what came after the last one.
  Charts.prototype.fetch = function () {
    var self = this;
    self.fetchLag();
    if (self.loading) return Promise.resolve();
    self.loading = true;
    var first = self.since === null;
    var query = first ? "?limit=" + FIRST_PAGE : "?since=" + self.since + "&limit=" + MAX_POINTS;
    return self.get(query)
      .then(function (result) {
        if (!result[0]) { self.message(result[1].message || "Metrics unavailable."); return; }
        var body = result[1];
        if (first && body.records.length < FIRST_PAGE) self.complete = true;
        self.add(body.records, body.next_since);
        self.render();
        if (body.has_more) { self.loading = false; return self.fetch(); }
        if (first) return self.cover();
      })
      .catch(function () { /* a failed poll is retried at the next tick */ })
      .then(function () { self.loading = false; });
  };

  Charts.prototype.add = function (records, nextSince) {
    if (records.length) {
      this.records = this.records.concat(records).slice(-MAX_POINTS);
      this.since = nextSince;
    } else if (this.since === null) {
      this.since = 0;
    }
  };

  // Load every batch of the chosen range (the first page may not reach back that far).
  Charts.prototype.cover = function () {
    var self = this;
    var from = self.rangeEnd() - self.rangeMs;
    var oldest = self.records.length ? self.records[0].t_ms : null;
    if (self.complete || oldest === null || oldest <= from || (self.loadedFromMs !== null && self.loadedFromMs <= from)) {
      return Promise.resolve();
    }
    var collected = [];
    function page(since) {
      return self.get("?since=" + since + "&limit=" + MAX_POINTS).then(function (result) {
        if (!result[0]) return;
        collected = collected.concat(result[1].records);
        if (result[1].has_more && collected.length < MAX_POINTS) return page(result[1].next_since);
      });
    }
    return page(Math.floor(from)).then(function () {
      var known = {};
      collected.forEach(function (r) { known[r.t_ms] = true; });
      var newer = self.records.filter(function (r) { return !known[r.t_ms] && r.t_ms > (collected.length ? collected[collected.length - 1].t_ms : 0); });
      self.records = collected.concat(newer).slice(-MAX_POINTS);
      if (self.records.length) self.since = self.records[self.records.length - 1].t_ms;
      self.loadedFromMs = from;
      self.render();
    });
  };

  // The range ends now, or at the last batch when none came within the range (a stopped pipeline).
  Charts.prototype.rangeEnd = function () {
    var now = Date.now();
    var last = this.records.length ? this.records[this.records.length - 1].t_ms : now;
    return now - last <= this.rangeMs ? now : last;
  };

  Charts.prototype.setRange = function (minutes) {
    this.rangeMs = Math.min(minutes * 60000, MAX_RANGE_MS);
    this.zoomed = false;
    if (this.control) {
      this.control.querySelectorAll("[data-range-minutes]").forEach(function (b) {
        b.setAttribute("aria-pressed", parseInt(b.getAttribute("data-range-minutes"), 10) === minutes ? "true" : "false");
      });
    }
    this.render();
    this.cover();
  };

  Charts.prototype.message = function (text) {
    if (this.records.length >= 2) return;  // keep the charts drawn; the summary above shows the error
    this.el.replaceChildren();
    this.plots = {};
    this.signatures = {};
    var p = document.createElement("p");
    p.className = "muted small";
    p.id = "metrics-charts-empty";
    p.textContent = text;
    this.el.appendChild(p);
  };

  Charts.prototype.xRange = function () {
    var end = this.rangeEnd() / 1000;
    return { min: end - this.rangeMs / 1000, max: end };
  };

  Charts.prototype.render = function () {
    var self = this;
    if (self.records.length < 2) { self.message("The charts appear after two micro-batches."); return; }
    var empty = self.el.querySelector("#metrics-charts-empty");
    if (empty) empty.remove();
    chartDefs(self.records, self.lagReadings).forEach(function (def) {
      var rows = def.rows || self.records;
      var data = [rows.map(function (r) { return r.t_ms / 1000; })];
      def.series.forEach(function () { data.push([]); });
      rows.forEach(function (r) {
        def.columns(r).forEach(function (v, i) { data[i + 1].push(v); });
      });
      var signature = def.series.map(function (s) { return s.label; }).join("|");
      var plot = self.plots[def.id];
      if (plot && self.signatures[def.id] === signature) {
        plot.setData(data, false);
        return;
      }
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
      var axes = [timeAxis, numberAxis()].concat((def.axes || []).map(numberAxis));
      var options = {
        width: self.chartWidth(figure),
        height: 180,
        series: [{ label: "UTC", value: function (u, v) { return timeText(v); } }].concat(def.series),
        axes: axes,
        scales: { x: { time: true } },
        legend: { live: true },
        cursor: {
          // A drag zooms in, done here (not by uPlot's own setScale): uPlot fires its setScale hook a moment after
          // every scale change, the page's own included, so a hook could not tell the reader's zoom from the
          // page following new batches, and the charts would stop at the time of the first redraw.
          drag: { x: true, y: false, setScale: false },
          // Double-click zooms out to the chosen range (uPlot's own reset would show every batch loaded).
          bind: { dblclick: function () { return function () { self.zoomed = false; self.render(); return null; }; } },
        },
        hooks: {
          setCursor: [function (u) { if (u.cursor.idx === null || u.cursor.idx === undefined) self.showLatest(u); }],
          // The selection a drag leaves (on mouse up) zooms every chart in: they share the time axis.
          setSelect: [function (u) { self.zoomTo(u); }],
        },
      };
      self.plots[def.id] = new uPlot(options, data, target);
      self.signatures[def.id] = signature;
    });
    self.applyX();
  };

  // Every chart's time axis to the chosen range, or to the reader's zoom.
  Charts.prototype.applyX = function () {
    var self = this;
    var range = self.zoomed && self.zoomRange ? self.zoomRange : self.xRange();
    Object.keys(self.plots).forEach(function (id) {
      var plot = self.plots[id];
      plot.setScale("x", range);
      self.showLatest(plot, range.max);
    });
  };

  // A drag's selection on `plot` (a few pixels or more) becomes every chart's time axis until a double-click.
  Charts.prototype.zoomTo = function (plot) {
    var select = plot.select;
    if (!select || select.width < 3) return;
    this.zoomRange = { min: plot.posToVal(select.left, "x"), max: plot.posToVal(select.left + select.width, "x") };
    this.zoomed = true;
    plot.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    this.applyX();
  };

  // The legend, when the cursor is not on the chart: the last batch up to `max` (the end of what is shown; uPlot
  // sets a new scale a moment after it is asked to, so the caller that sets one says where it ends).
  Charts.prototype.showLatest = function (plot, max) {
    var xs = plot.data[0];
    if (max === undefined) max = plot.scales.x.max;
    var idx = xs.length - 1;
    while (idx > 0 && max !== undefined && max !== null && xs[idx] > max) idx--;
    if (idx >= 0) plot.setLegend({ idx: idx }, false);
  };

  Charts.prototype.chartWidth = function (figure) {
    return Math.max(240, Math.floor(figure.clientWidth || 420));
  };

  Charts.prototype.resize = function () {
    var self = this;
    Object.keys(self.plots).forEach(function (id) {
      var figure = self.el.querySelector('figure[data-chart="' + id + '"]');
      if (figure) self.plots[id].setSize({ width: self.chartWidth(figure), height: 180 });
    });
  };

  Charts.prototype.start = function () {
    var self = this;
    if (self.control) {
      self.control.addEventListener("click", function (e) {
        var button = e.target.closest("[data-range-minutes]");
        if (button) self.setRange(parseInt(button.getAttribute("data-range-minutes"), 10));
      });
    }
    if (window.ResizeObserver) {
      var width = self.el.clientWidth;
      new ResizeObserver(function () {
        if (self.el.clientWidth !== width) { width = self.el.clientWidth; self.resize(); }
      }).observe(self.el);
    }
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
