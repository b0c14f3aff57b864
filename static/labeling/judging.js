// The judging screen: grades from the keyboard, time per pair, and what happens when the
// server does not answer. Loaded as a file (no inline script), so the page's
// Content-Security-Policy can refuse every inline one.
(function () {
  "use strict";
  // Time on each pair: from when it was shown to when a grade is sent.
  var shownAt = Date.now();
  var busy = false;
  var status = document.getElementById("judging-status");
  var retryTimer = null;
  var RETRY_CAP_SECONDS = 30;

  function say(text) {
    status.textContent = text;
    status.hidden = !text;
  }

  document.body.addEventListener("htmx:afterSwap", function () { shownAt = Date.now(); });
  document.body.addEventListener("htmx:configRequest", function (event) {
    if (event.detail.path.indexOf("/judge/") !== -1) {
      event.detail.parameters["seconds"] = ((Date.now() - shownAt) / 1000).toFixed(1);
    }
  });
  document.body.addEventListener("htmx:beforeRequest", function () { busy = true; });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    busy = false;
    if (event.detail.successful) {
      if (retryTimer) { clearTimeout(retryTimer); retryTimer = null; }
      say("");
    }
  });

  // A request that failed: tell the annotator what happened to their grade, and for an
  // outage (no answer, 502-504) send the same form again after the server's Retry-After.
  function failed(event, code, retryAfter) {
    var form = event.detail.elt && event.detail.elt.closest ? event.detail.elt.closest("form") : null;
    var transient = code === 0 || code === 502 || code === 503 || code === 504;
    if (!transient) {
      say(code === 403
        ? "This pair is no longer yours to judge, or your session ended: reload the page (your earlier grades are saved)."
        : "The server refused this (" + code + "): reload the page; your earlier grades are saved.");
      return;
    }
    var seconds = Math.min(Math.max(parseInt(retryAfter, 10) || 5, 1), RETRY_CAP_SECONDS);
    say((code === 0 ? "The server does not answer" : "The server is busy or restarting (" + code + ")") +
        ": this grade is not saved yet. Trying again in " + seconds + " s; keep this page open.");
    if (form && !retryTimer) {
      retryTimer = setTimeout(function () {
        retryTimer = null;
        if (document.body.contains(form)) { htmx.trigger(form, "submit"); }
      }, seconds * 1000);
    }
  }
  document.body.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    failed(event, xhr.status, xhr.getResponseHeader("Retry-After"));
  });
  document.body.addEventListener("htmx:sendError", function (event) { failed(event, 0, null); });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.isContentEditable)) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.key === "?") {
      var keys = document.getElementById("judging-keys");
      keys.hidden = !keys.hidden;
      event.preventDefault();
      return;
    }
    var pair = document.getElementById("pair");
    if (!pair || busy || retryTimer) return;
    var button = null;
    if (event.key === "n") {
      var note = pair.querySelector(".judging-note");
      if (note) { note.open = true; note.querySelector("textarea").focus(); event.preventDefault(); }
      return;
    }
    if (event.key === "s") button = pair.querySelector('[data-action="skip"]');
    else if (event.key === "u") button = pair.querySelector('[data-action="undo"]');
    else button = pair.querySelector('button.grade[data-key="' + event.key.replace(/["\\]/g, "") + '"]');
    if (button) { event.preventDefault(); busy = true; button.click(); }
  });
})();
