/* dom.js - small DOM helpers for the sqlbus dashboard. Every piece of data
 * goes into the page as text (textContent, attribute values), never as
 * HTML: the page runs under a strict Content-Security-Policy and shows
 * message headers and bodies that anyone could have written. */
'use strict';
var SB = window.SB = window.SB || {};

SB.dom = (function () {
  /* h('tag#id.class1.class2', {attr: value, on: {click: fn}}, child, ...):
   * children are nodes, strings (as text), arrays of those, or null. */
  function h(spec, attrs) {
    var parts = spec.split(/[.\s]+/);
    var tag = parts[0] || 'div', id = null;
    var hash = tag.indexOf('#');
    if (hash >= 0) { id = tag.slice(hash + 1); tag = tag.slice(0, hash) || 'div'; }
    var el = document.createElement(tag);
    if (id) el.id = id;
    for (var i = 1; i < parts.length; i++) {
      if (parts[i]) el.classList.add(parts[i]);
    }
    var start = 1;
    if (attrs && typeof attrs === 'object' && !(attrs instanceof Node) && !Array.isArray(attrs)) {
      start = 2;
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === 'on') {
          Object.keys(v).forEach(function (ev) { el.addEventListener(ev, v[ev]); });
        } else if (k === 'class') {
          String(v).split(' ').forEach(function (c) { if (c) el.classList.add(c); });
        } else if (k === 'text') {
          el.textContent = String(v);
        } else if (k === 'dataset') {
          Object.keys(v).forEach(function (d) { el.dataset[d] = String(v[d]); });
        } else if (k === 'checked' || k === 'disabled' || k === 'selected' || k === 'value' || k === 'indeterminate') {
          el[k] = v;
        } else if (v === true) {
          el.setAttribute(k, '');
        } else {
          el.setAttribute(k, String(v));
        }
      });
    }
    for (var j = start; j < arguments.length; j++) append(el, arguments[j]);
    return el;
  }

  function append(el, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) {
      child.forEach(function (c) { append(el, c); });
    } else if (child instanceof Node) {
      el.appendChild(child);
    } else {
      el.appendChild(document.createTextNode(String(child)));
    }
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  /* Replace el's children, keeping keyboard focus on the element with the
   * same data-key (a row's link, a button) when the content is rebuilt by
   * a live refresh. */
  function replace(el, children) {
    var active = document.activeElement;
    var key = active && el.contains(active) && active.dataset ? active.dataset.key : null;
    clear(el);
    append(el, children);
    if (key) {
      var again = el.querySelector('[data-key="' + cssEscape(key) + '"]');
      if (again) again.focus({preventScroll: true});
    }
  }

  function cssEscape(s) {
    return window.CSS && CSS.escape ? CSS.escape(s) : String(s).replace(/["\\]/g, '\\$&');
  }

  /* Times. The API sends ISO 8601 UTC with milliseconds. */
  function parseTime(iso) {
    if (!iso) return null;
    var t = Date.parse(iso);
    return isNaN(t) ? null : new Date(t);
  }

  function ago(ms) {
    if (ms === null || ms === undefined || isNaN(ms)) return '';
    var s = Math.round(ms / 1000);
    if (s < 0) s = 0;
    if (s < 60) return s + ' s';
    var m = Math.round(s / 60);
    if (m < 60) return m + ' min';
    var hr = Math.round(m / 60);
    if (hr < 48) return hr + ' h';
    return Math.round(hr / 24) + ' d';
  }

  function fmtDate(d) {
    if (!d) return '';
    var p = function (n, w) { n = String(n); while (n.length < (w || 2)) n = '0' + n; return n; };
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
      p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }

  /* A <time> showing "3 min ago" with the full local time as its title. */
  function relText(d) {
    var ms = Date.now() - d.getTime();
    return ms < 5000 ? 'just now' : ago(ms) + ' ago';
  }

  function time(iso) {
    var d = parseTime(iso);
    if (!d) return h('span.muted', '—');
    return h('time', {datetime: iso, title: fmtDate(d) + ' (' + iso + ')', dataset: {rel: '1'}}, relText(d));
  }

  /* Keep "3 min ago" true between re-renders (an unchanged list is not
   * redrawn). */
  function refreshTimes(root) {
    (root || document).querySelectorAll('time[data-rel]').forEach(function (t) {
      var d = parseTime(t.getAttribute('datetime'));
      if (d) t.textContent = relText(d);
    });
  }

  function absTime(iso) {
    var d = parseTime(iso);
    if (!d) return h('span.muted', '—');
    return h('time', {datetime: iso, title: iso}, fmtDate(d));
  }

  function num(n) {
    if (n === null || n === undefined || n === '') return '—';
    return Number(n).toLocaleString('en-US');
  }

  function bytes(n) {
    if (n === null || n === undefined) return '—';
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
    return (n / 1024 / 1024).toFixed(1) + ' MiB';
  }

  var STATUS_TEXT = {
    unresolved: 'Unresolved', retryIssued: 'Retry pending', resolved: 'Resolved',
    archived: 'Archived'
  };

  function statusBadge(status) {
    return h('span.badge.status-' + String(status || 'unknown').replace(/[^A-Za-z]/g, ''),
      STATUS_TEXT[status] || String(status || 'unknown'));
  }

  function button(label, onClick, cls, attrs) {
    var a = Object.assign({type: 'button', on: {click: onClick}}, attrs || {});
    return h('button' + (cls ? '.' + cls : ''), a, label);
  }

  function link(href, label, attrs) {
    return h('a', Object.assign({href: href}, attrs || {}), label);
  }

  /* A progress bar: value 0..1, or null for "waiting". */
  function progress(value, label) {
    var bar = h('div.bar');
    var wrap = h('div.progress', {role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100,
      'aria-label': label || 'progress'}, bar);
    if (value === null || value === undefined || isNaN(value)) {
      wrap.classList.add('waiting');
    } else {
      var pct = Math.max(0, Math.min(100, Math.round(value * 100)));
      bar.style.width = pct + '%';
      wrap.setAttribute('aria-valuenow', pct);
    }
    return wrap;
  }

  function empty(title, detail) {
    return h('div.empty', {role: 'status'}, h('p.empty-title', title), detail ? h('p.muted', detail) : null);
  }

  /* The error state of a panel: the API's message, its code and a way to
   * try again. */
  function errorBox(err, retry) {
    var msg = err && err.message ? err.message : String(err);
    var code = err && err.status ? ('HTTP ' + err.status + (err.code ? ' · ' + err.code : '')) : '';
    var hint = null;
    if (err && err.status === 0) {
      hint = 'The server did not answer. Is sqlbus serve running?';
    }
    return h('div.error-box', {role: 'alert'},
      h('p.error-title', 'Could not load this: ' + msg),
      code ? h('p.muted', code + (err.field ? ' · field ' + err.field : '')) : null,
      hint ? h('p.muted', hint) : null,
      retry ? button('Try again', function (e) { tryAgain(e.currentTarget, retry); }, 'small') : null);
  }

  /* Try again says it is trying until the reload settles: when it fails
   * the same way the box stays, and the button is all that changed. */
  async function tryAgain(btn, retry) {
    btn.disabled = true;
    btn.textContent = 'Trying again…';
    try { await retry(); } finally {
      btn.disabled = false;
      btn.textContent = 'Try again';
    }
  }

  /* Show err in container unless the same error already shows there: a
   * poll that fails the same way again keeps the box (and its Try again
   * button) in place, so a click is not lost to a re-render and a screen
   * reader does not announce the alert every two seconds. */
  function showError(container, err, retry) {
    var key = [err && err.status, err && err.code, err && err.field,
      err && err.message ? err.message : String(err)].join('|');
    if (container.dataset.errorKey === key && container.querySelector('.error-box')) return;
    replace(container, errorBox(err, retry));
    container.dataset.errorKey = key;
  }

  function table(cls, head, rows) {
    return h('div.table-wrap', h('table' + (cls ? '.' + cls : ''),
      h('thead', h('tr', head)), h('tbody', rows)));
  }

  function card(title, value, sub, cls, href) {
    var inner = [h('div.card-title', title), h('div.card-value', value), sub ? h('div.card-sub', sub) : null];
    return href ? h('a.card' + (cls ? '.' + cls : ''), {href: href}, inner)
      : h('div.card' + (cls ? '.' + cls : ''), inner);
  }

  /* Save text as a file, client-side (CSV export). */
  function download(name, type, text) {
    var url = URL.createObjectURL(new Blob([text], {type: type}));
    var a = h('a.hidden', {href: url, download: name});
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(url); a.remove(); }, 1000);
  }

  /* A short message at the bottom of the screen. */
  function toast(text, kind) {
    var ops = document.getElementById('ops');
    var t = h('div.toast' + (kind ? '.' + kind : ''), {role: kind === 'bad' ? 'alert' : 'status'}, text);
    ops.appendChild(t);
    setTimeout(function () { t.remove(); }, kind === 'bad' ? 8000 : 4000);
  }

  return {
    h: h, append: append, clear: clear, replace: replace, time: time, absTime: absTime, refreshTimes: refreshTimes,
    parseTime: parseTime, ago: ago, fmtDate: fmtDate, num: num, bytes: bytes,
    statusBadge: statusBadge, STATUS_TEXT: STATUS_TEXT, button: button, link: link,
    progress: progress, empty: empty, errorBox: errorBox, showError: showError, table: table, card: card,
    download: download, toast: toast
  };
})();
