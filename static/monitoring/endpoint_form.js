// The endpoint form: choosing the generic preset opens "Request and reading", whose
// fields a generic endpoint needs (a preset fills them in). A file, not an inline
// script, so the Content-Security-Policy can refuse every inline one.
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  var preset = document.getElementById("id_preset");
  var details = document.querySelector("details[data-generic-opens]");
  if (!preset || !details) return;
  preset.addEventListener("change", function () {
    if (preset.value === "generic") { details.open = true; }
  });
});
