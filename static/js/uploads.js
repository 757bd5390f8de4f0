// Live progress for uploads: every element with data-upload-poll is refreshed from the API
// until its upload has succeeded or failed, then the page reloads to show the final figures.
(function () {
  "use strict";
  var FINAL = { succeeded: true, failed: true };
  // The page's labels of the API's status keys (Upload.Status), so no raw key is shown.
  var labelsNode = document.getElementById("upload-status-labels");
  var LABELS = labelsNode ? JSON.parse(labelsNode.textContent) : {};

  function poll(element) {
    var url = element.getAttribute("data-upload-poll");
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (upload) {
        if (!upload) { return; }
        var set = function (name, value) {
          element.querySelectorAll("[data-field='" + name + "']").forEach(function (node) {
            if (node.tagName === "PROGRESS") { node.value = value; } else { node.textContent = value; }
          });
        };
        set("status", LABELS[upload.status] || upload.status);
        set("progress", upload.progress_percent);
        set("progress_text", upload.progress_percent + " %");
        set("rows_read", upload.rows_read);
        if (FINAL[upload.status]) {
          if (element.getAttribute("data-finished") !== "true") { window.location.reload(); }
          return;
        }
        window.setTimeout(function () { poll(element); }, 700);
      })
      .catch(function () { window.setTimeout(function () { poll(element); }, 2000); });
  }

  function start() {
    document.querySelectorAll("[data-upload-poll]").forEach(function (element) {
      if (element.getAttribute("data-finished") !== "true") { poll(element); }
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
