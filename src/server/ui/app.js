/* app.js - the dashboard's shell: hash routes to screens, live refresh
 * (every 2 s for the visible screen, with ETags so an unchanged answer is
 * a 304 and no re-render), dialogs, the token prompt, the "server
 * unreachable" banner, progress of bulk operations, keyboard shortcuts.
 * Screens register themselves in SB.views (views.js, failed.js,
 * groups.js, detail.js). */
'use strict';
var SB = window.SB = window.SB || {};
SB.views = SB.views || {};

SB.app = (function () {
  var h = SB.dom.h;
  var POLL_MS = 2000;
  var main, current = null, currentKey = '', busy = false, gPending = 0;
  var dialogEl, dialogResolve = null, dialogReturnFocus = null;
  var tokenPromptOpen = false;

  var ROUTES = [
    {re: /^\/?$/, screen: 'overview', view: 'overview'},
    {re: /^\/overview$/, screen: 'overview', view: 'overview'},
    {re: /^\/queues$/, screen: 'queues', view: 'queues'},
    {re: /^\/queues\/(.+)$/, screen: 'queues', view: 'queue'},
    {re: /^\/failed$/, screen: 'failed', view: 'failed'},
    {re: /^\/groups$/, screen: 'groups', view: 'groups'},
    {re: /^\/messages\/(.+)$/, screen: 'failed', view: 'message'},
    {re: /^\/pending$/, screen: 'pending', view: 'pending'},
    {re: /^\/archived$/, screen: 'archived', view: 'archived'},
    {re: /^\/recovery$/, screen: 'recovery', view: 'recovery'}
  ];

  function parseHash() {
    var hash = location.hash.replace(/^#/, '');
    var q = hash.indexOf('?');
    var path = q >= 0 ? hash.slice(0, q) : hash;
    var params = new URLSearchParams(q >= 0 ? hash.slice(q + 1) : '');
    for (var i = 0; i < ROUTES.length; i++) {
      var m = ROUTES[i].re.exec(path);
      if (m) {
        var arg = null;
        try { arg = m[1] === undefined ? null : decodeURIComponent(m[1]); } catch (e) { arg = m[1]; }
        return {screen: ROUTES[i].screen, view: ROUTES[i].view, arg: arg, params: params, path: path};
      }
    }
    return {screen: '', view: 'notfound', arg: path, params: params, path: path};
  }

  /* Build a hash for a screen and its parameters (empty ones left out). */
  function href(path, params) {
    var p = new URLSearchParams();
    Object.keys(params || {}).forEach(function (k) {
      var v = params[k];
      if (v !== undefined && v !== null && v !== '') p.set(k, v);
    });
    var s = p.toString();
    return '#' + path + (s ? '?' + s : '');
  }

  /* Change the hash without re-creating the screen (filters, paging). */
  function setParams(path, params) {
    var next = href(path, params);
    if (location.hash !== next) history.replaceState(null, '', next);
  }

  function route() {
    var r = parseHash();
    var key = r.view + ':' + (r.arg || '');
    document.querySelectorAll('.nav a').forEach(function (a) {
      if (a.dataset.screen === r.screen) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    });
    if (current && currentKey === key && current.update) {
      current.update(r);
      refresh(true);
      return;
    }
    if (current && current.destroy) current.destroy();
    SB.dom.clear(main);
    currentKey = key;
    var factory = SB.views[r.view];
    if (!factory) {
      current = {refresh: function () {
        SB.dom.replace(main, SB.dom.empty('No such screen', 'Nothing lives at #' + r.path + '.'));
        return Promise.resolve();
      }};
    } else {
      current = factory(main, r);
    }
    document.title = (current.title || 'sqlbus') + ' · sqlbus dashboard';
    refresh(true);
  }

  async function refresh(force) {
    if (!current || !current.refresh) return;
    if (busy && !force) return;
    busy = true;
    var view = current;
    try {
      await view.refresh(!!force);
    } catch (e) {
      if (view === current) console.error(e);
    } finally {
      busy = false;
    }
    if (view === current) document.body.dataset.refreshed = String(Date.now());
  }

  /* The counts in the navigation, from the failed-message summary. */
  async function updateNav() {
    try {
      var r = await SB.api.get('/api/sqlbus/errors/summary', {conditional: true});
      if (r.notModified && document.getElementById('nav-failed').textContent) return;
      var st = (r.data && r.data.statuses) || {};
      setCount('nav-failed', st.unresolved);
      setCount('nav-pending', st.retryIssued);
    } catch (e) { /* the screen shows the error */ }
  }
  function setCount(id, n) {
    var el = document.getElementById(id);
    el.textContent = n ? String(n) : '';
    el.classList.toggle('hidden', !n);
  }

  function tick() {
    if (document.hidden || (dialogEl && dialogEl.open)) return;
    SB.dom.refreshTimes(main);
    refresh(false);
    updateNav();
  }

  /* ---- dialogs ---- */

  /* dialog({title, body, actions: [{label, value, primary, danger}],
   * wide}) -> Promise of the chosen action's value (null for Esc or
   * Cancel). A primary action's `check()` may return an error text to keep
   * the dialog open. */
  function dialog(opts) {
    if (dialogEl.open) closeDialog(null);
    dialogReturnFocus = document.activeElement;
    SB.dom.clear(dialogEl);
    dialogEl.classList.toggle('wide', !!opts.wide);
    var errLine = h('p.dialog-error.hidden', {role: 'alert'});
    var buttons = (opts.actions || [{label: 'OK', value: true, primary: true}]).map(function (a) {
      var cls = a.primary ? 'primary' : a.danger ? 'danger' : '';
      return SB.dom.button(a.label, async function () {
        if (a.check) {
          var problem = await a.check();
          if (problem) {
            errLine.textContent = problem;
            errLine.classList.remove('hidden');
            return;
          }
        }
        closeDialog(a.value);
      }, cls, {dataset: {action: String(a.value)}});
    });
    var form = h('form.dialog-form', {on: {submit: function (e) {
      e.preventDefault();
      var primary = buttons.find(function (b) { return b.classList.contains('primary'); });
      if (primary) primary.click();
    }}},
    h('h2#dialog-title', opts.title),
    opts.body || null, errLine,
    h('div.dialog-actions', buttons, SB.dom.button('Cancel', function () { closeDialog(null); }, 'ghost',
      {dataset: {action: 'cancel'}})));
    dialogEl.appendChild(form);
    dialogEl.showModal();
    var first = form.querySelector('[autofocus]') || form.querySelector('input, textarea, select') ||
      buttons.find(function (b) { return b.classList.contains('primary'); }) || buttons[0];
    if (first) first.focus();
    return new Promise(function (resolve) { dialogResolve = resolve; });
  }

  function closeDialog(value) {
    var r = dialogResolve;
    dialogResolve = null;
    if (dialogEl.open) dialogEl.close();
    if (dialogReturnFocus && dialogReturnFocus.focus && document.contains(dialogReturnFocus)) {
      dialogReturnFocus.focus();
    }
    if (r) r(value);
  }

  function confirm(title, text, okLabel, danger) {
    return dialog({title: title, body: h('p', text),
      actions: [{label: okLabel || 'OK', value: true, primary: !danger, danger: !!danger}]})
      .then(function (v) { return v === true; });
  }

  /* ---- token ---- */

  async function promptToken(message) {
    if (tokenPromptOpen) return;
    tokenPromptOpen = true;
    var input = h('input', {type: 'password', id: 'token-input', autocomplete: 'off', spellcheck: 'false',
      'aria-describedby': 'token-help'});
    var body = h('div',
      h('p#token-help', message || 'This server needs an API token (Authorization: Bearer). It is kept in this ' +
        'browser tab only (sessionStorage) until you close the tab.'),
      h('label.field', h('span', 'Token'), input));
    var v = await dialog({title: 'API token needed', body: body,
      actions: [{label: 'Use token', value: 'ok', primary: true,
        check: function () { return input.value.trim() ? '' : 'Enter a token.'; }}]});
    tokenPromptOpen = false;
    if (v === 'ok') {
      SB.api.setToken(input.value.trim());
      showTokenButton();
      refresh(true);
      updateNav();
    }
  }

  function showTokenButton() {
    document.getElementById('btn-token').classList.toggle('hidden', !SB.api.token());
  }

  /* ---- banner ---- */

  function unreachable(down) {
    var b = document.getElementById('banner');
    var was = !b.classList.contains('hidden');
    b.classList.toggle('hidden', !down);
    document.getElementById('live').classList.toggle('down', down);
    if (was && !down) refresh(true);
  }

  /* ---- bulk operations ---- */

  /* operation(label, promise of a 202 result) -> Promise of the final
   * operation: shows a progress bar in the corner while it runs; onTick
   * gets every poll (for a progress bar of the screen's own). */
  async function operation(label, started, onTick) {
    var text = h('span.op-state', 'starting…');
    var barSlot = h('div.op-bar', SB.dom.progress(null, label));
    var item = h('div.op', {role: 'status'}, h('div.op-label', label), barSlot, text);
    document.getElementById('ops').appendChild(item);
    try {
      var result = await started;
      var op = await SB.api.follow(result, function (o) {
        var frac = o.total ? (o.done || 0) / o.total : (o.state === 'completed' ? 1 : null);
        SB.dom.replace(barSlot, SB.dom.progress(frac, label));
        text.textContent = o.state + (o.total ? ' · ' + (o.done || 0) + ' of ' + o.total : '');
        if (onTick) onTick(o);
      });
      item.classList.add(op.state === 'failed' ? 'bad' : 'good');
      text.textContent = op.state === 'failed' ? 'failed: ' + (op.error || 'unknown error')
        : 'done' + (op.total !== undefined ? ' · ' + op.total + ' message' + (op.total === 1 ? '' : 's') : '');
      setTimeout(function () { item.remove(); }, 5000);
      refresh(true);
      updateNav();
      return op;
    } catch (e) {
      item.classList.add('bad');
      text.textContent = 'failed: ' + e.message;
      setTimeout(function () { item.remove(); }, 10000);
      throw e;
    }
  }

  /* ---- keyboard ---- */

  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || el.isContentEditable;
  }

  function rows() { return Array.prototype.slice.call(main.querySelectorAll('[data-row]')); }

  function moveCursor(step) {
    var list = rows();
    if (!list.length) return;
    var idx = list.findIndex(function (r) { return r.contains(document.activeElement); });
    if (idx < 0) idx = list.findIndex(function (r) { return r.classList.contains('cursor'); });
    var next = idx < 0 ? (step > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, idx + step));
    list.forEach(function (r) { r.classList.remove('cursor'); });
    var row = list[next];
    row.classList.add('cursor');
    var target = row.querySelector('[data-primary]') || row;
    target.focus();
    row.scrollIntoView({block: 'nearest'});
  }

  function onKey(e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (dialogEl.open) return;          /* Esc is the dialog's own */
    if (typing(e.target)) {
      if (e.key === 'Escape') e.target.blur();
      return;
    }
    if (gPending && Date.now() - gPending < 1500) {
      gPending = 0;
      var to = {o: '#/overview', q: '#/queues', f: '#/failed', g: '#/groups', p: '#/pending',
        a: '#/archived', r: '#/recovery'}[e.key];
      if (to) { e.preventDefault(); location.hash = to; }
      return;
    }
    if (current && current.onKey && current.onKey(e)) { e.preventDefault(); return; }
    switch (e.key) {
    case '/':
      e.preventDefault();
      var s = main.querySelector('[data-search]');
      if (s) { s.focus(); s.select(); } else { location.hash = '#/failed?focus=search'; }
      break;
    case 'j': e.preventDefault(); moveCursor(1); break;
    case 'k': e.preventDefault(); moveCursor(-1); break;
    case 'x':
      var row = rows().find(function (r) { return r.contains(document.activeElement) || r.classList.contains('cursor'); });
      var box = row && row.querySelector('input[type=checkbox]');
      if (box) { e.preventDefault(); box.click(); }
      break;
    case 'g': gPending = Date.now(); break;
    case 'r': e.preventDefault(); refresh(true); break;
    case '?': e.preventDefault(); help(); break;
    }
  }

  function help() {
    var keys = [
      ['/', 'Search failed messages'], ['j / k', 'Next / previous row'],
      ['x', 'Select the row (check box)'], ['Enter', 'Open the focused row or press the focused button'],
      ['Space', 'Toggle the focused check box or press the focused button'],
      ['Esc', 'Close the dialog, leave the search box'], ['r', 'Refresh now'],
      ['g then o q f g p a r', 'Go to Overview, Queues, Failed, Groups, Pending, Archived, Recovery'],
      ['?', 'This help']
    ];
    dialog({title: 'Keyboard shortcuts', body: SB.dom.table('keys', [h('th', 'Key'), h('th', 'Does')],
      keys.map(function (k) { return h('tr', h('td', h('kbd', k[0])), h('td', k[1])); })),
    actions: [{label: 'Close', value: true, primary: true}]});
  }

  function start() {
    main = document.getElementById('main');
    dialogEl = document.getElementById('dialog');
    dialogEl.addEventListener('cancel', function (e) { e.preventDefault(); closeDialog(null); });
    dialogEl.addEventListener('close', function () { if (dialogResolve) closeDialog(null); });
    SB.api.on('unreachable', unreachable);
    SB.api.on('unauthorized', function (msg) { promptToken(msg); });
    document.getElementById('banner-retry').addEventListener('click', function () { refresh(true); updateNav(); });
    document.getElementById('btn-help').addEventListener('click', help);
    document.getElementById('btn-token').addEventListener('click', function () {
      SB.api.setToken(null);
      showTokenButton();
      refresh(true);
    });
    document.addEventListener('keydown', onKey);
    document.addEventListener('visibilitychange', function () { if (!document.hidden) tick(); });
    window.addEventListener('hashchange', route);
    showTokenButton();
    route();
    updateNav();
    setInterval(tick, POLL_MS);
  }

  return {
    start: start, href: href, setParams: setParams, refresh: refresh, dialog: dialog,
    confirm: confirm, operation: operation, promptToken: promptToken, updateNav: updateNav,
    parseHash: parseHash
  };
})();

document.addEventListener('DOMContentLoaded', SB.app.start);
