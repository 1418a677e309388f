/* The stalewrite HTML report's only script. A constant: the page allows it by its sha256 hash, and
 * it is never built from log content. It reads the page's JSON data blocks (plain, or gzip +
 * base64), draws each resource's card when it scrolls into view, and shows an event's details on
 * hover, focus or click. Log content only ever reaches the page as text (textContent, attribute
 * values), never as markup. Laid out by src/report/picture.ts; this draws what that decided. */
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var root = document.documentElement;

  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function s(tag, attrs) {
    var e = document.createElementNS(NS, tag);
    if (attrs) for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function titled(node, text) {
    var t = s('title');
    t.textContent = text;
    node.appendChild(t);
    return node;
  }

  async function textOf(node) {
    if (node.type === 'application/json') return node.textContent;
    var bin = atob(node.textContent.replace(/\s+/g, ''));
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return await new Response(stream).text();
  }

  var G, SHORT, TEXTS, cards, byId, byFinding, boxes, observer, blockNode, blockText, blockData, decoding;

  function own(o, k) {
    return o !== null && typeof o === 'object' && Object.prototype.hasOwnProperty.call(o, k);
  }

  /** A block's text, decoded once (compressed blocks are inflated by the browser, off the main thread). */
  function decode(b) {
    if (!decoding.has(b)) {
      decoding.set(b, textOf(blockNode.get(b)).then(function (t) {
        blockText.set(b, t);
      }));
    }
    return decoding.get(b);
  }

  /** Draw card k now if its data is decoded, else as soon as it is. */
  function want(k) {
    if (blockText.has(cards[k][3])) return Promise.resolve(render(k));
    return decode(cards[k][3]).then(function () {
      return render(k);
    });
  }

  function shortName(file) {
    return own(SHORT, file) ? String(SHORT[file]) : file;
  }

  function dataOf(k) {
    var e = cards[k];
    var b = e[3];
    if (!blockData.has(b)) blockData.set(b, JSON.parse(blockText.get(b)));
    return blockData.get(b)[e[4]];
  }

  // Glyphs, centred on 0,0. Half widths match picture.ts (HALF).
  function glyph(kind, count, half) {
    var g = s('g', { class: 'gl' });
    switch (kind) {
      case 'wa': case 'ws': case 'wr': case 'wt': case 'wx':
        g.appendChild(s('circle', { r: 6, class: 'g-' + kind + ' gw' }));
        break;
      case 'aq':
        g.appendChild(s('polygon', { points: '0,-6.5 6.5,5 -6.5,5', class: 'g-aq' }));
        break;
      case 'ab':
        g.appendChild(s('path', { d: 'M-5,-5L5,5M5,-5L-5,5', class: 'g-ab' }));
        break;
      case 'xe': case 'xi': case 'xl':
        g.appendChild(s('polygon', { points: '0,-6 6,0 0,6 -6,0', class: 'g-' + kind }));
        break;
      case 'rl': case 'rn':
        g.appendChild(s('rect', { x: -5, y: -5, width: 10, height: 10, class: 'g-' + kind }));
        break;
      case 'ko': case 'kf':
        g.appendChild(s('line', { x1: 0, x2: 0, y1: -8, y2: 8, class: 'g-' + kind }));
        break;
      case 'gr': {
        var w = Math.max(8, half - 5);
        g.appendChild(s('rect', { x: -w, y: -8, width: 2 * w, height: 16, rx: 4, class: 'g-gr' }));
        var t = s('text', { x: 0, y: 3.5, class: 'cnt' });
        t.textContent = count + '\u00d7';
        g.appendChild(t);
        break;
      }
    }
    return g;
  }

  var WHAT = {
    wa: 'write accepted', ws: 'write rejected as stale', wr: 'write rejected or failed', wt: 'write timed out', wx: 'write',
    aq: 'lease granted', ab: 'acquire refused (busy)', xe: 'lease expired or revoked', xi: 'lease ended by its TTL (inferred)', xl: 'worker logged losing its lease',
    rl: 'lease released', rn: 'release refused', ko: 'keepalive ok', kf: 'keepalive failed', gr: 'events at one spot'
  };

  function describe(ev) {
    var parts = [WHAT[ev.glyph] || ev.type, ev.t];
    if (ev.owner !== undefined) parts.push(ev.owner);
    if (ev.token !== undefined) parts.push('token ' + ev.token);
    parts.push(shortName(ev.file) + ':' + ev.line);
    return parts.join(', ');
  }

  // One view of a card's picture as SVG.
  function drawView(c, name) {
    var v = c[name];
    var W = G.width;
    var svg = s('svg', { class: 'pic', viewBox: '0 0 ' + W + ' ' + v.height, width: W, height: v.height, role: 'group' });
    svg.setAttribute('aria-label', 'timeline of ' + c.name + (name === 'whole' ? ', whole span' : ', focused on the evidence'));
    svg.dataset.view = name;
    v.lanes.forEach(function (lane, i) {
      var y = G.top + i * G.lane;
      svg.appendChild(s('rect', { x: 0, y: y, width: W, height: G.lane - 2, class: 'lane' + (i % 2) }));
      var t = s('text', { x: 6, y: y + G.markY + 4, class: 'lname' });
      t.textContent = c.lanes[lane];
      svg.appendChild(t);
    });
    var axisY = v.axisY;
    v.breaks.forEach(function (b) {
      var band = s('rect', { x: b.lo + 5, y: G.top, width: Math.max(2, b.hi - b.lo - 10), height: axisY - G.top + 4, class: 'brk' });
      svg.appendChild(titled(band, b.title));
      var m = (b.lo + b.hi) / 2;
      svg.appendChild(titled(s('path', { d: 'M' + (b.lo + 2) + ',' + axisY + 'L' + (m - 6) + ',' + axisY + 'L' + (m - 3) + ',' + (axisY - 4) + 'L' + (m + 3) + ',' + (axisY + 4) + 'L' + (m + 6) + ',' + axisY + 'L' + (b.hi - 2) + ',' + axisY, class: 'zig' }), b.title));
    });
    v.segments.forEach(function (g) {
      svg.appendChild(s('line', { x1: g[0], x2: g[1], y1: axisY, y2: axisY, class: 'axis' }));
    });
    v.ticks.forEach(function (t) {
      var e = s('text', { x: t.x, y: axisY + 13 + 13 * t.row, class: t.row === 1 ? 'tick brl' : 'tick' });
      e.textContent = t.text;
      if (t.title) titled(e, t.title);
      svg.appendChild(e);
    });
    v.bars.forEach(function (b) {
      var top = G.top + b.lane * G.lane + G.barY;
      var y = b.sub === 1 ? top + 4.5 : top;
      var hgt = b.sub === -1 ? 8 : 4;
      var cls = 'lease' + (b.end === 'inferred' ? ' inf' : b.end === 'open' ? ' open' : '');
      var r = s('rect', { x: b.x0, y: y, width: Math.max(1.5, b.x1 - b.x0), height: hgt, class: cls });
      svg.appendChild(titled(r, b.title));
      if (b.end === 'inferred' && !b.clipR) svg.appendChild(s('line', { x1: b.x1, x2: b.x1, y1: y - 3, y2: y + hgt + 3, class: 'infend' }));
      if (b.clipR || b.end === 'open') svg.appendChild(s('polygon', { points: (b.x1 - 6) + ',' + (y - 2) + ' ' + b.x1 + ',' + (y + hgt / 2) + ' ' + (b.x1 - 6) + ',' + (y + hgt + 2), class: 'cont' }));
      if (b.clipL) svg.appendChild(s('polygon', { points: (b.x0 + 6) + ',' + (y - 2) + ' ' + b.x0 + ',' + (y + hgt / 2) + ' ' + (b.x0 + 6) + ',' + (y + hgt + 2), class: 'cont' }));
      if (b.lostX !== undefined && b.lostX > b.x1) svg.appendChild(titled(s('line', { x1: b.x1, x2: b.lostX, y1: y + hgt / 2, y2: y + hgt / 2, class: 'tail' }), 'the worker went on as holder until it logged losing the lease'));
    });
    v.marks.forEach(function (m) {
      if (m.at === undefined) return;
      var top = G.top + m.lane * G.lane;
      svg.appendChild(s('line', { x1: m.at, x2: m.x, y1: top + G.barY - 1, y2: top + G.markY + 8, class: 'lead' }));
    });
    v.marks.forEach(function (m, j) {
      var top = G.top + m.lane * G.lane;
      var cy = top + G.markY;
      var g = s('g', { class: 'mk', tabindex: 0, role: 'button', transform: 'translate(' + m.x + ',' + cy + ')' });
      g.dataset.m = String(j);
      g.setAttribute('aria-label', m.ev.length > 1 ? m.ev.length + ' events at one spot, ' + c.ev[m.ev[0]].t : describe(c.ev[m.ev[0]]));
      var hw = m.glyph === 'ko' || m.glyph === 'kf' ? 4 : Math.max(6, Math.min(m.half - 2, 8));
      g.appendChild(s('rect', { x: -hw, y: -9, width: 2 * hw, height: 18, class: 'hit' }));
      g.appendChild(glyph(m.glyph, m.ev.length, m.half));
      if (m.ring) g.appendChild(m.glyph === 'gr' ? s('rect', { x: -(m.half - 4.5), y: -11, width: 2 * (m.half - 4.5), height: 22, rx: 6, class: 'ring' }) : s('circle', { r: 10, class: 'ring' }));
      svg.appendChild(g);
      if (m.label !== undefined) {
        var t = s('text', { x: m.x, y: cy - 14.5, class: 'lbl' });
        t.textContent = m.label;
        t.dataset.m = String(j);
        svg.appendChild(t);
      }
    });
    return svg;
  }

  var FOCUS_NOTE = {
    evidence: "Opens on the evidence of this resource's findings.",
    'evidence+rejections': "Opens on the evidence of this resource's findings and on the stale writes it rejected.",
    rejections: 'Opens on the stale writes this resource rejected.',
    activity: 'All of this resource\u2019s events.'
  };

  function viewNote(c, name) {
    var v = c[name];
    if (name === 'whole') return 'The whole captured history at true proportions; events at one spot are grouped (Focus draws them apart).';
    var parts = [FOCUS_NOTE[c.focusOn] || ''];
    if (v.breaks.length > 0) parts.push('Quiet stretches are left out of the axis (zigzag bands; the label under the axis says how long).');
    var n = function (k, what) {
      return k + ' ' + what.replace('#', k === 1 ? 'event' : 'events');
    };
    var out = [];
    if (v.before > 0) out.push(n(v.before, 'earlier #'));
    if (v.hidden > 0) out.push(n(v.hidden, '# in left-out stretches'));
    if (v.after > 0) out.push(n(v.after, 'later #'));
    if (out.length > 0) parts.push('Not in this view: ' + out.join(', ') + ' (Whole span shows them).');
    return parts.join(' ');
  }

  function showView(div, c, name) {
    var pic = div.querySelector('.picwrap');
    pic.textContent = '';
    pic.appendChild(drawView(c, name));
    div.dataset.view = name;
    div.querySelector('.vnote').textContent = viewNote(c, name);
    div.querySelectorAll('.views button').forEach(function (b) {
      b.setAttribute('aria-pressed', b.dataset.view === name ? 'true' : 'false');
    });
  }

  function cell(tr, text, cls) {
    var td = h('td', cls, text);
    tr.appendChild(td);
    return td;
  }

  function findingEl(c, f, k) {
    var a = h('article', 'finding f-' + f.severity);
    a.id = f.id;
    a.dataset.rule = f.rule;
    a.dataset.severity = f.severity;
    a.dataset.certainty = f.certainty;
    var h4 = h('h4', null, f.id + ' ');
    h4.appendChild(h('code', null, f.rule));
    h4.appendChild(document.createTextNode(' '));
    h4.appendChild(h('span', 'sev-' + f.severity, f.severity + ', ' + f.certainty));
    a.appendChild(h4);
    a.appendChild(h('p', null, f.message));
    if (f.decide !== undefined) a.appendChild(h('p', 'note', 'Certainty ' + f.certainty + ': ' + f.decide));
    a.appendChild(h('pre', 'story', f.story.join('\n')));
    var t = h('table', 'row');
    var x = f.texts || (own(TEXTS, f.rule) ? TEXTS[f.rule] : ['', '', '', '']);
    [['symptom', x[0]], ['cause', x[1]], ['check', x[2]], ['action', x[3]]].forEach(function (p) {
      var tr = h('tr');
      tr.appendChild(h('th', null, p[0]));
      tr.appendChild(h('td', null, p[1]));
      t.appendChild(tr);
    });
    a.appendChild(t);
    var wrap = h('div', 'scroll');
    var ev = h('table', 'ev');
    var head = h('tr');
    ['where', 'role', 'ts', 'type', 'owner', 'lease', 'token', 'result'].forEach(function (n) {
      head.appendChild(h('th', null, n));
    });
    var thead = h('thead');
    thead.appendChild(head);
    ev.appendChild(thead);
    var body = h('tbody');
    f.evidence.forEach(function (item, i) {
      var e = item;
      if (item.file === undefined && item.ev !== undefined) {
        var d = c.ev[item.ev];
        e = { role: item.role, ev: item.ev, inferred: item.inferred, decisive: item.decisive, file: d.file, line: d.line, ts: d.ts, type: d.type, result: d.result, owner: d.owner, lease: d.lease, token: d.token };
      }
      var tr = h('tr', e.decisive ? 'decisive' : null);
      tr.id = f.id + '-e' + (i + 1);
      var where = h('td');
      if (e.ev !== undefined && c.ev !== undefined) {
        var b = h('button', 'goto', '\u25c9');
        b.type = 'button';
        b.title = 'show this event in the picture';
        b.setAttribute('aria-label', 'show ' + e.file + ':' + e.line + ' in the picture');
        b.dataset.card = String(k);
        b.dataset.ev = String(e.ev);
        where.appendChild(b);
      }
      var code = h('code', null, shortName(e.file) + ':' + e.line);
      if (shortName(e.file) !== e.file) code.title = e.file + ':' + e.line;
      where.appendChild(code);
      if (e.inferred) where.appendChild(document.createTextNode(' (inferred)'));
      tr.appendChild(where);
      cell(tr, e.role, 'role');
      cell(tr, e.ts);
      cell(tr, e.type);
      cell(tr, e.owner !== undefined ? e.owner : '');
      cell(tr, e.lease !== undefined ? e.lease : '');
      cell(tr, e.token !== undefined ? e.token : '');
      cell(tr, e.result);
      body.appendChild(tr);
    });
    ev.appendChild(body);
    wrap.appendChild(ev);
    a.appendChild(wrap);
    return a;
  }

  function render(k) {
    var div = boxes[k];
    if (div.dataset.done) return div;
    div.textContent = '';
    var c = dataOf(k);
    div.dataset.done = '1';
    div.style.minHeight = '';
    if (observer) observer.unobserve(div);
    var h3 = h('h3');
    h3.appendChild(document.createTextNode(c.name + ' '));
    h3.appendChild(h('span', 'v-' + c.readiness, c.readiness));
    div.appendChild(h3);
    var meta = [];
    if (c.reason) meta.push(c.reason);
    if (c.highest !== null && c.highest !== undefined) meta.push('highest accepted token ' + c.highest);
    meta.push(c.events + ' event' + (c.events === 1 ? '' : 's'));
    div.appendChild(h('p', 'meta', meta.join(' \u00b7 ')));
    if (c.notDrawn !== undefined) div.appendChild(h('p', 'note', c.notDrawn));
    else {
      var views = h('div', 'views');
      if (c.whole !== undefined) {
        [['focus', c.focusOn === 'activity' ? 'Quiet stretches compressed' : 'Focus on the evidence'], ['whole', 'Whole span']].forEach(function (p) {
          var b = h('button', null, p[1]);
          b.type = 'button';
          b.dataset.view = p[0];
          b.setAttribute('aria-pressed', 'false');
          views.appendChild(b);
        });
      }
      views.appendChild(h('span', 'vnote note'));
      div.appendChild(views);
      if (c.omitted > 0) div.appendChild(h('p', 'note', c.omitted + ' events in the middle of this history were not kept, so they are not drawn.'));
      div.appendChild(h('div', 'picwrap'));
      showView(div, c, 'focus');
    }
    c.findings.forEach(function (f) {
      div.appendChild(findingEl(c, f, k));
    });
    if (c.findingCount > c.findings.length) div.appendChild(h('p', 'note', c.findingCount - c.findings.length + ' more findings on this resource are not listed (raise --max-findings).'));
    applyTo(k);
    return div;
  }

  // Tooltip: one for the page; hover or focus shows it, a click or Enter pins it.
  var tip = h('div');
  tip.id = 'tip';
  tip.hidden = true;
  tip.setAttribute('role', 'tooltip');
  var pinned = null;
  var shownFor = null;

  function markOf(g) {
    var div = g.closest('.card');
    var k = Number(div.dataset.k);
    var c = dataOf(k);
    var v = c[g.closest('svg').dataset.view];
    return { k: k, c: c, m: v.marks[Number(g.dataset.m)] };
  }

  function refsOf(c, i) {
    var out = [];
    c.findings.forEach(function (f) {
      f.evidence.forEach(function (e, n) {
        if (e.ev === i) out.push({ id: f.id + '-e' + (n + 1), text: f.id + ' ' + f.rule + ': ' + e.role });
      });
    });
    return out;
  }

  function evBlock(c, i, box) {
    var ev = c.ev[i];
    var dl = h('dl');
    var add = function (k, v) {
      if (v === undefined || v === null || v === '') return;
      dl.appendChild(h('dt', null, k));
      dl.appendChild(h('dd', null, v));
    };
    add('time', ev.t + '  (' + ev.ts + ')');
    add('where', ev.file + ':' + ev.line + (ev.inferred ? ' (the renewal this end is inferred from)' : ''));
    add('owner', ev.owner);
    add('lease', ev.lease);
    add('token', ev.token);
    add('ttl', ev.ttl !== undefined ? ev.ttl + ' ms' : undefined);
    add('observer', ev.observer);
    add('operation', ev.op);
    add('highest accepted after it', ev.highest);
    box.appendChild(dl);
    if (ev.fields && ev.fields.length > 0) {
      box.appendChild(h('div', 'sub', 'Other fields of the line'));
      dl = h('dl');
      ev.fields.forEach(function (p) {
        add(p[0], p[1]);
      });
      if (ev.more) add('\u2026', ev.more + ' more fields (see the log line)');
      box.appendChild(dl);
    }
    var refs = refsOf(c, i);
    if (refs.length > 0) {
      box.appendChild(h('div', null, 'Evidence of:'));
      var ul = h('ul');
      refs.forEach(function (r) {
        var li = h('li');
        var a = h('a', 'torow', r.text);
        a.href = '#' + r.id;
        a.dataset.row = r.id;
        li.appendChild(a);
        ul.appendChild(li);
      });
      box.appendChild(ul);
    }
  }

  function showTip(g, pin) {
    var t = markOf(g);
    tip.textContent = '';
    if (pin) {
      var x = h('button', 'x', '\u00d7');
      x.type = 'button';
      x.setAttribute('aria-label', 'close');
      tip.appendChild(x);
    }
    var m = t.m;
    if (m.ev.length === 1) {
      var ev = t.c.ev[m.ev[0]];
      tip.appendChild(h('h5', null, (WHAT[ev.glyph] || ev.type + ' \u2192 ' + ev.result) + (ev.observer === 'worker' && ev.type === 'write' ? " (the worker's view)" : '')));
      evBlock(t.c, m.ev[0], tip);
    } else {
      tip.appendChild(h('h5', null, m.ev.length + ' events at one spot'));
      m.ev.forEach(function (i) {
        var ev = t.c.ev[i];
        var sec = h('div');
        sec.appendChild(h('b', null, ev.t + ' ' + ev.type + ' \u2192 ' + ev.result + (ev.owner !== undefined ? ' (' + ev.owner + ')' : '') + (ev.token !== undefined ? ' #' + ev.token : '')));
        evBlock(t.c, i, sec);
        tip.appendChild(sec);
      });
    }
    if (pin) tip.appendChild(h('div', 'note', 'Pinned: Esc or \u00d7 closes.'));
    tip.hidden = false;
    // Below the picture when that is near (the other lanes stay in sight), else below the mark.
    var r = g.getBoundingClientRect();
    var pic = g.closest('svg').getBoundingClientRect();
    var left = Math.max(4, Math.min(r.left + window.scrollX - 20, window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 8));
    tip.style.left = left + 'px';
    tip.style.top = (pic.bottom - r.bottom < 220 ? pic.bottom : r.bottom) + window.scrollY + 6 + 'px';
    if (shownFor) shownFor.classList.remove('on');
    shownFor = g;
    g.classList.add('on');
    pinned = pin ? g : null;
  }

  function hideTip() {
    tip.hidden = true;
    pinned = null;
    if (shownFor) shownFor.classList.remove('on');
    shownFor = null;
  }

  function flash(node) {
    node.classList.add('flash');
    setTimeout(function () {
      node.classList.remove('flash');
    }, 1600);
  }

  function goMark(k, i) {
    var div = render(k);
    var c = dataOf(k);
    var find = function () {
      var marks = c[div.dataset.view].marks;
      for (var j = 0; j < marks.length; j++) if (marks[j].ev.indexOf(i) >= 0) return div.querySelector('.mk[data-m="' + j + '"]');
      return null;
    };
    var g = find();
    if (!g && div.dataset.view !== 'focus') {
      showView(div, c, 'focus');
      g = find();
    }
    if (!g && c.whole !== undefined) {
      showView(div, c, 'whole');
      g = find();
    }
    if (!g) return;
    g.closest('svg').scrollIntoView({ block: 'center' });
    g.focus({ preventScroll: true });
    showTip(g, true);
    flash(g);
  }

  function goRow(id) {
    var row = document.getElementById(id);
    if (!row) return;
    row.scrollIntoView({ block: 'center' });
    flash(row);
  }

  // Filters.
  var form, out, state = { rule: '', severity: '', certainty: '', readiness: '', q: '' }, names;

  function findingOk(f) {
    return (!state.rule || f[1] === state.rule) && (!state.severity || f[2] === state.severity) && (!state.certainty || f[3] === state.certainty);
  }
  function byFindings() {
    return !!(state.rule || state.severity || state.certainty);
  }
  function applyTo(k) {
    var div = boxes[k];
    if (!div.dataset.done) return;
    div.querySelectorAll('article.finding').forEach(function (a) {
      a.hidden = byFindings() && !findingOk([a.id, a.dataset.rule, a.dataset.severity, a.dataset.certainty]);
    });
  }
  function apply() {
    state.rule = form.elements.rule.value;
    state.severity = form.elements.severity.value;
    state.certainty = form.elements.certainty.value;
    state.readiness = form.elements.readiness.value;
    state.q = form.elements.q.value.trim().toLowerCase();
    var n = 0, nf = 0, total = 0;
    for (var k = 0; k < cards.length; k++) {
      var e = cards[k];
      total += e[6].length;
      var fs = byFindings() ? e[6].filter(findingOk) : e[6];
      var ok = (!state.readiness || e[2] === state.readiness) && (!state.q || names[k].indexOf(state.q) >= 0) && (!byFindings() || fs.length > 0);
      boxes[k].hidden = !ok;
      if (ok) {
        n++;
        nf += fs.length;
        applyTo(k);
      }
    }
    var filtered = state.rule || state.severity || state.certainty || state.readiness || state.q;
    out.textContent = (filtered ? 'Showing ' + n + ' of ' : '') + cards.length + ' resource' + (cards.length === 1 ? '' : 's') + ', ' + (filtered ? nf + ' of ' : '') + total + ' finding' + (total === 1 ? '' : 's') + (filtered && n === 0 ? ' \u2014 nothing matches' : '');
  }

  function go(hash) {
    var id = decodeURIComponent((hash || '').slice(1));
    if (!id) return;
    var k = byId.has(id) ? byId.get(id) : byFinding.get(id.replace(/-e\d+$/, ''));
    if (k === undefined) return;
    if (boxes[k].hidden) {
      form.reset();
      apply();
    }
    want(k).then(function () {
      var target = document.getElementById(id);
      if (!target) return;
      target.scrollIntoView();
      requestAnimationFrame(function () {
        target.scrollIntoView();
      });
      if (id !== cards[k][0]) flash(target);
    });
  }

  function legend() {
    document.querySelectorAll('.legend li[data-glyph]').forEach(function (li) {
      var k = li.dataset.glyph;
      var svg = s('svg', { width: 34, height: 20, viewBox: '-17 -10 34 20', 'aria-hidden': 'true', class: 'icon' });
      var add = function (n) {
        svg.appendChild(n);
      };
      if (WHAT[k] !== undefined) {
        var g = glyph(k, 3, 15.5);
        add(g);
      } else if (k === 'tok') {
        var t = s('text', { x: 0, y: 4, class: 'lbl' });
        t.textContent = '#2';
        add(t);
      } else if (k === 'ring') {
        add(s('circle', { r: 6, class: 'g-wa gw' }));
        add(s('circle', { r: 9, class: 'ring' }));
      } else if (k === 'bar') add(s('rect', { x: -15, y: -4, width: 30, height: 8, class: 'lease' }));
      else if (k === 'inf') {
        add(s('rect', { x: -15, y: -4, width: 26, height: 8, class: 'lease inf' }));
        add(s('line', { x1: 11, x2: 11, y1: -7, y2: 7, class: 'infend' }));
      } else if (k === 'open') {
        add(s('rect', { x: -15, y: -4, width: 30, height: 8, class: 'lease open' }));
        add(s('polygon', { points: '9,-6 15,0 9,6', class: 'cont' }));
      } else if (k === 'tail') {
        add(s('rect', { x: -15, y: -4, width: 12, height: 8, class: 'lease inf' }));
        add(s('line', { x1: -3, x2: 15, y1: 0, y2: 0, class: 'tail' }));
      } else if (k === 'lead') {
        add(s('line', { x1: -6, x2: 4, y1: 9, y2: -2, class: 'lead' }));
        add(s('circle', { cx: 5, cy: -4, r: 4, class: 'g-wa gw' }));
      } else if (k === 'brk') {
        add(s('rect', { x: -9, y: -9, width: 18, height: 18, class: 'brk' }));
        add(s('path', { d: 'M-16,6L-6,6L-3,2L3,10L6,6L16,6', class: 'zig' }));
      }
      li.insertBefore(svg, li.firstChild);
    });
  }

  async function main() {
    legend();
    document.body.appendChild(tip);
    var ix = document.getElementById('sw-index');
    if (!ix) return;
    performance.mark('stalewrite-start');
    var index = JSON.parse(await textOf(ix));
    performance.mark('stalewrite-index');
    G = index.head.geometry;
    SHORT = index.head.short || {};
    TEXTS = index.head.texts || {};
    cards = index.cards;
    blockText = new Map();
    blockData = new Map();
    decoding = new Map();
    blockNode = new Map();
    document.querySelectorAll('script.sw-data').forEach(function (n) {
      blockNode.set(Number(n.dataset.block), n);
    });
    byId = new Map();
    byFinding = new Map();
    names = [];
    var host = document.getElementById('cards');
    var frag = document.createDocumentFragment();
    boxes = cards.map(function (e, k) {
      byId.set(e[0], k);
      e[6].forEach(function (f) {
        byFinding.set(f[0], k);
      });
      names.push(String(e[1]).toLowerCase());
      var div = h('div', 'card');
      var worst = e[6].some(function (f) { return f[2] === 'error'; }) ? 'error' : e[6].some(function (f) { return f[2] === 'warning'; }) ? 'warning' : '';
      if (worst) div.classList.add('f-' + worst);
      div.id = e[0];
      div.dataset.k = String(k);
      div.style.minHeight = e[5] + 'px';
      frag.appendChild(div);
      return div;
    });
    host.appendChild(frag);
    performance.mark('stalewrite-cards');

    form = document.getElementById('filters');
    out = document.getElementById('shown');
    form.hidden = false;
    form.addEventListener('input', apply);
    form.addEventListener('change', apply);
    form.addEventListener('submit', function (e) {
      e.preventDefault();
    });
    form.addEventListener('reset', function () {
      setTimeout(apply, 0);
    });
    apply();

    // Draw what is on screen now; the rest when it comes near.
    var limit = window.innerHeight + 600;
    var first = [];
    for (var k = 0; k < boxes.length; k++) {
      if (boxes[k].getBoundingClientRect().top > limit) break;
      first.push(want(k));
    }
    await Promise.all(first);
    observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (en) {
        if (en.isIntersecting) want(Number(en.target.dataset.k));
      });
    }, { rootMargin: '800px 0px' });
    boxes.forEach(function (b) {
      if (!b.dataset.done) observer.observe(b);
    });

    document.addEventListener('click', function (e) {
      var t = e.target;
      var vb = t.closest && t.closest('.views button');
      if (vb) {
        var div = vb.closest('.card');
        hideTip();
        showView(div, dataOf(Number(div.dataset.k)), vb.dataset.view);
        return;
      }
      var gb = t.closest && t.closest('button.goto');
      if (gb) {
        goMark(Number(gb.dataset.card), Number(gb.dataset.ev));
        return;
      }
      var tr = t.closest && t.closest('a.torow');
      if (tr) {
        e.preventDefault();
        hideTip();
        goRow(tr.dataset.row);
        return;
      }
      if (t.closest && t.closest('#tip .x')) {
        hideTip();
        return;
      }
      var g = t.closest && t.closest('.mk');
      if (g) {
        if (pinned === g) hideTip();
        else showTip(g, true);
        return;
      }
      if (pinned && !(t.closest && t.closest('#tip'))) hideTip();
    });
    document.addEventListener('mouseover', function (e) {
      var g = e.target.closest && e.target.closest('.mk');
      if (g && !pinned && shownFor !== g) showTip(g, false);
    });
    document.addEventListener('mouseout', function (e) {
      var g = e.target.closest && e.target.closest('.mk');
      if (g && !pinned && !(e.relatedTarget && g.contains(e.relatedTarget))) hideTip();
    });
    document.addEventListener('focusin', function (e) {
      var g = e.target.closest && e.target.closest('.mk');
      if (g && !pinned) showTip(g, false);
    });
    document.addEventListener('focusout', function (e) {
      var g = e.target.closest && e.target.closest('.mk');
      if (g && !pinned && shownFor === g) hideTip();
    });
    document.addEventListener('keydown', function (e) {
      if (e.key === 'Escape') {
        hideTip();
        return;
      }
      var g = e.target.closest && e.target.closest('.mk');
      if (g && (e.key === 'Enter' || e.key === ' ')) {
        e.preventDefault();
        if (pinned === g) showTip(g, false);
        else showTip(g, true);
      }
    });
    window.addEventListener('hashchange', function () {
      go(location.hash);
    });
    // A printout holds every card the filters show, drawn (the data is decoded in the background
    // right after the page opens; a card still being decoded says so).
    window.addEventListener('beforeprint', function () {
      hideTip();
      for (var k = 0; k < boxes.length; k++) {
        if (boxes[k].hidden || boxes[k].dataset.done) continue;
        if (blockText.has(cards[k][3])) render(k);
        else boxes[k].textContent = cards[k][1] + ': still being read by the page; print again in a moment.';
      }
    });
    go(location.hash);
    root.dataset.ready = 'yes';
    performance.mark('stalewrite-ready');
    // Then every other block, one at a time, so that printing and search draw at once.
    var all = Array.from(blockNode.keys());
    for (var i = 0; i < all.length; i++) await decode(all[i]);
    root.dataset.decoded = 'yes';
    performance.mark('stalewrite-decoded');
  }

  main().catch(function (err) {
    var host = document.getElementById('cards') || document.body;
    var p = h('p', 'warn', 'This page could not read its data: ' + (err && err.message ? err.message : String(err)) + '. It needs a browser with DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 or later); --format markdown has the same findings.');
    host.insertBefore(p, host.firstChild);
    root.dataset.ready = 'error';
  });
})();
