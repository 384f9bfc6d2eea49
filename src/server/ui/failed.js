/* failed.js - the lists of failed messages: Failed messages (all, a
 * queue's, an endpoint's, a group's, or a search), Pending retries and
 * Archived. One list component: filters kept in the URL hash, paging from
 * Total-Count and Link, sort, multi-select that survives paging and live
 * refresh, bulk actions that run as durable operations with progress, and
 * CSV export of the selection done here in the browser. */
'use strict';
var SB = window.SB = window.SB || {};
SB.views = SB.views || {};

SB.failed = (function () {
  var h = SB.dom.h, D = SB.dom, C = SB.common, api = SB.api;

  var ALL = 'unresolved,retryIssued,resolved,archived';
  var SORTS = [
    ['time_of_failure', 'Time of failure'], ['modified', 'Last modified'], ['message_type', 'Message type'],
    ['queue_address', 'Queue'], ['number_of_processing_attempts', 'Attempts']
  ];
  var PERIODS = [['', 'Any time'], ['1h', 'Last hour'], ['2h', 'Last 2 hours'], ['1d', 'Last day'],
    ['7d', 'Last 7 days'], ['custom', 'Between…']];
  var PERIOD_MS = {'1h': 3600e3, '2h': 7200e3, '1d': 86400e3, '7d': 7 * 86400e3};

  function iso(d) { return d.toISOString(); }

  /* The `modified` range of a period, its start rounded down to the minute
   * so the URL (and so the ETag) stays the same between refreshes. */
  function modifiedRange(period, from, to) {
    if (PERIOD_MS[period]) {
      var start = Math.floor((Date.now() - PERIOD_MS[period]) / 60000) * 60000;
      return iso(new Date(start)) + '...';
    }
    if (period === 'custom' && (from || to)) {
      var f = from ? new Date(from) : null, t = to ? new Date(to) : null;
      return (f && !isNaN(f) ? iso(f) : '') + '...' + (t && !isNaN(t) ? iso(t) : '');
    }
    return '';
  }

  /* CSV of the chosen rows; a cell that a spreadsheet would run as a
   * formula is prefixed with a quote. */
  function csv(rows) {
    var cols = [['id', function (m) { return m.id; }], ['message_id', function (m) { return m.message_id; }],
      ['message_type', function (m) { return m.message_type; }],
      ['exception_type', function (m) { return m.exception && m.exception.exception_type; }],
      ['exception_message', function (m) { return m.exception && m.exception.message; }],
      ['queue_address', function (m) { return m.queue_address; }],
      ['endpoint', function (m) { return m.receiving_endpoint && m.receiving_endpoint.name; }],
      ['attempts', function (m) { return m.number_of_processing_attempts; }],
      ['status', function (m) { return m.status; }],
      ['time_of_failure', function (m) { return m.time_of_failure; }],
      ['first_time_of_failure', function (m) { return m.first_time_of_failure; }],
      ['last_modified', function (m) { return m.last_modified; }]];
    var esc = function (v) {
      var s = v === undefined || v === null ? '' : String(v);
      if (/^[=+\-@\t\r]/.test(s)) s = '\'' + s;
      return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
    };
    var lines = [cols.map(function (c) { return c[0]; }).join(',')];
    rows.forEach(function (m) { lines.push(cols.map(function (c) { return esc(c[1](m)); }).join(',')); });
    return lines.join('\r\n') + '\r\n';
  }

  function optionList(select, items, current, allLabel) {
    D.clear(select);
    select.appendChild(h('option', {value: ''}, allLabel));
    var seen = false;
    items.forEach(function (it) {
      if (it.value === current) seen = true;
      select.appendChild(h('option', {value: it.value, selected: it.value === current}, it.label));
    });
    if (current && !seen) select.appendChild(h('option', {value: current, selected: true}, current));
  }

  /* list(root, route, cfg): cfg = {path, title, sub, statusChoices,
   * defaultStatus, periodLabel, actions(ctx) -> [{label, run(ids, rows),
   * needsSelection, confirm, danger}], emptyTitle, emptyDetail, after} */
  function list(root, route, cfg) {
    var p = route.params;
    var st = {
      q: p.get('q') || '', status: p.get('status') || cfg.defaultStatus || 'unresolved',
      queue: p.get('queue') || '', endpoint: p.get('endpoint') || '', period: p.get('period') || '',
      from: p.get('from') || '', to: p.get('to') || '', sort: p.get('sort') || 'time_of_failure',
      dir: p.get('dir') || 'desc', page: Number(p.get('page')) || 1,
      perPage: Number(p.get('per_page')) || 50, group: p.get('group') || '', groupTitle: p.get('group_title') || ''
    };
    if (cfg.fixedStatus) st.status = cfg.fixedStatus;
    var selected = new Map();     /* id -> row, kept across pages */
    var lastRows = [];

    function save() {
      SB.app.setParams(cfg.path, {
        q: st.q, status: cfg.fixedStatus || st.status === (cfg.defaultStatus || 'unresolved') ? '' : st.status,
        queue: st.queue, endpoint: st.endpoint, period: st.period,
        from: st.period === 'custom' ? st.from : '', to: st.period === 'custom' ? st.to : '',
        sort: st.sort === 'time_of_failure' ? '' : st.sort, dir: st.dir === 'desc' ? '' : st.dir,
        page: st.page > 1 ? st.page : '', per_page: st.perPage !== 50 ? st.perPage : '',
        group: st.group, group_title: st.groupTitle
      });
    }
    function changed() { st.page = 1; save(); SB.app.refresh(true); }

    /* -- filters -- */
    var search = h('input.search', {type: 'search', placeholder: 'Search message type, exception, headers, body…',
      'aria-label': 'Search failed messages', value: st.q, dataset: {search: '1'}, autocomplete: 'off'});
    var searchForm = h('form.searchbar', {role: 'search', on: {submit: function (e) {
      e.preventDefault();
      st.q = search.value.trim();
      changed();
    }}}, search, h('button', {type: 'submit'}, 'Search'),
    SB.dom.button('Clear', function () { search.value = ''; st.q = ''; changed(); }, 'ghost', {dataset: {key: 'clear-search'}}));

    var statusSel = h('select', {'aria-label': 'Status', on: {change: function () { st.status = statusSel.value; changed(); }}},
      (cfg.statusChoices || []).map(function (c) {
        return h('option', {value: c[0], selected: c[0] === st.status}, c[1]);
      }));
    var queueSel = h('select', {'aria-label': 'Queue', on: {change: function () { st.queue = queueSel.value; changed(); }}});
    var endpointSel = h('select', {'aria-label': 'Endpoint', on: {change: function () { st.endpoint = endpointSel.value; changed(); }}});
    optionList(queueSel, [], st.queue, 'All queues');
    optionList(endpointSel, [], st.endpoint, 'All endpoints');
    var periodSel = h('select', {'aria-label': cfg.periodLabel || 'Modified', on: {change: function () {
      st.period = periodSel.value;
      custom.classList.toggle('hidden', st.period !== 'custom');
      if (st.period !== 'custom') changed();
    }}}, PERIODS.map(function (x) {
      return h('option', {value: x[0], selected: x[0] === st.period}, x[0] ? x[1] : (cfg.anyTimeLabel || x[1]));
    }));
    var fromIn = h('input', {type: 'datetime-local', 'aria-label': 'From', value: st.from});
    var toIn = h('input', {type: 'datetime-local', 'aria-label': 'To', value: st.to});
    var custom = h('span.custom-range' + (st.period === 'custom' ? '' : '.hidden'), fromIn, '–', toIn,
      SB.dom.button('Apply', function () { st.from = fromIn.value; st.to = toIn.value; changed(); }, 'small'));
    var sortSel = h('select', {'aria-label': 'Sort by', on: {change: function () { st.sort = sortSel.value; changed(); }}},
      SORTS.map(function (s) { return h('option', {value: s[0], selected: s[0] === st.sort}, s[1]); }));
    var dirBtn = SB.dom.button(st.dir === 'desc' ? '↓ Newest first' : '↑ Oldest first', function () {
      st.dir = st.dir === 'desc' ? 'asc' : 'desc';
      dirBtn.textContent = st.dir === 'desc' ? '↓ Newest first' : '↑ Oldest first';
      changed();
    }, 'ghost', {'aria-label': 'Sort direction', dataset: {key: 'dir'}});

    var filters = h('div.filters',
      cfg.statusChoices ? h('label.filter', h('span', 'Status'), statusSel) : null,
      h('label.filter', h('span', 'Queue'), queueSel),
      h('label.filter', h('span', 'Endpoint'), endpointSel),
      h('label.filter', h('span', cfg.periodLabel || 'Modified'), periodSel), custom,
      h('label.filter', h('span', 'Sort'), sortSel), dirBtn);

    /* -- the list -- */
    var toolbar = h('div.toolbar');
    var body = h('div.list-body', h('p.loading', 'Loading…'));
    var groupNote = st.group ? h('p.group-note', 'Messages of the group ',
      h('strong', st.groupTitle || st.group), ' · ',
      D.link(SB.app.href(cfg.path, {}), 'show all failed messages')) : null;

    D.append(root, [
      SB.views.screenHead(cfg.title, cfg.sub),
      searchForm, filters, groupNote,
      h('section.panel.wide.listpanel', {'aria-label': cfg.title}, toolbar, body),
      cfg.after ? cfg.after.el : null
    ]);
    if (p.get('focus') === 'search') setTimeout(function () { search.focus(); }, 0);

    /* Options of the queue and endpoint filters. */
    api.get('/api/errors/queues/addresses').then(function (r) {
      optionList(queueSel, (r.data || []).map(function (q) {
        return {value: q.physical_address, label: q.physical_address + ' (' + q.failed_message_count + ')'};
      }), st.queue, 'All queues');
    }, function () { /* the list shows the API error */ });
    api.get('/api/sqlbus/endpoints/known').then(function (r) {
      var names = [];
      (r.data || []).forEach(function (e) { if (e.name && names.indexOf(e.name) < 0) names.push(e.name); });
      optionList(endpointSel, names.map(function (n) { return {value: n, label: n}; }), st.endpoint, 'All endpoints');
    }, function () { /* idem */ });

    function url() {
      if (st.q) return '/api/messages/search' + api.qs({q: st.q, page: st.page > 1 ? st.page : '', per_page: st.perPage});
      var params = {
        page: st.page, per_page: st.perPage, sort: st.sort, direction: st.dir,
        status: st.status === 'all' ? ALL : st.status,
        modified: modifiedRange(st.period, st.from, st.to), queueaddress: st.queue
      };
      if (st.group) return '/api/recoverability/groups/' + api.seg(st.group) + '/errors' + api.qs(params);
      if (st.endpoint) return '/api/endpoints/' + api.seg(st.endpoint) + '/errors' + api.qs(params);
      return '/api/errors' + api.qs(params);
    }

    function filtered() { return !!(st.q || st.queue || st.endpoint || st.period || st.group); }

    function selectionBar() {
      var ids = Array.from(selected.keys());
      var ctx = {ids: ids, rows: Array.from(selected.values()), state: st, clear: clearSelection};
      var acts = cfg.actions(ctx).map(function (a, i) {
        var need = a.needsSelection !== false;
        return SB.dom.button(a.label + (need && ids.length ? ' (' + ids.length + ')' : ''), function () {
          runAction(a, ctx);
        }, a.danger ? 'danger' : (i === 0 ? 'primary' : ''), {disabled: need && !ids.length, dataset: {key: 'act-' + i, action: a.id || ''}});
      });
      var exportBtn = SB.dom.button('Export CSV' + (ids.length ? ' (' + ids.length + ')' : ''), function () {
        D.download('failed-messages.csv', 'text/csv;charset=utf-8', csv(Array.from(selected.values())));
      }, '', {disabled: !ids.length, dataset: {key: 'export', action: 'export'}});
      return h('div.toolbar-inner', acts, exportBtn,
        h('span.selcount', {'aria-live': 'polite'}, ids.length ? ids.length + ' selected' : 'Nothing selected'),
        ids.length ? SB.dom.button('Clear selection', clearSelection, 'ghost small', {dataset: {key: 'clearsel'}}) : null);
    }

    function clearSelection() { selected.clear(); rerender(); }

    async function runAction(a, ctx) {
      if (a.confirm) {
        var ok = await SB.app.confirm(a.label, typeof a.confirm === 'function' ? a.confirm(ctx) : a.confirm,
          a.label, a.danger);
        if (!ok) return;
      }
      var ids = ctx.ids.slice();
      try {
        await SB.app.operation(a.progressLabel ? a.progressLabel(ctx) : a.label, a.run(ids, ctx.rows, st));
        ids.forEach(function (id) { selected.delete(id); });
        rerender();
      } catch (e) {
        D.toast(a.label + ' failed: ' + e.message, 'bad');
      }
    }

    function toggle(m, on) {
      if (on) selected.set(m.id, m); else selected.delete(m.id);
      rerender();
    }

    var lastResult = null;
    function rerender() { if (lastResult) render(lastResult); }

    function render(r) {
      lastResult = r;
      var rows = r.data || [];
      lastRows = rows;
      rows.forEach(function (m) { if (selected.has(m.id)) selected.set(m.id, m); });
      D.replace(toolbar, selectionBar());
      if (!rows.length) {
        D.replace(body, filtered() || (cfg.statusChoices && st.status !== (cfg.defaultStatus || 'unresolved'))
          ? h('div', D.empty(st.q ? 'Nothing matches “' + st.q + '”' : 'No messages match these filters',
            'Try other words or filters.'),
          h('p.center', SB.dom.button('Clear filters', function () {
            st.q = ''; search.value = ''; st.queue = ''; st.endpoint = ''; st.period = ''; st.group = '';
            st.groupTitle = ''; st.status = cfg.defaultStatus || 'unresolved'; statusSel.value = st.status;
            queueSel.value = ''; endpointSel.value = ''; periodSel.value = '';
            changed();
          }, '', {dataset: {key: 'clear-filters'}})))
          : D.empty(cfg.emptyTitle, cfg.emptyDetail));
        return;
      }
      var allOn = rows.every(function (m) { return selected.has(m.id); });
      var someOn = rows.some(function (m) { return selected.has(m.id); });
      var all = h('input', {type: 'checkbox', 'aria-label': 'Select every message on this page', checked: allOn,
        indeterminate: someOn && !allOn, dataset: {key: 'select-all'}, on: {change: function () {
          rows.forEach(function (m) { if (all.checked) selected.set(m.id, m); else selected.delete(m.id); });
          rerender();
        }}});
      var tableRows = rows.map(function (m) {
        var ex = m.exception || {};
        var box = h('input', {type: 'checkbox', checked: selected.has(m.id), dataset: {key: 'c-' + m.id},
          'aria-label': 'Select ' + (m.message_type || m.id), on: {change: function () { toggle(m, box.checked); }}});
        var attempts = m.number_of_processing_attempts || 0;
        return h('tr' + (selected.has(m.id) ? '.selected' : ''), {dataset: {row: m.id}},
          C.cell(box, 'check'),
          C.cell([h('div.mtype',
            D.link('#/messages/' + api.seg(m.id), m.message_type || '(no message type)',
              {dataset: {primary: '1', key: 'm-' + m.id}}),
            attempts > 1 ? h('span.badge.repeat', {title: attempts + ' attempts'}, '×' + attempts) : null,
            m.edited ? h('span.badge.edited', 'edited') : null),
          h('div.exc', h('span.exc-type', ex.exception_type || ''), ex.message ? ': ' + ex.message : '')]),
          C.cell(m.queue_address || '', 'opt'),
          C.cell(m.receiving_endpoint ? m.receiving_endpoint.name : '', 'opt'),
          C.cell(D.statusBadge(m.status), 'inline'),
          C.cell(D.time(st.sort === 'modified' || cfg.showModified ? m.last_modified : m.time_of_failure), 'when inline'));
      });
      D.replace(body, h('div',
        st.q ? h('p.muted.search-note', 'Search results, best matches first' +
          (r.total !== null ? ' · ' + D.num(r.total) + ' found' : '') + '. Filters apply to lists, not to a search.') : null,
        D.table('messages stack', [h('th.check', {scope: 'col'}, all), C.th('Message'), C.th('Queue', 'opt'),
          C.th('Endpoint', 'opt'), C.th('Status'),
          C.th(st.sort === 'modified' || cfg.showModified ? 'Modified' : 'Failed', 'when')], tableRows),
        C.pager(r, st.page, st.perPage, function (pg) { st.page = pg; save(); SB.app.refresh(true); })));
    }

    var view = {
      title: cfg.title,
      refresh: async function (force) {
        var u = url();
        try {
          var r = await api.get(u, {conditional: true});
          if (!force && r.notModified && body.dataset.rendered === '1') return;
          render(r);
          body.dataset.rendered = '1';
        } catch (e) {
          D.replace(toolbar, null);
          D.showError(body, e, function () { return SB.app.refresh(true); });
          body.dataset.rendered = '';
        }
        if (cfg.after) await cfg.after.refresh(force);
      },
      rows: function () { return lastRows; }
    };
    return view;
  }

  return {list: list, csv: csv, modifiedRange: modifiedRange};
})();

