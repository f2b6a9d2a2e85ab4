// One number format for the pages' scripts, the same rule as the templates' `number` filter
// (webapp/core/templatetags/display.py): digits grouped by thousands, at most one decimal, rounded half up.
(function () {
  "use strict";
  var format = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1, roundingMode: "halfExpand" });
  window.ClearFlow = window.ClearFlow || {};
  window.ClearFlow.formatNumber = function (value) {
    if (value === null || value === undefined || value === "" || !isFinite(value)) return "–";
    return format.format(value);
  };
})();
