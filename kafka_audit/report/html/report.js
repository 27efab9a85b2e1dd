// kafka-audit report: draw the charts with the embedded plotly.js, sort and filter the tables.
// No library and no request beyond this file.
(function () {
  "use strict";
  var charts = JSON.parse(document.getElementById("chart-data").textContent);
  charts.forEach(function (chart, i) {
    var node = document.getElementById("chart-" + i);
    if (node && window.Plotly) {
      Plotly.newPlot(node, chart.figure.data, chart.figure.layout,
        {responsive: true, displaylogo: false, typesetMath: false});
    }
  });

  function cellValue(row, col) {
    var cell = row.cells[col];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    return v !== null ? v : cell.textContent.trim().toLowerCase();
  }

  function compare(a, b) {
    var x = parseFloat(a), y = parseFloat(b);
    if (!isNaN(x) && !isNaN(y) && String(x) === a && String(y) === b) { return x - y; }
    return a < b ? -1 : a > b ? 1 : 0;
  }

  document.querySelectorAll("table.data").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th) {
      th.addEventListener("click", function () {
        var col = parseInt(th.getAttribute("data-col"), 10);
        var desc = th.classList.contains("asc");
        table.querySelectorAll("th").forEach(function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(desc ? "desc" : "asc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var c = compare(cellValue(r1, col), cellValue(r2, col));
          return desc ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  document.querySelectorAll(".filters").forEach(function (box) {
    var table = document.getElementById(box.getAttribute("data-table"));
    if (!table) { return; }
    var text = box.querySelector(".text-filter");
    var severity = box.querySelector(".severity-filter");
    var check = box.querySelector(".check-filter");
    var shown = box.querySelector(".shown");
    function apply() {
      var words = text.value.toLowerCase().split(/\s+/).filter(Boolean);
      var count = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var all = row.textContent.toLowerCase();
        var ok = words.every(function (w) { return all.indexOf(w) >= 0; });
        if (severity && severity.value) { ok = ok && row.getAttribute("data-severity") === severity.value; }
        if (check && check.value) { ok = ok && row.getAttribute("data-check") === check.value; }
        row.style.display = ok ? "" : "none";
        if (ok) { count += 1; }
      });
      shown.textContent = count + " of " + table.tBodies[0].rows.length + " rows shown";
    }
    [text, severity, check].forEach(function (el) {
      if (el) { el.addEventListener("input", apply); el.addEventListener("change", apply); }
    });
    apply();
  });
})();
