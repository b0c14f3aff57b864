// The adjudication page, from the keyboard: a grade key picks the grade, Enter decides,
// Ctrl+Enter decides from the note, n skips to the next disagreement. A file, not an
// inline script, so the Content-Security-Policy can refuse every inline one.
document.addEventListener("keydown", function (event) {
  "use strict";
  var form = document.getElementById("decide");
  if (!form || event.altKey || event.metaKey) return;
  var typing = event.target.tagName === "TEXTAREA" || event.target.tagName === "INPUT" && event.target.type === "text";
  if (typing) {
    if (event.key === "Enter" && event.ctrlKey) { event.preventDefault(); form.submit(); }
    return;
  }
  if (event.ctrlKey) return;
  var radio = form.querySelector('input[name="grade"][value="' + event.key.replace(/["\\]/g, "") + '"]');
  if (radio) { radio.checked = true; radio.focus(); event.preventDefault(); return; }
  if (event.key === "Enter" && form.querySelector('input[name="grade"]:checked')) { event.preventDefault(); form.submit(); return; }
  if (event.key === "n") { var skip = document.getElementById("skip"); if (skip) { window.location = skip.href; } }
});
