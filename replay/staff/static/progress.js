// Live progress: poll the run's JSON once a second and update the page until the run ends.
(function () {
  "use strict";
  var root = document.getElementById("progress");
  if (!root) { return; }
  var url = root.getAttribute("data-url");
  function size(n) {
    var units = ["B", "kB", "MB", "GB", "TB"], i = 0;
    while (Math.abs(n) >= 1000 && i < units.length - 1) { n /= 1000; i += 1; }
    return i === 0 ? n.toFixed(0) + " B" : n.toFixed(1) + " " + units[i];
  }
  function set(id, text) { var el = document.getElementById(id); if (el) { el.textContent = text; } }
  var last = null;
  function update(v) {
    set("status", v.status);
    document.getElementById("status").className = "status-" + v.status;
    document.getElementById("cancelling").hidden = !(v.cancel_requested && !v.final);
    set("f-done", v.done); set("f-queued", v.queued); set("f-in_flight", v.in_flight);
    set("f-bytes_downloaded", size(v.bytes_downloaded)); set("f-bytes_stored", size(v.bytes_stored));
    var rate = v.rate;
    if (last && !v.final && v.elapsed > last.elapsed) {
      rate = ((v.urls_fetched - last.urls_fetched) / (v.elapsed - last.elapsed)).toFixed(2);
    }
    set("f-rate", rate + " URLs/s");
    Object.keys(v.classes).forEach(function (k) { set("c-" + k, v.classes[k]); });
    var list = document.getElementById("errors");
    while (list.firstChild) { list.removeChild(list.firstChild); }
    v.recent_errors.forEach(function (e) {
      var li = document.createElement("li");
      li.textContent = e.url + ": " + e.error;
      list.appendChild(li);
    });
    var err = document.getElementById("run-error");
    err.hidden = !v.error; err.textContent = v.error || "";
    if (v.finished_at) { set("finished-at", " · finished " + v.finished_at); }
    if (v.snapshot) {
      document.getElementById("snapshot").hidden = false;
      var link = document.getElementById("snapshot-link");
      link.textContent = v.snapshot;
      if (v.snapshot_url) { link.href = v.snapshot_url; }
    }
    if (v.final) {
      var form = document.getElementById("cancel-form");
      if (form) { form.hidden = true; }
      root.setAttribute("data-final", "1");
    }
    last = v;
  }
  function poll() {
    fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
      .then(function (v) { update(v); if (!v.final) { setTimeout(poll, 1000); } })
      .catch(function () { setTimeout(poll, 3000); });
  }
  poll();
}());
