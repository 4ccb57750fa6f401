// sightline HTML report — inline script: draws the timeline (canvas), the
// GPU-utilization, kernel-breakdown, step-distribution and comparison charts
// (SVG) from the JSON in #sl-data. No network, no libraries.
// Test hooks: <body data-rendered="ok" data-render-ms=.. data-redraw-ms=..
// data-rects='{"timeline":[x,y,w,h],...}'>; data-error on any script error.
(function () {
  'use strict';
  window.addEventListener('error', function (e) {
    document.body.dataset.error = String(e.message || e);
  });
  var t0 = performance.now();
  var data = JSON.parse(document.getElementById('sl-data').textContent);
  var SVGNS = 'http://www.w3.org/2000/svg';

  function fmtDur(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(1) + ' us';
    if (a < 1e9) return (ns / 1e6).toFixed(2) + ' ms';
    return (ns / 1e9).toFixed(2) + ' s';
  }
  function hashColor(s, light) {
    var h = 0;
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    var hue = Math.abs(h) % 360;
    return 'hsl(' + hue + ',62%,' + (light ? 62 : 48) + '%)';
  }
  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function ellipsize(s, n) {
    if (s.length <= n) return s;
    var h = Math.ceil((n - 1) / 2), t = Math.floor((n - 1) / 2);
    return s.slice(0, h) + '\u2026' + s.slice(s.length - t);
  }
  // Content width of an element's parent (clientWidth minus padding).
  function avail(e, fallback) {
    var p = e.parentElement, cs = window.getComputedStyle(p);
    var w = p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return w > 0 ? Math.floor(w) : fallback;
  }
  function niceStep(range, target) {
    var raw = range / target, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  // ---- timeline ---------------------------------------------------------
  var LABEL_W = 190, ROW_H = 18, AXIS_H = 22;
  function Timeline(canvas, tooltip) {
    this.canvas = canvas;
    this.tooltip = tooltip;
    this.ctx = canvas.getContext('2d');
    this.dragging = null;
    var self = this;
    canvas.addEventListener('wheel', function (e) {
      e.preventDefault();
      var x = self.timeAt(e.offsetX);
      var f = Math.pow(1.0015, e.deltaY);
      self.zoom(x, f);
    }, { passive: false });
    canvas.addEventListener('mousedown', function (e) {
      self.dragging = { x: e.clientX, v0: self.v0, v1: self.v1 };
      canvas.style.cursor = 'grabbing';
    });
    window.addEventListener('mouseup', function () {
      self.dragging = null;
      canvas.style.cursor = 'grab';
    });
    window.addEventListener('mousemove', function (e) {
      if (!self.dragging) return;
      var d = self.dragging, span = d.v1 - d.v0;
      var dt = (e.clientX - d.x) / self.plotW() * span;
      self.v0 = d.v0 - dt;
      self.v1 = d.v1 - dt;
      self.draw();
    });
    canvas.addEventListener('mousemove', function (e) { self.hover(e); });
    canvas.addEventListener('mouseleave', function () { tooltip.style.display = 'none'; });
    canvas.addEventListener('dblclick', function () { self.reset(); });
  }
  Timeline.prototype.setRun = function (run) {
    this.run = run;
    var h = AXIS_H + Math.max(1, run.tracks.length) * ROW_H + 4;
    var dpr = window.devicePixelRatio || 1;
    this.cssW = avail(this.canvas, 1200);
    this.canvas.style.height = h + 'px';
    this.canvas.width = Math.round(this.cssW * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.cssH = h;
    this.reset();
  };
  Timeline.prototype.plotW = function () { return this.cssW - LABEL_W - 8; };
  Timeline.prototype.timeAt = function (px) {
    return this.v0 + (px - LABEL_W) / this.plotW() * (this.v1 - this.v0);
  };
  Timeline.prototype.reset = function () {
    this.v0 = 0;
    this.v1 = Math.max(1, this.run.window_ns);
    this.draw();
  };
  Timeline.prototype.zoom = function (center, factor) {
    var minSpan = 1000;  // 1 us
    var span = Math.max(minSpan, (this.v1 - this.v0) * factor);
    var a = (center - this.v0) / (this.v1 - this.v0);
    this.v0 = center - a * span;
    this.v1 = this.v0 + span;
    this.draw();
  };
  // First block whose end >= t (blocks are sorted and do not overlap).
  function firstVisible(ev, t) {
    var lo = 0, hi = ev.length / 4;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (ev[mid * 4] + ev[mid * 4 + 1] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  Timeline.prototype.draw = function () {
    var ctx = this.ctx, run = this.run, W = this.cssW, pw = this.plotW();
    var v0 = this.v0, v1 = this.v1, scale = pw / (v1 - v0);
    ctx.clearRect(0, 0, W, this.cssH);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, W, this.cssH);
    // Axis.
    ctx.fillStyle = '#5d6778';
    ctx.font = '11px system-ui, sans-serif';
    ctx.strokeStyle = '#e6e9ef';
    var step = niceStep(v1 - v0, 8);
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      var x = LABEL_W + (t - v0) * scale;
      ctx.beginPath();
      ctx.moveTo(x + 0.5, AXIS_H - 4);
      ctx.lineTo(x + 0.5, this.cssH);
      ctx.stroke();
      ctx.fillText(fmtDur(t), x + 3, 12);
    }
    var names = run.names;
    for (var r = 0; r < run.tracks.length; r++) {
      var tr = run.tracks[r], y = AXIS_H + r * ROW_H;
      if (r % 2) { ctx.fillStyle = '#f7f8fb'; ctx.fillRect(0, y, W, ROW_H); }
      ctx.fillStyle = '#1d2330';
      ctx.fillText(ellipsize(tr.name, 28), 6, y + 13);
      var ev = tr.ev, n = ev.length / 4;
      var lastX = -1, lastEnd = -1, lastColor = null;
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, y, pw, ROW_H);
      ctx.clip();
      for (var i = firstVisible(ev, v0); i < n; i++) {
        var s = ev[i * 4];
        if (s > v1) break;
        var x0 = LABEL_W + (s - v0) * scale;
        var x1 = x0 + Math.max(ev[i * 4 + 1] * scale, 1);
        var color = hashColor(names[ev[i * 4 + 2]], tr.kind === 'nvtx');
        // Pixel merge: sub-pixel neighbours extend the previous rectangle.
        if (x0 <= lastEnd + 0.5 && color === lastColor && x1 - x0 < 2) {
          lastEnd = Math.max(lastEnd, x1);
          continue;
        }
        if (lastColor) ctx.fillRect(lastX, y + 2, Math.max(1, lastEnd - lastX), ROW_H - 4);
        ctx.fillStyle = color;
        lastX = x0; lastEnd = x1; lastColor = color;
        if (x1 - x0 > 50) {
          ctx.fillRect(x0, y + 2, x1 - x0, ROW_H - 4);
          ctx.fillStyle = '#ffffff';
          var label = names[ev[i * 4 + 2]] + (ev[i * 4 + 3] > 1 ? ' (' + ev[i * 4 + 3] + ' ops)' : '');
          ctx.fillText(ellipsize(label, Math.floor((x1 - x0) / 6.5)), Math.max(x0, LABEL_W) + 3, y + 13);
          ctx.fillStyle = color;
          lastColor = null;
        }
      }
      if (lastColor) ctx.fillRect(lastX, y + 2, Math.max(1, lastEnd - lastX), ROW_H - 4);
      ctx.restore();
    }
    ctx.strokeStyle = '#9aa3b2';
    ctx.beginPath();
    ctx.moveTo(LABEL_W - 0.5, 0);
    ctx.lineTo(LABEL_W - 0.5, this.cssH);
    ctx.stroke();
  };
  Timeline.prototype.hover = function (e) {
    if (this.dragging) return;
    var r = Math.floor((e.offsetY - AXIS_H) / ROW_H), run = this.run;
    if (r < 0 || r >= run.tracks.length || e.offsetX < LABEL_W) {
      this.tooltip.style.display = 'none';
      return;
    }
    var t = this.timeAt(e.offsetX), slack = 3 * (this.v1 - this.v0) / this.plotW();
    var ev = run.tracks[r].ev, i = firstVisible(ev, t - slack);
    if (i * 4 < ev.length && ev[i * 4] <= t + slack) {
      var count = ev[i * 4 + 3];
      this.tooltip.textContent = run.names[ev[i * 4 + 2]] + ' \u2014 ' + fmtDur(ev[i * 4 + 1]) +
          (count > 1 ? ' (' + count + ' ops merged)' : '') + ' @ ' + fmtDur(ev[i * 4]);
      this.tooltip.style.display = 'block';
      this.tooltip.style.left = (e.clientX + 12) + 'px';
      this.tooltip.style.top = (e.clientY + 12) + 'px';
    } else {
      this.tooltip.style.display = 'none';
    }
  };

  // ---- charts -------------------------------------------------------------
  function utilChart(svg, runs) {
    var W = avail(svg, 1200), PH = 110, L = 44, top = 4, ROW = PH + 44;
    var series = [];
    runs.forEach(function (run, ri) {
      run.util.forEach(function (u) { series.push({ run: run, u: u, ri: ri }); });
    });
    svg.setAttribute('width', W);
    svg.setAttribute('height', Math.max(top + series.length * ROW, 40));
    if (!series.length) { el('text', { x: 10, y: 24 }, svg, 'no GPU activity'); return; }
    series.forEach(function (s, k) {
      var y0 = top + k * ROW + 16, pw = W - L - 10, bins = s.u.pct.length, sum = 0;
      for (var i = 0; i < bins; i++) sum += s.u.pct[i];
      el('text', { x: L, y: y0 - 4, 'font-weight': 600 }, svg,
         (runs.length > 1 ? s.run.label + ' — ' : '') + s.u.device + ' \u2014 ' + (sum / bins).toFixed(1) + '% busy over the run window shown');
      [0, 50, 100].forEach(function (p) {
        var y = y0 + PH - p / 100 * PH;
        el('line', { x1: L, x2: L + pw, y1: y, y2: y, 'class': 'grid' }, svg);
        el('text', { x: 4, y: y + 4 }, svg, p + '%');
      });
      var pts = [L + ',' + (y0 + PH)];
      for (i = 0; i < bins; i++) {
        var x = L + (i + 0.5) / bins * pw, y = y0 + PH - s.u.pct[i] / 100 * PH;
        pts.push(x.toFixed(1) + ',' + y.toFixed(1));
      }
      pts.push((L + pw) + ',' + (y0 + PH));
      var color = s.ri === 0 && runs.length > 1 ? '#3f6fd8' : '#2e9d5b';
      el('polygon', { points: pts.join(' '), fill: color, 'fill-opacity': 0.35, stroke: color, 'stroke-width': 1.2 }, svg);
      el('line', { x1: L, x2: L + pw, y1: y0 + PH, y2: y0 + PH, 'class': 'axis' }, svg);
      var step = niceStep(s.run.window_ns, 8);
      for (var t = 0; t <= s.run.window_ns; t += step) {
        el('text', { x: L + t / s.run.window_ns * pw - 2, y: y0 + PH + 14 }, svg, fmtDur(t));
      }
    });
  }

  function fmtBytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i === 0 ? b.toFixed(0) : b.toFixed(Math.abs(b) < 10 ? 2 : 1)) + ' ' + u[i];
  }

  // Device memory in use over time (a step function per device).
  function memoryChart(svg, run) {
    var W = avail(svg, 1200), PH = 120, L = 70, top = 4, ROW = PH + 44;
    var devs = (run.memory || []).filter(function (m) { return m.points.length; });
    svg.setAttribute('width', W);
    svg.setAttribute('height', Math.max(top + devs.length * ROW, 40));
    if (!devs.length) { el('text', { x: 10, y: 24 }, svg, 'no memory records (profile with -t cuda-memory)'); return; }
    devs.forEach(function (m, k) {
      var y0 = top + k * ROW + 16, pw = W - L - 10;
      var t0 = Math.min(0, m.points[0][0]), t1 = Math.max(run.window_ns, m.points[m.points.length - 1][0]);
      var span = Math.max(t1 - t0, 1), top_b = 0;
      m.points.forEach(function (p) { top_b = Math.max(top_b, p[1]); });
      top_b = Math.max(top_b, 1);
      el('text', { x: L, y: y0 - 4, 'font-weight': 600 }, svg, m.device + ' \u2014 peak ' + fmtBytes(m.peak_bytes) +
         (m.capacity_bytes ? ' of ' + fmtBytes(m.capacity_bytes) : ''));
      [0, 0.5, 1].forEach(function (f) {
        var y = y0 + PH - f * PH;
        el('line', { x1: L, x2: L + pw, y1: y, y2: y, 'class': 'grid' }, svg);
        el('text', { x: 4, y: y + 4 }, svg, fmtBytes(f * top_b));
      });
      var X = function (t) { return L + (t - t0) / span * pw; };
      var Y = function (b) { return y0 + PH - b / top_b * PH; };
      var pts = [X(t0).toFixed(1) + ',' + Y(0).toFixed(1)], prev = 0;
      m.points.forEach(function (p) {
        pts.push(X(p[0]).toFixed(1) + ',' + Y(prev).toFixed(1));
        pts.push(X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1));
        prev = p[1];
      });
      pts.push(X(t1).toFixed(1) + ',' + Y(prev).toFixed(1));
      pts.push(X(t1).toFixed(1) + ',' + Y(0).toFixed(1));
      el('polygon', { points: pts.join(' '), fill: '#8a5cd1', 'fill-opacity': 0.3, stroke: '#8a5cd1', 'stroke-width': 1.2 }, svg);
      el('line', { x1: L, x2: L + pw, y1: y0 + PH, y2: y0 + PH, 'class': 'axis' }, svg);
      var step = niceStep(span, 8);
      for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
        el('text', { x: X(t) - 2, y: y0 + PH + 14 }, svg, fmtDur(t));
      }
    });
  }

  // PM samples (--gpu-metrics): the percent quantities over the window, one
  // panel per device, with the busy (10 %) and saturated (80 %) lines.
  function gpuMetricsChart(svg, run) {
    var W = avail(svg, 1200), PH = 140, L = 50, top = 4, ROW = PH + 60;
    var devs = (run.gpu_metrics || []).filter(function (d) { return d.t.length; });
    var colors = { sm_active: '#3f6fd8', sm_issue: '#7aa3f0', tensor_active: '#d1495b',
                   dram_read: '#2e9d5b', dram_write: '#e39b2d' };
    svg.setAttribute('width', W);
    svg.setAttribute('height', Math.max(top + devs.length * ROW, 40));
    if (!devs.length) { el('text', { x: 10, y: 24 }, svg, 'no PM samples (profile with --gpu-metrics)'); return; }
    devs.forEach(function (d, k) {
      var y0 = top + k * ROW + 16, pw = W - L - 10;
      var t0 = Math.min(0, d.t[0]), t1 = Math.max(run.window_ns, d.t[d.t.length - 1]);
      var span = Math.max(t1 - t0, 1);
      var X = function (t) { return L + (t - t0) / span * pw; };
      var Y = function (v) { return y0 + PH - v / 100 * PH; };
      el('text', { x: L, y: y0 - 4, 'font-weight': 600 }, svg, d.device + ' \u2014 ' +
         fmtDur(d.interval_ns) + ' samples, bucket means');
      [0, 10, 50, 80, 100].forEach(function (v) {
        el('line', { x1: L, x2: L + pw, y1: Y(v), y2: Y(v), 'class': v === 10 || v === 80 ? 'axis' : 'grid' }, svg);
        el('text', { x: 4, y: Y(v) + 4 }, svg, v + '%');
      });
      d.series.forEach(function (s, j) {
        var pts = [];
        s.v.forEach(function (v, i) { if (v >= 0) pts.push(X(d.t[i]).toFixed(1) + ',' + Y(v).toFixed(1)); });
        var c = colors[s.key] || hashColor(s.key);
        el('polyline', { points: pts.join(' '), fill: 'none', stroke: c, 'stroke-width': 1.3 }, svg);
        el('rect', { x: L + j * 150, y: y0 + PH + 22, width: 10, height: 10, fill: c }, svg);
        el('text', { x: L + j * 150 + 14, y: y0 + PH + 31 }, svg, s.label);
      });
      var step = niceStep(span, 8);
      for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
        el('text', { x: X(t) - 2, y: y0 + PH + 14 }, svg, fmtDur(t));
      }
    });
  }

  function barChart(svg, rows, opts) {
    var W = avail(svg, 600), BH = 18, L = opts.labelW || 170, top = 6;
    var H = top + rows.length * (BH + 6) + 10;
    svg.setAttribute('width', W);
    svg.setAttribute('height', Math.max(H, 40));
    if (!rows.length) { el('text', { x: 10, y: 24 }, svg, opts.empty || 'no data'); return; }
    var max = 0;
    rows.forEach(function (r) { r.values.forEach(function (v) { max = Math.max(max, v); }); });
    var pw = W - L - 190, nv = rows[0].values.length;
    rows.forEach(function (r, i) {
      var y = top + i * (BH + 6);
      el('text', { x: 4, y: y + 13 }, svg, ellipsize(r.label, Math.floor(L / 6.6)));
      r.values.forEach(function (v, j) {
        var h = (BH - 2) / nv;
        el('rect', { x: L, y: y + j * h, width: Math.max(1, v / (max || 1) * pw), height: h - 1,
                     fill: opts.colors ? opts.colors[j] : hashColor(r.label) }, svg);
      });
      el('text', { x: L + Math.max(...r.values) / (max || 1) * pw + 6, y: y + 13 }, svg, r.text);
    });
  }

  function stepChart(svg, run) {
    var W = avail(svg, 600), H = 220, L = 50, B = 30, top = 10;
    svg.setAttribute('width', W);
    svg.setAttribute('height', H);
    var d = run.steps.duration_ns;
    if (!d.length) { el('text', { x: 10, y: 24 }, svg, 'no steps detected'); return; }
    var lo = Math.min.apply(null, d), hi = Math.max.apply(null, d);
    var nb = Math.min(30, Math.max(5, Math.ceil(Math.sqrt(d.length))));
    var width = (hi - lo) / nb || 1, counts = new Array(nb).fill(0);
    d.forEach(function (v) { counts[Math.min(nb - 1, Math.floor((v - lo) / width))]++; });
    var cmax = Math.max.apply(null, counts), pw = W - L - 10, ph = H - top - B;
    counts.forEach(function (c, i) {
      var bw = pw / nb, h = c / cmax * ph;
      el('rect', { x: L + i * bw + 1, y: top + ph - h, width: Math.max(1, bw - 2), height: h, fill: '#6b5bd2' }, svg);
    });
    el('line', { x1: L, x2: L + pw, y1: top + ph, y2: top + ph, 'class': 'axis' }, svg);
    el('text', { x: L, y: H - 12 }, svg, fmtDur(lo));
    el('text', { x: L + pw - 60, y: H - 12 }, svg, fmtDur(hi));
    el('text', { x: L + pw / 2 - 70, y: H - 12 }, svg, d.length + ' steps, p50 ' + fmtDur(run.steps.p50_ns));
    el('text', { x: 4, y: top + 10 }, svg, String(cmax));
  }

  // ---- assemble -----------------------------------------------------------
  var runs = data.runs;
  var tooltip = document.getElementById('tooltip');
  var tl = new Timeline(document.getElementById('timeline'), tooltip);
  var select = document.getElementById('run-select');
  if (select) {
    runs.forEach(function (r, i) {
      var o = document.createElement('option');
      o.value = i; o.textContent = r.label;
      select.appendChild(o);
    });
    select.addEventListener('change', function () { tl.setRun(runs[+select.value]); });
  }
  tl.setRun(runs[runs.length - 1]);
  if (select) select.value = String(runs.length - 1);
  utilChart(document.getElementById('util'), runs);
  var last = runs[runs.length - 1];
  if (document.getElementById('memory')) memoryChart(document.getElementById('memory'), last);
  if (document.getElementById('gpu-metrics')) gpuMetricsChart(document.getElementById('gpu-metrics'), last);
  barChart(document.getElementById('kernels'), last.kernels.map(function (k) {
    return { label: k.name, values: [k.total_ns], text: fmtDur(k.total_ns) + ' (' + k.share_pct.toFixed(1) + '%, ' + k.count + 'x)' };
  }), { empty: 'no kernels' });
  stepChart(document.getElementById('steps'), last);
  var cmp = document.getElementById('cmp-kernels');
  if (cmp && runs.length === 2) {
    var byName = {};
    runs[0].kernels.forEach(function (k) { byName[k.name] = [k.total_ns, 0]; });
    runs[1].kernels.forEach(function (k) { (byName[k.name] = byName[k.name] || [0, 0])[1] = k.total_ns; });
    var rows = Object.keys(byName).map(function (n) {
      var v = byName[n];
      return { label: n, values: v, text: fmtDur(v[0]) + ' \u2192 ' + fmtDur(v[1]) };
    }).sort(function (a, b) { return Math.max(...b.values) - Math.max(...a.values); }).slice(0, 12);
    barChart(cmp, rows, { colors: ['#3f6fd8', '#2e9d5b'], labelW: 300 });
  }

  // Responsiveness probe: ten zoom steps into the middle of the run.
  var renderMs = performance.now() - t0, worst = 0;
  var mid = tl.run.window_ns / 2;
  for (var z = 0; z < 10; z++) {
    var a = performance.now();
    tl.zoom(mid, 0.5);
    worst = Math.max(worst, performance.now() - a);
  }
  tl.reset();
  var rects = {};
  ['timeline', 'util', 'memory', 'gpu-metrics', 'kernels', 'steps', 'cmp-kernels', 'findings'].forEach(function (id) {
    var e = document.getElementById(id);
    if (!e) return;
    var r = e.getBoundingClientRect();
    rects[id] = [Math.round(r.left + window.scrollX), Math.round(r.top + window.scrollY),
                 Math.round(r.width), Math.round(r.height)];
  });
  rects.page = [0, 0, document.documentElement.scrollWidth, document.documentElement.scrollHeight];
  document.body.dataset.rects = JSON.stringify(rects);
  document.body.dataset.renderMs = renderMs.toFixed(1);
  document.body.dataset.redrawMs = worst.toFixed(1);
  document.body.dataset.rendered = 'ok';
})();
