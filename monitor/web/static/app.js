// Refreshes every element with data-refresh="URL" every data-interval seconds, in place (no page reload).
// The server escapes everything it sends; the fragment is parsed as inert HTML and its nodes moved in.
"use strict";
(function () {
  function refresh(el) {
    var url = el.getAttribute("data-refresh");
    var seconds = parseFloat(el.getAttribute("data-interval")) || 10;
    var status = document.getElementById("refresh-status");
    function tick() {
      fetch(url, {headers: {"Accept": "text/html"}, cache: "no-store"})
        .then(function (response) {
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.text();
        })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          el.replaceChildren.apply(el, Array.prototype.slice.call(doc.body.childNodes));
          el.setAttribute("data-refreshed", String(Date.now()));
          if (status) { status.textContent = "Last refresh " + new Date().toLocaleTimeString() + "."; }
        })
        .catch(function (error) {
          if (status) { status.textContent = "Refresh failed (" + error.message + "); retrying."; }
        })
        .finally(function () { window.setTimeout(tick, seconds * 1000); });
    }
    window.setTimeout(tick, seconds * 1000);
  }
  document.querySelectorAll("[data-refresh]").forEach(refresh);
})();
