// The calendar's month grids from the keyboard: Tab reaches one day of the grid, the arrow keys move
// between days with captures (left/right: the previous or next one, up/down: a week back or on),
// Home and End go to the first and last. Without this script every day is a link in tab order.
(function () {
  var grid = document.getElementById("months");
  if (!grid) return;
  var links = Array.prototype.slice.call(grid.querySelectorAll("table.month td a"));
  if (!links.length) return;
  var dates = links.map(function (a) { return a.getAttribute("href").match(/\/(\d{8})\*\//)[1]; });
  var current = Math.max(0, links.findIndex(function (a) { return a.parentNode.classList.contains("chosen"); }));
  links.forEach(function (a, i) { a.tabIndex = i === current ? 0 : -1; });
  function day(s) { return Date.UTC(+s.slice(0, 4), +s.slice(4, 6) - 1, +s.slice(6, 8)); }
  function nearest(from, days) {
    var target = day(dates[from]) + days * 864e5, best = from, gap = Infinity;
    for (var i = 0; i < dates.length; i++) {
      var d = day(dates[i]) - target;
      if ((days > 0 ? i > from : i < from) && Math.abs(d) < gap) { gap = Math.abs(d); best = i; }
    }
    return best;
  }
  grid.addEventListener("keydown", function (e) {
    var i = links.indexOf(document.activeElement);
    if (i < 0) return;
    var next = { ArrowLeft: i - 1, ArrowRight: i + 1, ArrowUp: nearest(i, -7), ArrowDown: nearest(i, 7), Home: 0, End: links.length - 1 }[e.key];
    if (next === undefined) return;
    next = Math.min(links.length - 1, Math.max(0, next));
    e.preventDefault();
    links[i].tabIndex = -1;
    links[next].tabIndex = 0;
    links[next].focus();
  });
})();
