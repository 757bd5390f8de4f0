// Draws every chart on the page: each element with data-figure names the JSON script holding a
// plotly figure built on the server (audit_app/charts.py). No inline script, so a strict
// content security policy keeps working.
(function () {
  "use strict";

  function drawAll() {
    if (typeof window.Plotly === "undefined") {
      return;
    }
    document.querySelectorAll("[data-figure]").forEach(function (element) {
      var source = document.getElementById(element.getAttribute("data-figure"));
      if (!source) {
        return;
      }
      var figure = JSON.parse(source.textContent);
      window.Plotly.newPlot(element, figure.data || [], figure.layout || {}, {
        responsive: true,
        displaylogo: false,
        modeBarButtonsToRemove: ["lasso2d", "select2d"],
      }).then(function () {
        element.setAttribute("data-drawn", "true");
      });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
