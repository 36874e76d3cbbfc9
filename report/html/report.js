// podtrace report: renders the pod list and, on demand, a pod's details from
// the JSON in #data (format in report/htmldata.go; deflated when large, see
// embedData in report/html.go). Every string from the cluster goes into the
// page as a text node or an attribute value, never as markup.
(function () {
  'use strict';

  // ---- the data: plain JSON, or deflated and written in basE91 ----
  var TEXT = document.getElementById('data').textContent;
  if (TEXT.lastIndexOf('{"format":"podtrace-report-deflate/', 0) !== 0) {
    start(TEXT, 'plain');
    return;
  }
  var zipped = base91(JSON.parse(TEXT).deflated);
  TEXT = null;
  var stream = null;
  try {
    if (typeof DecompressionStream === 'function') stream = new DecompressionStream('deflate-raw');
  } catch (e) {
    stream = null; // a browser that knows no deflate-raw
  }
  if (!stream) {
    start(new TextDecoder().decode(inflate(zipped)), 'inflate');
    return;
  }
  new Response(new Blob([zipped]).stream().pipeThrough(stream)).text().then(function (text) {
    start(text, 'DecompressionStream');
  });

  // base91 decodes basE91 text with the alphabet of report/html.go.
  function base91(text) {
    var ALPHA = '!#$%&\'()*+,-./0123456789:;=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~';
    var dec = new Int16Array(128).fill(-1), i;
    for (i = 0; i < ALPHA.length; i++) dec[ALPHA.charCodeAt(i)] = i;
    var out = new Uint8Array(Math.ceil(text.length * 14 / 16) + 2), o = 0, v = -1, b = 0, n = 0;
    for (i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i), d = c < 128 ? dec[c] : -1;
      if (d < 0) throw new Error('base91: bad character at ' + i);
      if (v < 0) {
        v = d;
        continue;
      }
      v += d * 91;
      b |= v << n;
      n += (v & 8191) > 88 ? 13 : 14;
      do {
        out[o++] = b & 255;
        b >>>= 8;
        n -= 8;
      } while (n > 7);
      v = -1;
    }
    if (v >= 0) out[o++] = (b | v << n) & 255;
    return out.subarray(0, o);
  }

  // inflate decompresses raw deflate data (RFC 1951) for a browser without
  // DecompressionStream: zlib's puff.c, canonical codes read bit by bit.
  function inflate(src) {
    var out = new Uint8Array(src.length * 4 + 1024), op = 0, pos = 0, bb = 0, bn = 0, i;
    var LBASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
    var LEXT = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
    var DBASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
    var DEXT = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
    var ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
    function fail(what) { throw new Error('inflate: ' + what); }
    function bits(n) {
      while (bn < n) {
        if (pos >= src.length) fail('data ends early');
        bb |= src[pos++] << bn;
        bn += 8;
      }
      var v = bb & ((1 << n) - 1);
      bb >>>= n;
      bn -= n;
      return v;
    }
    function huffman(lengths) {
      var count = new Uint16Array(16), offs = new Uint16Array(16), symbol = new Uint16Array(lengths.length), k;
      for (k = 0; k < lengths.length; k++) count[lengths[k]]++;
      count[0] = 0;
      for (k = 1; k < 15; k++) offs[k + 1] = offs[k] + count[k];
      for (k = 0; k < lengths.length; k++) if (lengths[k]) symbol[offs[lengths[k]]++] = k;
      return { count: count, symbol: symbol };
    }
    function decode(hf) {
      var code = 0, first = 0, index = 0;
      for (var len = 1; len < 16; len++) {
        code |= bits(1);
        var c = hf.count[len];
        if (code - c < first) return hf.symbol[index + code - first];
        index += c;
        first = (first + c) << 1;
        code <<= 1;
      }
      return fail('bad code');
    }
    function room(n) {
      if (op + n <= out.length) return;
      var bigger = new Uint8Array(Math.max(out.length * 2, op + n));
      bigger.set(out);
      out = bigger;
    }
    function codes(lit, dist) {
      for (;;) {
        var sym = decode(lit);
        if (sym < 256) {
          room(1);
          out[op++] = sym;
        } else if (sym === 256) {
          return;
        } else {
          sym -= 257;
          if (sym >= 29) fail('bad length');
          var len = LBASE[sym] + bits(LEXT[sym]), ds = decode(dist);
          if (ds >= 30) fail('bad distance');
          var d = DBASE[ds] + bits(DEXT[ds]);
          if (d > op) fail('distance too far back');
          room(len);
          for (var k = 0; k < len; k++, op++) out[op] = out[op - d];
        }
      }
    }
    var fixedLit = new Uint8Array(288), last;
    for (i = 0; i < 288; i++) fixedLit[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    var fixed = [huffman(fixedLit), huffman(new Uint8Array(30).fill(5))];
    do {
      last = bits(1);
      var type = bits(2);
      if (type === 0) {
        bb = 0;
        bn = 0;
        if (pos + 4 > src.length) fail('data ends early');
        var n = src[pos] | (src[pos + 1] << 8);
        pos += 4;
        if (pos + n > src.length) fail('data ends early');
        room(n);
        out.set(src.subarray(pos, pos + n), op);
        op += n;
        pos += n;
      } else if (type === 1) {
        codes(fixed[0], fixed[1]);
      } else if (type === 2) {
        var nlen = bits(5) + 257, ndist = bits(5) + 1, ncode = bits(4) + 4;
        var lengths = new Uint8Array(19);
        for (i = 0; i < ncode; i++) lengths[ORDER[i]] = bits(3);
        var lencode = huffman(lengths);
        lengths = new Uint8Array(nlen + ndist);
        for (i = 0; i < nlen + ndist;) {
          var sym = decode(lencode), rep, v = 0;
          if (sym < 16) {
            lengths[i++] = sym;
            continue;
          }
          if (sym === 16) {
            if (!i) fail('repeat with no length');
            v = lengths[i - 1];
            rep = 3 + bits(2);
          } else if (sym === 17) rep = 3 + bits(3);
          else rep = 11 + bits(7);
          if (i + rep > nlen + ndist) fail('too many lengths');
          while (rep--) lengths[i++] = v;
        }
        codes(huffman(lengths.subarray(0, nlen)), huffman(lengths.subarray(nlen)));
      } else {
        fail('bad block type');
      }
    } while (!last);
    return out.subarray(0, op);
  }

  // start reads the data's text: the tables and the list at once, each
  // pod's data (a line of its own, see report/htmldata.go) when it opens.
  function start(text, source) {
  var nl = text.indexOf('\n');
  var D = JSON.parse(text.slice(0, nl) + ']}');
  var LINES = text.slice(nl + 1, text.length - 3).split('\n');
  text = null;
  var S = D.strings;
  // strOf returns the reader of a pod's strings: n >= 0 is the top-level
  // strings[n], n <= -2 the pod's own strings[-n-2] (format in htmldata.go).
  function strOf(p) {
    var L = p.strings;
    return function (x) { return x >= 0 ? S[x] : L[-2 - x]; };
  }
  var BASE = D.base;
  var OPS = ['add', 'remove', 'change'];
  var SIGN = { add: '+', remove: '\u2212', change: '~' };
  var SEV = { info: 0, warning: 1, critical: 2 };
  var SHOW_INFO = document.getElementById('app').hasAttribute('data-show-info'); // podtrace report --show-info
  var CHUNK = 100;       // pod rows rendered at a time
  var REV_CHUNK = 200;   // revisions rendered at a time in a pod's details
  var LONG = 240;        // values longer than this are folded
  var SVGNS = 'http://www.w3.org/2000/svg'; // a namespace name, not fetched

  // ---- DOM helpers: text nodes and attribute values only ----
  function h(tag, attrs) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, Array.prototype.slice.call(arguments, 2));
    return e;
  }
  function s(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    append(e, Array.prototype.slice.call(arguments, 2));
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    });
  }
  function append(e, kids) {
    kids.forEach(function (k) {
      if (k === null || k === undefined || k === false) return;
      if (Array.isArray(k)) append(e, k);
      else e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
    });
  }

  // ---- times: ms from BASE, shown in UTC ----
  function iso(ms) { return new Date(BASE + ms).toISOString(); }
  function clock(ms) { return ms === null ? '' : iso(ms).slice(11, 23); }
  function stamp(ms) { var t = iso(ms); return t.slice(0, 10) + ' ' + t.slice(11, 19) + ' UTC'; }
  function dur(ms) {
    var sec = Math.round(ms / 1000);
    if (sec < 60) return sec + 's';
    var m = Math.floor(sec / 60), r = sec % 60;
    if (m < 60) return m + 'm' + (r ? r + 's' : '');
    var hr = Math.floor(m / 60);
    m = m % 60;
    if (hr < 48) return hr + 'h' + (m ? m + 'm' : '');
    return Math.floor(hr / 24) + 'd' + (hr % 24 ? (hr % 24) + 'h' : '');
  }

  // ---- the pods ----
  // A pod's entry in the list (see report/htmldata.go), and its data, read
  // from its line when first asked for.
  var pods = D.list.map(function (e, i) {
    var sev = -1, ids = [];
    e[4].forEach(function (f) {
      if (ids.indexOf(f[0]) < 0) ids.push(f[0]);
      sev = Math.max(sev, SEV[f[1]] || 0);
    });
    var ns = e[0], name = e[1];
    return {
      i: i, ns: ns, name: name, uid: e[2], outcome: e[3], ids: ids, sev: sev,
      findings: e[4].map(function (f) { return { id: f[0], severity: f[1], headline: f[2] }; }),
      revs: e[6], evs: e[7], start: e[8], end: e[9],
      key: ns + '/' + name + '/' + e[2],
      hay: (ns + '/' + name + ' ' + e[2]).toLowerCase(),
      path: e[5].map(function (n) { return n.indexOf('still present') === 0 ? 'still present' : n; }).join(' \u203a ')
    };
  });
  D.list = null;
  // body is a pod's data, parsed from its line the first time.
  function body(pd) {
    if (!pd.p) {
      var line = LINES[pd.i];
      pd.p = JSON.parse(line.charAt(line.length - 1) === ',' ? line.slice(0, -1) : line);
      LINES[pd.i] = null;
    }
    return pd.p;
  }
  // plural counts as report.Plural does: "1 pod", "2 pods".
  function plural(n, noun) { return n + ' ' + (n === 1 ? noun : noun + 's'); }
  function podHash(pd) {
    return '#pod=' + [pd.ns, pd.name, pd.uid].map(encodeURIComponent).join('/');
  }

  // decode expands a pod's compact data (format in report/htmldata.go).
  function decode(pd) {
    if (pd.d) return pd.d;
    var p = body(pd), str = strOf(p), seq = 0, t = 0, rvPrev = null, last = new Map();
    // In the steps, -1 is the next string of the pod's own that the steps
    // had not used: read them in the order they were written.
    var L = p.strings, fresh = 0;
    function sstr(x) { return x >= 0 ? S[x] : x === -1 ? L[fresh++] : L[-2 - x]; }
    var steps = p.steps.map(function (a, i) {
      seq += a[0];
      t += a[1];
      var type = sstr(a[2]), rv;
      if (typeof a[3] === 'number') {
        rvPrev = i === 0 ? a[3] : rvPrev + a[3];
        rv = String(rvPrev);
      } else {
        rv = a[3];
        rvPrev = /^[1-9][0-9]{0,14}$/.test(rv) ? Number(rv) : null;
      }
      var actors = a[4].map(function (x) { var r = D.actors[x]; return { manager: S[r[0]], who: S[r[1]] }; });
      var manager = actors.length === 1 ? actors[0].manager : '';
      var changes = a[5].map(function (c) {
        var path = S[Math.floor(c[0] / 3)], op = OPS[c[0] % 3], v = sstr(c[1]), old = '', nu = '';
        var by = c.length > 2 ? sstr(c[2]) : manager;
        if (op === 'remove') old = v;
        else nu = v;
        if (op === 'change') old = c.length > 3 ? sstr(c[3]) : (last.get(path) || '');
        last.set(path, nu);
        return { path: path, op: op, old: old, nu: nu, manager: by, detail: false };
      });
      return { i: i, seq: seq, t: t, type: type, rv: rv, actors: actors, changes: changes, phases: (a[6] || []).map(sstr) };
    });
    if (steps.length) p.creationDetails.forEach(function (j) { steps[0].changes[j].detail = true; });
    var eseq = 0, et = 0;
    pd.d = {
      steps: steps,
      phases: p.phases.map(function (a) { return { name: str(a[0]), t: a[1], seq: a[2], detail: str(a[3]), actor: str(a[4]) }; }),
      events: p.events.map(function (a) {
        eseq += a[0];
        et += a[1];
        return { seq: eseq, t: et, type: str(a[2]), reason: str(a[3]), message: str(a[4]), source: str(a[5]), count: a[6] };
      }),
      deps: p.dependents.map(function (a) { return { kind: str(a[0]), name: str(a[1]), uid: a[2], since: a[3], deleted: a[4], blocking: a[5] === 1 }; }),
      audit: p.audit ? {
        requests: p.audit.requests.map(function (a) {
          return { t: a[0], verb: str(a[1]), sub: str(a[2]), user: str(a[3]), agent: str(a[4]), code: a[5], rv: a[6], seq: a[7] };
        }),
        denied: p.audit.denied.map(function (a) {
          return { user: str(a[0]), agent: str(a[1]), verb: str(a[2]), sub: str(a[3]), code: a[4], message: str(a[5]), count: a[6], first: a[7], last: a[8], webhook: str(a[9]), policy: str(a[10]), binding: str(a[11]) };
        }),
        patches: p.audit.patches.map(function (a) {
          return { t: a[0], verb: str(a[1]), webhook: str(a[2]), configuration: str(a[3]), round: a[4], index: a[5],
            ops: a[6].map(function (o) { return { op: str(o[0]), path: str(o[1]), from: str(o[2]), value: str(o[3]) }; }) };
        })
      } : null,
      gaps: (p.gaps || []).map(function (a) { return { from: a[0], to: a[1], text: str(a[2]) }; }),
      node: str(p.node), end: p.end, terminating: p.terminating || ''
    };
    return pd.d;
  }
  // For tests and the curious: the decoded data of every pod.
  window.podtraceReport = { base: BASE, source: source, pods: function () { return pods.map(function (pd) { return { key: pd.key, d: decode(pd) }; }); } };

  // ---- the list: filters, sort, rows rendered a chunk at a time ----
  var app = document.getElementById('app');
  var state = { q: '', ns: '', outcome: '', finding: '', sort: 'name' };
  var shown = [], rendered = 0;
  var byKey = {};
  pods.forEach(function (pd) { byKey[pd.key] = pd; });

  // uniq is the distinct values of list, sorted: by a Set, in one pass
  // (an indexOf for each took the page 0.8 s at 20,000 pods).
  function uniq(list) { return Array.from(new Set(list)).sort(); }
  var namespaces = uniq(pods.map(function (pd) { return pd.ns; }));
  var outcomes = uniq(pods.map(function (pd) { return pd.outcome; }));
  var findingIds = [];
  pods.forEach(function (pd) { for (var k = 0; k < pd.ids.length; k++) findingIds.push(pd.ids[k]); });
  findingIds = uniq(findingIds);

  function select(label, key, options) {
    return h('select', { 'aria-label': label, 'data-filter': key, onchange: function (e) { state[key] = e.target.value; refresh(); } },
      options.map(function (o) { return h('option', { value: o[0] }, o[1]); }));
  }
  var search = h('input', { type: 'search', placeholder: 'Search namespace/name or UID', 'aria-label': 'Search pods', spellcheck: 'false' });
  var timer = 0;
  search.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.q = search.value.trim().toLowerCase(); refresh(); }, 120);
  });
  var count = h('span', { class: 'shown', 'aria-live': 'polite' });
  var toolbar = h('div', { class: 'toolbar' }, search,
    select('Namespace', 'ns', [['', 'All namespaces']].concat(namespaces.map(function (n) { return [n, n]; }))),
    select('Outcome', 'outcome', [['', 'All outcomes']].concat(outcomes.map(function (n) { return [n, n]; }))),
    select('Finding', 'finding', [['', 'Any findings'], ['*', 'With findings'], ['-', 'Without findings']].concat(findingIds.map(function (n) { return [n, 'Finding ' + n]; }))),
    select('Sort', 'sort', [['name', 'Sort: namespace/name'], ['severity', 'Sort: most severe first'], ['revisions', 'Sort: most revisions']]),
    count);
  var list = h('div', { class: 'podlist', role: 'list' });
  var more = h('button', { class: 'more', type: 'button', onclick: function () { renderMore(CHUNK); } });
  var sentinel = h('div', { 'aria-hidden': 'true' });
  app.appendChild(toolbar);
  app.appendChild(list);
  app.appendChild(more);
  app.appendChild(sentinel);

  function matches(pd) {
    if (state.ns && pd.ns !== state.ns) return false;
    if (state.outcome && pd.outcome !== state.outcome) return false;
    if (state.finding === '*' && !pd.ids.length) return false;
    if (state.finding === '-' && pd.ids.length) return false;
    if (state.finding && state.finding !== '*' && state.finding !== '-' && pd.ids.indexOf(state.finding) < 0) return false;
    if (state.q && pd.hay.indexOf(state.q) < 0 && pd.ids.indexOf(state.q) < 0) return false;
    return true;
  }
  function refresh() {
    shown = pods.filter(matches);
    if (state.sort === 'severity') shown.sort(function (a, b) { return b.sev - a.sev || a.i - b.i; });
    if (state.sort === 'revisions') shown.sort(function (a, b) { return b.revs - a.revs || a.i - b.i; });
    list.textContent = '';
    list.classList.remove('has-open');
    rendered = 0;
    if (!shown.length) list.appendChild(h('div', { class: 'empty' }, 'No pod matches these filters.'));
    renderMore(CHUNK);
  }
  function setFilters(f) {
    Object.keys(state).forEach(function (k) { if (k !== 'sort') state[k] = f[k] || ''; });
    search.value = state.q;
    toolbar.querySelectorAll('select').forEach(function (sel) { sel.value = state[sel.getAttribute('data-filter')]; });
    refresh();
  }
  function renderMore(n) {
    var end = Math.min(shown.length, rendered + n);
    for (; rendered < end; rendered++) list.appendChild(row(shown[rendered]));
    count.textContent = shown.length === pods.length ? plural(pods.length, 'pod') : shown.length + ' of ' + plural(pods.length, 'pod');
    more.hidden = rendered >= shown.length;
    more.textContent = 'Show ' + Math.min(CHUNK, shown.length - rendered) + ' more (' + (shown.length - rendered) + ' not shown)';
  }
  if ('IntersectionObserver' in window) {
    new IntersectionObserver(function (entries) {
      if (entries[0].isIntersecting && rendered < shown.length) renderMore(CHUNK);
    }, { rootMargin: '600px' }).observe(sentinel);
  }

  function row(pd) {
    var detail = h('div', { class: 'detail', hidden: true });
    var head = h('button', { class: 'podhead', type: 'button', 'aria-expanded': 'false', title: pd.path },
      h('span', { class: 'chev', 'aria-hidden': 'true' }, '\u25b8'),
      h('span', { class: 'badge o-' + pd.outcome.replace(/[^A-Za-z0-9]/g, '') }, pd.outcome),
      h('span', { class: 'podname' }, h('span', { class: 'ns' }, pd.ns + '/'), pd.name, h('span', { class: 'path' }, pd.path)),
      h('span', { class: 'fids' }, pd.findings.map(function (f) { return h('span', { class: 'chip sev-' + f.severity, title: f.headline }, f.id); })),
      h('span', { class: 'counts' }, pd.revs + ' rev \u00b7 ' + plural(pd.evs, 'event')));
    var el = h('div', { class: 'pod', role: 'listitem', id: 'pod-' + pd.i }, head, detail);
    head.addEventListener('click', function () {
      toggle(pd, el, el.classList.contains('open') ? false : true);
      if (el.classList.contains('open')) history.replaceState(null, '', podHash(pd));
    });
    pd.el = el;
    return el;
  }

  function toggle(pd, el, open) {
    var detail = el.querySelector('.detail'), head = el.querySelector('.podhead');
    el.classList.toggle('open', open);
    head.setAttribute('aria-expanded', String(open));
    if (open && !detail.firstChild) append(detail, [details(pd)]);
    detail.hidden = !open;
    list.classList.toggle('has-open', !!list.querySelector('.pod.open'));
  }

  function openPod(key) {
    var pd = byKey[key];
    if (!pd) return false;
    var at = shown.indexOf(pd);
    if (at < 0) { setFilters({}); at = shown.indexOf(pd); }
    if (at >= rendered) renderMore(at - rendered + 1);
    toggle(pd, pd.el, true);
    requestAnimationFrame(function () { pd.el.scrollIntoView({ block: 'start' }); });
    return true;
  }

  // route opens the pod of a link: #pod=NS/NAME/UID, or #pod=NS/NAME (or
  // #pod=NAME, when one namespace has it) for its newest incarnation.
  function route() {
    var hash = location.hash.slice(1);
    if (hash.indexOf('finding=') === 0) {
      // A finding's pods beyond those the findings list: the list, filtered.
      var id = hash.slice(8);
      try { id = decodeURIComponent(id); } catch (e) { /* as written */ }
      setFilters({ finding: id });
      document.getElementById('pods').scrollIntoView({ block: 'start' });
      return;
    }
    if (hash.indexOf('pod=') === 0) {
      var parts = hash.slice(4).split('/').map(function (x) { try { return decodeURIComponent(x); } catch (e) { return x; } });
      if (parts.length >= 3) { openPod(parts.join('/')); return; }
      var named = pods.filter(function (pd) { return parts.length === 2 ? pd.ns === parts[0] && pd.name === parts[1] : pd.name === parts[0]; });
      if (uniq(named.map(function (pd) { return pd.ns; })).length !== 1) return;
      var newest = named.reduce(function (a, b) { return podStart(b) >= podStart(a) ? b : a; });
      openPod(newest.key);
    }
  }
  // podStart is when a pod's recording begins: its first revision.
  function podStart(pd) { return pd.start; }

  // ---- a pod's details ----
  function details(pd) {
    var d = decode(pd), p = body(pd);
    var first = d.steps.length ? d.steps[0].t : p.end;
    var outcome = pd.outcome + (d.terminating ? ' for ' + d.terminating : '');
    var frag = h('div', { class: 'dbody' },
      h('div', { class: 'dfacts' },
        h('span', null, h('b', null, 'Outcome'), h('span', { class: 'chip o-' + pd.outcome.replace(/[^A-Za-z0-9]/g, '') }, outcome)),
        d.node ? h('span', null, h('b', null, 'Node'), d.node) : null,
        h('span', null, h('b', null, 'UID'), h('span', { class: 'mono' }, pd.uid)),
        h('span', null, h('b', null, 'Recorded'), plural(d.steps.length, 'revision') + ', ' + plural(d.events.length, 'event') + ', ' + stamp(first) + ' to ' + stamp(p.end)),
        h('a', { class: 'permalink', href: podHash(pd) }, 'link to this pod')),
      h('p', { class: 'phasepath' }, pd.path),
      h('h4', null, 'Timeline'),
      timeline(pd, d),
      d.gaps.length ? h('ul', { class: 'gaps' }, d.gaps.map(function (g) { return h('li', null, h('span', { class: 'mono' }, clock(g.from)), ' gap: ' + g.text); })) : null,
      legend(),
      findings(pd, d),
      admission(pd),
      audit(pd, d),
      section('Phases', phasesTable(d)),
      revisions(pd, d),
      d.events.length ? section('Events (' + d.events.length + ')', eventsTable(d)) : null,
      d.deps.length ? section('Dependents: objects owned by the pod', depsTable(d)) : null);
    return frag;
  }
  function section(title, body) { return [h('h4', null, title), body]; }

  function gotoRev(pd, seq) {
    var d = decode(pd);
    var idx = -1;
    for (var i = 0; i < d.steps.length; i++) if (d.steps[i].seq === seq) idx = i;
    if (idx < 0) return;
    var ol = pd.el.querySelector('.revs');
    while (ol && Number(ol.getAttribute('data-rendered')) <= idx) ol.renderMore();
    var li = document.getElementById('rev-' + pd.i + '-' + seq);
    if (!li) return;
    li.scrollIntoView({ block: 'center' });
    li.classList.add('flash');
    setTimeout(function () { li.classList.remove('flash'); }, 1600);
  }
  function seqLink(pd, seq) {
    if (!seq) return '';
    return h('a', { href: podHash(pd), onclick: function (e) { e.preventDefault(); gotoRev(pd, seq); } }, '#' + seq);
  }

  function findings(pd, d) {
    var fs = body(pd).findings;
    if (!fs.length) return section('Findings', h('p', { class: 'none' }, 'Nothing looks wrong: no finding in this pod\u2019s recorded life.'));
    return section('Findings', h('ol', { class: 'findings' }, fs.map(function (f) {
      // How the pod ended (info) folded, unless the report shows info.
      return h('li', { class: 'finding sev-' + f.severity },
        h('details', { open: f.severity !== 'info' || SHOW_INFO },
          h('summary', null, h('span', { class: 'sev' }, f.severity), ' ', h('code', { class: 'fid' }, f.id), ' ', h('span', { class: 'headline' }, f.headline)),
          h('div', { class: 'finding-body' },
            h('ul', { class: 'evidence' }, f.evidence.map(function (e) {
              return h('li', null, h('span', { class: 'when' }, clock(e[1])), h('span', { class: 'seq' }, seqLink(pd, e[0])), h('span', { class: 'text' }, e[2]));
            })),
            f.suspects.length ? [h('h4', null, 'Suspects: admission webhooks and policies that intercept this request'), h('ul', { class: 'suspects' }, f.suspects.map(webhook))] : null,
            f.next.length ? [h('h4', null, 'Next steps'), h('ul', { class: 'next' }, f.next.map(function (n) { return h('li', null, n); }))] : null)));
    })));
  }
  function webhook(i) {
    var w = D.webhooks[i], policy = /AdmissionPolicy$/.test(w.kind);
    return h('li', null, h('b', null, w.name), ' ', h('span', { class: 'muted' }, w.kind + (policy ? ', binding ' : ' ') + w.configuration), h('br'),
      w.validationActions ? ['validationActions ', h('b', null, w.validationActions.join(', ')), ', '] : null,
      'failurePolicy ', h('b', null, w.failurePolicy), ', rules ', h('code', null, w.rules),
      w.namespaceSelector ? [', namespaceSelector ', h('code', null, w.namespaceSelector)] : null,
      w.objectSelector ? [', objectSelector ', h('code', null, w.objectSelector)] : null,
      (w.matchConditions || []).map(function (c) { return [h('br'), 'matchCondition (not evaluated) ', h('code', null, c)]; }),
      (w.validations || []).map(function (v) { return [h('br'), 'validation (not evaluated) ', h('code', null, v)]; }),
      w.params ? [h('br'), 'params: ', w.params] : null,
      w.uncertain ? [h('br'), h('span', { class: 'muted' }, 'uncertain: ' + w.uncertain)] : null);
  }

  function admission(pd) {
    var a = body(pd).admission, str = strOf(body(pd));
    if (!a || (!a.changes.length && !a.webhooks.length && !a.notes.length)) return null;
    var rows = a.changes.map(function (c) {
      var ch = { path: str(c[0]), op: OPS[c[1]], old: str(c[2]), nu: str(c[3]) };
      var tr = changeRow(ch, false);
      tr.removeChild(tr.lastChild); // who made it goes under the value
      tr.lastChild.appendChild(h('div', { class: 'by' }, 'by ' + str(c[4]), ' ', h('span', { class: 'certainty' }, '(' + str(c[5]) + ')')));
      return tr;
    });
    return section('Admission: the pod as asked for vs. as stored', h('div', { class: 'admission' },
      h('p', { class: 'muted' }, 'Compared with ' + a.source + (a.defaultsHidden ? '; ' + plural(a.defaultsHidden, 'defaulted field') + ' not shown' : '') + '.'),
      rows.length ? h('table', { class: 'changes grid' }, rows) : h('p', null, 'No field changed at admission.'),
      a.webhooks.length ? [h('h4', null, 'Mutating and validating webhooks that intercepted the CREATE'), h('ul', { class: 'suspects' }, a.webhooks.map(webhook))] : null,
      a.notes.map(function (n) { return h('p', { class: 'note' }, n); })));
  }

  // audit shows what the API server's audit log says about the pod: the
  // denied requests, grouped; every request, by whom; the webhooks' patches.
  function audit(pd, d) {
    var a = d.audit;
    if (!a) return null;
    function what(verb, sub) { return verb + (sub ? ' ' + sub : ''); }
    return section('Audit: requests about the pod, from the API server\u2019s audit log', h('div', { class: 'audit' },
      a.denied.length ? h('ul', { class: 'denied' }, a.denied.map(function (x) {
        return h('li', null,
          h('b', { class: 'count' }, x.count + ' ' + what(x.verb, x.sub) + ' attempt' + (x.count === 1 ? '' : 's') + ' denied'),
          ' (' + x.code + ') by ', h('span', { class: 'user' }, x.user), x.agent ? [' ', h('span', { class: 'muted' }, '(' + x.agent + ')')] : null,
          x.webhook ? [', by webhook ', h('b', { class: 'webhook' }, x.webhook)] : null,
          x.policy ? [', by ValidatingAdmissionPolicy ', h('b', { class: 'webhook' }, x.policy), x.binding ? ' (binding ' + x.binding + ')' : null] : null,
          h('br'), h('span', { class: 'message' }, x.message),
          h('br'), h('span', { class: 'muted' }, 'first ' + clock(x.first) + ', last ' + clock(x.last)));
      })) : h('p', { class: 'muted' }, 'No request about the pod was denied.'),
      a.requests.length ? table(['Time', 'Request', 'Code', 'User', 'User agent', 'Revision'], a.requests.map(function (r) {
        return h('tr', null, h('td', { class: 't' }, clock(r.t)), h('td', null, what(r.verb, r.sub)), h('td', null, String(r.code)),
          h('td', { class: 'user' }, r.user), h('td', { class: 'muted' }, r.agent),
          h('td', null, seqLink(pd, r.seq), r.rv ? ' rv ' + r.rv : ''));
      })) : null,
      a.patches.length ? [h('h5', null, 'Patches by mutating webhooks'), table(['Time', 'Webhook', 'Request', 'Operation', 'Path', 'Value'],
        [].concat.apply([], a.patches.map(function (p) {
          return p.ops.map(function (o) {
            return h('tr', null, h('td', { class: 't' }, clock(p.t)),
              h('td', null, h('b', { class: 'webhook' }, p.webhook), p.configuration ? [' ', h('span', { class: 'muted' }, p.configuration)] : null),
              h('td', null, p.verb), h('td', null, o.op), h('td', { class: 'path' }, o.path + (o.from ? ' from ' + o.from : '')),
              h('td', { class: 'val' }, o.value ? value(o.value, 'new') : ''));
          });
        })))] : null));
  }

  function table(cols, rows) {
    return h('table', { class: 'grid' }, h('thead', null, h('tr', null, cols.map(function (c) { return h('th', null, c); }))), h('tbody', null, rows));
  }
  function phasesTable(d) {
    return table(['Time', 'Phase', 'Detail', 'By'], d.phases.map(function (ph) {
      return h('tr', null, h('td', { class: 't' }, clock(ph.t)), h('td', null, ph.name), h('td', null, ph.detail), h('td', null, ph.actor));
    }));
  }
  function eventsTable(d) {
    return table(['Time', 'Type', 'Reason', 'Message', 'Source', 'Count'], d.events.map(function (e) {
      return h('tr', { class: e.type === 'Warning' ? 'warning' : null },
        h('td', { class: 't' }, clock(e.t)), h('td', { class: 'type' }, e.type), h('td', null, e.reason),
        h('td', null, e.message), h('td', null, e.source), h('td', null, e.count > 1 ? '\u00d7' + e.count : ''));
    }));
  }
  function depsTable(d) {
    return table(['Kind', 'Name', 'Owned since', 'Deleted', 'blockOwnerDeletion'], d.deps.map(function (x) {
      return h('tr', null, h('td', null, x.kind), h('td', null, x.name), h('td', { class: 't' }, clock(x.since)),
        h('td', { class: 't' }, x.deleted === null ? 'still present' : clock(x.deleted)), h('td', null, x.blocking ? 'yes' : ''));
    }));
  }

  function value(v, cls) {
    if (v.length <= LONG) return h('span', { class: cls }, v);
    var span = h('span', { class: cls }, v.slice(0, LONG) + '\u2026');
    var btn = h('button', { class: 'expand', type: 'button', onclick: function () { span.textContent = v; btn.remove(); } }, 'show all ' + v.length + ' bytes');
    return [span, btn];
  }
  // breakable lets a long field path wrap after its dots and before its
  // brackets, not in the middle of a name.
  function breakable(path) {
    var out = [];
    path.split(/(?=\[)|(?<=\.)/).forEach(function (part, i) { if (i) out.push(h('wbr')); out.push(part); });
    return out;
  }
  function changeRow(c, showManager) {
    var val;
    if (c.op === 'add') val = c.nu ? value(c.nu, 'new') : null;
    else if (c.op === 'remove') val = c.old ? value(c.old, 'old') : null;
    else val = [value(c.old, 'old'), h('span', { class: 'arrow' }, '\u2192'), value(c.nu, 'new')];
    return h('tr', { class: c.op }, h('td', { class: 'op' }, SIGN[c.op]), h('td', { class: 'path' }, breakable(c.path)),
      h('td', { class: 'val' }, val), h('td', { class: 'mgr' }, showManager && c.manager ? c.manager : ''));
  }
  function isDeletionStep(st) {
    return st.changes.some(function (c) { return c.path.indexOf('metadata.deletionTimestamp') === 0 || c.path.indexOf('metadata.finalizers') === 0; });
  }
  function revision(pd, st) {
    var what = st.type.toLowerCase();
    if (st.i === 0 && st.type === 'Added') what = 'created';
    if (st.i === 0 && st.type === 'Initial') what = 'already present';
    var who = st.actors.map(function (a) { return a.who; }).join(' and ') || 'unknown';
    var many = st.actors.length > 1;
    var shownChanges = st.changes.filter(function (c) { return !c.detail; });
    var hidden = st.changes.filter(function (c) { return c.detail; });
    var hiddenBox = null;
    if (hidden.length) {
      hiddenBox = h('details', { class: 'hidden-fields' }, h('summary', null, hidden.length + ' more ' + (hidden.length === 1 ? 'field' : 'fields') + ' set at creation'));
      hiddenBox.addEventListener('toggle', function () {
        if (hiddenBox.open && hiddenBox.childNodes.length === 1) hiddenBox.appendChild(h('table', { class: 'changes' }, hidden.map(function (c) { return changeRow(c, many); })));
      });
    }
    return h('li', { class: 'rev', id: 'rev-' + pd.i + '-' + st.seq },
      h('div', { class: 'revhead' },
        h('span', { class: 't' }, clock(st.t)), h('span', { class: 'seq' }, '#' + st.seq),
        h('span', { class: 'what' }, what), h('span', null, 'by ' + who), h('span', { class: 'rv' }, 'rv ' + st.rv),
        st.phases.map(function (ph) { return h('span', { class: 'phase' + (ph === 'deletion requested' ? ' deletion' : '') }, ph); })),
      shownChanges.length ? h('table', { class: 'changes' }, shownChanges.map(function (c) { return changeRow(c, many); })) : null,
      !st.changes.length ? h('div', { class: 'hidden-fields muted' }, 'no field changed') : null,
      hiddenBox);
  }
  function revisions(pd, d) {
    var ol = h('ol', { class: 'revs', 'data-rendered': 0 });
    var btn = h('button', { class: 'more', type: 'button' });
    ol.renderMore = function () {
      var from = Number(ol.getAttribute('data-rendered')), to = Math.min(d.steps.length, from + REV_CHUNK);
      for (var i = from; i < to; i++) ol.appendChild(revision(pd, d.steps[i]));
      ol.setAttribute('data-rendered', to);
      btn.hidden = to >= d.steps.length;
      btn.textContent = 'Show more revisions (' + (d.steps.length - to) + ' not shown)';
      if (to >= d.steps.length) ol.setAttribute('data-rendered', Infinity);
    };
    btn.addEventListener('click', ol.renderMore);
    ol.renderMore();
    return section('Revisions (' + d.steps.length + ')', [ol, btn]);
  }

  // ---- the timeline ----
  var PHASE_CLASS = {
    'created': 'created', 'already present': 'created', 'scheduled': 'scheduled', 'containers started': 'started',
    'ready': 'ready', 'completed': 'completed', 'failed': 'failed', 'deletion requested': 'deletion', 'deleted': 'deleted'
  };
  function niceStep(span) {
    var steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
    for (var i = 0; i < steps.length; i++) if (span / (steps[i] * 1000) <= 8) return steps[i] * 1000;
    return Math.ceil(span / 8 / 86400000) * 86400000;
  }
  function title(text) { return s('title', null, text); }

  // textWidth is the width of text drawn with class cls in a timeline, as
  // this browser lays it out: fonts differ from one system to another, and
  // an estimate per character let labels overlap where the font is wider.
  var measureSVG = null, widths = {};
  function textWidth(text, cls) {
    var key = cls + '\u0000' + text;
    if (widths[key] !== undefined) return widths[key];
    if (!measureSVG) {
      measureSVG = s('svg', { class: 'timeline', 'aria-hidden': 'true', width: 10, height: 10 });
      measureSVG.style.position = 'absolute';
      measureSVG.style.left = '-10000px';
      measureSVG.style.visibility = 'hidden';
      document.body.appendChild(measureSVG);
    }
    var t = s('text', { class: cls }, text);
    measureSVG.appendChild(t);
    var w = t.getComputedTextLength();
    measureSVG.removeChild(t);
    if (!(w > 0)) w = text.length * 7; // not laid out: a generous guess
    return (widths[key] = w);
  }

  // timeScale maps times to x between px0 and px1. Long idle gaps (over
  // 12% of the span with nothing recorded) are drawn compressed, with a
  // break mark and their duration, so that a pod that ran for an hour and
  // changed in two bursts shows both bursts; the last silence of a stuck pod
  // is drawn wider.
  function timeScale(points, px0, px1, stuck) {
    points = points.filter(function (t) { return t !== null && t !== undefined && isFinite(t); }).sort(function (a, b) { return a - b; });
    if (!points.length) points = [0];
    var t0 = points[0], t1 = points[points.length - 1];
    if (t1 - t0 < 1000) t1 = t0 + 1000;
    var span = t1 - t0, thr = Math.max(span * 0.12, 10000), pad = 8;
    var gaps = [], linear = 0;
    for (var i = 1; i < points.length; i++) {
      var g = points[i] - points[i - 1];
      if (g > thr) gaps.push({ a: points[i - 1], b: points[i], px: Math.min(150, 70 + 18 * Math.log2(g / thr)) });
      else linear += g;
    }
    // A stuck pod's last silence is its story: draw it wider.
    var lastGap = gaps[gaps.length - 1];
    if (stuck && lastGap && lastGap.b === points[points.length - 1]) lastGap.px = Math.min(300, lastGap.px * 2.2);
    if (points[points.length - 1] < t1) linear += t1 - points[points.length - 1];
    var width = px1 - px0 - 2 * pad;
    var gapPx = gaps.reduce(function (sum, g) { return sum + g.px; }, 0);
    if (!linear || !gaps.length) { gaps = []; gapPx = 0; linear = span; }
    if (gapPx > width * 0.55) gaps.forEach(function (g) { g.px *= width * 0.55 / gapPx; });
    gapPx = Math.min(gapPx, width * 0.55);
    var perMs = (width - gapPx) / linear;
    // segments: [from time, to time, from x, to x, compressed]
    var segs = [], t = t0, xx = px0 + pad;
    gaps.forEach(function (g) {
      if (g.a > t) { segs.push([t, g.a, xx, xx + (g.a - t) * perMs, false]); xx += (g.a - t) * perMs; }
      segs.push([g.a, g.b, xx, xx + g.px, true]);
      xx += g.px;
      t = g.b;
    });
    segs.push([t, t1, xx, xx + (t1 - t) * perMs, false]);
    function x(v) {
      if (v <= t0) return px0 + pad;
      var lo = 0, hi = segs.length - 1;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (segs[mid][1] < v) lo = mid + 1; else hi = mid; }
      var sg = segs[lo];
      if (v >= sg[1]) return sg[3];
      return sg[2] + (v - sg[0]) / (sg[1] - sg[0]) * (sg[3] - sg[2]);
    }
    x.segments = segs;
    x.t0 = t0;
    x.t1 = t1;
    return x;
  }

  function timeline(pd, d) {
    // Drawn at the width it is shown at (up to 1000): its text at the
    // page's size, on a phone too.
    var avail = pd.el ? pd.el.clientWidth - (window.innerWidth <= 760 ? 26 : 60) : 1000;
    var W = Math.max(300, Math.min(1000, Math.round(avail))), L = W < 600 ? 78 : 96, R = 18;
    // The lanes' names fit left of L, in this browser's font.
    ['phases', 'terminating', 'revisions', 'events', 'dependents'].forEach(function (n) { L = Math.max(L, Math.ceil(6 + textWidth(n, 'lane') + 8)); });
    var points = [d.end];
    d.steps.forEach(function (st) { points.push(st.t); });
    d.events.forEach(function (e) { points.push(e.t); });
    d.deps.forEach(function (dp) { points.push(dp.since, dp.deleted); });
    d.gaps.forEach(function (g) { points.push(g.from, g.to); });
    var first = d.steps.length ? d.steps[0].t : d.end;
    d.phases.forEach(function (ph) { if (ph.t >= first) points.push(ph.t); });
    var x = timeScale(points, L, W - R, pd.outcome === 'Terminating');
    function fx(v) { return Math.round(v * 10) / 10; }

    var deps = d.deps.slice(0, 6);
    var del = null;
    d.phases.forEach(function (ph) { if (ph.name === 'deletion requested') del = ph; });

    // phases as bands, from each phase to the next; a name that does not
    // fit in its band goes whole on a row of labels under the bands (two
    // rows at most, then only its band's tooltip names it)
    var phs = d.phases.filter(function (ph) { return ph.name.indexOf('still present') !== 0; }).slice().sort(function (a, b) { return a.t - b.t; });
    var endOfLife = d.end;
    phs.forEach(function (ph) { if (ph.name === 'deleted') endOfLife = ph.t; });
    var rowEnds = [], bands = phs.map(function (ph, i) {
      var from = x(ph.t), to = x(i + 1 < phs.length ? phs[i + 1].t : endOfLife);
      var w = Math.max(to - from, ph.name === 'deleted' ? 3 : 1.5);
      var band = { ph: ph, from: from, w: w, row: -1, lx: from + 5 };
      if (w > textWidth(ph.name, 'ph-label') + 10) return band;
      var lw = textWidth(ph.name, 'ph-label out');
      var lx = Math.min(Math.max(from, L), W - R - lw);
      for (var r = 0; r < 2; r++) {
        if (rowEnds[r] === undefined || lx >= rowEnds[r] + 8) { band.row = r; band.lx = lx; rowEnds[r] = lx + lw; return band; }
      }
      band.row = 2; // no room: unlabelled
      return band;
    });
    var labelRows = rowEnds.length;

    // lanes, top to bottom; the terminating lane only for a deleted pod
    var yAxis = 18, yPh = 26, y = yPh + 34 + labelRows * 13, yTerm = y;
    if (del) y += 26;
    var yRev = y, yEv = y + 34, yDep = y + 62;
    // dependents: a line each, from when it was owned to its deletion, its
    // name after the line's end, or, where that leaves no room, above the
    // line (shortened to fit), on a row made taller for it
    var depY = yDep + 6;
    var depRows = deps.map(function (x2) {
      var a = x(x2.since), b = x(x2.deleted === null ? d.end : x2.deleted);
      var name = x2.kind + ' ' + x2.name;
      if (name.length > 48) name = name.slice(0, 47) + '\u2026';
      var after = b + 8 + textWidth(name, 'dep-label') <= W - R;
      if (!after) {
        while (name.length > 2 && a + textWidth(name, 'dep-label') > W - R) name = name.slice(0, name.length - 2) + '\u2026';
        depY += 11;
      }
      var row = { x2: x2, a: a, b: b, name: name, after: after, y: depY };
      depY += 16;
      return row;
    });
    // the bottom row is the "recording ended" label's, below every lane
    var H = (deps.length ? depY - 6 + 8 : yDep) + 6 + 14;
    var svg = s('svg', { class: 'timeline', viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'Timeline of ' + pd.ns + '/' + pd.name });
    var defs = s('defs', null, s('pattern', { id: 'hatch-' + pd.i, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
      s('rect', { width: 6, height: 6, fill: '#fbe3e3' }), s('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#e39a9a', 'stroke-width': 3 })));
    svg.appendChild(defs);

    // axis: regular ticks in each stretch drawn to scale, a break mark on
    // each compressed gap
    var multiDay = iso(x.t0).slice(0, 10) !== iso(x.t1).slice(0, 10), lastLabel = -Infinity;
    // The axis labels placed, each with its extent: a tick's label gives
    // way to any label it would touch, a gap's duration takes the place of
    // the ticks' labels it would touch (their lines stay).
    var axisLabels = [];
    function axisLabel(text, cx, cls, gap) {
      var w = textWidth(text, cls), a = cx - w / 2, b = cx + w / 2;
      if (a < 2 || b > W - 2) return null;
      var touching = axisLabels.filter(function (l) { return a < l.b + 6 && l.a < b + 6; });
      if (touching.length && (!gap || touching.some(function (l) { return l.gap; }))) return null;
      touching.forEach(function (l) { l.el.parentNode.removeChild(l.el); });
      axisLabels = axisLabels.filter(function (l) { return touching.indexOf(l) < 0; });
      var el = s('text', { class: cls, x: fx(cx), y: 12, 'text-anchor': 'middle' }, text);
      axisLabels.push({ a: a, b: b, el: el, gap: gap });
      return el;
    }
    x.segments.forEach(function (sg) {
      var x0 = sg[2], x1 = sg[3];
      if (sg[4]) {
        var g = s('g', null, title(dur(sg[1] - sg[0]) + ' with nothing recorded, drawn compressed'),
          s('rect', { class: 'gap', x: fx(x0 + 2), y: yAxis, width: fx(Math.max(x1 - x0 - 4, 1)), height: H - yAxis - 4 }),
          s('path', { class: 'gap-mark', d: 'M' + fx(x0 + 2) + ' ' + (yAxis + 6) + 'l4 -8m' + fx(x1 - x0 - 8) + ' 8l4 -8' }));
        var gl = axisLabel('\u2248 ' + dur(sg[1] - sg[0]), (x0 + x1) / 2, 'axis-label gap-label', true);
        if (gl) g.appendChild(gl);
        svg.appendChild(g);
        lastLabel = x1;
        return;
      }
      if (x1 - x0 < 30) return;
      var step = niceStep((sg[1] - sg[0]) * 8 * 100 / (x1 - x0));
      for (var t = Math.ceil((BASE + sg[0]) / step) * step - BASE; t <= sg[1]; t += step) {
        var ax = x(t);
        if (ax - lastLabel < 60) continue;
        var lbl = multiDay ? iso(t).slice(5, 10) + ' ' + iso(t).slice(11, 16) : iso(t).slice(11, step < 60000 ? 19 : 16);
        var el = axisLabel(lbl, ax, 'axis-label', false);
        if (!el) continue;
        svg.appendChild(s('line', { class: 'axis', x1: fx(ax), x2: fx(ax), y1: yAxis, y2: H - 4 }));
        svg.appendChild(el);
        lastLabel = ax;
      }
    });
    function lane(y, label) { svg.appendChild(s('text', { class: 'lane', x: 6, y: y }, label)); }
    lane(yPh + 17, 'phases');
    lane(yRev + 14, 'revisions');
    lane(yEv + 13, 'events');
    if (deps.length) lane(yDep + 11, 'dependents');

    bands.forEach(function (b) {
      var ph = b.ph, cls = PHASE_CLASS[ph.name] || 'other';
      var g = s('g', null, title(clock(ph.t) + '  ' + ph.name + (ph.detail ? ': ' + ph.detail : '') + (ph.actor ? ' (by ' + ph.actor + ')' : '')),
        s('rect', { class: 'ph ph-' + cls, x: fx(b.from), y: yPh, width: fx(b.w), height: 26, rx: 2 }));
      if (b.row < 0) g.appendChild(s('text', { class: 'ph-label', x: fx(b.lx), y: yPh + 17 }, ph.name));
      else if (b.row < 2) {
        var ly = yPh + 26 + 11 + b.row * 13;
        g.appendChild(s('line', { class: 'ph-lead', x1: fx(b.from + b.w / 2), x2: fx(b.from + b.w / 2), y1: yPh + 26, y2: ly - 8 }));
        g.appendChild(s('text', { class: 'ph-label out', x: fx(b.lx), y: ly }, ph.name));
      }
      svg.appendChild(g);
    });

    // the deletion: the request, and the time spent terminating
    if (del) {
      var stuck = pd.outcome === 'Terminating';
      var tx0 = x(del.t), tx1 = x(endOfLife);
      var took = stuck ? (d.terminating || dur(d.end - del.t)) : dur(endOfLife - del.t);
      var label = stuck ? 'stuck terminating for ' + took : 'terminating ' + took;
      lane(yTerm + 12, 'terminating');
      svg.appendChild(s('g', null, title(label),
        s('rect', { class: stuck ? 'stuck' : 'term-done', x: fx(tx0), y: yTerm, width: fx(Math.max(tx1 - tx0, 2)), height: 16, rx: 2, fill: stuck ? 'url(#hatch-' + pd.i + ')' : null })));
      // Shorter where the lane is narrow: the lane's name is left of L.
      var tcls = stuck ? 'stuck-label' : 'end-label';
      [stuck ? 'stuck for ' + took : took, took].forEach(function (shorter) {
        if (textWidth(label, tcls) > W - R - L) label = shorter;
      });
      var lw = textWidth(label, tcls);
      var lx = tx1 - tx0 > lw + 12 ? tx0 + 6 : Math.min(Math.max(L, tx0 - lw - 6), W - R - lw);
      svg.appendChild(s('text', { class: tcls, x: fx(lx), y: yTerm + 12 }, label));
      svg.appendChild(s('line', { class: 'deletion-line', x1: fx(tx0), x2: fx(tx0), y1: yAxis, y2: H - 4 }));
    }
    // gaps in observation: what happened in them is known only from what
    // was seen after
    d.gaps.forEach(function (g) {
      var gx0 = x(g.from), gx1 = x(g.to);
      svg.appendChild(s('g', null, title(clock(g.from) + '  ' + g.text),
        s('rect', { class: 'unobserved', x: fx(gx0), y: yAxis, width: fx(Math.max(gx1 - gx0, 2)), height: H - yAxis - 4 })));
    });
    // recording end
    var ex = fx(x(d.end));
    svg.appendChild(s('line', { class: 'end-line', x1: ex, x2: ex, y1: yAxis, y2: H - 4 }));
    svg.appendChild(s('g', null, title('recording ended ' + stamp(d.end)), s('text', { class: 'end-label', x: ex - 3 < 100 ? ex + 3 : ex - 3, y: H - 5, 'text-anchor': ex - 3 < 100 ? 'start' : 'end' }, 'recording ended')));

    // revisions as ticks; silence after the last one when the pod is stuck
    d.steps.forEach(function (st) {
      var cls = 'tick' + (isDeletionStep(st) ? ' deletion' : st.phases.length ? ' phase' : '');
      var tx = fx(x(st.t)), tall = st.phases.length || isDeletionStep(st);
      var who = st.actors.map(function (a) { return a.who; }).join(' and ');
      svg.appendChild(s('line', { class: cls, x1: tx, x2: tx, y1: tall ? yRev : yRev + 5, y2: yRev + 22, onclick: function () { gotoRev(pd, st.seq); } },
        title('#' + st.seq + '  ' + clock(st.t) + '  ' + st.type.toLowerCase() + ' by ' + who + ': ' + plural(st.changes.length, 'change') + (st.phases.length ? ' [' + st.phases.join(', ') + ']' : ''))));
    });
    var last = d.steps[d.steps.length - 1];
    if (last && pd.outcome === 'Terminating' && x(d.end) - x(last.t) > 40) {
      var sx0 = x(last.t) + 4, sx1 = x(d.end) - 4;
      svg.appendChild(s('line', { class: 'silence', x1: fx(sx0), x2: fx(sx1), y1: yRev + 13, y2: yRev + 13 }));
      var sl = 'no revision for ' + dur(d.end - last.t);
      if (sx1 - sx0 > textWidth(sl, 'silence-label') + 10) svg.appendChild(s('text', { class: 'silence-label', x: fx((sx0 + sx1) / 2), y: yRev + 9, 'text-anchor': 'middle' }, sl));
    }

    // events: circles, warnings as triangles
    d.events.forEach(function (e) {
      var ex2 = fx(x(e.t)), cy = yEv + 9;
      var tip = clock(e.t) + '  ' + e.type + ' ' + e.reason + (e.count > 1 ? ' (\u00d7' + e.count + ')' : '') + ': ' + e.message;
      var mark = e.type === 'Warning'
        ? s('path', { class: 'ev-warning', d: 'M' + ex2 + ' ' + (cy - 6) + 'l6 11h-12z' }, title(tip))
        : s('circle', { class: 'ev-normal', cx: ex2, cy: cy, r: 4.5 }, title(tip));
      svg.appendChild(mark);
    });

    // dependents: owned from since to deletion
    depRows.forEach(function (r) {
      var x2 = r.x2, y = r.y, a = r.a, b = r.b;
      var g = s('g', null, title(x2.kind + ' ' + x2.name + ': owned since ' + clock(x2.since) + (x2.deleted === null ? ', still present' : ', deleted ' + clock(x2.deleted))));
      g.appendChild(s('line', { class: 'dep' + (x2.deleted === null ? '' : ' gone'), x1: fx(a), x2: fx(Math.max(b, a + 1)), y1: y, y2: y }));
      if (x2.deleted !== null) {
        g.appendChild(s('path', { class: 'dep-x', d: 'M' + fx(b - 4) + ' ' + (y - 4) + 'l8 8m0 -8l-8 8' }));
      }
      g.appendChild(s('text', { class: 'dep-label', x: fx(r.after ? b + 8 : a), y: y + (r.after ? 4 : -5) }, r.name));
      svg.appendChild(g);
    });
    return svg;
  }
  function legend() {
    function item(cls, text) { return h('span', null, h('i', { class: cls }), text); }
    return h('div', { class: 'legend' },
      item('ph-created', 'created'), item('ph-scheduled', 'scheduled'), item('ph-started', 'started'), item('ph-ready', 'ready'),
      item('ph-completed', 'completed'), item('ph-deletion', 'deletion requested'), item('l-tick', 'revision'),
      item('l-ev', 'event'), item('l-warn', 'warning event'), item('l-del', 'deletion request'), item('l-stuck', 'stuck terminating'));
  }

  // ---- wiring ----
  document.querySelectorAll('#overview .chip.outcome').forEach(function (chip) {
    chip.setAttribute('role', 'button');
    chip.setAttribute('tabindex', '0');
    chip.setAttribute('title', 'Show only these pods');
    function go() {
      setFilters({ outcome: chip.getAttribute('data-outcome') });
      document.getElementById('pods').scrollIntoView({ block: 'start' });
    }
    chip.addEventListener('click', go);
    chip.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); } });
  });
  window.addEventListener('hashchange', route);
  window.addEventListener('beforeprint', function () {
    document.querySelectorAll('details').forEach(function (el) { el.open = true; });
  });
  refresh();
  route();
  }
})();