(function () {
  var api = SB.api;

  function ids(list) { return list; }

  SB.views.failed = function (root, route) {
    return SB.failed.list(root, route, {
      path: '/failed', title: 'Failed messages',
      sub: 'Messages whose last attempt failed. Select some to retry, archive or export them.',
      statusChoices: [['unresolved', 'Unresolved'], ['unresolved,retryIssued', 'Unresolved or pending'],
        ['retryIssued', 'Retry pending'], ['resolved', 'Resolved'], ['archived', 'Archived'], ['all', 'All']],
      defaultStatus: 'unresolved',
      emptyTitle: 'No failed messages — everything is healthy',
      emptyDetail: 'When a message fails its last attempt it shows here, grouped on the Groups screen.',
      actions: function (ctx) {
        var acts = [
          {id: 'retry', label: 'Retry selected', run: function (list) { return api.post('/api/errors/retry', ids(list)); },
            progressLabel: function (c) { return 'Retrying ' + c.ids.length + ' message' + (c.ids.length === 1 ? '' : 's'); }},
          {id: 'archive', label: 'Archive selected', run: function (list) { return api.post('/api/errors/archive', ids(list)); },
            progressLabel: function (c) { return 'Archiving ' + c.ids.length + ' message' + (c.ids.length === 1 ? '' : 's'); }}
        ];
        if (ctx.state.queue && !ctx.state.q) {
          acts.push({id: 'retry-queue', label: 'Retry every failed message of ' + ctx.state.queue, needsSelection: false,
            confirm: 'Send every unresolved failed message of queue ' + ctx.state.queue + ' back to it?',
            run: function () { return api.post('/api/errors/queues/' + api.seg(ctx.state.queue) + '/retry'); }});
        }
        if (ctx.state.group && !ctx.state.q) {
          acts.push({id: 'retry-group', label: 'Retry the whole group', needsSelection: false,
            confirm: 'Send every unresolved message of this group back to its queue?',
            run: function () { return api.post('/api/recoverability/groups/' + api.seg(ctx.state.group) + '/errors/retry'); }});
        }
        return acts;
      }
    });
  };

  SB.views.pending = function (root, route) {
    return SB.failed.list(root, route, {
      path: '/pending', title: 'Pending retries', fixedStatus: 'retryIssued',
      sub: 'Messages sent back to their queue whose processing has not been confirmed yet. Retry them again, ' +
        'or mark them resolved if you know they were handled.',
      periodLabel: 'Retried', anyTimeLabel: 'Any time', showModified: true,
      emptyTitle: 'No retries pending',
      emptyDetail: 'A retried message stays here until its queue processes it (or it fails again).',
      actions: function (ctx) {
        var acts = [
          {id: 'retry', label: 'Retry again', run: function (list) { return api.post('/api/pendingretries/retry', list); }},
          {id: 'resolve', label: 'Mark resolved', run: function (list) {
            return api.patch('/api/pendingretries/resolve', {uniquemessageids: list});
          }}
        ];
        if (ctx.state.queue) {
          var range = function () {
            return {queueaddress: ctx.state.queue, from: '1970-01-01T00:00:00.000Z', to: new Date().toISOString()};
          };
          acts.push({id: 'retry-queue', label: 'Retry all of ' + ctx.state.queue, needsSelection: false,
            confirm: 'Retry every pending message of queue ' + ctx.state.queue + ' again?',
            run: function () { return api.post('/api/pendingretries/queues/retry', range()); }});
          acts.push({id: 'resolve-queue', label: 'Resolve all of ' + ctx.state.queue, needsSelection: false,
            confirm: 'Mark every pending message of queue ' + ctx.state.queue + ' resolved?',
            run: function () { return api.patch('/api/pendingretries/queues/resolve', range()); }});
        }
        return acts;
      }
    });
  };

  SB.views.archived = function (root, route) {
    return SB.failed.list(root, route, {
      path: '/archived', title: 'Archived messages', fixedStatus: 'archived', showModified: true,
      sub: 'Failed messages put aside. Restore them to bring them back to the failed list.',
      periodLabel: 'Archived', anyTimeLabel: 'Any time',
      emptyTitle: 'Nothing archived',
      emptyDetail: 'Messages you archive from the failed list or a group wait here until retention removes them.',
      after: SB.groups ? SB.groups.archivedPanel() : null,
      actions: function () {
        return [{id: 'unarchive', label: 'Restore selected', run: function (list) { return api.patch('/api/errors/unarchive', list); },
          progressLabel: function (c) { return 'Restoring ' + c.ids.length + ' message' + (c.ids.length === 1 ? '' : 's'); }}];
      }
    });
  };
})();
