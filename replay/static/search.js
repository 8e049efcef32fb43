// On a narrow screen the search form's filters fold away (unless one is in use), so the first hit is
// near the top; on a wide one they stay open. Without this script they are always open.
(function () {
  var filters = document.getElementById("filters");
  if (filters && filters.dataset.active === "0" && window.matchMedia("(max-width: 48rem)").matches) {
    filters.open = false;
  }
})();
