// The judging screen's evidence spans and hop: mark the characters of the page that answer
// the query (a mouse selection, or the sentence under the keyboard caret), remove a span,
// name the hop. Spans go with the grade: the judge form's hidden "spans" field holds them
// as "start-end,start-end", character offsets into the page's text as stored.
//
// The page text is rendered by lib/text_offsets.py: every run of text is a
// <span data-o="N"> whose characters are the stored ones from offset N on (a character
// reference of an HTML page is a run of its own with data-r, its stored length). Offsets
// count code points, as Python does; JavaScript strings count UTF-16 units, hence cpLen.
(function () {
  "use strict";
  var BLOCKS = "p,li,td,th,pre,h1,h2,h3,h4,h5,h6,div,blockquote,dd,dt,section,article";
  var HOP_KEY = "goldset-judging-hop";
  var state = null;

  function cpLen(text) {
    var count = 0;
    for (var i = 0; i < text.length; i++) {
      var unit = text.charCodeAt(i);
      if (unit < 0xdc00 || unit > 0xdfff) count++;  // a low surrogate ends a pair already counted
    }
    return count;
  }

  function runs(root) { return Array.prototype.slice.call(root.querySelectorAll("span[data-o]")); }

  function runOf(run) {
    var text = run.textContent;
    var stored = run.hasAttribute("data-r") ? parseInt(run.getAttribute("data-r"), 10) : cpLen(text);
    return { el: run, o: parseInt(run.getAttribute("data-o"), 10), len: stored, text: text, ref: run.hasAttribute("data-r") };
  }

  // A selection boundary as an offset in the stored text; one outside every run snaps to
  // the next run's start (a span's start) or the previous run's end (its end).
  function offsetAt(root, node, offset, isEnd) {
    var element = node.nodeType === 3 ? node.parentElement : node;
    var run = element && element.closest ? element.closest("span[data-o]") : null;
    if (run && root.contains(run)) {
      var range = document.createRange();
      range.setStart(run, 0);
      range.setEnd(node, offset);
      var info = runOf(run);
      var before = range.toString();
      if (info.ref) return before.length === 0 ? info.o : info.o + info.len;
      return info.o + cpLen(before);
    }
    var point = document.createRange();
    point.setStart(node, offset);
    var all = state.runs, i;
    if (!isEnd) {
      for (i = 0; i < all.length; i++) if (point.comparePoint(all[i].el, 0) >= 0) return all[i].o;
      return null;
    }
    for (i = all.length - 1; i >= 0; i--) if (point.comparePoint(all[i].el, all[i].el.childNodes.length) <= 0) return all[i].o + all[i].len;
    return null;
  }

  // The DOM point of a stored offset (the inverse of offsetAt), for highlights.
  function pointAt(offset, isEnd) {
    var all = state.runs, i, info = null;
    for (i = 0; i < all.length && !info; i++) {
      var run = all[i];
      if (isEnd ? (run.o < offset && offset <= run.o + run.len) : (run.o <= offset && offset < run.o + run.len)) info = run;
    }
    if (!info) {  // in a gap between runs (a line break): the nearest run's edge
      for (i = 0; i < all.length && !info; i++) if (all[i].o >= offset) info = all[i];
      if (!info || isEnd) {
        info = null;
        for (i = all.length - 1; i >= 0 && !info; i--) if (all[i].o + all[i].len <= offset) info = all[i];
        if (!info) return null;
        return { node: info.el, offset: info.el.childNodes.length };
      }
      return { node: info.el, offset: 0 };
    }
    var want = info.ref ? (offset > info.o ? info.text.length : 0) : null;
    var left = offset - info.o;  // code points still to walk
    var walker = document.createTreeWalker(info.el, NodeFilter.SHOW_TEXT);
    var last = null;
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      last = node;
      var text = node.data;
      if (want !== null) {
        if (want <= text.length) return { node: node, offset: want };
        want -= text.length;
        continue;
      }
      for (var unit = 0; unit <= text.length; unit++) {
        if (left === 0) return { node: node, offset: unit };
        if (unit === text.length) break;
        var code = text.charCodeAt(unit);
        if (code < 0xdc00 || code > 0xdfff) left--;
        if (code >= 0xd800 && code <= 0xdbff) { unit++; }
      }
    }
    return last ? { node: last, offset: last.data.length } : { node: info.el, offset: 0 };
  }

  function domRange(start, end) {
    var from = pointAt(start, false), to = pointAt(end, true);
    if (!from || !to) return null;
    var range = document.createRange();
    range.setStart(from.node, from.offset);
    range.setEnd(to.node, to.offset);
    return range;
  }

  // Sentences of the page, as stored offsets: the runs' text read in order, broken after
  // . ! ? and between blocks (paragraphs, list items, cells).
  function sentences() {
    var flat = "", marks = [], previousBlock = null;
    state.runs.forEach(function (run) {
      var block = run.el.closest(BLOCKS);
      if (flat && block !== previousBlock) flat += "\n";
      else if (flat && marks.length && marks[marks.length - 1].o + marks[marks.length - 1].len < run.o) flat += " ";
      previousBlock = block;
      marks.push({ at: flat.length, run: run });
      flat += run.text;
    });
    function stored(index, isEnd) {
      for (var i = marks.length - 1; i >= 0; i--) {
        var mark = marks[i];
        if (mark.at < index || (mark.at === index && !isEnd)) {
          var within = Math.min(index - mark.at, mark.run.text.length);
          if (mark.run.ref) return within === 0 ? mark.run.o : mark.run.o + mark.run.len;
          return mark.run.o + cpLen(mark.run.text.slice(0, within));
        }
      }
      return marks.length ? marks[0].run.o : 0;
    }
    var found = [], pattern = /[^\s][^.!?\n]*(?:[.!?]+|(?=\n)|$)/g, match;
    while ((match = pattern.exec(flat)) !== null) {
      var start = stored(match.index, false), end = stored(match.index + match[0].length, true);
      if (end > start) found.push({ start: start, end: end });
    }
    return found;
  }

  function highlight(name, ranges) {
    if (!window.CSS || !CSS.highlights || typeof Highlight === "undefined") return;
    var made = ranges.filter(function (range) { return range; });
    if (!made.length) { CSS.highlights.delete(name); return; }
    var highlight = new (Function.prototype.bind.apply(Highlight, [null].concat(made)))();
    highlight.priority = name === "evidence" ? 1 : 0;  // marked evidence shows over the caret
    CSS.highlights.set(name, highlight);
  }

  function render() {
    state.field.value = state.spans.map(function (span) { return span.start + "-" + span.end; }).join(",");
    highlight("evidence", state.spans.map(function (span) { return domRange(span.start, span.end); }));
    var caret = state.caret >= 0 ? state.sentences[state.caret] : null;
    highlight("caret", caret ? [domRange(caret.start, caret.end)] : []);
    var list = state.list;
    list.textContent = "";
    state.spans.forEach(function (span, index) {
      var item = document.createElement("li");
      var range = domRange(span.start, span.end);
      var text = range ? range.toString().replace(/\s+/g, " ").trim() : "";
      var quote = document.createElement("q");
      quote.textContent = text.length > 90 ? text.slice(0, 87) + "…" : text;
      var where = document.createElement("span");
      where.className = "hint";
      where.textContent = " characters " + span.start + "–" + span.end + " ";
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link";
      remove.textContent = "remove";
      remove.setAttribute("aria-label", "remove span " + (index + 1));
      remove.addEventListener("click", function () { state.spans.splice(index, 1); render(); });
      item.appendChild(quote);
      item.appendChild(where);
      item.appendChild(remove);
      list.appendChild(item);
    });
    state.empty.hidden = state.spans.length > 0;
  }

  // A new span joins the marked ones; spans it overlaps or touches merge with it (a
  // judgment's spans may not overlap).
  function add(start, end) {
    if (start === null || end === null || end <= start) return false;
    var kept = [];
    state.spans.forEach(function (span) {
      if (span.end < start || span.start > end) kept.push(span);
      else { start = Math.min(start, span.start); end = Math.max(end, span.end); }
    });
    kept.push({ start: start, end: end });
    kept.sort(function (a, b) { return a.start - b.start; });
    state.spans = kept;
    render();
    return true;
  }

  function markSelection() {
    var selection = window.getSelection();
    if (selection && selection.rangeCount && !selection.isCollapsed) {
      var range = selection.getRangeAt(0);
      if (state.root.contains(range.commonAncestorContainer) || range.intersectsNode(state.root)) {
        var start = state.root.contains(range.startContainer) ? offsetAt(state.root, range.startContainer, range.startOffset, false) : state.runs.length ? state.runs[0].o : null;
        var end = state.root.contains(range.endContainer) ? offsetAt(state.root, range.endContainer, range.endOffset, true) : null;
        if (end === null && state.runs.length) { var lastRun = state.runs[state.runs.length - 1]; end = lastRun.o + lastRun.len; }
        if (add(start, end)) { selection.removeAllRanges(); return true; }
      }
    }
    if (state.caret >= 0) { var sentence = state.sentences[state.caret]; return add(sentence.start, sentence.end); }
    return false;
  }

  function removeSpan() {
    if (!state.spans.length) return;
    var caret = state.caret >= 0 ? state.sentences[state.caret] : null;
    var at = caret ? state.spans.findIndex(function (span) { return span.start < caret.end && caret.start < span.end; }) : -1;
    state.spans.splice(at >= 0 ? at : state.spans.length - 1, 1);
    render();
  }

  function moveCaret(step) {
    if (!state.sentences.length) return;
    state.caret = Math.max(0, Math.min(state.sentences.length - 1, state.caret + step));
    render();
    var point = pointAt(state.sentences[state.caret].start, false);
    var element = point && (point.node.nodeType === 3 ? point.node.parentElement : point.node);
    if (element && element.scrollIntoView) element.scrollIntoView({ block: "nearest" });
  }

  function rememberedHop(queryId) {
    try {
      var kept = JSON.parse(sessionStorage.getItem(HOP_KEY) || "null");
      return kept && kept.query === queryId ? kept.hop : "";
    } catch (error) { return ""; }
  }

  function setUp() {
    var pair = document.getElementById("pair");
    var root = pair && pair.querySelector(".page-text[data-spans]");
    var form = pair && pair.querySelector("#judge-form");
    state = null;
    highlight("evidence", []);
    highlight("caret", []);
    if (!root || !form) return;
    state = {
      root: root,
      pair: pair,
      field: form.querySelector('input[name="spans"]'),
      hop: form.querySelector('input[name="hop"]'),
      list: form.querySelector(".span-list"),
      empty: form.querySelector(".span-none"),
      spans: [],
      caret: -1,
      queryId: pair.getAttribute("data-query-id"),
    };
    state.runs = runs(root).map(runOf);
    state.sentences = sentences();
    (state.field.value || "").split(",").forEach(function (pair) {
      var parts = pair.split("-");
      if (parts.length === 2) state.spans.push({ start: parseInt(parts[0], 10), end: parseInt(parts[1], 10) });
    });
    if (state.hop && !state.hop.value) state.hop.value = rememberedHop(state.queryId);
    if (state.hop) {
      state.hop.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { event.preventDefault(); state.hop.blur(); }
      });
    }
    var mark = form.querySelector('[data-action="mark"]');
    if (mark) {
      // Keep the page's selection when the button is pressed with the mouse.
      mark.addEventListener("mousedown", function (event) { event.preventDefault(); });
      mark.addEventListener("click", function () { markSelection(); });
    }
    render();
  }

  document.body.addEventListener("htmx:afterSwap", setUp);
  document.body.addEventListener("htmx:configRequest", function (event) {
    if (state && state.hop && event.detail.path.indexOf("/judge/") !== -1) {
      try { sessionStorage.setItem(HOP_KEY, JSON.stringify({ query: state.queryId, hop: state.hop.value.trim() })); } catch (error) { /* private mode */ }
    }
  });

  document.addEventListener("keydown", function (event) {
    if (!state || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.isContentEditable)) return;
    var handled = true;
    if (event.key === "m") markSelection();
    else if (event.key === "j") moveCaret(1);
    else if (event.key === "k") moveCaret(-1);
    else if (event.key === "x") removeSpan();
    else if (event.key === "h" && state.hop) state.hop.focus();
    else handled = false;
    if (handled) event.preventDefault();
  });

  setUp();
})();
