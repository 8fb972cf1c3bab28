// om2w-tui report --html: the task list's filters and sorting, a task page's keyboard; no network, no library
(function () {
  "use strict";
  var table = document.getElementById("tasks");
  if (table) {
    var form = document.getElementById("filters");
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var shown = document.getElementById("shown");
    var apply = function () {
      var want = {};
      form.querySelectorAll("[data-filter]").forEach(function (el) { want[el.dataset.filter] = el.value.trim().toLowerCase(); });
      var n = 0;
      rows.forEach(function (tr) {
        var ok = true;
        ["status", "site", "level", "verdict", "judge", "humans", "failure"].forEach(function (k) {
          if (want[k] && (tr.dataset[k] || "").toLowerCase() !== want[k]) { ok = false; }
        });
        if (ok && want.q) {
          ok = want.q.split(/\s+/).every(function (w) { return tr.dataset.text.indexOf(w) >= 0; });
        }
        tr.hidden = !ok;
        if (ok) { n += 1; }
      });
      shown.textContent = n + " of " + rows.length;
      var parts = [];
      Object.keys(want).forEach(function (k) { if (want[k]) { parts.push(k + "=" + encodeURIComponent(want[k])); } });
      history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
    };
    // filters from the address (#failure=loop&site=shop), as the index links them
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (["status", "site", "level", "verdict", "judge", "humans", "failure", "q"].indexOf(p[0]) < 0) { return; }
      var el = form.querySelector("[data-filter='" + p[0] + "']");
      if (el && p.length === 2) { el.value = decodeURIComponent(p[1]); }
    });
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    table.tHead.querySelectorAll("th[data-sort]").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("asc");
        table.tHead.querySelectorAll("th").forEach(function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var num = th.dataset.sort === "num";
        var key = function (tr) {
          var td = tr.cells[col];
          return num ? parseFloat(td.dataset.value) : td.textContent.trim().toLowerCase();
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (tr) { table.tBodies[0].appendChild(tr); });
      });
    });
    apply();
  }
  var steps = Array.prototype.slice.call(document.querySelectorAll("li.step"));
  if (steps.length) {
    var at = -1;
    var go = function (i) {
      if (i < 0 || i >= steps.length) { return; }
      if (at >= 0) { steps[at].classList.remove("current"); }
      at = i;
      steps[at].classList.add("current");
      steps[at].scrollIntoView({block: "nearest"});
      history.replaceState(null, "", "#" + steps[at].id);
    };
    document.addEventListener("keydown", function (e) {
      if (e.target && /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) { return; }
      if (e.ctrlKey || e.metaKey || e.altKey) { return; }   // the browser's own: Ctrl+P prints, Ctrl+K searches
      if (e.key === "j" || e.key === "ArrowDown") { e.preventDefault(); go(at + 1); }
      else if (e.key === "k" || e.key === "ArrowUp") { e.preventDefault(); go(Math.max(0, at - 1)); }
      else if (e.key === "n" && document.getElementById("next")) { location.href = document.getElementById("next").href; }
      else if (e.key === "p" && document.getElementById("prev")) { location.href = document.getElementById("prev").href; }
    });
    var m = /^#step-(\d+)$/.exec(location.hash);
    if (m) { go(parseInt(m[1], 10) - 1); }
  }
})();
