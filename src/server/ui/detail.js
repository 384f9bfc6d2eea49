/* detail.js - one failed message (#/messages/{id}): facts, timeline,
 * exception and stack trace, headers, the body pretty-printed (JSON, XML)
 * with a raw toggle, and retry / archive / restore / edit-and-retry. */
'use strict';
var SB = window.SB = window.SB || {};
SB.views = SB.views || {};

SB.detail = (function () {
  var h = SB.dom.h, D = SB.dom, C = SB.common, api = SB.api;
  var editConfig = null;

  /* XML indented two spaces a level; an element holding only text stays
   * on one line. */
  function prettyXml(text) {
    var tokens = text.replace(/>\s+</g, '><').match(/<[^>]+>|[^<]+/g) || [];
    var out = [], depth = 0;
    var ind = function (d) { return '  '.repeat(Math.max(0, d)); };
    var isClose = function (t) { return /^<\//.test(t); };
    var isOpen = function (t) { return /^<[^!?/][^>]*>$/.test(t) && !/\/>$/.test(t); };
    for (var i = 0; i < tokens.length; i++) {
      var t = tokens[i];
      if (isClose(t)) {
        depth--;
        out.push(ind(depth) + t);
      } else if (isOpen(t)) {
        if (i + 2 < tokens.length && tokens[i + 1][0] !== '<' && isClose(tokens[i + 2])) {
          out.push(ind(depth) + t + tokens[i + 1].trim() + tokens[i + 2]);
          i += 2;
        } else if (i + 1 < tokens.length && isClose(tokens[i + 1])) {
          out.push(ind(depth) + t + tokens[i + 1]);
          i += 1;
        } else {
          out.push(ind(depth) + t);
          depth++;
        }
      } else if (t.trim()) {
        out.push(ind(depth) + t.trim());
      }
    }
    return out.join('\n');
  }

  /* The body as people read it: JSON indented, XML indented, anything
   * else as it is. */
  function pretty(text, contentType) {
    if (typeof text !== 'string' || !text) return text || '';
    var t = (contentType || '').toLowerCase();
    var s = text.trim();
    if (t.indexOf('json') >= 0 || /^[{[]/.test(s)) {
      try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { /* not JSON after all */ }
    }
    if (t.indexOf('xml') >= 0 || /^<[?a-zA-Z]/.test(s)) {
      try { return prettyXml(s); } catch (e) { /* leave it */ }
    }
    return text;
  }

  /* The body's content type: the message's field, else its headers. */
  function contentType(m) {
    var hd = m.headers || {};
    return m.content_type || hd['sb-content-type'] || hd['content-type'] || hd['NServiceBus.ContentType'] || '';
  }

  function duration(ms) {
    if (!(ms >= 0)) return '';
    if (ms < 1000) return ms + ' ms';
    return D.ago(ms);
  }

  async function loadEditConfig() {
    if (editConfig) return editConfig;
    try {
      editConfig = (await api.get('/api/edit/config')).data || {enabled: false};
    } catch (e) {
      editConfig = {enabled: false, error: e.message};
    }
    return editConfig;
  }

  async function editDialog(m, bodyText) {
    var cfg = await loadEditConfig();
    var locked = (cfg.locked_headers || []).map(function (x) { return String(x).toLowerCase(); });
    var sensitive = (cfg.sensitive_headers || []).map(function (x) { return String(x).toLowerCase(); });
    var headers = m.headers || {};
    var rowsEl = h('tbody');
    function headerRow(k, v, isNew) {
      var isLocked = locked.indexOf(k.toLowerCase()) >= 0;
      var keyIn = h('input', {type: 'text', value: k, 'aria-label': 'Header name', readonly: !isNew,
        dataset: {hkey: '1'}});
      var valIn = h('input', {type: 'text', value: v, 'aria-label': 'Value of ' + (k || 'the new header'),
        readonly: isLocked, dataset: {hval: '1'}});
      var tr = h('tr' + (isLocked ? '.locked' : ''), h('td', h('div.hkey', keyIn,
        isLocked ? h('span.badge.lock', {title: 'sqlbus sets this header; it cannot be changed'}, 'locked') : null,
        sensitive.indexOf(k.toLowerCase()) >= 0 ? h('span.badge.sensitive', {title: 'Changing it changes how the message is handled'}, 'sensitive') : null)),
      h('td', valIn),
      h('td', isLocked ? null : D.button('Remove', function () { tr.remove(); }, 'small ghost')));
      return tr;
    }
    Object.keys(headers).sort().forEach(function (k) { rowsEl.appendChild(headerRow(k, String(headers[k]), false)); });
    var area = h('textarea.code', {rows: 14, 'aria-label': 'Message body', spellcheck: 'false', autofocus: true},
      pretty(bodyText || '', contentType(m)));
    var body = h('div.edit',
      h('p.muted', 'The edited copy is sent to ' + (m.queue_address || 'its queue') + ' as a new message; this one ' +
        'is marked resolved. Locked headers are kept as they are.'),
      h('h3', 'Headers'),
      h('div.table-wrap', h('table.kv.edit-headers', h('thead', h('tr', C.th('Header'), C.th('Value'), C.th(''))), rowsEl)),
      D.button('Add header', function () {
        var r = headerRow('', '', true);
        rowsEl.appendChild(r);
        r.querySelector('input').focus();
      }, 'small'),
      h('h3', 'Body'), area);
    var choice = await SB.app.dialog({title: 'Edit and retry ' + (m.message_type || m.id), body: body, wide: true,
      actions: [{label: 'Retry edited message', value: 'send', primary: true, check: function () {
        var keys = {};
        var bad = '';
        rowsEl.querySelectorAll('tr').forEach(function (tr) {
          var k = tr.querySelector('[data-hkey]').value.trim();
          if (!k) bad = bad || 'Every header needs a name.';
          else if (keys[k]) bad = bad || 'The header ' + k + ' is given twice.';
          keys[k] = true;
        });
        return bad;
      }}]});
    if (choice !== 'send') return;
    var out = {};
    rowsEl.querySelectorAll('tr').forEach(function (tr) {
      out[tr.querySelector('[data-hkey]').value.trim()] = tr.querySelector('[data-hval]').value;
    });
    try {
      await SB.app.operation('Edit and retry', api.post('/api/edit/' + api.seg(m.id),
        {message_body: area.value, message_headers: out}));
    } catch (e) {
      D.toast('Edit and retry failed: ' + e.message, 'bad');
    }
  }

  function exportText(m, bodyText) {
    var lines = ['Message ' + m.id, 'Type: ' + (m.message_type || ''), 'Status: ' + m.status,
      'Queue: ' + (m.queue_address || ''), 'Attempts: ' + m.number_of_processing_attempts,
      'Time of failure: ' + (m.time_of_failure || ''), '', 'Exception: ' +
      ((m.exception && m.exception.exception_type) || '') + ': ' + ((m.exception && m.exception.message) || ''),
      (m.exception && m.exception.stack_trace) || '', '', 'Headers:'];
    var hd = m.headers || {};
    Object.keys(hd).sort().forEach(function (k) { lines.push('  ' + k + ': ' + hd[k]); });
    lines.push('', 'Body:', bodyText || '');
    D.download('message-' + m.id + '.txt', 'text/plain;charset=utf-8', lines.join('\n') + '\n');
  }

  function view(root, route) {
    var id = route.arg;
    var rawBody = false;
    var bodyText = null, bodyFor = null, bodyError = null, bodyPending = null;
    var headerFilter = '';
    var container = h('div.detail', h('p.loading', 'Loading…'));
    var last = null;
    D.append(root, [h('p.crumbs', D.link('#/failed', 'Failed messages'), ' / ', h('span', id)), container]);

    async function fetchBody(m) {
      var key = m.id + '|' + (m.last_modified || '') + '|' + (m.body_size || '');
      if (bodyFor === key) return;
      bodyFor = key;
      bodyError = null;
      if (!m.body_url && m.body_size === 0) { bodyText = ''; return; }
      try {
        /* body_url is relative to the API root, as ServiceControl's. */
        var r = await api.get('/api' + (m.body_url || '/messages/' + api.seg(m.id) + '/body'), {accept: '*/*', raw: true});
        bodyText = r.data || '';
      } catch (e) {
        bodyText = null;
        bodyError = e;
      }
    }

    async function act(label, started) {
      try {
        await SB.app.operation(label, started);
      } catch (e) {
        D.toast(label + ' failed: ' + e.message, 'bad');
      }
    }

    function render(m) {
      var ex = m.exception || {};
      var stack = ex.stack_trace || '';
      var first = D.parseTime(m.first_time_of_failure), lastF = D.parseTime(m.time_of_failure);
      var cfg = editConfig || {enabled: false};
      var actions = h('div.actions',
        m.status !== 'archived'
          ? D.button(m.status === 'retryIssued' ? 'Retry again' : 'Retry', function () {
            act('Retry ' + (m.message_type || m.id), api.post('/api/errors/' + api.seg(m.id) + '/retry'));
          }, 'primary', {dataset: {key: 'retry', action: 'retry'}, disabled: m.status === 'resolved'}) : null,
        m.status === 'archived'
          ? D.button('Restore', function () {
            act('Restore ' + (m.message_type || m.id), api.patch('/api/errors/unarchive', [m.id]));
          }, 'primary', {dataset: {key: 'unarchive', action: 'unarchive'}})
          : D.button('Archive', function () {
            act('Archive ' + (m.message_type || m.id), api.post('/api/errors/' + api.seg(m.id) + '/archive'));
          }, 'danger', {dataset: {key: 'archive', action: 'archive'}, disabled: m.status === 'resolved'}),
        cfg.enabled && m.status !== 'archived' && m.status !== 'resolved'
          ? D.button('Edit & retry…', function () { editDialog(m, bodyText); }, '', {dataset: {key: 'edit', action: 'edit'}})
          : null,
        D.button('Export as text', function () { exportText(m, bodyText); }, 'ghost', {dataset: {key: 'export', action: 'export'}}));

      var facts = [
        ['Unique id', h('code', m.id)], ['Message id', m.message_id ? h('code', m.message_id) : '—'],
        ['Queue', m.queue_address ? D.link(SB.app.href('/failed', {queue: m.queue_address}), m.queue_address) : '—'],
        ['Endpoint', m.receiving_endpoint ? m.receiving_endpoint.name : '—'],
        ['Host', (m.receiving_endpoint && m.receiving_endpoint.host) || m.host || '—'],
        ['Attempts', D.num(m.number_of_processing_attempts)],
        ['First failure', D.absTime(m.first_time_of_failure)], ['Last failure', D.absTime(m.time_of_failure)],
        ['Failure window', first && lastF ? duration(lastF - first) : '—'],
        ['Sent', D.absTime(m.time_sent)], ['Last modified', D.absTime(m.last_modified)],
        ['Conversation', m.conversation_id ? h('code', m.conversation_id) : '—'],
        ['Content type', contentType(m) || '—'], ['Body size', D.bytes(m.body_size)]
      ];
      var groups = (m.groups || []).map(function (g) {
        return h('li', D.link(SB.app.href('/failed', {group: g.id, group_title: g.title}), g.title),
          h('span.muted', ' · ' + g.type));
      });

      var timeline = [];
      if (m.time_sent) timeline.push(['Sent', m.time_sent, '']);
      if (m.first_time_of_failure) timeline.push(['First failed', m.first_time_of_failure, '']);
      if (m.time_of_failure && m.time_of_failure !== m.first_time_of_failure && m.number_of_processing_attempts > 1) {
        timeline.push(['Failed again (' + m.number_of_processing_attempts + ' attempts in all)', m.time_of_failure, '']);
      }
      /* Every change of status the store recorded (retry issued,
       * resolved, archived, restored, failed again), in time order. */
      (m.status_history || []).forEach(function (c) {
        timeline.push([(D.STATUS_TEXT[c.previous] || c.previous) + ' → ' +
          (D.STATUS_TEXT[c.status] || c.status), c.at, c.status]);
      });
      timeline.sort(function (a, b) { return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0; });
      timeline.push(['Now ' + (D.STATUS_TEXT[m.status] || m.status).toLowerCase(), m.last_modified || m.time_of_failure, m.status]);

      var hd = m.headers || {};
      var filterIn = h('input', {type: 'search', placeholder: 'Filter headers', 'aria-label': 'Filter headers',
        value: headerFilter, dataset: {key: 'hfilter'}, on: {input: function () {
          headerFilter = filterIn.value;
          var f = headerFilter.toLowerCase();
          headTable.querySelectorAll('tbody tr').forEach(function (tr) {
            tr.classList.toggle('hidden', !!f && tr.textContent.toLowerCase().indexOf(f) < 0);
          });
        }}});
      var hkeys = Object.keys(hd).sort();
      var headTable = D.table('kv headers', [C.th('Header'), C.th('Value')], hkeys.map(function (k) {
        var f = headerFilter.toLowerCase();
        var row = h('tr', C.cell(h('code', k)), C.cell(h('span.hval', String(hd[k]))));
        if (f && (k + String(hd[k])).toLowerCase().indexOf(f) < 0) row.classList.add('hidden');
        return row;
      }));

      var bodyBox;
      if (bodyError) {
        bodyBox = D.errorBox(bodyError, function () { bodyFor = null; SB.app.refresh(true); });
      } else if (bodyText === null) {
        bodyBox = h('p.loading', 'Loading the body…');
      } else if (bodyText === '') {
        bodyBox = D.empty('The body is empty');
      } else {
        bodyBox = h('pre.body', {tabindex: '0', 'aria-label': 'Message body'},
          rawBody ? bodyText : pretty(bodyText, contentType(m)));
      }
      var rawBtn = D.button(rawBody ? 'Show formatted' : 'Show raw', function () {
        rawBody = !rawBody;
        render(last);
      }, 'small ghost', {'aria-pressed': rawBody ? 'true' : 'false', dataset: {key: 'raw', action: 'raw'}});

      D.replace(container, [
        h('div.screen-head', h('div', h('h1', m.message_type || '(no message type)'),
          h('p.status-line', D.statusBadge(m.status),
            m.number_of_processing_attempts > 1 ? h('span.badge.repeat', '×' + m.number_of_processing_attempts + ' attempts') : null,
            m.edited ? h('span.badge.edited', 'edited') : null,
            h('span.muted', ' failed ', D.time(m.time_of_failure)))), actions),
        h('div.grid',
          h('section.panel.half', {'aria-label': 'Exception'}, h('div.panel-head', h('h2', 'Exception')),
            h('div.panel-body', h('p.exc-title', h('strong', ex.exception_type || '(unknown)')),
              ex.message ? h('p.exc-msg', ex.message) : null,
              stack ? h('pre.stack', {tabindex: '0', 'aria-label': 'Stack trace'}, stack)
                : h('p.muted', 'No stack trace was recorded.'))),
          h('section.panel.half', {'aria-label': 'Facts'}, h('div.panel-head', h('h2', 'Facts')),
            h('div.panel-body', h('dl.facts', facts.map(function (f) { return [h('dt', f[0]), h('dd', f[1])]; })),
              groups.length ? h('div', h('h3', 'Groups'), h('ul.groups-list', groups)) : null,
              h('h3', 'History'),
              h('ol.timeline', timeline.map(function (t) {
                return h('li' + (t[2] ? '.st-' + t[2] : ''), h('span.tl-what', t[0]), ' ', D.absTime(t[1]));
              })))),
          h('section.panel.wide', {'aria-label': 'Body'}, h('div.panel-head', h('h2', 'Body'), rawBtn),
            h('div.panel-body', bodyBox)),
          h('section.panel.wide', {'aria-label': 'Headers'},
            h('div.panel-head', h('h2', 'Headers (' + hkeys.length + ')'), filterIn),
            h('div.panel-body', hkeys.length ? headTable : h('p.muted', 'No headers'))))
      ]);
    }

    return {
      title: 'Message ' + id,
      refresh: async function (force) {
        try {
          var cfgP = loadEditConfig();
          var r = await api.get('/api/sqlbus/errors/' + api.seg(id), {conditional: true});
          await cfgP;
          var m = r.data;
          var needBody = bodyFor !== (m.id + '|' + (m.last_modified || '') + '|' + (m.body_size || ''));
          if (!force && r.notModified && container.dataset.rendered === '1' && !needBody) return;
          last = m;
          document.title = (m.message_type || id) + ' · sqlbus dashboard';
          if (needBody) {
            bodyPending = bodyPending || fetchBody(m);
            render(m);
            await bodyPending;
            bodyPending = null;
          }
          render(m);
          container.dataset.rendered = '1';
        } catch (e) {
          container.dataset.rendered = '';
          if (e.status === 404) {
            D.replace(container, D.empty('No failed message ' + id,
              'It may have been removed by retention, or the link is wrong.'));
          } else {
            D.showError(container, e, function () { return SB.app.refresh(true); });
          }
        }
      }
    };
  }

  return {view: view, pretty: pretty};
})();

SB.views.message = SB.detail.view;
