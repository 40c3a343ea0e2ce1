/* treechat session export: the page script (inlined into the export, allowed by its hash in the CSP).

   Reads the session's records from the inert JSON block, draws the tree as a virtual list (only
   the rows in view exist, so 100k entries stay fast) and shows the branch through the chosen node.
   Text from the session reaches the page only as textContent, or as the HTML bodies the exporter
   built with everything escaped. The URL fragment holds the chosen entry's id. */
(function () {
  'use strict';

  // Record fields (entries.py writes the same order).
  var ID = 0, PARENT = 1, TYPE = 2, ROLE = 3, TS = 4, PREVIEW = 5, BODY = 6, X = 7;
  var ROW_H = 22;            // tree row height in px (page.css .row)
  var MAX_LEVELS = 24;       // gutter levels drawn before they are cut with ⋯
  var WINDOW = 150;          // cards rendered either side of the chosen one; more on request
  var MORE = 200;
  var NONE = 0, TEE = 1, ELBOW = 2;
  var SETTINGS = toSet(['thinking_level_change', 'model_change', 'active_tools_change', 'session_info', 'custom', 'label']);
  var SIBLING_TYPES = toSet(['message', 'branch_summary', 'compaction']);

  var data = JSON.parse(document.getElementById('session-data').textContent);
  var S = data.session, E = data.entries, N = E.length;
  var labels = data.labels || {};

  var $ = function (id) { return document.getElementById(id); };
  var treeEl = $('tree'), rowsEl = $('tree-rows'), spacerEl = $('tree-spacer'), mainEl = $('main');
  var searchEl = $('search'), modeEl = $('mode');

  function toSet(list) { var s = Object.create(null); list.forEach(function (k) { s[k] = true; }); return s; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // ------------------------------------------------------------ the tree

  var index = new Map();
  for (var i = 0; i < N; i++) if (!index.has(E[i][ID])) index.set(E[i][ID], i);
  var parent = new Int32Array(N).fill(-1);
  for (i = 0; i < N; i++) {
    var p = E[i][PARENT] == null ? undefined : index.get(E[i][PARENT]);
    if (p !== undefined && p !== i) parent[i] = p;
  }
  // An entry appended under a `leaf` marker hangs under the marker's target (as the app shows it).
  for (i = 0; i < N; i++) {
    if (E[i][TYPE] === 'leaf') continue;
    for (var hops = 0; parent[i] >= 0 && E[parent[i]][TYPE] === 'leaf' && hops < 64; hops++) parent[i] = parent[parent[i]];
  }
  var kids = new Array(N), roots = [];
  for (i = 0; i < N; i++) {
    if (parent[i] < 0) roots.push(i);
    else (kids[parent[i]] || (kids[parent[i]] = [])).push(i);
  }
  // Entries on a parent cycle are reached from no root: each cycle is cut at its first entry.
  var reached = new Uint8Array(N);
  function reach(from) {
    var stack = [from];
    while (stack.length) {
      var n = stack.pop();
      if (reached[n]) continue;
      reached[n] = 1;
      var ks = kids[n];
      if (ks) for (var j = 0; j < ks.length; j++) stack.push(ks[j]);
    }
  }
  roots.forEach(reach);
  var cut = false;
  for (i = 0; i < N; i++) {
    if (reached[i]) continue;
    var siblings0 = kids[parent[i]];
    siblings0.splice(siblings0.indexOf(i), 1);
    parent[i] = -1;
    roots.push(i);
    reach(i);
    cut = true;
  }
  if (cut) roots.sort(function (a, b) { return a - b; });

  var leafIdx = S.leaf == null || !index.has(S.leaf) ? -1 : index.get(S.leaf);
  var onActive = new Uint8Array(N);
  for (var c = leafIdx; c >= 0; c = parent[c]) onActive[c] = 1;

  var tips = 0;
  for (i = 0; i < N; i++) {
    var t = E[i][TYPE];
    if (t === 'leaf' || t === 'label') continue;
    var ks = kids[i], tip = true;
    if (ks) for (var j = 0; j < ks.length; j++) if (E[ks[j]][TYPE] !== 'leaf' && E[ks[j]][TYPE] !== 'label') { tip = false; break; }
    if (tip) tips++;
  }

  var siblingCache = new Map();
  /** Alternatives at one point: message/summary children of the same parent, oldest first. */
  function siblings(n) {
    var key = parent[n], s = siblingCache.get(key);
    if (!s) {
      var pool = key < 0 ? roots : (kids[key] || []);
      s = pool.filter(function (k) { return SIBLING_TYPES[E[k][TYPE]]; });
      s.sort(function (a, b) { return E[a][TS] < E[b][TS] ? -1 : E[a][TS] > E[b][TS] ? 1 : a - b; });
      siblingCache.set(key, s);
    }
    return s;
  }

  /** Root → n, then on down: along the active path to the leaf where it goes, else to the newest child. */
  function branchOf(n) {
    var up = [];
    for (var c = n; c >= 0; c = parent[c]) up.push(c);
    up.reverse();
    for (c = n; c !== leafIdx;) {  // the active branch ends at the leaf, as in the app
      var ks = kids[c], next = -1;
      if (!ks) break;
      for (var j = 0; j < ks.length; j++) {
        var k = ks[j];
        if (E[k][TYPE] === 'leaf') continue;
        if (onActive[k]) { next = k; break; }
        if (next < 0 || E[k][TS] >= E[next][TS]) next = k;
      }
      if (next < 0) break;
      up.push(next);
      c = next;
    }
    return up;
  }

  function kindOf(n) {
    var t = E[n][TYPE], r = E[n][ROLE];
    if (t === 'message') {
      if (r === 'user') return 'user';
      if (r === 'assistant') return 'assistant';
      if (r === 'toolResult' || r === 'bashExecution') return 'tool';
      if (r === 'branchSummary' || r === 'compactionSummary') return 'summary';
      return 'other';
    }
    if (t === 'compaction' || t === 'branch_summary') return 'summary';
    return SETTINGS[t] ? 'settings' : 'other';
  }
  var MARKS = { user: '›', assistant: '◇', tool: '⚙', summary: '⟪', settings: '·', other: '•' };

  function visible(n, mode) {
    var t = E[n][TYPE];
    if (t === 'leaf') return false;
    if (mode === 'all') return true;
    if (SETTINGS[t]) return false;
    if (mode === 'no-tools') return kindOf(n) !== 'tool';
    if (mode === 'user-only') return t === 'message' && E[n][ROLE] === 'user';
    if (mode === 'labeled') return labels[E[n][ID]] !== undefined;
    return true;
  }

  // ------------------------------------------------------------ tree layout (flattened lines)

  var folded = new Set();
  var lineNode = [], lineGutter = [], lineConn = [], lineOf = new Int32Array(N), forks = new Uint8Array(N);
  var lowerPreview = null;

  /** Lines for the tree: a row is indented only where its parent shows several children; hidden
      rows are skipped and their children hang from the nearest shown ancestor. */
  function layout() {
    var mode = modeEl.value, query = searchEl.value.trim().toLowerCase();
    lineNode = []; lineGutter = []; lineConn = [];
    forks.fill(0);
    if (query) {
      if (!lowerPreview) lowerPreview = E.map(function (e) { return (e[PREVIEW] || '').toLowerCase(); });
      for (var n = 0; n < N; n++) {
        if (!visible(n, mode)) continue;
        var lab = labels[E[n][ID]];
        if (lowerPreview[n].indexOf(query) >= 0 || (lab && lab.toLowerCase().indexOf(query) >= 0) || E[n][ID] === query) {
          lineNode.push(n); lineGutter.push(null); lineConn.push(NONE);
        }
      }
    } else {
      var vkids = new Array(N), vroots = [], sn = [], sa = [];
      for (var r = roots.length - 1; r >= 0; r--) { sn.push(roots[r]); sa.push(-1); }
      while (sn.length) {
        var m = sn.pop(), a = sa.pop(), below = a;
        if (visible(m, mode)) {
          if (a < 0) vroots.push(m); else (vkids[a] || (vkids[a] = [])).push(m);
          below = m;
        }
        var ks = kids[m];
        if (ks) for (var j = ks.length - 1; j >= 0; j--) { sn.push(ks[j]); sa.push(below); }
      }
      var byIndex = function (x, y) { return x - y; };
      vroots.sort(byIndex);
      var stackN = [], stackG = [], stackC = [];
      var pushKids = function (list, g) {
        if (list.length === 1) { stackN.push(list[0]); stackG.push(g); stackC.push(NONE); return; }
        for (var k = list.length - 1; k >= 0; k--) {
          var more = k < list.length - 1;
          stackN.push(list[k]); stackG.push({ c: more, o: g }); stackC.push(more ? TEE : ELBOW);
        }
      };
      if (vroots.length) pushKids(vroots, null);
      while (stackN.length) {
        var x = stackN.pop(), g = stackG.pop(), conn = stackC.pop();
        lineNode.push(x); lineGutter.push(g); lineConn.push(conn);
        var v = vkids[x];
        if (!v) continue;
        if (v.length > 1) { forks[x] = 1; v.sort(byIndex); }
        if (!folded.has(x)) pushKids(v, g);
      }
    }
    lineOf.fill(-1);
    for (var l = 0; l < lineNode.length; l++) lineOf[lineNode[l]] = l;
    spacerEl.style.height = (lineNode.length * ROW_H) + 'px';
    var shown = lineNode.length;
    $('tree-info').textContent = N.toLocaleString() + ' entries · ' + tips.toLocaleString() + (tips === 1 ? ' branch' : ' branches') +
      (shown !== N ? ' · ' + shown.toLocaleString() + ' shown' : '') + (query ? ' (filtered)' : '');
  }

  function gutterText(g, conn) {
    if (!g) return '';
    var bits = [], node = g;
    while (node && bits.length < MAX_LEVELS) { bits.push(node.c); node = node.o; }
    bits.reverse();
    var s = '';
    for (var k = 0; k < bits.length - 1; k++) s += bits[k] ? '│ ' : '  ';
    s += conn === TEE ? '├─' : conn === ELBOW ? '└─' : (bits[bits.length - 1] ? '│ ' : '  ');
    return node ? '⋯ ' + s.slice(2) : s;
  }

  /** The line showing n, or its nearest shown ancestor's. */
  function lineFor(n) {
    for (var c = n; c >= 0; c = parent[c]) if (lineOf[c] >= 0) return lineOf[c];
    return -1;
  }

  var drawPending = false;
  function drawTreeSoon() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(function () { drawPending = false; drawTree(); });
  }

  function drawTree() {
    var top = treeEl.scrollTop, height = treeEl.clientHeight || 600, count = lineNode.length;
    var first = Math.max(0, Math.floor(top / ROW_H) - 10);
    var last = Math.min(count, Math.ceil((top + height) / ROW_H) + 10);
    var selLine = sel >= 0 ? lineFor(sel) : -1;
    var frag = document.createDocumentFragment();
    for (var l = first; l < last; l++) frag.appendChild(rowElement(l, l === selLine));
    rowsEl.style.transform = 'translateY(' + (first * ROW_H) + 'px)';
    rowsEl.replaceChildren(frag);
  }

  function rowElement(l, selected) {
    var n = lineNode[l], e = E[n];
    var row = el('div', 'row k-' + kindOf(n) + (onBranch[n] ? ' on-branch' : '') + (onActive[n] ? ' active' : '') + (selected ? ' sel' : ''));
    row.dataset.line = String(l);
    row.title = e[TYPE] + (e[ROLE] ? ' · ' + e[ROLE] : '') + ' · ' + e[TS] + ' · ' + e[ID];
    row.appendChild(el('span', 'g', gutterText(lineGutter[l], lineConn[l])));
    var isFold = forks[n] || folded.has(n);
    row.appendChild(el('span', 'fold' + (isFold ? ' can' : ''), isFold ? (folded.has(n) ? '▸' : '▾') : ''));
    row.appendChild(el('span', 'mark', onActive[n] ? '●' : MARKS[kindOf(n)]));
    row.appendChild(el('span', 'p', e[PREVIEW] || '(' + e[TYPE] + ')'));
    var lab = labels[e[ID]];
    if (lab) row.appendChild(el('span', 'tag', lab));
    if (n === leafIdx) row.appendChild(el('span', 'leaf-tag', '← leaf'));
    return row;
  }

  function revealInTree(n) {
    var l = lineFor(n);
    if (l < 0) return;
    var top = l * ROW_H, h = treeEl.clientHeight;
    if (top < treeEl.scrollTop || top + ROW_H > treeEl.scrollTop + h) treeEl.scrollTop = Math.max(0, top - h / 2);
  }

  // ------------------------------------------------------------ the branch on screen

  var sel = -1, branch = [], items = [], lo = 0, hi = 0, outside = null;
  var onBranch = new Uint8Array(N);
  var cardsEl = null;

  function fmtInt(n) { return Number(n || 0).toLocaleString(); }
  function fmtTokens(n) {
    n = Number(n || 0);
    if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + 'M';
    if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + 'k';
    return String(n);
  }
  function fmtCost(x) { x = Number(x || 0); return '$' + (x > 0 && x < 0.01 ? x.toFixed(4) : x.toFixed(2)); }
  function fmtTime(ts) {
    var d = new Date(ts);
    if (isNaN(d.getTime())) return String(ts || '');
    return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }

  function select(n, how) {
    if (n < 0 || n >= N) return;
    if (E[n][TYPE] === 'leaf' && parent[n] >= 0) n = parent[n];  // a marker stands for its target
    for (var k = 0; k < branch.length; k++) onBranch[branch[k]] = 0;
    sel = n;
    branch = branchOf(n);
    for (k = 0; k < branch.length; k++) onBranch[branch[k]] = 1;
    renderBranch();
    revealInTree(n);
    drawTree();
    setHash(n, how);
  }

  function renderBranch() {
    items = branch.filter(function (k) { return E[k][TYPE] !== 'leaf'; });
    var pos = items.indexOf(sel);
    if (pos < 0) pos = items.length - 1;
    lo = Math.max(0, pos - WINDOW);
    hi = Math.min(items.length, pos + WINDOW + 1);
    outside = contextMarks(items);
    cardsEl = el('div', 'cards');
    mainEl.replaceChildren(branchHead(), cardsEl);
    fillCards();
    var card = cardsEl.querySelector('.card.sel');
    if (card) card.scrollIntoView({ block: pos === 0 ? 'end' : 'start' });
  }

  /** Which items the model no longer saw at the end of this branch: before the last compaction on
      it and outside the range that compaction kept (the exporter computed that range). */
  function contextMarks(list) {
    var marks = new Uint8Array(list.length), last = -1;
    for (var k = list.length - 1; k >= 0; k--) if (E[list[k]][TYPE] === 'compaction') { last = k; break; }
    if (last < 0) return marks;
    var kept = new Set((E[list[last]][X] || {}).kept || []);
    for (k = 0; k < last; k++) if (!kept.has(E[list[k]][ID])) marks[k] = 1;
    return marks;
  }

  function branchHead() {
    var msgs = 0, inp = 0, out = 0, cr = 0, cw = 0, cost = 0, ctx = 0;
    for (var k = 0; k < items.length; k++) {
      var e = E[items[k]];
      if (e[TYPE] === 'message' || e[TYPE] === 'custom_message') msgs++;
      var u = e[X] && e[X].usage;
      if (u) { inp += u[0]; out += u[1]; cr += u[2]; cw += u[3]; cost += u[4]; ctx = u[0] + u[1] + u[2] + u[3]; }
    }
    var head = el('div', 'branch-head');
    var tipEntry = E[branch[branch.length - 1]];
    var what = el('span');
    what.appendChild(el('b', '', leafIdx >= 0 && onBranch[leafIdx] ? 'Active branch' : 'Branch'));
    what.appendChild(document.createTextNode(' · ' + fmtInt(msgs) + ' messages, last ' + fmtTime(tipEntry[TS])));
    head.appendChild(what);
    head.appendChild(el('span', '', '↑ ' + fmtTokens(inp) + ' in · ↓ ' + fmtTokens(out) + ' out · cache ' + fmtTokens(cr) + ' read, ' + fmtTokens(cw) + ' written'));
    head.appendChild(el('span', '', fmtCost(cost)));
    if (ctx) head.appendChild(el('span', '', 'context at the end: ' + fmtTokens(ctx) + ' tokens'));
    if (leafIdx >= 0 && !onBranch[leafIdx]) {
      var b = el('button', 'go-leaf', 'show the active branch');
      b.type = 'button';
      head.appendChild(b);
    }
    return head;
  }

  function fillCards() {
    var frag = document.createDocumentFragment();
    if (lo > 0) frag.appendChild(moreButton('earlier', lo));
    for (var k = lo; k < hi; k++) {
      if (outside[k] && (k === lo || !outside[k - 1])) {
        frag.appendChild(el('div', 'outside-note', 'Not in the model’s context at the end of this branch: ' +
          'what follows, up to the compaction, was replaced by its summary (except the messages it kept).'));
      }
      frag.appendChild(card(items[k], outside[k]));
    }
    if (hi < items.length) frag.appendChild(moreButton('later', items.length - hi));
    cardsEl.replaceChildren(frag);
  }

  function moreButton(where, hidden) {
    var box = el('div', 'more');
    var b = el('button', 'more-' + where, 'show ' + fmtInt(Math.min(MORE, hidden)) + ' ' + where);
    b.type = 'button';
    box.appendChild(b);
    if (hidden > MORE) {
      var all = el('button', 'more-' + where + '-all', 'all ' + fmtInt(hidden) + ' ' + where);
      all.type = 'button';
      box.appendChild(document.createTextNode(' '));
      box.appendChild(all);
    }
    return box;
  }

  function showMore(where, all) {
    if (where === 'earlier') {
      var before = mainEl.scrollHeight, top = mainEl.scrollTop;
      lo = all ? 0 : Math.max(0, lo - MORE);
      fillCards();
      mainEl.scrollTop = top + (mainEl.scrollHeight - before);  // keep what was on screen in place
    } else {
      hi = all ? items.length : Math.min(items.length, hi + MORE);
      fillCards();
    }
  }

  var NOTICE = toSet(['model_change', 'thinking_level_change', 'active_tools_change', 'session_info', 'label', 'custom', 'leaf']);

  function card(n, isOutside) {
    var e = E[n], type = e[TYPE], role = e[ROLE], x = e[X] || {};
    var cls = 'card t-' + type + (role ? ' r-' + role : '') + (n === sel ? ' sel' : '') + (isOutside ? ' outside' : '');
    if (x.stop === 'error' || x.error) cls += ' error';
    else if (x.stop === 'aborted') cls += ' aborted';
    var box = el(NOTICE[type] ? 'div' : 'article', cls + (NOTICE[type] ? ' notice' : ''));
    box.dataset.i = String(n);
    var head = el('div', 'head');
    box.appendChild(head);
    if (NOTICE[type]) {
      head.appendChild(el('span', '', noticeText(e)));
    } else {
      head.appendChild(el('span', 'role', roleName(e)));
      var detail = x.model || x.tool || '';
      if (detail) head.appendChild(el('span', 'detail', detail));
      if (x.error) head.appendChild(el('span', 'bad', '✖ error'));
      else if (type === 'message' && role === 'toolResult') head.appendChild(el('span', 'ok', '✓'));
      if (x.exitCode !== undefined) head.appendChild(el('span', x.exitCode === 0 ? 'ok' : 'bad', 'exit ' + x.exitCode));
      if (x.cancelled) head.appendChild(el('span', 'bad', 'cancelled'));
      if (x.hidden) head.appendChild(el('span', '', '(not displayed in the app)'));
      if (x.usage) head.appendChild(el('span', 'usage', '↑' + fmtTokens(x.usage[0]) + ' ↓' + fmtTokens(x.usage[1]) +
        (x.usage[2] ? ' ⟳' + fmtTokens(x.usage[2]) : '') + ' · ' + fmtCost(x.usage[4])));
      var lab = labels[e[ID]];
      if (lab) head.appendChild(el('span', 'tag', lab));
      var sibs = siblings(n);
      if (sibs.length > 1) {
        var at = sibs.indexOf(n), sw = el('span', 'sibs');
        var prev = el('button', 'sib', '‹'), next = el('button', 'sib', '›');
        prev.type = next.type = 'button';
        prev.title = 'previous alternative'; next.title = 'next alternative';
        prev.dataset.go = String(sibs[(at - 1 + sibs.length) % sibs.length]);
        next.dataset.go = String(sibs[(at + 1) % sibs.length]);
        sw.appendChild(prev); sw.appendChild(el('b', '', (at + 1) + '/' + sibs.length)); sw.appendChild(next);
        head.appendChild(sw);
      }
    }
    head.appendChild(el('span', 'spacer'));
    var time = el('time', '', fmtTime(e[TS]));
    time.dateTime = String(e[TS] || '');
    head.appendChild(time);
    var link = el('a', 'link', '#');
    link.href = '#' + encodeURIComponent(e[ID]);
    link.title = 'link to this entry (' + e[ID] + ')';
    link.dataset.go = String(n);
    head.appendChild(link);
    if (isOutside) box.title = 'not in the model’s context at the end of this branch';
    if (e[BODY]) {
      var body = el('div', 'body');
      if (type === 'compaction') {
        var d = el('details'), s = el('summary', '', 'summary that replaced the earlier messages'), inner = el('div');
        inner.innerHTML = e[BODY];  // built by the exporter, every text escaped
        d.appendChild(s); d.appendChild(inner); body.appendChild(d);
      } else {
        body.innerHTML = e[BODY];  // built by the exporter, every text escaped
      }
      box.appendChild(body);
    }
    return box;
  }

  function roleName(e) {
    var type = e[TYPE], role = e[ROLE], x = e[X] || {};
    if (type === 'compaction') {
      var parts = ['⟪ compacted'];
      if (x.trigger) parts.push(x.trigger);
      parts.push(x.tokensAfter !== undefined ? fmtInt(x.tokensBefore) + ' → ' + fmtInt(x.tokensAfter) + ' tokens' : fmtInt(x.tokensBefore) + ' tokens before');
      return parts.join(' · ') + ' ⟫';
    }
    if (type === 'branch_summary') return '↪ summary of an abandoned branch';
    if (type === 'custom_message') return x.customType || 'custom';
    if (role === 'user') return 'user';
    if (role === 'assistant') return 'assistant';
    if (role === 'toolResult') return 'tool result';
    if (role === 'bashExecution') return 'shell';
    if (role === 'custom') return x.customType || 'custom';
    if (role === 'branchSummary' || role === 'compactionSummary') return 'summary';
    return type === 'message' ? String(role || 'message') : type;
  }

  function noticeText(e) {
    var x = e[X] || {};
    switch (e[TYPE]) {
      case 'model_change': return '⇄ model → ' + x.model;
      case 'thinking_level_change': return '◌ ' + e[PREVIEW];
      case 'active_tools_change': return '⚙ ' + e[PREVIEW];
      case 'session_info': return x.name ? '✎ session named “' + x.name + '”' : '✎ session name cleared';
      case 'label': {
        var target = index.has(x.target) ? E[index.get(x.target)][PREVIEW] : x.target;
        return (x.label ? '⚑ labelled “' + x.label + '”: ' : '⚑ label cleared: ') + target;
      }
      case 'custom': return '◦ ' + (x.customType || 'custom') + ' (extension data)';
      default: return e[PREVIEW] || e[TYPE];
    }
  }

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

  // Printing: every folded part open, so the paper holds what the screen could show.
  var opened = [];
  window.addEventListener('beforeprint', function () {
    opened = Array.prototype.filter.call(mainEl.querySelectorAll('details'), function (d) { return !d.open; });
    opened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener('afterprint', function () { opened.forEach(function (d) { d.open = false; }); opened = []; });

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
})();
