// A wide table scrolls sideways inside its own box on a narrow screen (goldset.css). A box
// that scrolls must be reachable from the keyboard, or its hidden columns are out of reach
// for anyone not using a mouse (axe: scrollable-region-focusable). So every box that
// scrolls now is made focusable (tabindex 0: arrow keys then scroll it), and given back its
// place when a wider window no longer needs it. Only boxes this script marked are changed.
(function () {
  "use strict";
  var MARK = "data-scroll-focus";

  function scrolls(element) {
    var overflow = getComputedStyle(element).overflowX;
    return (overflow === "auto" || overflow === "scroll") && element.scrollWidth > element.clientWidth + 1;
  }

  function mark() {
    document.querySelectorAll("main table, main .scroll, main pre, [" + MARK + "]").forEach(function (element) {
      if (scrolls(element)) {
        if (!element.hasAttribute("tabindex")) {
          element.setAttribute("tabindex", "0");
          element.setAttribute(MARK, "");
        }
      } else if (element.hasAttribute(MARK)) {
        element.removeAttribute("tabindex");
        element.removeAttribute(MARK);
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mark);
  } else {
    mark();
  }
  window.addEventListener("resize", mark);
  // Fragments htmx swaps in (a polled section, a calculator's result) bring tables of their own.
  document.addEventListener("htmx:afterSettle", mark);
})();
