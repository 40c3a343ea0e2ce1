/* treechat session export: the page script (inlined into the export, allowed by its hash in the CSP).

   Reads the session's records from the inert JSON block, draws the tree as a virtual list (only
   the rows in view exist, so 100k entries stay fast) and shows the branch through the chosen node.
   Text from the session reaches the page only as textContent, or as the HTML bodies the exporter
   built with everything escaped. The URL fragment holds the chosen entry's id.

   The script is four files inlined as one <script>, in this order and inside one function (page.py):
   page.js (the records and the tree model), page_tree.js (the tree panel), page_branch.js (the
   branch on screen) and page_start.js (the URL fragment, events, start). They share its scope,
   which is strict. */

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
