/* treechat session export, part 3 of 4 (see page.js): the branch on screen — the chosen node's
   branch as cards, a window of them at a time, with headers built as text. */

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
