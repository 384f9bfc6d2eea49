/* charts.js - charts as inline SVG built here (no library): a line chart
 * of series over time and a horizontal bar chart. Colours come from the
 * stylesheet (classes s0..s7), so the page needs no inline style. Each
 * chart carries a text description for screen readers and <title>
 * tooltips on its points and bars. */
'use strict';
var SB = window.SB = window.SB || {};

SB.charts = (function () {
  var NS = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs, children) {
    var el = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return el;
  }

  function title(text) { return svg('title', {}, [text]); }

  /* Round numbers for an axis from 0 to max: about `count` steps. */
  function ticks(max, count) {
    if (!(max > 0)) return [0, 1];
    var raw = max / count;
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 2.5, 5, 10].map(function (m) { return m * mag; })
      .find(function (s) { return s >= raw; }) || raw;
    var out = [];
    for (var v = 0; v <= max + step * 0.001; v += step) out.push(Math.round(v * 1000) / 1000);
    if (out[out.length - 1] < max) out.push(out[out.length - 1] + step);
    return out;
  }

  /* A clock time; with seconds when `seconds` (a short time axis, whose
   * ticks would otherwise repeat the same minute). */
  function hhmm(d, seconds) {
    var p = function (n) { return (n < 10 ? '0' : '') + n; };
    return p(d.getHours()) + ':' + p(d.getMinutes()) + (seconds ? ':' + p(d.getSeconds()) : '');
  }

  /* line({series: [{name, points: [{t: Date, v: number}]}], width, height,
   *       label, unit}) -> an element (the chart and its legend). */
  function line(opts) {
    var W = opts.width || 640, H = opts.height || 220;
    var m = {l: 48, r: 12, t: 10, b: 26};
    var series = (opts.series || []).filter(function (s) { return s.points && s.points.length; });
    var wrap = SB.dom.h('figure.chart');
    if (!series.length) {
      wrap.appendChild(SB.dom.h('div.chart-empty', opts.emptyText || 'No data yet'));
      return wrap;
    }
    var tmin = Infinity, tmax = -Infinity, vmax = 0;
    series.forEach(function (s) {
      s.points.forEach(function (p) {
        var t = p.t.getTime();
        if (t < tmin) tmin = t;
        if (t > tmax) tmax = t;
        if (p.v > vmax) vmax = p.v;
      });
    });
    if (tmax === tmin) { tmin -= 60000; }
    var yt = ticks(vmax, 4);
    var ymax = yt[yt.length - 1] || 1;
    var x = function (t) { return m.l + (t - tmin) / (tmax - tmin) * (W - m.l - m.r); };
    var y = function (v) { return H - m.b - v / ymax * (H - m.t - m.b); };

    var root = svg('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'chart-svg', role: 'img',
      'aria-label': opts.label || 'chart'});
    var grid = svg('g', {class: 'grid'});
    yt.forEach(function (v) {
      grid.appendChild(svg('line', {x1: m.l, x2: W - m.r, y1: y(v), y2: y(v)}));
      grid.appendChild(svg('text', {x: m.l - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'axis'},
        [SB.dom.num(v)]));
    });
    var steps = 5, short = tmax - tmin < steps * 60000;
    for (var i = 0; i <= steps; i++) {
      var t = tmin + (tmax - tmin) * i / steps;
      grid.appendChild(svg('text', {x: x(t), y: H - 8, 'text-anchor': i === 0 ? 'start' : i === steps ? 'end' : 'middle',
        class: 'axis'}, [hhmm(new Date(t), short)]));
    }
    root.appendChild(grid);

    var legend = SB.dom.h('figcaption.legend');
    var summary = [];
    series.forEach(function (s, idx) {
      var cls = 's' + (idx % 8);
      var d = s.points.map(function (p, k) {
        return (k ? 'L' : 'M') + x(p.t.getTime()).toFixed(1) + ' ' + y(p.v).toFixed(1);
      }).join(' ');
      var g = svg('g', {class: 'series ' + cls});
      g.appendChild(svg('path', {d: d, class: 'line'}));
      if (s.points.length <= 90) {
        s.points.forEach(function (p) {
          g.appendChild(svg('circle', {cx: x(p.t.getTime()).toFixed(1), cy: y(p.v).toFixed(1), r: 2.5},
            [title(s.name + ' ' + hhmm(p.t, true) + ': ' + SB.dom.num(p.v) + (opts.unit ? ' ' + opts.unit : ''))]));
        });
      }
      root.appendChild(g);
      var last = s.points[s.points.length - 1];
      legend.appendChild(SB.dom.h('span.key', SB.dom.h('span.swatch.' + cls), s.name + ' ' + SB.dom.num(last.v)));
      summary.push(s.name + ' now ' + last.v);
    });
    root.setAttribute('aria-label', (opts.label || 'chart') + ': ' + summary.join(', '));
    wrap.appendChild(root);
    wrap.appendChild(legend);
    return wrap;
  }

  /* bars({items: [{name, value, cls?, href?}], label}) -> a horizontal
   * bar chart, one row per item, the value written at the bar's end. */
  function bars(opts) {
    var items = opts.items || [];
    var wrap = SB.dom.h('figure.chart.bars');
    if (!items.length) {
      wrap.appendChild(SB.dom.h('div.chart-empty', opts.emptyText || 'Nothing to show'));
      return wrap;
    }
    var W = 420, row = 26, labelW = 150, H = items.length * row + 4;
    var max = Math.max.apply(null, items.map(function (i) { return i.value; }).concat([1]));
    var root = svg('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'chart-svg bars-svg', role: 'img',
      'aria-label': (opts.label || 'chart') + ': ' + items.map(function (i) { return i.name + ' ' + i.value; }).join(', ')});
    items.forEach(function (it, k) {
      var yy = k * row + 2;
      var w = Math.max(it.value > 0 ? 2 : 0, (W - labelW - 60) * it.value / max);
      var g = svg('g', {class: 'bar-row ' + (it.cls || ('s' + (k % 8)))});
      g.appendChild(svg('text', {x: labelW - 8, y: yy + 16, 'text-anchor': 'end', class: 'axis name'},
        [it.name.length > 22 ? it.name.slice(0, 21) + '…' : it.name]));
      g.appendChild(svg('rect', {x: labelW, y: yy + 4, width: w.toFixed(1), height: row - 10, rx: 3},
        [title(it.name + ': ' + it.value)]));
      g.appendChild(svg('text', {x: labelW + w + 6, y: yy + 16, class: 'axis value'}, [SB.dom.num(it.value)]));
      root.appendChild(g);
    });
    wrap.appendChild(root);
    return wrap;
  }

  return {line: line, bars: bars, ticks: ticks};
})();
