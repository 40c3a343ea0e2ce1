/* treechat session export, part 2 of 4 (see page.js): the tree panel — flattened lines, a virtual
   list of rows (only those in view exist), folding, filtering. */

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
  var leafLine = leafIdx >= 0 ? lineFor(leafIdx) : -1;  // a hidden leaf (a label) shows on its ancestor
  var frag = document.createDocumentFragment();
  for (var l = first; l < last; l++) frag.appendChild(rowElement(l, l === selLine, l === leafLine));
  rowsEl.style.transform = 'translateY(' + (first * ROW_H) + 'px)';
  rowsEl.replaceChildren(frag);
}

function rowElement(l, selected, isLeaf) {
  var n = lineNode[l], e = E[n];
  var row = el('div', 'row k-' + kindOf(n) + (onBranch[n] ? ' on-branch' : '') + (onActive[n] ? ' active' : '') + (selected ? ' sel' : ''));
  row.dataset.line = String(l);
  row.title = e[TYPE] + (e[ROLE] ? ' · ' + e[ROLE] : '') + ' · ' + e[TS] + ' · ' + e[ID];
  row.appendChild(el('span', 'g', gutterText(lineGutter[l], lineConn[l])));
  var isFold = forks[n] || folded.has(n);
  row.appendChild(el('span', 'fold' + (isFold ? ' can' : ''), isFold ? (folded.has(n) ? '▸' : '▾') : ''));
  row.appendChild(el('span', 'mark', e[TYPE] === 'branch_summary' ? '↪' : MARKS[kindOf(n)]));
  row.appendChild(el('span', 'p', e[PREVIEW] || '(' + e[TYPE] + ')'));
  var lab = labels[e[ID]];
  if (lab) row.appendChild(el('span', 'tag', lab));
  if (isLeaf) row.appendChild(el('span', 'leaf-tag', '← leaf'));
  return row;
}

function revealInTree(n) {
  var l = lineFor(n);
  if (l < 0) return;
  var top = l * ROW_H, h = treeEl.clientHeight;
  if (top < treeEl.scrollTop || top + ROW_H > treeEl.scrollTop + h) treeEl.scrollTop = Math.max(0, top - h / 2);
}
