/* treechat session export, part 4 of 4 (see page.js): the URL fragment, events, and the start. */

// ------------------------------------------------------------ the URL fragment

function setHash(n, how) {
  if (how === 'none') return;
  var h = '#' + encodeURIComponent(E[n][ID]);
  if (location.hash === h) return;
  try {
    if (how === 'push') history.pushState(null, '', h); else history.replaceState(null, '', h);
  } catch (err) {
    skipHash = h;
    location.hash = h;
  }
}
var skipHash = null;

function fromHash() {
  var raw = location.hash.slice(1);
  if (skipHash === location.hash) { skipHash = null; return true; }
  if (!raw) return false;
  var id;
  try { id = decodeURIComponent(raw); } catch (err) { id = raw; }
  var n = index.get(id);
  if (n === undefined) return false;
  if (n !== sel) select(n, 'none');
  return true;
}

// ------------------------------------------------------------ events

rowsEl.addEventListener('click', function (ev) {
  var row = ev.target.closest('.row');
  if (!row) return;
  var n = lineNode[Number(row.dataset.line)];
  if (ev.target.closest('.fold.can')) {
    if (folded.has(n)) folded.delete(n); else folded.add(n);
    layout(); drawTree();
    return;
  }
  select(n, 'push');
  treeEl.focus({ preventScroll: true });  // so the arrow keys move on from here
});
treeEl.addEventListener('scroll', drawTreeSoon, { passive: true });
window.addEventListener('resize', drawTreeSoon);

function moveInTree(delta) {
  var count = lineNode.length;
  if (!count) return;
  var l = sel >= 0 ? lineFor(sel) : -1;
  l = Math.max(0, Math.min(count - 1, l < 0 ? 0 : l + delta));
  select(lineNode[l], 'replace');
}
treeEl.addEventListener('keydown', function (ev) {
  var moves = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, PageDown: 20, PageUp: -20, Home: -Infinity, End: Infinity };
  if (moves[ev.key] === undefined) return;
  ev.preventDefault();
  var d = moves[ev.key];
  moveInTree(d === Infinity ? lineNode.length : d === -Infinity ? -lineNode.length : d);
});

mainEl.addEventListener('click', function (ev) {
  var t = ev.target;
  var go = t.closest('[data-go]');
  if (go) {
    ev.preventDefault();
    select(Number(go.dataset.go), 'push');
    return;
  }
  var show = t.closest('.show-all');
  if (show) {
    var clip = show.previousElementSibling;
    if (!show.dataset.label) show.dataset.label = show.textContent;  // given back by "show less"
    if (clip) show.textContent = clip.classList.toggle('open') ? 'show less' : show.dataset.label;
    return;
  }
  if (t.closest('.go-leaf')) { select(leafIdx, 'push'); return; }
  var more = t.closest('button');
  if (more && more.className.indexOf('more-') === 0) showMore(more.className.indexOf('earlier') > 0 ? 'earlier' : 'later', /-all$/.test(more.className));
});

var searchTimer = 0;
searchEl.addEventListener('input', function () {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(function () { layout(); revealInTree(sel); drawTree(); }, 150);
});
modeEl.addEventListener('change', function () { layout(); revealInTree(sel); drawTree(); });
$('to-leaf').addEventListener('click', function () { if (leafIdx >= 0) select(leafIdx, 'push'); });
window.addEventListener('popstate', fromHash);
window.addEventListener('hashchange', fromHash);

document.addEventListener('keydown', function (ev) {
  var tag = (ev.target.tagName || '').toLowerCase();
  if (tag === 'input' || tag === 'select' || tag === 'textarea' || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === '/') { ev.preventDefault(); searchEl.focus(); }
  else if ((ev.key === '[' || ev.key === ']') && sel >= 0) {
    var sibs = siblings(sel), at = sibs.indexOf(sel);
    if (sibs.length > 1 && at >= 0) select(sibs[(at + (ev.key === ']' ? 1 : sibs.length - 1)) % sibs.length], 'push');
  }
});

// Printing: every folded part open (thinking, tool calls, data, summaries), so the paper holds
// what the screen could show; afterwards the ones that were closed close again. Clipped tool output
// prints whole by the print stylesheet, which also opens <details> where no print event comes.
var PRINT_ALL = 5000;
var opened = [];
window.addEventListener('beforeprint', function () {
  // the whole branch on paper, unless it is too long to lay out at once
  if ((lo > 0 || hi < items.length) && items.length <= PRINT_ALL) { lo = 0; hi = items.length; fillCards(); }
  Array.prototype.forEach.call(mainEl.querySelectorAll('details'), function (d) {
    if (!d.open) { opened.push(d); d.open = true; }  // added to: a second beforeprint keeps the first's
  });
});
window.addEventListener('afterprint', function () {
  opened.forEach(function (d) { d.open = false; });
  opened = [];
});

// ------------------------------------------------------------ start

(function header() {
  var meta = $('meta'), st = S.stats || {};
  var parts = [
    'session ' + S.id,
    S.created ? 'started ' + fmtTime(S.created) : '',
    S.cwd ? 'in ' + S.cwd : '',
    fmtInt(st.messages) + ' messages',
    fmtTokens(st.totalTokens) + ' tokens',
    fmtCost(st.cost),
    'exported ' + fmtTime(S.exported) + ' by ' + S.generator
  ];
  parts.forEach(function (t) { if (t) meta.appendChild(el('span', '', t)); });
})();
layout();
if (!N) {
  mainEl.replaceChildren(el('p', 'loading', 'This session has no entries.'));
  drawTree();
} else if (!fromHash()) {
  var start = leafIdx;
  if (start < 0) for (start = N - 1; start > 0 && E[start][TYPE] === 'leaf'; start--) { /* the last real entry */ }
  select(start, 'none');
}
document.documentElement.dataset.ready = '1';  // for tests and tools: the page has drawn itself
